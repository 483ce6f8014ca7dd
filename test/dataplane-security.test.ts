/**
 * What an attacker with a copy of the database (or of the logs) gets: no value, no key, no
 * API key. What a purge leaves behind: ciphertext nobody can open. And hostile input on
 * every data plane route: never a 5xx, never half a store.
 */
import test from 'ava';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import fc from 'fast-check';
import { EnvelopeError, openValue, unwrapDataKey } from '../core/src/crypto/envelope.js';
import { fuzzRoutes, hostileJson } from '../core/src/testing/fuzz.js';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { define, isError, pointCount, read, store, uid } from './dataplane-helpers.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const onSqlite = process.env.VAULT_TEST_DB !== 'postgres';

interface Secrets {
  values: string[];
  keys: string[];
}

/** Stores distinctive values of every kind, and returns them with the key material in play. */
async function storeSecrets(): Promise<Secrets & { subject: string }> {
  const marker = randomBytes(6).toString('hex');
  const EMAIL = await define(v, { key: uid('EMAIL'), indexed: true });
  const NAME = await define(v, { key: uid('NAME'), indexed: true, schema: { first: 'string', '[aliases]': 'string' } });
  const DOC = await define(v, { key: uid('DOC'), schema: 'file' });
  const AGE = await define(v, { key: uid('AGE'), schema: 'int' });
  const subject = uid('subject');
  const values = [`email-${marker}@example.org`, `First${marker}`, `alias-${marker}`, `document-body-${marker}-`.repeat(50), `9${marker.replace(/\D/g, '').slice(0, 8)}7`];
  const appKey = await v.createApplication(['*']);
  const res = await store(
    v,
    subject,
    [
      { attribute: EMAIL, value: values[0] },
      { attribute: NAME, value: { first: values[1], aliases: [values[2]] } },
      { attribute: DOC, value: values[3] },
      { attribute: AGE, value: Number(values[4]) },
    ],
    { apiKey: appKey },
  );
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  // Reads, a search and failures put their own lines in the log.
  await read(v, `/entities/${subject}/attributes`, { apiKey: appKey });
  await v.request('POST', '/search', { body: { query: { values: [{ attribute: EMAIL, value: values[0] }] } }, apiKey: appKey });
  await read(v, `/entities/${subject}/attributes`, { key: 'garbage' });
  await store(v, subject, [{ attribute: AGE, value: values[1] }]);
  values.push(...(await valuesRulesAndAuditSee(EMAIL, AGE, marker)));

  const pointIds = (await v.vault.db.selectFrom('datapoints').select('subject_key_id').where('entity_id', '=', subject).execute()).map((r) => r.subject_key_id!);
  const credential = await v.vault.keyring.requireDecryptionKey(v.keys.privateKey);
  const dataKeys = await v.vault.datapoints.dataKeys.forRead(v.vault.db, pointIds, credential);
  const keys = [
    v.keys.privateKey,
    ...v.keys.privatePem.split('\n').filter((line) => line.length > 40),
    v.adminKey,
    appKey,
    v.config.indexKey!,
    Buffer.from(v.config.indexKey!, 'base64').toString('hex'),
    ...[...dataKeys.values()].map((k) => k.toString('hex')),
    ...[...dataKeys.values()].map((k) => k.toString('base64')),
  ];
  const binary = [Buffer.from(v.config.indexKey!, 'base64'), ...dataKeys.values()];
  return { subject, values, keys: [...keys, ...binary.map((b) => b.toString('latin1'))] };
}

/**
 * Values that rules read (alerts, a block, a legal hold) and that audit events carry to the
 * rules without their being kept, refused ones among them; returns them.
 */
