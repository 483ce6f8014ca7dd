/**
 * The retention sweep with two vault processes on one database, each sweeping: a write of
 * the other process (an overwrite, a legal hold, its own sweep) is landed at the moment the
 * sweep pauses at (`interleave`), where the timing of real processes could put it.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { startTestVault, type TestVault } from '../testing/harness.js';

let a: TestVault;
let b: TestVault;
const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
/** Races a write can lose only on PostgreSQL: SQLite runs one write transaction at a time. */
const onPostgres = process.env.VAULT_TEST_DB === 'postgres' ? test.serial : test.serial.skip;
/** Every point stored of it expires a day later, and the sweep may delete it. */
const EXPIRING = uid('EXPIRING');
/** Every point stored of it is deleted once unread for two days. */
const IDLE = uid('IDLE');

test.before(async () => {
  a = await startTestVault();
  b = await startTestVault({ env: { VAULT_DB: a.config.db, VAULT_ADMIN_API_KEY: a.adminKey, VAULT_INDEX_KEY: a.config.indexKey!, VAULT_ENCRYPTION_PUBLIC_KEY: a.keys.publicKey } });
  // Only the sweeps a test runs: no timer's sweep joins them.
  await a.vault.retention.stop();
  await b.vault.retention.stop();
  for (const [key, retention] of [
    [EXPIRING, { daysSinceStore: 1, autoDelete: true }],
    [IDLE, { daysSinceRead: 2, autoDelete: true }],
  ] as const) {
    const defined = await a.request('POST', '/attributes', { body: { key, schema: 'string' } });
    if (defined.status >= 300) throw new Error(JSON.stringify(defined.body));
    const ruled = await a.request('POST', '/rules', { body: { key: uid('rule'), constraint: { type: 'attribute', operator: 'any', attributes: [key] }, action: { type: 'retention', ...retention } } });
    if (ruled.status >= 300) throw new Error(JSON.stringify(ruled.body));
  }
});
test.after.always(async () => {
  await b?.close();
  await a?.close();
});
test.afterEach.always(() => {
  a.vault.retention.interleave = undefined;
});

const store = (v: TestVault, subject: string, attribute: string, value: string) =>
  v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute, value }] }, headers: { 'x-encryption-key': a.keys.publicKey }, apiKey: a.adminKey });
const read = (subject: string, attribute: string) =>
  a.request('GET', `/entities/${subject}/attributes/${attribute}`, { headers: { 'x-decryption-key': a.keys.privateKey } });
const pointsOf = (subjects: string[]) => a.vault.db.selectFrom('datapoints').select('id').where('entity_id', 'in', subjects).orderBy('id').execute();
/** Puts the subjects' points past their expiry. */
const expire = (subjects: string[]) => a.vault.db.updateTable('datapoints').set({ expires_at: '2001-01-01T00:00:00.000Z' }).where('entity_id', 'in', subjects).execute();

async function retentionDeletes(subjects: string[]): Promise<string[]> {
  await a.vault.sealer.sealAll();
  const rows = await a.vault.db
    .selectFrom('activity_log')
    .select('data_point_id')
    .where('subject_id', 'in', subjects)
    .where('event_type', '=', 'DELETE')
    .where('application_id', '=', 'retention')
    .orderBy('data_point_id')
    .execute();
  return rows.map((r) => r.data_point_id!);
}

