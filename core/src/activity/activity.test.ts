import test from 'ava';
import type { AddressInfo } from 'node:net';
import { CompiledQuery, sql } from 'kysely';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';
import { defineAttribute, dropActivityGuards as dropGuards, unique } from '../audit/fixtures.js';
import { entryPage, verifyActivityChain } from './service.js';
import type { ActivityRecord } from './log.js';
import { toRecordRow } from './records.js';
import { SEAL_LOCK_KEY } from './sealer.js';

let v: TestVault;
const EMAIL = unique('EMAIL');
test.before(async () => {
  v = await startTestVault();
  await defineAttribute(v, EMAIL);
});
test.after.always(async () => v?.close());

const audit = (body: unknown, target: TestVault = v) => target.request('POST', '/auditlogs', { body });
const store = (subjectId: string, extra: Record<string, unknown> = {}) => ({
  eventType: 'STORE',
  subjectId,
  applicationId: 'crm',
  data: { attribute: EMAIL, value: 'someone@example.org' },
  ...extra,
});

/** What the data plane does: records appended inside its own transaction. */
async function appendVaulted(target: TestVault, records: Partial<ActivityRecord>[]): Promise<void> {
  await target.vault.db.transaction().execute((trx) =>
    target.vault.activity.append(
      trx,
      records.map((r) => ({ eventType: 'READ', applicationId: 'app-1', reportOnly: false, timestamp: new Date().toISOString(), ...r }) as ActivityRecord),
    ),
  );
}

/**
 * What a request writes when another process holds the seal (PostgreSQL): the records,
 * unchained, for the sealer. SQLite writers always hold the seal, so tests write these directly.
 */
async function appendPending(target: TestVault, records: Partial<ActivityRecord>[]): Promise<void> {
  const now = new Date().toISOString();
  await target.vault.db
    .insertInto('activity_pending')
    .values(records.map((r) => toRecordRow({ eventType: 'READ', applicationId: 'app-1', reportOnly: false, timestamp: now, ...r } as ActivityRecord, now)))
    .execute();
}


test('records list oldest first with the event’s fields and a hash, never a value', async (t) => {
  const subject = unique('subject');
  const eventId = unique('evt');
  const stored = await audit({
    ...store(subject),
    eventId,
    applicationUser: 'alice',
    dataStoreName: 'crm_db',
    dataStoreServer: 'db-1.internal',
    dataStoreEntityName: 'customers',
    location: { country: 'FR', subdivision: 'FR-IDF', city: 'Paris' },
    timestamp: '2024-05-01T12:00:00Z',
  });
  await audit({ eventType: 'READ', dataPointId: stored.body.dataPointId, applicationId: 'reporting' });
  await v.vault.sealer.sealAll();
  const res = await v.request('GET', '/activity', { query: { subjectId: subject } });
  t.is(res.status, 200);
  t.is(res.body.data.length, 2);
  const [first, second] = res.body.data;
  t.like(first, {
    eventId,
    eventType: 'STORE',
    subjectId: subject,
    dataPointId: stored.body.dataPointId,
    attribute: EMAIL,
    applicationId: 'crm',
    applicationUser: 'alice',
    dataStoreName: 'crm_db',
    dataStoreServer: 'db-1.internal',
    dataStoreEntityName: 'customers',
    location: { country: 'FR', subdivision: 'FR-IDF', city: 'Paris' },
    reportOnly: true,
    timestamp: '2024-05-01T12:00:00.000Z',
  });
  t.regex(first.hash, /^[0-9a-f]{64}$/);
  t.true(second.sequence > first.sequence);
  t.is(second.eventType, 'READ');
  t.regex(second.eventId, /^[0-9a-f-]{36}$/, 'events without an id get one');
  t.false(JSON.stringify(res.body).includes('someone@example.org'));
  t.false('value' in first);
});

