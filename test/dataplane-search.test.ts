/**
 * POST /search through HTTP: blind-indexed value matches, attribute selection, every filter,
 * paging, and what an application may see. Each test uses its own attributes and subjects,
 * so the concurrent tests of this file never see each other's points.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { define, isError, store, uid } from './dataplane-helpers.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

function search(body: unknown, apiKey?: string) {
  return v.request('POST', '/search', { body, apiKey });
}

const ids = (res: { body: any }) => (res.body.data ?? []).map((p: any) => p.dataPointId);

test('a value pair finds equal values of an indexed attribute, whatever their case and spacing', async (t) => {
  const EMAIL = await define(v, { key: uid('EMAIL'), indexed: true });
  const [a, b, c] = [uid('s'), uid('s'), uid('s')];
  const pa = (await store(v, a, [{ attribute: EMAIL, value: 'Ada@Example.org' }])).body.data[0];
  const pb = (await store(v, b, [{ attribute: EMAIL, value: 'ada@example.org ' }])).body.data[0];
  await store(v, c, [{ attribute: EMAIL, value: 'bob@example.org' }]);
  const res = await search({ query: { values: [{ attribute: EMAIL, value: 'ADA@example.org' }] }, page: 0, count: 100 });
  t.is(res.status, 200);
  t.deepEqual(ids(res), [pa.dataPointId, pb.dataPointId]);
  const { value, ...withoutValue } = pa;
  t.is(value, 'Ada@Example.org');
  t.deepEqual(res.body.data[0], withoutValue, 'the same data point, without its value');
  t.false('value' in res.body.data[0]);
});

test('equal values of different attributes are told apart', async (t) => {
  const FIRST = await define(v, { key: uid('FIRST'), indexed: true });
  const LAST = await define(v, { key: uid('LAST'), indexed: true });
  const s = uid('s');
  const [first] = (await store(v, s, [{ attribute: FIRST, value: 'Morgan' }, { attribute: LAST, value: 'Morgan' }])).body.data;
  const res = await search({ query: { values: [{ attribute: FIRST, value: 'Morgan' }] } });
  t.deepEqual(ids(res), [first.dataPointId]);
  const rows = await v.vault.db.selectFrom('datapoints').select('blind_index').where('entity_id', '=', s).execute();
  t.not(rows[0].blind_index, rows[1].blind_index);
});

test('a pair on an attribute that is not indexed is ignored; attributes select regardless of indexing', async (t) => {
  const NOTE = await define(v, { key: uid('NOTE') });
  const CODE = await define(v, { key: uid('CODE'), indexed: true });
  const s = uid('s');
  const [note, code] = (await store(v, s, [{ attribute: NOTE, value: 'hello' }, { attribute: CODE, value: 'X1' }])).body.data;
  isError(t, await search({ query: { values: [{ attribute: NOTE, value: 'hello' }] } }), 404, 'Data Not Found');
  isError(t, await search({ query: { values: [{ attribute: uid('UNDEFINED'), value: 'hello' }] } }), 404, 'Data Not Found');
  t.deepEqual(ids(await search({ query: { attributes: [NOTE] } })), [note.dataPointId]);
  // values OR attributes.
  t.deepEqual(ids(await search({ query: { values: [{ attribute: NOTE, value: 'hello' }, { attribute: CODE, value: 'x1' }], attributes: [NOTE] } })), [note.dataPointId, code.dataPointId]);
  t.deepEqual(ids(await search({ query: { values: [{ attribute: CODE, value: 'nope' }], attributes: [NOTE] } })), [note.dataPointId]);
});

test('structured values are indexed per leaf; search returns the sub-points', async (t) => {
  const ADDR = await define(v, { key: uid('ADDR'), indexed: true, schema: { city: 'string', '[lines]': 'string' } });
  const s = uid('s');
  const root = (await store(v, s, [{ attribute: ADDR, value: { city: 'Paris', lines: ['1 rue A', '2 rue B'] } }])).body.data[0];
  const res = await search({ query: { values: [{ attribute: `${ADDR}.lines`, value: '2 RUE B' }] } });
  t.is(res.body.data.length, 1);
  t.like(res.body.data[0], { attribute: `${ADDR}.lines`, structureRootId: root.dataPointId, entityId: s });
  t.is((await search({ query: { values: [{ attribute: `${ADDR}.city`, value: 'paris' }] } })).body.data.length, 1);
  isError(t, await search({ query: { values: [{ attribute: ADDR, value: 'Paris' }] } }), 404, 'Data Not Found', 'the root has no index entry');
  t.deepEqual(ids(await search({ query: { attributes: [ADDR] } })), [root.dataPointId]);
});

test('regulations filter by any of the listed ones; "" matches points without any', async (t) => {
  const A = await define(v, { key: uid('A'), repeatable: true });
  const s = uid('s');
  const [gdpr, both, none] = (
    await store(v, s, [
      { attribute: A, value: '1', regulations: ['GDPR'] },
      { attribute: A, value: '2', regulations: ['CCPA', 'HIPAA'] },
      { attribute: A, value: '3' },
    ])
  ).body.data;
  const q = (regulations: string[]) => search({ query: { attributes: [A], regulations } });
  t.deepEqual(ids(await q(['GDPR'])), [gdpr.dataPointId]);
  t.deepEqual(ids(await q(['GDPR', 'HIPAA'])), [gdpr.dataPointId, both.dataPointId]);
  t.deepEqual(ids(await q([''])), [none.dataPointId]);
  t.deepEqual(ids(await q(['', 'CCPA'])), [both.dataPointId, none.dataPointId]);
  t.deepEqual(ids(await q([])), [gdpr.dataPointId, both.dataPointId, none.dataPointId], 'an empty list filters nothing');
  isError(t, await q(['PCI_DSS']), 404, 'Data Not Found');
});

test('sensitivity, entityId (and its alias subjectId) and location filter with AND', async (t) => {
  const B = await define(v, { key: uid('B'), repeatable: true });
  const [s1, s2] = [uid('s'), uid('s')];
  const [p1] = (await store(v, s1, [{ attribute: B, value: 'x', sensitivity: 'SENSITIVE' }], { origin: 'US-CA' })).body.data;
  const [p2, p3] = (await store(v, s2, [{ attribute: B, value: 'y', sensitivity: 'SENSITIVE' }, { attribute: B, value: 'z' }], { origin: 'GB' })).body.data;
  await v.vault.db.updateTable('datapoints').set({ city: 'London' }).where('id', '=', p2.dataPointId).execute();

  t.deepEqual(ids(await search({ query: { attributes: [B], sensitivity: 'SENSITIVE' } })), [p1.dataPointId, p2.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], entityId: [s2] } })), [p2.dataPointId, p3.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], subjectId: [s1] } })), [p1.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], entityId: [s1], subjectId: [s2] } })), [p1.dataPointId, p2.dataPointId, p3.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], sensitivity: 'SENSITIVE', entityId: [s2] } })), [p2.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], country: 'us' } })), [p1.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], subdivision: 'US-CA' } })), [p1.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [B], country: 'GB', city: 'London' } })), [p2.dataPointId]);
  isError(t, await search({ query: { attributes: [B], country: 'FR' } }), 404, 'Data Not Found');
  // Without a selector, the filters alone choose.
  t.deepEqual(ids(await search({ query: { entityId: [s1] } })), [p1.dataPointId]);
  isError(t, await search({ query: { attributes: [B], sensitivity: 'TOP_SECRET' } }), 400, 'Sensitivity must be one of NORMAL, PERSONAL, SENSITIVE, CONFIDENTIAL');
});

test('created and modified date ranges are inclusive and accept any ISO 8601 form', async (t) => {
  const C = await define(v, { key: uid('C'), repeatable: true });
  const s = uid('s');
  const points = (await store(v, s, [1, 2, 3].map((n) => ({ attribute: C, value: String(n) })))).body.data;
  const dates = ['2020-01-01T00:00:00.000Z', '2020-06-01T00:00:00.000Z', '2021-01-01T00:00:00.000Z'];
  for (const [i, p] of points.entries()) {
    await v.vault.db.updateTable('datapoints').set({ created_date: dates[i], modified_date: dates[2 - i] }).where('id', '=', p.dataPointId).execute();
  }
  const q = (extra: object) => search({ query: { attributes: [C], ...extra } });
  t.deepEqual(ids(await q({ minCreatedDate: '2020-06-01T00:00:00Z' })), [points[1].dataPointId, points[2].dataPointId]);
  t.deepEqual(ids(await q({ maxCreatedDate: '2020-06-01T02:00:00+02:00' })), [points[0].dataPointId, points[1].dataPointId]);
  t.deepEqual(ids(await q({ minCreatedDate: '2020-02-01', maxCreatedDate: '2020-12-31' })), [points[1].dataPointId]);
  t.deepEqual(ids(await q({ minModifiedDate: '2020-12-01T00:00:00Z' })), [points[0].dataPointId]);
  t.deepEqual(ids(await q({ maxModifiedDate: '2020-01-01T00:00:00.000+00:00' })), [points[2].dataPointId]);
  const res = await q({ minCreatedDate: '2020-06-01T00:00:00Z', maxCreatedDate: '2020-06-01T00:00:00Z' });
  t.is(res.body.data[0].createdDate, '2020-06-01T00:00:00.000+00:00');
  isError(t, await q({ minCreatedDate: 'yesterday' }), 400, 'minCreatedDate must be an ISO 8601 date');
});

test('paging: 0-based pages of count results, ordered by creation then id; count 1 to 1000', async (t) => {
  const D = await define(v, { key: uid('D'), repeatable: true });
  const s = uid('s');
  const all = (await store(v, s, Array.from({ length: 7 }, (_, i) => ({ attribute: D, value: `v${i}` })))).body.data.map((p: any) => p.dataPointId);
  const page = (p?: number, count?: number) => search({ query: { attributes: [D] }, ...(p === undefined ? {} : { page: p }), ...(count === undefined ? {} : { count }) });
  t.deepEqual(ids(await page(0, 3)), all.slice(0, 3));
  t.deepEqual(ids(await page(1, 3)), all.slice(3, 6));
  t.deepEqual(ids(await page(2, 3)), all.slice(6));
  isError(t, await page(3, 3), 404, 'Data Not Found');
  t.deepEqual(ids(await page()), all, 'defaults: page 0, up to 100');
  t.deepEqual(ids(await search({ query: { attributes: [D] }, page: null, count: null })), all);
  t.deepEqual(ids(await page(0, 1000)), all);
  for (const count of [0, -1, 1001, 2.5]) isError(t, await page(0, count), 400, 'Count must be an integer from 1 to 1000', `count ${count}`);
  for (const p of [-1, 0.5]) isError(t, await page(p, 10), 400, 'Page must be an integer from 0 to 1000000', `page ${p}`);
});

test('applications see only the attributes they may access', async (t) => {
  const OPEN = await define(v, { key: uid('OPEN'), indexed: true });
  const SECRET = await define(v, { key: uid('SECRET'), indexed: true });
  const s = uid('s');
  const [open] = (await store(v, s, [{ attribute: OPEN, value: 'same' }, { attribute: SECRET, value: 'same' }])).body.data;
  const limited = await v.createApplication([OPEN]);
  t.deepEqual(ids(await search({ query: { entityId: [s] } }, limited)), [open.dataPointId]);
  t.deepEqual(ids(await search({ query: { attributes: [OPEN, SECRET] } }, limited)), [open.dataPointId]);
  isError(t, await search({ query: { values: [{ attribute: SECRET, value: 'same' }] } }, limited), 404, 'Data Not Found');
  const none = await v.createApplication([]);
  isError(t, await search({ query: { entityId: [s] } }, none), 404, 'Data Not Found');
});

test('malformed search requests are 400', async (t) => {
  for (const body of [{ query: { bogus: 1 } }, { query: { values: [{ attribute: 'A' }] } }, { query: { attributes: 'A' } }, { query: [] }, { page: '1' }, { extra: true }, { query: { entityId: [1] } }]) {
    t.is((await search(body)).status, 400, JSON.stringify(body));
  }
  t.is((await v.request('POST', '/search', { payload: '{', headers: { 'content-type': 'application/json' } })).status, 400);
  t.is((await search({ query: {} }, null as unknown as string)).status, 401);
});

test('as many selectors as the schema allows find what they name, on either dialect', async (t) => {
  const CODE = await define(v, { key: uid('CODE'), indexed: true });
  const s = uid('s');
  const [point] = (await store(v, s, [{ attribute: CODE, value: 'c999' }])).body.data;
  const values = Array.from({ length: 1000 }, (_, i) => ({ attribute: CODE, value: `c${i}` }));
  const attributes = [...Array.from({ length: 999 }, (_, i) => uid(`NONE${i}`)), CODE];
  for (const query of [{ values }, { attributes }, { values, attributes }, { values, attributes, entityId: [s] }]) {
    const res = await search({ query });
    t.is(res.status, 200, JSON.stringify(res.body).slice(0, 200));
    t.deepEqual(ids(res), [point.dataPointId]);
  }
});

test('an application limited to thousands of attributes searches with many selectors', async (t) => {
  const CODE = await define(v, { key: uid('CODE'), indexed: true });
  const s = uid('s');
  const [point] = (await store(v, s, [{ attribute: CODE, value: 'c7' }])).body.data;
  const allowed = [CODE, ...Array.from({ length: 9_999 }, (_, i) => `ALLOWED_${i}`)];
  const app = await v.request('POST', '/applications', { body: { name: uid('many'), attributes: allowed } });
  t.is(app.status, 201);
  const values = Array.from({ length: 32 }, (_, i) => ({ attribute: CODE, value: `c${i}` }));
  const res = await search({ query: { values, regulations: ['', ...Array.from({ length: 999 }, (_, i) => `REG_${i}`)] } }, app.body.data.apiKey);
  t.is(res.status, 200, JSON.stringify(res.body).slice(0, 200));
  t.deepEqual(ids(res), [point.dataPointId]);
});

test('numbers match as JSON reads them when sent as numbers, and as written when sent as strings', async (t) => {
  const F = await define(v, { key: uid('F'), indexed: true, repeatable: true, schema: 'float' });
  const s = uid('s');
  // Sent as written here: JSON.stringify would spell 2.0 as 2 and hide the case.
  const payload = `{"data":[{"attribute":"${F}","value":2.0},{"attribute":"${F}","value":"3.0"}]}`;
  const stored = await v.request('POST', `/entities/${s}/attributes`, { payload, headers: { 'content-type': 'application/json', 'x-encryption-key': v.keys.publicKey } });
  t.is(stored.status, 200);
  const [two, three] = stored.body.data.map((p: any) => p.dataPointId);
  const find = (value: string | number) => search({ query: { values: [{ attribute: F, value }] } });
  t.deepEqual(ids(await find(2)), [two], 'the number 2.0 is the number 2');
  t.deepEqual(ids(await find('2')), [two]);
  isError(t, await find('2.0'), 404, 'Data Not Found');
  t.deepEqual(ids(await find('3.0')), [three], 'the string "3.0" as written');
  isError(t, await find(3), 404, 'Data Not Found');
});

test('indexing turned off is ignored by search; turned back on, it finds what was stored while it was on', async (t) => {
  const CODE = await define(v, { key: uid('CODE'), indexed: true, repeatable: true });
  const s = uid('s');
  const find = (value: string) => search({ query: { values: [{ attribute: CODE, value }] } });
  const [before] = (await store(v, s, [{ attribute: CODE, value: 'before' }])).body.data;
  await define(v, { key: CODE, indexed: false, repeatable: true });
  isError(t, await find('before'), 404, 'Data Not Found', 'a pair on an attribute no longer indexed is ignored');
  await store(v, s, [{ attribute: CODE, value: 'while-off' }]);
  await define(v, { key: CODE, indexed: true, repeatable: true });
  const [after] = (await store(v, s, [{ attribute: CODE, value: 'after' }])).body.data;
  t.deepEqual(ids(await find('before')), [before.dataPointId], 'its entry was kept');
  isError(t, await find('while-off'), 404, 'Data Not Found', 'stored unindexed, never indexed');
  t.deepEqual(ids(await find('after')), [after.dataPointId]);
});