async function valuesRulesAndAuditSee(EMAIL: string, AGE: string, marker: string): Promise<string[]> {
  const rule = (action: object, pattern: string) => ({
    key: uid('RULE'),
    type: 'data',
    constraint: { type: 'user', attribute: EMAIL, predicate: 'regex', value: pattern },
    action,
  });
  const alerting = rule({ type: 'alert', alertLevel: 'WARNING', message: 'an address to look at' }, `^(alerted|audited)-${marker}`);
  for (const body of [
    alerting,
    rule({ type: 'block', message: 'not this address' }, `^blocked-${marker}`),
    rule({ type: 'legalHold' }, `^held-${marker}`),
  ]) {
    const res = await v.request('POST', '/rules', { body });
    if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  }
  const seen = [`alerted-${marker}@example.org`, `blocked-${marker}@example.org`, `held-${marker}@example.org`, `audited-${marker}@example.org`, `updated-${marker}@example.org`, `refused-${marker}`];
  const expect = (res: { status: number; body: unknown }, status: number) => {
    if (res.status !== status) throw new Error(`${status} expected: ${res.status} ${JSON.stringify(res.body)}`);
  };
  expect(await store(v, uid('subject'), [{ attribute: EMAIL, value: seen[0] }]), 200);
  expect(await store(v, uid('subject'), [{ attribute: EMAIL, value: seen[1] }]), 403);
  expect(await store(v, uid('subject'), [{ attribute: EMAIL, value: seen[2] }]), 200);
  const audited = uid('subject');
  const stored = await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', subjectId: audited, data: { attribute: EMAIL, value: seen[3] }, applicationId: 'crm' } });
  expect(stored, 200);
  const dataPointId = (stored.body as { dataPointId: string }).dataPointId;
  expect(await v.request('POST', '/auditlogs', { body: { eventType: 'UPDATE', dataPointId, data: { value: seen[4] }, applicationId: 'crm' } }), 200);
  expect(await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', subjectId: audited, data: { attribute: EMAIL, value: `${seen[1]}` }, applicationId: 'crm' } }), 403);
  expect(await v.request('POST', '/auditlogs/bulk', { body: [{ eventType: 'STORE', subjectId: audited, data: { attribute: AGE, value: seen[5] }, applicationId: 'crm' }] }), 400);
  const alerts = await v.request('GET', '/alerts', { query: { rule: alerting.key } });
  if ((alerts.body as { data: unknown[] }).data.length !== 2) throw new Error(`the store and the audit event raise an alert each: ${JSON.stringify(alerts.body)}`);
  return seen;
}

function leaks(haystack: Buffer, needles: string[]): string[] {
  return needles.filter((n) => haystack.includes(Buffer.from(n, 'utf8')) || haystack.includes(Buffer.from(n, 'latin1')));
}

(onSqlite ? test : test.skip)('the SQLite files hold no stored value, no private key, no API key and no index or data key', async (t) => {
  const secrets = await storeSecrets();
  const path = v.config.db.slice('sqlite:'.length);
  const files = [path, `${path}-wal`, `${path}-shm`].filter((f) => existsSync(f));
  t.true(files.length >= 1);
  const bytes = Buffer.concat(files.map((f) => readFileSync(f)));
  t.true(bytes.includes(Buffer.from(secrets.subject)), 'the files do hold the data (entity ids are not secret)');
  t.deepEqual(leaks(bytes, secrets.values), [], 'no value in clear');
  t.deepEqual(leaks(bytes, secrets.values.map((s) => s.toLowerCase())), [], 'not even in index form');
  t.deepEqual(leaks(bytes, secrets.keys), [], 'no key material');
});

test('no database row and no log line holds a value or key material', async (t) => {
  const secrets = await storeSecrets();
  const tables =
    v.vault.dialect === 'postgres'
      ? (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'public'`.execute(v.vault.db)).rows
      : (await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(v.vault.db)).rows;
  t.true(tables.some((r) => r.name === 'datapoints'));
  const cells: Buffer[] = [];
  for (const { name } of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(name)}`.execute(v.vault.db)).rows;
    for (const row of rows) for (const cell of Object.values(row)) if (cell !== null) cells.push(Buffer.isBuffer(cell) ? cell : Buffer.from(String(cell)));
  }
  const everything = Buffer.concat(cells);
  t.deepEqual(leaks(everything, secrets.values), []);
  t.deepEqual(leaks(everything, secrets.keys), []);

  const logs = Buffer.from(v.logs.join('\n'));
  t.true(v.logs.length > 0, 'the vault did log the requests');
  t.deepEqual(leaks(logs, secrets.values), [], 'no value in the logs');
  t.deepEqual(leaks(logs, secrets.keys), [], 'no key in the logs');
});

test('after a purge, the subject ciphertext copied beforehand cannot be opened, not even with the private key', async (t) => {
  const NAME = await define(v, { key: uid('NAME'), schema: { first: 'string', last: 'string' } });
  const NOTE = await define(v, { key: uid('NOTE'), repeatable: true });
  const subject = uid('subject');
  await store(v, subject, [{ attribute: NAME, value: { first: 'Ada', last: 'Lovelace' } }, { attribute: NOTE, value: 'analytical engine' }]);
  // A subject of its own that keeps its key, rather than whatever the tests beside this one stored by then.
  await store(v, uid('bystander'), [{ attribute: NOTE, value: 'kept' }]);
  // A second key generation for the same subject: a new process, or a key rotation.
  v.vault.datapoints.dataKeys.clear();
  await store(v, subject, [{ attribute: NOTE, value: 'second generation' }]);

  const copied = await v.vault.db.selectFrom('datapoints').selectAll().where('entity_id', '=', subject).execute();
  t.is(copied.length, 5);
  const generations = new Set(copied.map((r) => r.subject_key_id));
  t.is(generations.size, 2);
  const privateKey = createPrivateKey(v.keys.privatePem);
  // Before the purge, the private key opens everything: the copy is a real one.
  for (const row of copied) {
    const wrapped = await v.vault.db.selectFrom('subject_keys').select('wrapped_key').where('id', '=', row.subject_key_id!).executeTakeFirstOrThrow();
    t.notThrows(() => openValue(unwrapDataKey(privateKey, Buffer.from(wrapped.wrapped_key)), Buffer.from(row.ciphertext!), row.id, row.attribute));
  }

  t.deepEqual((await v.request('DELETE', `/datasubjects/${subject}/data`)).body, { data: 'Successfully Deleted Data Subject' });
  t.deepEqual(await v.vault.db.selectFrom('subject_keys').select('id').where('entity_id', '=', subject).execute(), [], 'the wrapped data keys are destroyed');

  // Offline: no data key left in the database opens any of the copied ciphertext.
  const remaining = await v.vault.db.selectFrom('subject_keys').select(['wrapped_key', 'encryption_key_id']).execute();
  let tried = 0;
  for (const { wrapped_key } of remaining) {
    const key = unwrapDataKey(privateKey, Buffer.from(wrapped_key));
    for (const row of copied) {
      tried++;
      t.throws(() => openValue(key, Buffer.from(row.ciphertext!), row.id, row.attribute), { instanceOf: EnvelopeError });
    }
  }
  t.true(tried > 0, 'other subjects still have keys to try');

  // Through the vault: the rows restored from the copy, read with the private key, give nothing.
  await v.vault.db.insertInto('datapoints').values(copied).execute();
  for (const row of copied) isError(t, await read(v, `/data/${row.id}`), 404, 'Data Not Found');
  await v.vault.db.deleteFrom('datapoints').where('entity_id', '=', subject).execute();
});

