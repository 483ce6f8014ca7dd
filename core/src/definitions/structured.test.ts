/**
 * Structured schemas end to end on PostgreSQL (and SQLite, through the suite's other pass):
 * every sub-attribute a schema allows must be storable, readable and searchable by its
 * `KEY.sub` name, and a schema whose names could not be must be refused when it is defined,
 * not with a 500 at the first store.
 */
import test from 'ava';
import { createPostgresDatabase, startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
let drop: (() => Promise<void>) | undefined;
test.before(async () => {
  // PostgreSQL in both passes: its btree index rows are bounded, SQLite's are not.
  const database = await createPostgresDatabase();
  drop = database.drop;
  v = await startTestVault({ env: { VAULT_DB: database.url } });
});
test.after.always(async () => {
  await v?.close();
  await drop?.();
});

const define = (body: unknown) => v.request('POST', '/attributes', { body });
const store = (subject: string, data: unknown[]) => v.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
/** Alphanumeric and incompressible, as PostgreSQL would otherwise shrink a long index entry. */
const randomKey = (length: number) => {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
};

test('a sub-attribute path (KEY.sub.leaf) longer than 256 characters is refused when defined', async (t) => {
  const message = 'Sub-attribute paths (KEY.sub.leaf) may be at most 256 characters';
  const cases = [
    { key: 'LONG_LEAF', schema: { [randomKey(4000)]: 'string' } },
    { key: 'LONG_LIST', schema: { [`[${randomKey(300)}]`]: { number: 'string' } } },
    // Each key short, the path they make long.
    { key: 'LONG_PATH', schema: { [randomKey(100)]: { [randomKey(100)]: { [randomKey(100)]: 'int' } } } },
  ];
  for (const body of cases) {
    const res = await define(body);
    t.is(res.status, 400, body.key);
    t.is(res.body.message, message, body.key);
    t.is((await v.request('GET', `/attributes/${body.key}`)).status, 404, 'nothing was defined');
  }
  // Adding such a sub-attribute to an existing definition is refused the same way.
  t.is((await define({ key: 'GROWS', schema: { a: 'string' } })).status, 201);
  const grown = await define({ key: 'GROWS', schema: { a: 'string', [randomKey(300)]: 'string' } });
  t.is(grown.status, 400);
  t.is(grown.body.message, message);
  t.deepEqual((await v.request('GET', '/attributes/GROWS')).body.data.schema, { a: 'string' });
});

test('the longest path a schema may have is stored, read, searched and reported like any other', async (t) => {
  const key = 'EDGE';
  const list = randomKey(40);
  // `EDGE.` + list + `.` + leaf = 256 characters.
  const leaf = randomKey(256 - key.length - list.length - 2);
  const defined = await define({ key, indexed: true, schema: { [`[${list}]`]: { [leaf]: 'string' } } });
  t.is(defined.status, 201, JSON.stringify(defined.body).slice(0, 300));
  const path = `${key}.${list}.${leaf}`;
  t.is(path.length, 256);

  const stored = await store('edge-subject', [{ attribute: key, value: { [list]: [{ [leaf]: 'first' }, { [leaf]: 'second' }] } }]);
  t.is(stored.status, 200, JSON.stringify(stored.body).slice(0, 300));
  const read = await v.request('GET', `/entities/edge-subject/attributes/${path}`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(read.status, 200);
  t.deepEqual(read.body.data.map((p: any) => p.value), ['first', 'second']);
  const found = await v.request('POST', '/search', { body: { query: { values: [{ attribute: path, value: 'SECOND' }] } } });
  t.is(found.status, 200);
  t.deepEqual(found.body.data.map((p: any) => p.attribute), [path]);

  const audited = await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', applicationId: 'crm', subjectId: 'edge-reported', data: { attribute: key, value: { [list]: [{ [leaf]: 'x' }] } } } });
  t.is(audited.status, 200, JSON.stringify(audited.body).slice(0, 300));
  t.deepEqual(audited.body.subPoints.map((s: any) => s.attribute), [path]);
});

test('a sub-attribute given both as a value and as a list ([name]) is refused: KEY.name would name either', async (t) => {
  const message = 'Sub-attribute key is given twice: phones and [phones]';
  const res = await define({ key: 'TWICE', schema: { '[phones]': 'string', phones: 'string' } });
  t.is(res.status, 400);
  t.is(res.body.message, message);
  t.is((await v.request('GET', '/attributes/TWICE')).status, 404);
  // Nor may a list be added beside a stored value's sub-attribute of the same name: the values
  // stored under it would no longer fit.
  t.is((await define({ key: 'GROWN_TWICE', schema: { city: 'string', address: { zip: 'string' } } })).status, 201);
  t.is((await store('twice-subject', [{ attribute: 'GROWN_TWICE', value: { city: 'Oxford', address: { zip: 'OX1' } } }])).status, 200);
  const added = await define({ key: 'GROWN_TWICE', schema: { city: 'string', address: { zip: 'string', '[zip]': 'int' } } });
  t.is(added.status, 400);
  t.is(added.body.message, 'Sub-attribute key is given twice: zip and [zip]');
  const again = await store('twice-subject', [{ attribute: 'GROWN_TWICE', value: { city: 'Oxford', address: { zip: 'OX1' } } }]);
  t.is(again.status, 200, 'what was stored can be stored again');
});
