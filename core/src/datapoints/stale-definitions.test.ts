/**
 * Two vault processes on one database: each keeps attribute definitions for half a second.
 * A store through one must still be checked against a definition the other just changed or
 * deleted, never against its own copy.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';

let a: TestVault;
let b: TestVault;
const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
/** An attribute whose store makes B load every definition into its catalog. */
const WARM = uid('WARM');
test.before(async () => {
  a = await startTestVault();
  b = await startTestVault({ env: { VAULT_DB: a.config.db, VAULT_ADMIN_API_KEY: a.adminKey, VAULT_INDEX_KEY: a.config.indexKey!, VAULT_ENCRYPTION_PUBLIC_KEY: a.keys.publicKey } });
  await define({ key: WARM, schema: 'string', repeatable: true });
});
test.after.always(async () => {
  await b?.close();
  await a?.close();
});

const store = (v: TestVault, subject: string, data: unknown[]) =>
  v.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': a.keys.publicKey }, apiKey: a.adminKey });
const define = async (body: Record<string, unknown>) => {
  const res = await a.request('POST', '/attributes', { body });
  if (res.status !== 200 && res.status !== 201) throw new Error(JSON.stringify(res.body));
};
/** B loads every definition into its catalog, as any store does, once its last copy expired. */
const warm = async () => {
  await new Promise((r) => setTimeout(r, 600));
  const res = await store(b, uid('warm'), [{ attribute: WARM, value: 'x' }]);
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
};
const pointsOf = (subject: string) => a.vault.db.selectFrom('datapoints').select(['id', 'definition_key']).where('entity_id', '=', subject).execute();


test.serial('a definition deleted through one process takes no more data through the other', async (t) => {
  const key = uid('GONE');
  await define({ key, schema: 'string' });
  await warm();
  t.is((await a.request('DELETE', `/attributes/${key}`)).status, 200);
  const subject = uid('subject');
  const res = await store(b, subject, [{ attribute: key, value: 'after the delete' }]);
  t.is(res.status, 400);
  t.is(res.body.message, 'No such attribute');
  t.deepEqual(await pointsOf(subject), [], 'no point of a definition that is gone');
});

test.serial('a schema changed through one process is the one the other checks values against', async (t) => {
  const key = uid('SCHEMA');
  await define({ key, schema: 'string' });
  await warm();
  await define({ key, schema: 'int' });
  const res = await store(b, uid('subject'), [{ attribute: key, value: 'not-an-int' }]);
  t.is(res.status, 422);
  t.is(res.body.message, `Expected int for value of attribute ${key}`);
  t.is((await store(b, uid('subject'), [{ attribute: key, value: 42 }])).status, 200);
});

test.serial('an attribute made nonrepeatable through one process takes one value through the other', async (t) => {
  const key = uid('ONCE');
  await define({ key, schema: 'string', repeatable: true });
  await warm();
  await define({ key, repeatable: false });
  const subject = uid('subject');
  const res = await store(b, subject, [{ attribute: key, value: 'one' }, { attribute: key, value: 'two' }]);
  t.is(res.status, 409);
  t.is(res.body.message, 'Received multiple values for nonrepeatable attribute');
  t.deepEqual(await pointsOf(subject), []);
});

test.serial('an attribute defined through one process is taken at once through the other', async (t) => {
  await warm();
  const key = uid('NEW');
  await define({ key, schema: 'string' });
  t.is((await store(b, uid('subject'), [{ attribute: key, value: 'first' }])).status, 200);
});

test.serial('stores racing a delete of their definition: each is stored and the delete refused, or refused and the delete done', async (t) => {
  const key = uid('RACE');
  await define({ key, schema: 'string', repeatable: true });
  await warm();
  const subject = uid('subject');
  const [stores, deleted] = await Promise.all([
    Promise.all(Array.from({ length: 8 }, (_, i) => store(b, subject, [{ attribute: key, value: `v${i}` }]))),
    a.request('DELETE', `/attributes/${key}`),
  ]);
  const points = await pointsOf(subject);
  if (deleted.status === 200) {
    t.deepEqual(points, [], 'the definition went, and no point of it stayed');
  } else {
    t.is(deleted.status, 409);
    t.is(points.length, stores.filter((s) => s.status === 200).length);
    t.true(points.length > 0);
  }
  for (const s of stores) t.true(s.status === 200 || (s.status === 400 && s.body.message === 'No such attribute'), JSON.stringify(s.body));
});

test.serial('a tag deleted through one process is not put back by a store through the other', async (t) => {
  const key = uid('TAGGED');
  const tag = uid('campaign').toLowerCase();
  await define({ key, schema: 'string', tags: [tag] });
  await warm();
  t.is((await a.request('DELETE', `/tags/${tag}`)).status, 200);
  const res = await store(b, uid('subject'), [{ attribute: key, value: 'after the delete' }]);
  t.is(res.status, 200);
  t.deepEqual(res.body.data[0].tags, [], 'the point is not labelled with the deleted tag');
  t.is((await b.request('GET', `/tags/${tag}`, { apiKey: a.adminKey })).status, 404, 'the deleted tag stays deleted');
  t.deepEqual((await b.request('GET', `/attributes/${key}`, { apiKey: a.adminKey })).body.data.tags, []);
});

test.serial('a regulation deleted through one process is not given to points stored through the other', async (t) => {
  const key = uid('REGULATED');
  const regulation = uid('HOUSE');
  t.true((await a.request('POST', '/regulations', { body: { key: regulation, name: 'House rules' } })).status < 300);
  await define({ key, schema: 'string', regulations: [regulation] });
  await warm();
  t.is((await a.request('DELETE', `/regulations/${regulation}`)).status, 200);
  const res = await store(b, uid('subject'), [{ attribute: key, value: 'after the delete' }]);
  t.is(res.status, 200);
  t.deepEqual(res.body.data[0].regulations, [], 'the point does not carry the deleted regulation');
  const labelled = await a.vault.db.selectFrom('datapoint_regulations').select('regulation').where('regulation', '=', regulation).execute();
  t.deepEqual(labelled, []);
});