/** Every point of an entity with its last change: equal snapshots mean nothing was written. */
async function snapshot(entityId: string): Promise<string> {
  const rows = await v.vault.db.selectFrom('datapoints').select(['id', 'modified_date']).where('entity_id', '=', entityId).orderBy('id').execute();
  return rows.map((r) => `${r.id}@${r.modified_date}`).join(',');
}

test('the fuzzed data plane never answers 5xx and never stores half a request', async (t) => {
  const A = await define(v, { key: uid('A'), repeatable: true });
  const B = await define(v, { key: uid('B'), schema: { x: 'int', '[y]': 'string' }, indexed: true });
  const subject = uid('subject');
  const seeded = (await store(v, subject, [{ attribute: A, value: 'seed' }])).body.data[0];
  const enc = { 'x-encryption-key': v.keys.publicKey };
  const dec = { 'x-decryption-key': v.keys.privateKey };
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/entities/{id}/attributes', headers: enc },
    { method: 'POST', url: '/datasubjects/{id}/attributes', headers: enc },
    { method: 'GET', url: '/entities/{id}/attributes', headers: dec },
    { method: 'GET', url: '/datasubjects/{id}/attribute/{id}', headers: dec },
    { method: 'GET', url: `/entities/${subject}/attributes/{id}`, headers: dec },
    { method: 'GET', url: '/data/{id}', headers: dec },
    { method: 'DELETE', url: '/data/{id}' },
    { method: 'DELETE', url: '/entities/{id}/attributes/{id}' },
    { method: 'DELETE', url: '/datasubjects/{id}/data' },
    { method: 'POST', url: '/search' },
  ]);

  // Store bodies built from valid and invalid parts: either all of it is stored or none.
  const item = fc.record(
    {
      attribute: fc.constantFrom(A, B, 'NOPE', `${B}.x`),
      value: fc.oneof(hostileJson, fc.record({ x: fc.oneof(fc.integer(), fc.string()), y: fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }) }, { requiredKeys: [] })),
      sensitivity: fc.constantFrom('NORMAL', 'SECRET', 'PERSONAL'),
      regulations: fc.constantFrom([], ['GDPR'], ['NOPE']),
      tags: fc.constantFrom([], ['ok'], ['\u0000bad']),
    },
    { requiredKeys: ['attribute'] },
  );
  await fc.assert(
    fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 4 }), fc.constantFrom(uid('fz'), subject), async (data, entityId) => {
      const before = await snapshot(entityId);
      const res = await store(v, entityId, data);
      const after = await snapshot(entityId);
      if (res.status >= 500) return false;
      if (res.status !== 200) return after === before;
      // Stored: every attribute of the request is there (an overwrite may shrink a structure).
      const ids: string[] = res.body.data.map((p: any) => p.dataPointId);
      return ids.length === data.length && ids.every((id) => after.includes(id));
    }),
    { numRuns: 150 },
  );
  t.is((await read(v, `/data/${seeded.dataPointId}`)).body.data.value, 'seed');
});

test('a store of more than 10,000 values, however nested, is refused before any is encrypted', async (t) => {
  const DIARY = await define(v, { key: uid('DIARY'), repeatable: true, schema: { code: 'string', '[notes]': { text: 'string' } } });
  const subject = uid('subject');
  const notes = (n: number) => Array.from({ length: n }, (_, i) => ({ text: `note ${i}` }));
  const refused = await store(v, subject, [{ attribute: DIARY, value: { code: 'c', notes: notes(10_000) } }]);
  isError(t, refused, 413, 'A store may hold at most 10000 values, each leaf of a structured value counted');
  t.is(await pointCount(v, subject), 0);
  // Spread over items, the same count is the same refusal; at the limit it is stored.
  const spread = await store(v, subject, [
    { attribute: DIARY, value: { code: 'a', notes: notes(5_000) } },
    { attribute: DIARY, value: { code: 'b', notes: notes(5_000) } },
  ]);
  t.is(spread.status, 413);
  t.is((await store(v, subject, [{ attribute: DIARY, value: { code: 'c', notes: notes(9_999) } }])).status, 200);
});