test('each filter narrows the list', async (t) => {
  const subject = unique('subject');
  const user = unique('user');
  const app = unique('app');
  const a = await audit({ ...store(subject), applicationId: app, applicationUser: user, timestamp: '2023-01-01T00:00:00Z' });
  const b = await audit({ ...store(subject), applicationUser: user, timestamp: '2023-06-01T00:00:00Z' });
  await audit({ eventType: 'DELETE', dataPointId: b.body.dataPointId, applicationId: app, timestamp: '2023-09-01T00:00:00Z' });
  const ids = async (query: Record<string, string>) =>
    (await v.request('GET', '/activity', { query: { subjectId: subject, ...query } })).body.data.map((r: any) => `${r.eventType}:${r.dataPointId}`);
  const [A, B] = [a.body.dataPointId, b.body.dataPointId];
  t.deepEqual(await ids({}), [`STORE:${A}`, `STORE:${B}`, `DELETE:${B}`]);
  t.deepEqual(await ids({ dataPointId: B }), [`STORE:${B}`, `DELETE:${B}`]);
  t.deepEqual(await ids({ eventType: 'DELETE' }), [`DELETE:${B}`]);
  t.deepEqual(await ids({ applicationId: app }), [`STORE:${A}`, `DELETE:${B}`]);
  t.deepEqual(await ids({ applicationUser: user }), [`STORE:${A}`, `STORE:${B}`]);
  t.deepEqual(await ids({ attribute: EMAIL, from: '2023-03-01T00:00:00Z' }), [`STORE:${B}`, `DELETE:${B}`]);
  t.deepEqual(await ids({ to: '2023-06-01T02:00:00+02:00' }), [`STORE:${A}`, `STORE:${B}`]);
  t.deepEqual(await ids({ attribute: 'OTHER' }), []);
  t.deepEqual(await ids({ count: '2', page: '1' }), [`DELETE:${B}`]);
  t.deepEqual(await ids({ count: '1', page: '0' }), [`STORE:${A}`]);
});

// SQLite keeps no table statistics, so which index a combined filter walks is the vault's
// choice to make: the subject's records, not every record of the application.
const onSqlite = process.env.VAULT_TEST_DB === 'postgres' ? test.skip : test;
onSqlite('a filter by subject and application walks the subject’s records, not the application’s', async (t) => {
  const db = v.vault.db;
  for (const filter of [{ subjectId: 's' }, { subjectsOfPoint: ['s', 't'] }, { subjectsOfPoint: ['s'], dataPointId: 'p' }]) {
    const query = entryPage('sqlite', 'activity_log', { ...filter, applicationId: 'crm' }, undefined, undefined, 100, 0).compile(db);
    const plan = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
    t.regex(plan.rows.map((r) => r.detail).join(' | '), /USING INDEX activity_log_by_subject/, JSON.stringify(filter));
  }
});

test('a point’s records, reads included, are found by its id alone, also once deleted and its id taken by another subject', async (t) => {
  const [first, second] = [unique('subject'), unique('subject')];
  const point = unique('point');
  const read = (subjectId: string) => audit({ eventType: 'READ', subjectId, dataPointId: point, applicationId: 'crm', data: { attribute: EMAIL } });
  t.is((await read(first)).status, 200);
  t.is((await read(first)).status, 200);
  // Another point of the same subject, read in between, stays out.
  const other = await audit(store(first));
  await audit({ eventType: 'READ', dataPointId: other.body.dataPointId, applicationId: 'crm' });
  t.is((await audit({ eventType: 'DELETE', dataPointId: point, applicationId: 'crm' })).status, 200);
  t.is((await read(second)).status, 200);
  // Records waiting for the sealer and sealed ones alike.
  await appendPending(v, [{ eventType: 'READ', subjectId: second, dataPointId: point, attribute: EMAIL }]);
  const listed = (await v.request('GET', '/activity', { query: { dataPointId: point } })).body.data.map((r: any) => `${r.eventType}:${r.subjectId}`);
  t.deepEqual(listed, [`READ:${first}`, `READ:${first}`, `DELETE:${first}`, `READ:${second}`, `READ:${second}`]);
  const reads = await v.request('GET', '/activity', { query: { dataPointId: point, eventType: 'READ', count: '2', page: '1' } });
  t.deepEqual(reads.body.data.map((r: any) => r.subjectId), [second, second]);
  t.deepEqual((await v.request('GET', '/activity', { query: { dataPointId: unique('never') } })).body.data, []);
});

