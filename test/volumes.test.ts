/**
 * The vault at the limits a team with real volumes meets (README "Sizes and counts"): paging
 * through many results while points keep arriving, a bulk audit one event over its limit, and
 * the purge of a subject of thousands of points while other requests keep going. Runs on
 * PostgreSQL with VAULT_TEST_DB=postgres.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { define, isError, store, uid } from './dataplane-helpers.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

test('paging to the end while points are stored meets every point once, the new ones last', async (t) => {
  const key = await define(v, { key: uid('PAGED'), repeatable: true });
  const subject = uid('paged');
  t.is((await store(v, subject, Array.from({ length: 2500 }, (_, i) => ({ attribute: key, value: `v${i}` })))).status, 200);
  const seen: string[] = [];
  const added: string[] = [];
  for (let page = 0; ; page++) {
    const res = await v.request('POST', '/search', { body: { query: { attributes: [key] }, page, count: 1000 } });
    if (res.status === 404) break;
    t.is(res.status, 200);
    seen.push(...res.body.data.map((p: { dataPointId: string }) => p.dataPointId));
    if (res.body.data.length < 1000) continue; // the last page: the next one is past the end
    const late = await store(v, subject, [{ attribute: key, value: `late${page}` }]);
    added.push(late.body.data[0].dataPointId);
  }
  t.is(seen.length, 2500 + added.length);
  t.is(new Set(seen).size, seen.length, 'no point twice');
  t.deepEqual(seen.slice(2500), added, 'the points stored meanwhile come last, in the order stored');
});

test('a bulk audit of 50,001 events is 400 and records none of them', async (t) => {
  const key = await define(v, { key: uid('BULK') });
  const subject = uid('bulk');
  const events = Array.from({ length: 50_001 }, (_, i) => ({ eventType: 'STORE', subjectId: subject, dataPointId: `${subject}-${i}`, data: { attribute: key }, applicationId: 'crm' }));
  isError(t, await v.request('POST', '/auditlogs/bulk', { body: events }), 400, 'body must NOT have more than 50000 items');
  t.deepEqual((await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data, []);
});

test('purging a subject of 20,000 points is all of them at once, while another subject is stored and read', async (t) => {
  const key = await define(v, { key: uid('PURGED'), repeatable: true, indexed: true });
  const subject = uid('purged');
  for (let part = 0; part < 2; part++) {
    t.is((await store(v, subject, Array.from({ length: 10_000 }, (_, i) => ({ attribute: key, value: `p${part}-${i}` })))).status, 200);
  }
  const other = uid('other');
  t.is((await store(v, other, [{ attribute: key, value: 'kept' }])).status, 200);

  let purging = true;
  const statuses: number[] = [];
  const meanwhile = (async () => {
    while (purging) {
      statuses.push((await store(v, other, [{ attribute: key, value: 'meanwhile' }])).status);
      statuses.push((await v.request('GET', `/datasubjects/${other}/attributes/${key}`, { headers: { 'x-decryption-key': v.keys.privateKey } })).status);
    }
  })();
  const purged = await v.request('DELETE', `/datasubjects/${subject}/data`);
  purging = false;
  await meanwhile;
  t.is(purged.status, 200);
  t.is(purged.body.data, 'Successfully Deleted Data Subject');
  t.true(statuses.length > 0 && statuses.every((s) => s === 200), JSON.stringify(statuses));

  isError(t, await v.request('POST', '/search', { body: { query: { entityId: [subject] } } }), 404, 'Data Not Found');
  isError(t, await v.request('POST', '/search', { body: { query: { values: [{ attribute: key, value: 'p1-9999' }] } } }), 404, 'Data Not Found');
  const deletes = await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'DELETE', count: '1000', page: '19' } });
  t.is(deletes.body.data.length, 1000, 'a DELETE record for each of the 20,000 points');
  t.is((await v.request('POST', '/search', { body: { query: { entityId: [other] } } })).status, 200);
});
