import { randomUUID } from 'node:crypto';
import test from 'ava';
import fc from 'fast-check';
import type { RulesEngine } from '../rules/engine.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes, hostileJson } from '../testing/fuzz.js';
import { nowIso } from '../util/time.js';

let v: TestVault;
/** Attribute keys the stand-in rules engine reports as referenced by a rule. */
const referenced = new Set<string>();

test.before(async () => {
  v = await startTestVault();
  const real = v.vault.rules;
  const engine = Object.create(real) as RulesEngine;
  engine.findReferencingRule = async (trx, kind, name) =>
    kind === 'attribute' && referenced.has(name) ? 'rule-using-it' : real.findReferencingRule(trx, kind, name);
  v.vault.rules = engine;
});
test.after.always(async () => v?.close());

/** A stored value, written directly: the data plane is not what these tests are about. */
async function addPoint(definitionKey: string, entityId: string, type = 'datasubject'): Promise<void> {
  const now = nowIso();
  await v.vault.db
    .insertInto('entities')
    .values({ id: entityId, type, legal_hold: 0, created_date: now, updated_date: now })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await v.vault.db
    .insertInto('datapoints')
    .values({
      id: randomUUID(),
      entity_id: entityId,
      attribute: definitionKey,
      definition_key: definitionKey,
      structure_root_id: null,
      report_only: 1,
      sensitivity: 'NORMAL',
      subject_key_id: null,
      ciphertext: null,
      blind_index: null,
      country: null,
      subdivision: null,
      city: null,
      expires_at: null,
      auto_delete: 0,
      created_date: now,
      modified_date: now,
    })
    .execute();
}

const post = (body: unknown, apiKey?: string) => v.request('POST', '/attributes', { body, apiKey });

test('a definition is created with every member and read back', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'customer' } });
  const schema = { first: 'string', last: 'string', '[phones]': { number: 'string', kind: 'string' }, address: { city: 'string', zip: 'integer' } };
  const res = await post({
    key: 'FULL_NAME',
    name: 'Full name',
    hint: 'Legal name',
    schema,
    repeatable: true,
    indexed: true,
    immutable: false,
    tags: ['pii', 'identity', 'pii'],
    regulations: ['GDPR', 'CCPA'],
    entityTypes: ['customer', 'datasubject'],
  });
  t.is(res.status, 201);
  const expected = {
    key: 'FULL_NAME',
    name: 'Full name',
    hint: 'Legal name',
    schema: { ...schema, address: { city: 'string', zip: 'int' } },
    repeatable: true,
    indexed: true,
    immutable: false,
    tags: ['identity', 'pii'],
    regulations: ['CCPA', 'GDPR'],
    entityTypes: ['customer', 'datasubject'],
  };
  t.like(res.body.data, expected);
  t.deepEqual(Object.keys(res.body.data).sort(), [...Object.keys(expected), 'createdDate', 'modifiedDate'].sort());
  const one = await v.request('GET', '/attributes/FULL_NAME');
  t.is(one.status, 200);
  t.deepEqual(one.body.data, res.body.data);
  const list = await v.request('GET', '/attributes');
  t.deepEqual(list.body.data.find((d: any) => d.key === 'FULL_NAME'), res.body.data);
});

test('only a name: it is the key; no schema: string; tags are created on first use', async (t) => {
  const res = await post({ name: 'NICKNAME', tags: ['first-use-tag'] });
  t.is(res.status, 201);
  t.like(res.body.data, { key: 'NICKNAME', name: 'NICKNAME', schema: 'string', repeatable: false, indexed: false, immutable: false, entityTypes: [] });
  t.is((await v.request('GET', '/tags/first-use-tag')).status, 200);
});

test('an update changes what it names and keeps the rest', async (t) => {
  const created = (await post({ key: 'EMAIL', name: 'E-mail', hint: 'work', indexed: true, tags: ['contact'], regulations: ['GDPR'] })).body.data;
  await new Promise((r) => setTimeout(r, 5));
  const updated = await post({ key: 'EMAIL', hint: null, tags: [], createdDate: '2000-01-01T00:00:00Z' });
  t.is(updated.status, 201);
  t.like(updated.body.data, { key: 'EMAIL', name: 'E-mail', hint: null, indexed: true, tags: [], regulations: ['GDPR'], schema: 'string' });
  t.is(updated.body.data.createdDate, created.createdDate);
  t.true(updated.body.data.modifiedDate > created.modifiedDate);
});