test('paging and filters are checked', async (t) => {
  const bad: Record<string, string>[] = [{ count: '0' }, { count: '1001' }, { page: '-1' }, { count: 'many' }, { eventType: 'COPY' }, { colour: 'red' }];
  for (const query of bad) {
    const res = await v.request('GET', '/activity', { query });
    t.is(res.status, 400, JSON.stringify(query));
  }
  const from = await v.request('GET', '/activity', { query: { from: 'last week' } });
  t.is(from.status, 400);
  t.is(from.body.message, 'from must be an ISO 8601 date-time');
  const to = await v.request('GET', '/activity', { query: { to: '2024-13-45' } });
  t.is(to.body.message, 'to must be an ISO 8601 date-time');
  const most = await v.request('GET', '/activity', { query: { count: '1000' } });
  t.is(most.status, 200);
});

test('only admins read the log or verify it', async (t) => {
  const apiKey = await v.createApplication(['*']);
  for (const url of ['/activity', '/activity/verify']) {
    const res = await v.request('GET', url, { apiKey });
    t.is(res.status, 403);
    t.is(res.body.message, 'Forbidden');
    t.is((await v.request('GET', url, { apiKey: null })).status, 401);
  }
});

test('the data plane’s records share the log and the chain', async (t) => {
  const subject = unique('subject');
  await appendVaulted(v, [
    { eventType: 'STORE', subjectId: subject, dataPointId: 'vaulted-1', attribute: EMAIL },
    { eventType: 'READ', subjectId: subject, dataPointId: 'vaulted-1', attribute: EMAIL, applicationUser: 'bob' },
  ]);
  const res = await v.request('GET', '/activity', { query: { subjectId: subject } });
  t.deepEqual(res.body.data.map((r: any) => [r.eventType, r.reportOnly, r.applicationId, r.recordedBy]), [
    ['STORE', false, 'app-1', 'app-1'],
    ['READ', false, 'app-1', 'app-1'],
  ]);
  t.true((await verifyActivityChain(v.vault.db)).valid);
});

test('appending outside a transaction is refused', async (t) => {
  await t.throwsAsync(
    v.vault.activity.append(v.vault.db, [{ eventType: 'READ', applicationId: 'x', reportOnly: false, timestamp: new Date().toISOString() }]),
    { message: /inside a transaction/ },
  );
});

test('text the databases would alter is stored as hashed', async (t) => {
  // Each on its own too: a NUL in otherwise well-formed text, a lone low surrogate, a pair kept whole.
  const cases: [string, string][] = [
    ['nul\u0000 and lone \uD800 surrogate', 'nul\uFFFD and lone \uFFFD surrogate'],
    ['only a nul\u0000 here', 'only a nul\uFFFD here'],
    ['a lone low \uDC00 surrogate', 'a lone low \uFFFD surrogate'],
    ['a whole pair \uD83D\uDE42 stays', 'a whole pair \uD83D\uDE42 stays'],
  ];
  for (const [sent, stored] of cases) {
    const subject = unique('subject');
    await appendVaulted(v, [{ subjectId: subject, applicationUser: sent }]);
    const res = await v.request('GET', '/activity', { query: { subjectId: subject } });
    t.is(res.body.data[0].applicationUser, stored);
  }
  t.true((await verifyActivityChain(v.vault.db)).valid);
});

test('text with quoting and list characters is sealed as sent', async (t) => {
  // Quotes, backslashes, braces, commas, the word NULL and empty text come back from the
  // sealed log as they went in, and null as null, whatever form the sealer's INSERT takes.
  const texts = ['a "quoted" word', 'back\\slash and \\" both', '{braced, with a comma}', 'NULL', '', '  spaced  ', 'line\nbreak\ttab', 'é 漢字 🙂', "it's", undefined];
  const subject = unique('subject');
  await appendPending(
    v,
    texts.map((text, i) => ({ subjectId: subject, eventId: `quoted-${i}`, applicationUser: text, dataStoreName: text })),
  );
  await v.vault.sealer.sealAll();
  const listed = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.deepEqual(
    listed.map((r: any) => [r.eventId, r.sealed, r.applicationUser, r.dataStoreName]),
    texts.map((text, i) => [`quoted-${i}`, true, text, text]),
  );
  t.true((await verifyActivityChain(v.vault.db)).valid);
});