/** Resolves once some transaction on the database waits for a row another one holds (PostgreSQL). */
async function someoneWaitsForALock(): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event in ('transactionid', 'tuple')`.execute(a.vault.db);
    if (rows[0].waiting > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Starts `write` at the sweep's pause and lets the sweep go on once the write is answered or
 * waits for a lock. `answered` gives the write's status and what `look` saw as it was answered.
 */
function landDuring<T>(write: () => Promise<{ status: number }>, look: () => Promise<T>): { pause: () => Promise<void>; answered: () => Promise<{ status: number; seen: T }> } {
  let pending: Promise<{ status: number; seen: T }> | undefined;
  return {
    pause: async () => {
      pending = write().then(async (res) => ({ status: res.status, seen: await look() }));
      await Promise.race([pending, someoneWaitsForALock()]);
    },
    answered: () => pending!,
  };
}

test.serial('a point overwritten with a fresh expiry after the sweep found it expired keeps its new value', async (t) => {
  const subject = uid('s');
  t.is((await store(a, subject, EXPIRING, 'old')).status, 200);
  await expire([subject]);
  a.vault.retention.interleave = async (stage) => {
    if (stage === 'selected') t.is((await store(b, subject, EXPIRING, 'new')).status, 200);
  };
  await a.vault.retention.sweep();
  const res = await read(subject, EXPIRING);
  t.is(res.status, 200);
  t.is(res.body.data[0].value, 'new');
  t.deepEqual(await retentionDeletes([subject]), []);
});

test.serial('two processes sweeping the same expired points record one retention DELETE per point', async (t) => {
  const subjects = [uid('s'), uid('s'), uid('s')];
  for (const subject of subjects) t.is((await store(a, subject, EXPIRING, 'x')).status, 200);
  const points = (await pointsOf(subjects)).map((p) => p.id);
  await expire(subjects);
  // B sweeps the batch A has just read, before A's transaction begins.
  a.vault.retention.interleave = async (stage) => {
    if (stage === 'selected') await b.vault.retention.sweep();
  };
  await a.vault.retention.sweep();
  t.deepEqual(await pointsOf(subjects), []);
  t.deepEqual(await retentionDeletes(subjects), points);
});

onPostgres('a process sweeping while another holds the expired points passes them by instead of waiting', async (t) => {
  const subjects = [uid('s'), uid('s')];
  for (const subject of subjects) t.is((await store(a, subject, EXPIRING, 'x')).status, 200);
  const points = (await pointsOf(subjects)).map((p) => p.id);
  await expire(subjects);
  a.vault.retention.interleave = async (stage) => {
    if (stage !== 'checked') return;
    await b.vault.retention.sweep();
    t.deepEqual((await pointsOf(subjects)).map((p) => p.id), points, 'B deleted none of the points A holds');
  };
  await a.vault.retention.sweep();
  t.deepEqual(await pointsOf(subjects), []);
  t.deepEqual(await retentionDeletes(subjects), points);
});

onPostgres('a legal hold set while the sweep checks the subject is answered only after the sweep’s delete', async (t) => {
  const subject = uid('s');
  t.is((await store(a, subject, EXPIRING, 'x')).status, 200);
  const points = (await pointsOf([subject])).map((p) => p.id);
  await expire([subject]);
  const hold = landDuring(
    () => b.request('POST', '/datasubjects', { body: { id: subject, legalHold: true }, apiKey: a.adminKey }),
    () => pointsOf([subject]),
  );
  a.vault.retention.interleave = async (stage) => {
    if (stage === 'checked') await hold.pause();
  };
  await a.vault.retention.sweep();
  const answer = await hold.answered();
  t.is(answer.status, 200);
  t.deepEqual(await pointsOf([subject]), answer.seen, 'the points there when the hold was answered are kept');
  t.deepEqual(await retentionDeletes([subject]), points, 'the hold waited for the delete');
  t.true((await a.request('GET', `/datasubjects/${subject}`)).body.data.legalHold);
});

onPostgres('a value stored over an idle point while the idle sweep checks it is kept', async (t) => {
  const subject = uid('s');
  t.is((await store(a, subject, IDLE, 'old')).status, 200);
  const fiveDaysAgo = new Date(Date.now() - 5 * 86_400_000).toISOString();
  await a.vault.db.updateTable('datapoints').set({ modified_date: fiveDaysAgo }).where('entity_id', '=', subject).execute();
  await a.vault.db.updateTable('idle_retention').set({ next_check: fiveDaysAgo }).where('entity_id', '=', subject).execute();
  const overwrite = landDuring(
    () => store(b, subject, IDLE, 'new'),
    async () => undefined,
  );
  a.vault.retention.interleave = async (stage) => {
    if (stage === 'checked') await overwrite.pause();
  };
  await a.vault.retention.sweep();
  const answer = await overwrite.answered();
  t.is(answer.status, 200);
  const res = await read(subject, IDLE);
  t.is(res.status, 200);
  t.is(res.body.data[0].value, 'new');
});