test('malformed definitions are 400 with the exact messages and change nothing', async (t) => {
  const cases: Array<[unknown, string | RegExp]> = [
    [{}, 'Attribute must contain at least one of key or name'],
    [{ key: '', name: null, schema: 'string' }, 'Attribute must contain at least one of key or name'],
    [{ key: 'has space' }, 'Attribute key must contain only alphanumeric characters and underscores'],
    [{ name: 'Display Name' }, 'Attribute key must contain only alphanumeric characters and underscores'],
    [{ key: 'DOT.TED' }, 'Attribute key must contain only alphanumeric characters and underscores'],
    [{ key: 12 }, 'Attribute key must contain only alphanumeric characters and underscores'],
    [{ key: 'NULL_SCHEMA', schema: null }, 'Schema cannot be null'],
    [{ key: 'BAD_SUB', schema: { 'first name': 'string' } }, 'Sub-attribute key contains unusable characters'],
    [{ key: 'BAD_SUB2', schema: { a: { '[b c]': 'string' } } }, 'Sub-attribute key contains unusable characters'],
    [{ key: 'BAD_CLASS', schema: 12 }, 'Schema has unexpected class'],
    [{ key: 'BAD_CLASS2', schema: 'blob' }, 'Schema has unexpected class'],
    [{ key: 'BAD_CLASS3', schema: ['string'] }, 'Schema has unexpected class'],
    [{ key: 'BAD_CLASS4', schema: {} }, 'Schema has unexpected class'],
    [{ key: 'BAD_REG', regulations: ['GDPR', 'NOT_A_REGULATION'] }, 'No such regulation'],
    [{ key: 'BAD_REG2', regulations: ['\u0000'] }, 'Strings may not contain NUL characters'],
    [{ key: 'BAD_TYPE', entityTypes: ['spaceship'] }, 'No such entity type'],
    [{ key: 'BAD_TAG', tags: ['ok', 'bad\u0000'] }, 'Strings may not contain NUL characters'],
    [{ key: 'BAD_TAG2', tags: ['ok', 'bad\u0001'] }, 'Tag name must be 1 to 256 characters, without control characters'],
    [{ key: 'BAD_TAG3', tags: ['csi\u009b31m'] }, 'Tag name must be 1 to 256 characters, without control characters'],
    [{ key: 'BAD_NAME2', name: 'next\u0085line' }, 'Attribute name must be a string of at most 1024 characters, without control characters'],
    [{ key: 'BAD_NAME', name: 5 }, /^Attribute name must be a string/],
    [{ key: 'BAD_FLAG', repeatable: 'yes' }, /must be boolean/],
    [{ key: 'EXTRA', colour: 'red' }, /must NOT have additional properties/],
  ];
  for (const [body, message] of cases) {
    const res = await post(body);
    t.is(res.status, 400, JSON.stringify(body));
    if (typeof message === 'string') t.is(res.body.message, message, JSON.stringify(body));
    else t.regex(res.body.message, message);
  }
  const keys = (await v.request('GET', '/attributes')).body.data.map((d: any) => d.key);
  for (const key of ['NULL_SCHEMA', 'BAD_SUB', 'BAD_CLASS', 'BAD_REG', 'BAD_TYPE', 'BAD_TAG', 'BAD_NAME', 'EXTRA']) t.false(keys.includes(key), key);
  t.is((await v.request('GET', '/tags/ok')).status, 404, 'a refused definition creates no tags');
});

test('an attribute name is counted in characters, an emoji as one', async (t) => {
  const name = '\u{1F600}'.repeat(1000);
  const res = await post({ key: 'EMOJI_NAME', name });
  t.is(res.status, 201, JSON.stringify(res.body).slice(0, 200));
  t.is(res.body.data.name, name);
  const tooLong = await post({ key: 'EMOJI_NAME', name: '\u{1F600}'.repeat(1025) });
  t.is(tooLong.status, 400);
  t.is(tooLong.body.message, 'Attribute name must be a string of at most 1024 characters, without control characters');
});

test('with data stored, changes that would strand it are 409; without data they pass', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'device' } });
  for (const key of ['HELD', 'FREE']) {
    t.is((await post({ key, schema: { a: 'string' }, repeatable: true, entityTypes: ['datasubject', 'device'] })).status, 201);
  }
  await addPoint('HELD', 'held-person');
  await addPoint('HELD', 'held-device', 'device');

  const repeatable = await post({ key: 'HELD', repeatable: false });
  t.is(repeatable.status, 409);
  t.is(repeatable.body.message, 'Cannot change existing attribute from repeatable to non-repeatable, as it would invalidate existing data');
  const schema = await post({ key: 'HELD', schema: { a: 'int' } });
  t.is(schema.status, 409);
  t.is(schema.body.message, 'Cannot edit attribute schema, as it may invalidate existing data');
  const removed = await post({ key: 'HELD', schema: { b: 'string' } });
  t.is(removed.status, 409);
  t.is(removed.body.message, 'Cannot edit attribute schema, as it may invalidate existing data');
  const types = await post({ key: 'HELD', entityTypes: ['datasubject'] });
  t.is(types.status, 409);
  t.is(types.body.message, 'Cannot remove entity types from attribute, as it would invalidate existing data');
  // An empty list means datasubject only, which also drops `device`.
  t.is((await post({ key: 'HELD', entityTypes: [] })).status, 409);
  t.like((await v.request('GET', '/attributes/HELD')).body.data, { repeatable: true, schema: { a: 'string' }, entityTypes: ['datasubject', 'device'] });

  // Additions never strand anything.
  const added = await post({ key: 'HELD', schema: { a: 'string', b: 'int' }, entityTypes: ['datasubject', 'device', 'customer'] });
  t.is(added.status, 201);
  t.like(added.body.data, { schema: { a: 'string', b: 'int' } });
  // Removing a type whose entities hold no data of it is fine.
  t.is((await post({ key: 'HELD', entityTypes: ['datasubject', 'device'] })).status, 201);

  const free = await post({ key: 'FREE', repeatable: false, schema: 'date', entityTypes: [] });
  t.is(free.status, 201);
  t.like(free.body.data, { repeatable: false, schema: 'date', entityTypes: [] });
});