test('hostile queries never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'GET', url: '/activity?subjectId={id}' },
    { method: 'GET', url: '/activity?from={id}&to={id}' },
    { method: 'GET', url: '/activity?count={id}&page={id}' },
    { method: 'GET', url: '/activity/verify' },
  ]);
});

test('concurrent appenders keep one linear chain', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  const work: Promise<unknown>[] = [];
  for (let i = 0; i < 30; i++) {
    work.push(audit(store(`c-${i}`), fresh));
    work.push(fresh.request('POST', '/auditlogs/bulk', { body: [store(`b-${i}`), store(`b-${i}`)] }));
    work.push(appendVaulted(fresh, [{ subjectId: `v-${i}` }, { subjectId: `v-${i}` }]));
  }
  await Promise.all(work);
  await fresh.vault.sealer.sealAll();
  // 150, after EMAIL's definition (a CHANGE record, the first).
  const sealed = await verifyActivityChain(fresh.vault.db);
  t.deepEqual(sealed, { valid: true, records: 151, unsealed: 0, lastSequence: 151, lastHash: sealed.lastHash });
  const rows = await fresh.vault.db.selectFrom('activity_log').select('sequence').orderBy('sequence').execute();
  t.deepEqual(rows.map((r) => Number(r.sequence)), Array.from({ length: 151 }, (_, i) => i + 1), 'sequences 1..n without gaps');
  const verify = await fresh.request('GET', '/activity/verify');
  t.deepEqual(verify.body, { data: { valid: true, records: 151, unsealed: 0, lastSequence: 151, lastHash: sealed.lastHash } });
});

test('verifying a long chain leaves the vault answering other requests meanwhile', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // Ten pages of the verifier's reads.
  for (let i = 0; i < 2; i++) {
    const res = await fresh.request('POST', '/auditlogs/bulk', { body: Array.from({ length: 10_000 }, (_, j) => ({ eventType: 'READ', dataPointId: `long/${i}/${j}`, subjectId: `long-${j % 50}`, data: { attribute: EMAIL }, applicationId: 'crm' })) });
    t.is(res.status, 200);
  }
  // Sealed before the verify, which counts sealed records: on a busy machine the second bulk
  // may still wait for the sealer when the verify begins.
  await fresh.vault.sealer.sealAll();
  await fresh.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = fresh.app.server.address() as AddressInfo;
  let verified = false;
  const verify = fetch(`http://127.0.0.1:${port}/activity/verify`, { headers: { authorization: `Bearer ${fresh.adminKey}` } }).then(async (res) => {
    verified = true;
    return { status: res.status, body: await res.json() };
  });
  // Health checks one after another while the chain is checked: each is answered only when
  // the vault's event loop is free.
  let answeredMeanwhile = 0;
  while (!verified) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    await res.arrayBuffer();
    if (!verified) answeredMeanwhile += 1;
  }
  // The reads, and EMAIL's definition.
  t.like(await verify, { status: 200, body: { data: { valid: true, records: 20_001 } } });
  t.true(answeredMeanwhile >= 2, `${answeredMeanwhile} health checks answered while the chain was verified`);
});

test('the database refuses edits and deletes of the log, and edits of records waiting to be sealed', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  await audit(store(unique('subject')), fresh);
  // Seal what is pending (always the case on PostgreSQL), so there are sealed rows to refuse.
  t.like((await fresh.request('GET', '/activity/verify')).body.data, { valid: true, unsealed: 0 });
  t.true((await fresh.vault.db.selectFrom('activity_log').select('sequence').execute()).length > 0);
  await t.throwsAsync(fresh.vault.db.updateTable('activity_log').set({ application_id: 'forged' }).execute(), { any: true, message: /activity_log is append-only/ });
  await t.throwsAsync(fresh.vault.db.deleteFrom('activity_log').execute(), { any: true, message: /activity_log is append-only/ });

  await fresh.vault.sealer.stop();
  await appendPending(fresh, [{ eventType: 'READ' }]);
  await t.throwsAsync(fresh.vault.db.updateTable('activity_pending').set({ application_id: 'forged' }).execute(), { any: true, message: /activity_pending is append-only/ });
});

