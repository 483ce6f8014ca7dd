/**
 * Reads of many points, as a team with real volumes makes them. A subject's read answers every
 * point in full, so its size is the subject's: one holding dozens of `file` values made the
 * vault hold its whole answer several times over (rows, opened values, the JSON) and, past
 * some 500 MB, fail with a 500 after seconds of work, or run out of memory and take every
 * other request down with it. An answer of several points is now bounded (`VAULT_READ_LIMIT`,
 * made small here); a single value is always answered.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { READ_POINT_ALLOWANCE } from './reads.js';

const LIMIT = 256 * 1024;
const TOO_LARGE = `The values asked for exceed ${LIMIT} bytes (VAULT_READ_LIMIT): ask for fewer attributes, or read one point at a time with GET /data/{dataPointId}`;

let v: TestVault;
test.before(async () => {
  v = await startTestVault({ env: { VAULT_READ_LIMIT: String(LIMIT) } });
  for (const body of [
    { key: 'DOC', schema: 'file', repeatable: true },
    { key: 'NAME', schema: 'string' },
    { key: 'NOTE', schema: 'string', repeatable: true },
  ]) {
    if ((await v.request('POST', '/attributes', { body })).status !== 201) throw new Error('could not define attributes');
  }
});
test.after.always(async () => v?.close());

const store = (subject: string, data: unknown[]) =>
  v.request('POST', `/datasubjects/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
const read = (url: string) => v.request('GET', url, { headers: { 'x-decryption-key': v.keys.privateKey } });
const reads = async (subject: string) =>
  (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ', count: '1000' } })).body.data as unknown[];

test('a read of several points larger than VAULT_READ_LIMIT is 413, records no read, and each point stays readable', async (t) => {
  const subject = 'many-files';
  const docs = [];
  for (const fill of ['a', 'b', 'c']) {
    const stored = await store(subject, [{ attribute: 'DOC', value: fill.repeat(LIMIT / 2) }]);
    t.is(stored.status, 200);
    docs.push(stored.body.data[0].dataPointId as string);
  }
  t.is((await store(subject, [{ attribute: 'NAME', value: 'Ada' }])).status, 200);

  for (const url of [`/datasubjects/${subject}/attributes`, `/datasubjects/${subject}/attributes/DOC`, `/entities/${subject}/attributes?attributes=DOC,NAME`]) {
    const res = await read(url);
    t.is(res.status, 413, url);
    t.is(res.body.message, TOO_LARGE, url);
  }
  t.deepEqual(await reads(subject), [], 'a refused read reads nothing');

  // What fits is answered as before; every value can be read on its own.
  const name = await read(`/datasubjects/${subject}/attributes?attributes=NAME`);
  t.is(name.status, 200);
  t.is(name.body.data[0].value, 'Ada');
  for (const [i, id] of docs.entries()) {
    const one = await read(`/data/${id}`);
    t.is(one.status, 200);
    t.is(one.body.data.value, 'abc'[i].repeat(LIMIT / 2));
  }
});

test('a single value larger than VAULT_READ_LIMIT is still answered by an attribute read', async (t) => {
  const big = 'z'.repeat(LIMIT * 2);
  t.is((await store('one-big-file', [{ attribute: 'DOC', value: big }])).status, 200);
  const res = await read('/datasubjects/one-big-file/attributes/DOC');
  t.is(res.status, 200);
  t.is(res.body.data[0].value, big);
});

test('points count towards the limit too, so a subject of countless tiny points is bounded', async (t) => {
  const subject = 'tiny-notes';
  const points = Math.ceil(LIMIT / READ_POINT_ALLOWANCE) + 1;
  t.is((await store(subject, Array.from({ length: points }, (_, i) => ({ attribute: 'NOTE', value: `${i}` })))).status, 200);
  const res = await read(`/datasubjects/${subject}/attributes`);
  t.is(res.status, 413);
  t.is(res.body.message, TOO_LARGE);
});

test('at the default limit, a subject of 5,000 points is answered completely, in order, with one READ record naming each', async (t) => {
  const big = await startTestVault();
  t.teardown(() => big.close());
  t.is((await big.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string', repeatable: true } })).status, 201);
  const values = Array.from({ length: 5000 }, (_, i) => `note ${i}`);
  const stored = await big.request('POST', '/datasubjects/many-notes/attributes', {
    body: { data: values.map((value) => ({ attribute: 'NOTE', value })) },
    headers: { 'x-encryption-key': big.keys.publicKey },
  });
  t.is(stored.status, 200);
  const before = process.memoryUsage().heapUsed;
  const res = await big.request('GET', '/datasubjects/many-notes/attributes', { headers: { 'x-decryption-key': big.keys.privateKey } });
  t.log(`answer ${JSON.stringify(res.body).length} characters; heap used changed by ${Math.round((process.memoryUsage().heapUsed - before) / 1e6)} MB across it (a collection may run)`);
  t.is(res.status, 200);
  t.deepEqual(
    res.body.data.map((p: { value: string }) => p.value),
    values,
  );
  const last = (await big.request('GET', '/activity', { query: { subjectId: 'many-notes', eventType: 'READ', count: '1000', page: '4' } })).body.data;
  t.is(last.length, 1000, 'the last page of the one record’s 5,000 entries');
  t.is(last[999].dataPointId, res.body.data[4999].dataPointId);
  t.is(last[999].part, 5000);
});
