/**
 * A point's tags and regulations are those in force when it was stored (README "Storing and
 * reading data"): relabelling a definition or an entity later changes what is stored from
 * then on, and search by regulation follows the points' own labels.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  if ((await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string', repeatable: true, tags: ['before'] } })).status !== 201) throw new Error('could not define NOTE');
});
test.after.always(async () => v?.close());

const store = (subject: string, value: string) =>
  v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute: 'NOTE', value }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
const labels = async (subject: string) =>
  Object.fromEntries(
    (await v.request('GET', `/entities/${subject}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } })).body.data.map((p: any) => [p.value, { tags: p.tags, regulations: p.regulations }]),
  );

test.serial('a definition relabelled later labels the points stored from then on; earlier points keep their labels', async (t) => {
  t.is((await store('labelled', 'first')).status, 200);
  t.is((await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string', repeatable: true, tags: ['after'], regulations: ['GDPR'] } })).status, 201, 'an upsert');
  t.is((await store('labelled', 'second')).status, 200);
  t.deepEqual(await labels('labelled'), {
    first: { tags: ['before'], regulations: [] },
    second: { tags: ['after'], regulations: ['GDPR'] },
  });
  const found = await v.request('POST', '/search', { body: { query: { attributes: ['NOTE'], regulations: ['GDPR'], entityId: 'labelled' } } });
  t.is(found.status, 200);
  t.is(found.body.data.length, 1, 'only the point stored under GDPR');
});

test.serial("an entity's tags changed later label the points stored from then on", async (t) => {
  t.is((await v.request('POST', '/entities', { body: { id: 'tagged-entity', tags: ['old-tag'] } })).status, 201);
  t.is((await store('tagged-entity', 'first')).status, 200);
  t.is((await v.request('POST', '/entities', { body: { id: 'tagged-entity', tags: ['new-tag'] } })).status, 200);
  t.is((await store('tagged-entity', 'second')).status, 200);
  const after = await labels('tagged-entity');
  t.deepEqual(after.first.tags, ['after', 'old-tag']);
  t.deepEqual(after.second.tags, ['after', 'new-tag']);
});