test('an edited record fails verification at that record', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // evt-0 … evt-4 are records 2 … 6: EMAIL's definition is the first.
  for (let i = 0; i < 5; i++) await audit({ ...store(`s-${i}`), eventId: `evt-${i}` }, fresh);
  const intact = await fresh.request('GET', '/activity/verify');
  t.like(intact.body.data, { valid: true, records: 6 });

  await dropGuards(fresh);
  await fresh.vault.db.updateTable('activity_log').set({ application_user: 'someone else' }).where('sequence', '=', 4).execute();
  const res = await fresh.request('GET', '/activity/verify');
  t.deepEqual(res.body, { data: { valid: false, records: 6, unsealed: 0, firstBrokenSequence: 4, firstBrokenEventId: 'evt-2' } });

  // Recomputing the edited record's own hash only moves the break to the next record.
  const rows = await fresh.vault.db.selectFrom('activity_log').selectAll().orderBy('sequence').execute();
  const { chainHash } = await import('./chain.js');
  const { hash: _ignored, ...edited } = rows[3];
  await fresh.vault.db.updateTable('activity_log').set({ hash: chainHash(rows[2].hash, edited) }).where('sequence', '=', 4).execute();
  t.like((await verifyActivityChain(fresh.vault.db)), { valid: false, firstBrokenSequence: 5, firstBrokenEventId: 'evt-3' });
});

test('a point taken out of, or slipped into, a record that names several points fails verification at that record', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  const subject = unique('subject');
  const points = [
    { dataPointId: 'p-1', attribute: EMAIL },
    { dataPointId: 'p-2', attribute: 'NAME' },
  ];
  await appendVaulted(fresh, [{ subjectId: subject, dataPointId: 'p-0', attribute: EMAIL }, { subjectId: subject, points }, { subjectId: subject, dataPointId: 'p-3', attribute: EMAIL }]);
  await fresh.vault.sealer.sealAll();
  t.like(await verifyActivityChain(fresh.vault.db), { valid: true, records: 3 });
  const [record] = await fresh.vault.db.selectFrom('activity_log').select(['sequence', 'event_id', 'points']).where('points', 'is not', null).execute();
  t.is(record.points, '[["p-1","' + EMAIL + '"],["p-2","NAME"]]');

  await dropGuards(fresh);
  for (const forged of ['[["p-1","' + EMAIL + '"]]', '[["p-1","' + EMAIL + '"],["p-2","NAME"],["p-9","NAME"]]', null]) {
    await fresh.vault.db.updateTable('activity_log').set({ points: forged }).where('sequence', '=', record.sequence).execute();
    t.like(await verifyActivityChain(fresh.vault.db), { valid: false, firstBrokenSequence: Number(record.sequence), firstBrokenEventId: record.event_id }, String(forged));
  }
});