test('non-admins may read definitions but not change them, whatever they send', async (t) => {
  await post({ key: 'GUARDED' });
  const apiKey = await v.createApplication(['*']);
  for (const body of [{ key: 'GUARDED', schema: 'int' }, { colour: 'red' }]) {
    const res = await post(body, apiKey);
    t.is(res.status, 403);
    t.is(res.body.message, 'Forbidden access to edit attribute definitions');
  }
  const del = await v.request('DELETE', '/attributes/GUARDED', { apiKey });
  t.is(del.status, 403);
  t.is(del.body.message, 'Forbidden access to delete attribute definitions');
  const read = await v.request('GET', '/attributes/GUARDED', { apiKey });
  t.is(read.status, 200);
  t.is(read.body.data.schema, 'string');
  t.is((await v.request('GET', '/attributes', { apiKey })).status, 200);
});

test('deleting: 404s, in use, referenced by rule, then gone with its links', async (t) => {
  const missing = await v.request('GET', '/attributes/NEVER_DEFINED');
  t.is(missing.status, 404);
  t.is(missing.body.message, 'No such attribute');
  for (const path of ['/attributes/NEVER_DEFINED', '/attributes/a.b']) {
    const del = await v.request('DELETE', path);
    t.is(del.status, 404, path);
    t.is(del.body.message, 'Attribute not found');
  }
  const nul = await v.request('DELETE', '/attributes/%00');
  t.is(nul.status, 400);
  t.is(nul.body.message, 'Strings may not contain NUL characters');

  await post({ key: 'USED' });
  await addPoint('USED', 'user-of-used');
  const inUse = await v.request('DELETE', '/attributes/USED');
  t.is(inUse.status, 409);
  t.is(inUse.body.message, 'Cannot delete attribute, because it is in use');

  await post({ key: 'RULED', tags: ['ruled-tag'], regulations: ['HIPAA'], entityTypes: ['datasubject'] });
  referenced.add('RULED');
  const ruled = await v.request('DELETE', '/attributes/RULED');
  t.is(ruled.status, 409);
  t.is(ruled.body.message, 'Cannot delete attribute, because it is referenced by rule');
  t.is((await v.request('GET', '/attributes/RULED')).status, 200);
  referenced.delete('RULED');

  const del = await v.request('DELETE', '/attributes/RULED');
  t.is(del.status, 200);
  t.deepEqual(del.body, { data: 'Successfully Deleted Attribute' });
  t.is((await v.request('GET', '/attributes/RULED')).status, 404);
  for (const table of ['definition_tags', 'definition_regulations', 'definition_entity_types'] as const) {
    t.is((await v.vault.db.selectFrom(table).selectAll().where('definition_key', '=', 'RULED').execute()).length, 0, table);
  }
});

test('concurrent creates of one key all succeed, as one definition', async (t) => {
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) => post({ key: 'RACED', hint: `try ${i}`, tags: [`race-${i % 2}`] })));
  t.deepEqual(results.map((r) => r.status), [201, 201, 201, 201, 201, 201]);
  t.is((await v.request('GET', '/attributes')).body.data.filter((d: any) => d.key === 'RACED').length, 1);
});

test('hostile input never causes a 5xx', async (t) => {
  const nearlyValid = fc.record(
    {
      key: fc.constantFrom('FUZZ_A', 'FUZZ_B', 'FUZZ_C'),
      schema: hostileJson,
      tags: fc.array(fc.string({ maxLength: 300 }), { maxLength: 3 }),
      regulations: fc.array(fc.constantFrom('GDPR', 'HIPAA', '', 'x y'), { maxLength: 2 }),
      entityTypes: fc.array(fc.constantFrom('datasubject', 'customer', '\u0000'), { maxLength: 2 }),
      repeatable: fc.boolean(),
      indexed: fc.boolean(),
    },
    { requiredKeys: ['key'] },
  );
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/attributes', body: nearlyValid },
    { method: 'POST', url: '/attributes' },
    { method: 'GET', url: '/attributes/{id}' },
    { method: 'DELETE', url: '/attributes/{id}' },
  ]);
});