test('a range of sequences lists those sealed records, with every entry of each, and nothing unsealed', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  const subject = unique('subject');
  const two = [
    { dataPointId: 'p-2', attribute: EMAIL },
    { dataPointId: 'p-3', attribute: EMAIL },
  ];
  await appendVaulted(fresh, [{ subjectId: subject, dataPointId: 'p-1', attribute: EMAIL }, { subjectId: subject, points: two }, { subjectId: subject, dataPointId: 'p-4', attribute: EMAIL }]);
  await fresh.vault.sealer.sealAll();
  await fresh.vault.sealer.stop();
  await appendPending(fresh, [{ subjectId: subject, dataPointId: 'p-5', attribute: EMAIL }]);
  const list = async (query: Record<string, string>) =>
    (await fresh.request('GET', '/activity', { query })).body.data.map((e: any) => `${e.sequence ?? 'pending'}:${e.dataPointId}`);
  t.deepEqual(await list({}), ['1:p-1', '2:p-2', '2:p-3', '3:p-4', 'pending:p-5']);
  t.deepEqual(await list({ fromSequence: '2' }), ['2:p-2', '2:p-3', '3:p-4']);
  t.deepEqual(await list({ fromSequence: '1', toSequence: '2' }), ['1:p-1', '2:p-2', '2:p-3']);
  t.deepEqual(await list({ toSequence: '2', count: '2', page: '1' }), ['2:p-3']);
  t.deepEqual(await list({ fromSequence: '4' }), []);
  t.deepEqual(await list({ order: 'newest' }), ['pending:p-5', '3:p-4', '2:p-3', '2:p-2', '1:p-1']);
  t.deepEqual(await list({ order: 'newest', fromSequence: '1', toSequence: '2' }), ['2:p-3', '2:p-2', '1:p-1']);
  for (const bad of [{ fromSequence: '0' }, { toSequence: 'last' }, { fromSequence: '1.5' }] as Record<string, string>[]) {
    t.is((await fresh.request('GET', '/activity', { query: bad })).status, 400, JSON.stringify(bad));
  }
});

test('a deleted record fails verification at its successor', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // evt-0 … evt-4 are records 2 … 6: EMAIL's definition is the first.
  for (let i = 0; i < 5; i++) await audit({ ...store(`s-${i}`), eventId: `evt-${i}` }, fresh);
  await dropGuards(fresh);
  await fresh.vault.db.deleteFrom('activity_log').where('sequence', '=', 3).execute();
  const res = await fresh.request('GET', '/activity/verify');
  t.deepEqual(res.body, { data: { valid: false, records: 5, unsealed: 0, firstBrokenSequence: 4, firstBrokenEventId: 'evt-2' } });
});

test('an empty log is valid', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  const res = await fresh.request('GET', '/activity/verify');
  t.deepEqual(res.body, { data: { valid: true, records: 0, unsealed: 0 } });
});

test('a record is listed as soon as it is committed, and sealed into the chain moments later', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  // Stop the background sealer so the record is caught before it is chained.
  await fresh.vault.sealer.stop();
  const subject = unique('subject');
  await appendPending(fresh, [{ eventType: 'STORE', subjectId: subject }]);
  const before = (await fresh.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.is(before.length, 1);
  t.like(before[0], { eventType: 'STORE', sealed: false });
  t.false('sequence' in before[0] || 'hash' in before[0]);
  t.like((await verifyActivityChain(fresh.vault.db)), { valid: true, records: 0, unsealed: 1 });

  const verified = await fresh.request('GET', '/activity/verify');
  t.like(verified.body.data, { valid: true, records: 1, unsealed: 0, lastSequence: 1 });
  const after = (await fresh.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.like(after[0], { sequence: 1, sealed: true, eventId: before[0].eventId });
  t.regex(after[0].hash, /^[0-9a-f]{64}$/);
});

test('sealed records come first, then the pending ones, across pages', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  await fresh.vault.sealer.stop();
  for (let i = 0; i < 3; i++) await audit({ ...store('paged'), eventId: `sealed-${i}` }, fresh);
  await fresh.vault.sealer.sealAll();
  for (let i = 0; i < 3; i++) await appendPending(fresh, [{ subjectId: 'paged', eventId: `pending-${i}` }]);
  const page = async (n: number) =>
    (await fresh.request('GET', '/activity', { query: { subjectId: 'paged', count: '2', page: String(n) } })).body.data.map((r: any) => r.eventId);
  t.deepEqual([...(await page(0)), ...(await page(1)), ...(await page(2))], ['sealed-0', 'sealed-1', 'sealed-2', 'pending-0', 'pending-1', 'pending-2']);
  t.deepEqual(await page(3), []);

  // Newest first: exactly the reverse, across the same page boundaries.
  const newest = async (n: number, count = '2') =>
    (await fresh.request('GET', '/activity', { query: { subjectId: 'paged', order: 'newest', count, page: String(n) } })).body.data.map((r: any) => r.eventId);
  t.deepEqual([...(await newest(0)), ...(await newest(1)), ...(await newest(2))], ['pending-2', 'pending-1', 'pending-0', 'sealed-2', 'sealed-1', 'sealed-0']);
  t.deepEqual([...(await newest(0, '4')), ...(await newest(1, '4'))], ['pending-2', 'pending-1', 'pending-0', 'sealed-2', 'sealed-1', 'sealed-0']);
  t.deepEqual(await newest(3), []);
  const bad = await fresh.request('GET', '/activity', { query: { order: 'desc' } });
  t.is(bad.status, 400);
  t.is(bad.body.message, 'querystring/order must be equal to one of the allowed values');
});

test('a head kept outside the database reveals records cut off the end', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // Records 2 … 5, after EMAIL's definition.
  for (let i = 0; i < 4; i++) await audit({ ...store(`h-${i}`), eventId: `evt-${i}` }, fresh);
  const head = (await fresh.request('GET', '/activity/head')).body.data;
  t.is(head.sequence, 5);
  const good = await fresh.request('GET', '/activity/verify', { query: { head: `${head.sequence}:${head.hash}` } });
  t.like(good.body.data, { valid: true, records: 5, headMatches: true });

  // The last record removed: the rest of the chain is intact, only the head shows the loss.
  await dropGuards(fresh);
  await fresh.vault.db.deleteFrom('activity_log').where('sequence', '=', 5).execute();
  t.like((await fresh.request('GET', '/activity/verify')).body.data, { valid: true, records: 4 });
  const cut = await fresh.request('GET', '/activity/verify', { query: { head: `${head.sequence}:${head.hash}` } });
  t.like(cut.body.data, { valid: false, records: 4, headMatches: false });
  t.is((await fresh.request('GET', '/activity/verify', { query: { head: 'latest' } })).status, 400);
});

test('headMatches says whether the kept head record is still there unchanged, whatever broke before it', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // Records 2 … 7, after EMAIL's definition.
  for (let i = 0; i < 6; i++) await audit({ ...store(`k-${i}`), eventId: `evt-${i}` }, fresh);
  const head = (await fresh.request('GET', '/activity/head')).body.data;
  t.is(head.sequence, 7);
  const kept = `${head.sequence}:${head.hash}`;
  const verify = async (h = kept) => (await fresh.request('GET', '/activity/verify', { query: { head: h } })).body.data;
  const db = fresh.vault.db;
  await dropGuards(fresh);

  // A record before the head edited: the chain breaks there, but nothing reached the head.
  await db.updateTable('activity_log').set({ application_user: 'someone else' }).where('sequence', '=', 3).execute();
  t.like(await verify(), { valid: false, firstBrokenSequence: 3, headMatches: true });
  const middle = (await db.selectFrom('activity_log').select('hash').where('sequence', '=', 4).executeTakeFirstOrThrow()).hash;
  t.like(await verify(`4:${middle}`), { valid: false, firstBrokenSequence: 3, headMatches: true }, 'any record past the break can be the kept head');
  t.like(await verify(`4:${'0'.repeat(64)}`), { valid: false, firstBrokenSequence: 3, headMatches: false });

  // The head record rewritten: its fields, then its hash recomputed to match them.
  const { chainHash } = await import('./chain.js');
  await db.updateTable('activity_log').set({ subject_id: 'another' }).where('sequence', '=', 7).execute();
  t.like(await verify(), { valid: false, firstBrokenSequence: 3, headMatches: false }, 'fields that no longer give the kept hash');
  const rows = await db.selectFrom('activity_log').selectAll().where('sequence', 'in', [6, 7]).orderBy('sequence').execute();
  const { hash: _old, ...rewritten } = rows[1];
  await db.updateTable('activity_log').set({ hash: chainHash(rows[0].hash, rewritten) }).where('sequence', '=', 7).execute();
  t.like(await verify(), { valid: false, firstBrokenSequence: 3, headMatches: false }, 'a hash that is no longer the kept one');

  // Records cut off the end, the head among them.
  await db.deleteFrom('activity_log').where('sequence', '>=', 6).execute();
  t.like(await verify(), { valid: false, firstBrokenSequence: 3, records: 5, headMatches: false });
  t.like(await verify(`5:${(await db.selectFrom('activity_log').select('hash').where('sequence', '=', 5).executeTakeFirstOrThrow()).hash}`), { headMatches: true });
});

test('swapped records fail verification where the order breaks', async (t) => {
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  for (let i = 0; i < 4; i++) await audit({ ...store(`r-${i}`), eventId: `evt-${i}` }, fresh);
  await fresh.vault.sealer.sealAll();
  await dropGuards(fresh);
  // Swap the contents (hashes included) of evt-1 and evt-2, records 3 and 4 (EMAIL's definition
  // is the first), as a reordering would.
  const rows = await fresh.vault.db.selectFrom('activity_log').selectAll().orderBy('sequence').execute();
  const [third, fourth] = [rows[2], rows[3]];
  await fresh.vault.db.deleteFrom('activity_log').where('sequence', 'in', [3, 4]).execute();
  await fresh.vault.db.insertInto('activity_log').values([{ ...fourth, sequence: 3 }, { ...third, sequence: 4 }]).execute();
  t.like((await fresh.request('GET', '/activity/verify')).body.data, { valid: false, firstBrokenSequence: 3, firstBrokenEventId: 'evt-2' });
});

test('on PostgreSQL a request never waits for another holder of the seal: its records wait instead', async (t) => {
  if (v.vault.dialect !== 'postgres') return t.pass('SQLite serialises its writers itself');
  const fresh = await startTestVault();
  t.teardown(() => fresh.close());
  await defineAttribute(fresh, EMAIL);
  // The definition's CHANGE record sealed first: the one left pending below is the store's.
  await fresh.vault.sealer.sealAll();
  // Another process sealing, as far as this vault can tell: the seal is held on a connection of its own.
  const holder = await fresh.vault.db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${SEAL_LOCK_KEY}::bigint)`.execute(conn);
    try {
      const subject = unique('subject');
      const stored = await audit(store(subject), fresh);
      t.is(stored.status, 200);
      const listed = (await fresh.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
      t.like(listed[0], { eventType: 'STORE', sealed: false });
      t.like(await verifyActivityChain(fresh.vault.db), { unsealed: 1 });
      return subject;
    } finally {
      await sql`select pg_advisory_unlock(${SEAL_LOCK_KEY}::bigint)`.execute(conn);
    }
  });
  await fresh.vault.sealer.sealAll();
  const listed = (await fresh.request('GET', '/activity', { query: { subjectId: holder } })).body.data;
  t.like(listed[0], { eventType: 'STORE', sealed: true });
  t.like(await verifyActivityChain(fresh.vault.db), { valid: true, unsealed: 0 });
});

test('reads recorded together are each recorded once, however many records they carry', async (t) => {
  // On PostgreSQL a round of reads is one INSERT of at most 400 rows: here the first two reads
  // fit one, the third goes in a round of its own, and the fourth needs a transaction alone.
  const sizes = [150, 200, 300, 450];
  const subjects = sizes.map(() => unique('reader'));
  const timestamp = new Date().toISOString();
  await Promise.all(
    sizes.map((size, i) =>
      v.vault.activity.record(
        Array.from({ length: size }, (_, n) => ({ eventType: 'READ' as const, subjectId: subjects[i], dataPointId: `${subjects[i]}-${n}`, attribute: EMAIL, applicationId: 'reporting', reportOnly: false, timestamp })),
      ),
    ),
  );
  await v.vault.sealer.sealAll();
  for (const [i, subject] of subjects.entries()) {
    const res = await v.request('GET', '/activity', { query: { subjectId: subject, count: '1000' } });
    const points = res.body.data.map((r: any) => r.dataPointId);
    t.is(new Set(points).size, sizes[i]);
    t.is(points.length, sizes[i]);
  }
  t.true((await verifyActivityChain(v.vault.db)).valid);
});
