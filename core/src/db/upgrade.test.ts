/**
 * Upgrading a vault that older releases wrote. Each fixture in `upgrade-fixtures/` is a
 * database as a release left it (made by that release itself: `upgrade-fixtures/make.sh`),
 * with what that release answered. This release starts on it, migrates it, and must answer
 * the same: every point is there with its labels, search finds, the activity log lists every record with its old
 * sequence and hash, and the hash chain verifies across the upgrade, with what is written
 * after it. Keys of applications still sign in and rules still fire.
 */
import test from 'ava';
import SqliteDatabase from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createPostgresDatabase, startTestVault, type TestVault } from '../testing/harness.js';

const fixtures = join(import.meta.dirname, 'upgrade-fixtures');
const publicKey = readFileSync(join(fixtures, 'vault-public-key.pem')).toString('base64');
// The settings the fixtures were written with (make.sh).
const ADMIN_KEY = 'admin-key-0123456789abcdef';
const BILLING_KEY = 'billing-key-0123456789abcdef';
const INDEX_KEY = Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');

interface Written {
  appId: string;
  u1: unknown[];
  audit1: unknown;
  verify: { valid: boolean; records: number; lastHash: string };
  activity: Array<Record<string, unknown>>;
}

type Teardown = { teardown(fn: () => Promise<void> | void): void };

/** A database holding the fixture, as the release that wrote it left it. */
async function load(t: Teardown, release: string, dialect: 'sqlite' | 'postgres'): Promise<string> {
  const dump = readFileSync(join(fixtures, release, `${dialect}.sql`), 'utf8');
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'vault-upgrade-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'vault.db');
    const db = new SqliteDatabase(path);
    db.exec(dump);
    db.close();
    return `sqlite:${path}`;
  }
  const database = await createPostgresDatabase();
  t.teardown(database.drop);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(dump);
  } finally {
    await client.end();
  }
  return database.url;
}

/** Requests as the fixture's admin (the harness's own admin key is not in its database). */
function asAdmin(v: TestVault): TestVault['request'] {
  return (method, url, options = {}) => v.request(method, url, { apiKey: ADMIN_KEY, ...options });
}

async function everyEntry(v: TestVault): Promise<Array<Record<string, unknown>>> {
  const entries: Array<Record<string, unknown>> = [];
  for (let page = 0; ; page++) {
    const res = await asAdmin(v)('GET', '/activity', { query: { page: String(page), count: '1000' } });
    if (res.status !== 200) throw new Error(`GET /activity answered ${res.status}`);
    entries.push(...res.body.data);
    if (res.body.data.length < 1000) return entries;
  }
}

/** What a listing says of a record, whether or not it has been sealed since. */
function listed({ sealed, ...entry }: Record<string, unknown>): Record<string, unknown> {
  return entry;
}

for (const release of ['0005_key_rotation', '0008_activity_read_sets']) {
  for (const dialect of ['sqlite', 'postgres'] as const) {
    test(`${dialect}: a vault the release of ${release} wrote answers the same after the upgrade, its activity log verifying across it`, async (t) => {
      const written: Written = JSON.parse(readFileSync(join(fixtures, release, `${dialect}.json`), 'utf8'));
      const url = await load(t, release, dialect);
      const v = await startTestVault({ env: { VAULT_DB: url, VAULT_ADMIN_API_KEY: ADMIN_KEY, VAULT_ENCRYPTION_PUBLIC_KEY: publicKey, VAULT_INDEX_KEY: INDEX_KEY } });
      t.teardown(() => v.close());
      // The fixtures' private key is not in the repository, so values are not opened here: the
      // points are compared as search lists them (everything but the value).
      const points = async (entityId: string, apiKey?: string) => {
        const res = await request('POST', '/search', { ...(apiKey ? { apiKey } : {}), body: { query: { attributes: ['EMAIL', 'NAME', 'AGE', 'NOTE'], entityId } } });
        t.is(res.status, 200);
        return res.body.data as Array<Record<string, unknown>>;
      };
      const withoutValue = ({ value, ...point }: Record<string, unknown>) => point;
      const byId = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.dataPointId).localeCompare(String(b.dataPointId));
      const request = asAdmin(v);

      const verified = await request('GET', '/activity/verify');
      t.is(verified.status, 200);
      t.like(verified.body.data, { valid: true, records: written.verify.records, lastHash: written.verify.lastHash });
      const before = await everyEntry(v);
      t.deepEqual(before.map(listed), written.activity.map(listed), 'every record listed as before, with its sequence and hash');

      const listedNow = await points('u1');
      const ids = new Set((written.u1 as Array<Record<string, unknown>>).map((p) => p.dataPointId));
      t.deepEqual(
        listedNow.filter((p) => ids.has(p.dataPointId)).sort(byId),
        (written.u1 as Array<Record<string, unknown>>).map(withoutValue).sort(byId),
        'every point is there as it was, with its labels',
      );
      const found = await request('POST', '/search', { body: { query: { values: [{ attribute: 'EMAIL', value: 'u2@example.org' }] } } });
      t.is(found.status, 200);
      t.deepEqual(
        found.body.data.map((p: { entityId: string; attribute: string }) => [p.entityId, p.attribute]),
        [['u2', 'EMAIL']],
      );
      const bySubAttribute = await request('POST', '/search', { body: { query: { values: [{ attribute: 'NAME.last', value: 'u1' }] } } });
      t.is(bySubAttribute.status, 200);
      t.true(bySubAttribute.body.data.every((p: { entityId: string }) => p.entityId === 'u1') && bySubAttribute.body.data.length > 0);

      t.is((await request('GET', '/applications/me', { apiKey: BILLING_KEY })).status, 200, 'an application key still signs in');
      t.deepEqual([...new Set((await points('u2', BILLING_KEY)).map((p) => p.attribute))], ['EMAIL'], 'and sees only what it could');

      const stored = await request('POST', '/datasubjects/u4/attributes', { body: { data: [{ attribute: 'EMAIL', value: 'u4@example.org' }] }, headers: { 'x-encryption-key': publicKey } });
      t.true(stored.status < 300, JSON.stringify(stored.body));
      const tagged = await points('u4');
      t.true((tagged[0]?.tags as string[] | undefined)?.includes('mailed'), 'the rule it had still fires');
      const repeated = await request('POST', '/auditlogs', {
        body: { eventType: 'STORE', subjectId: 'cust-1', applicationId: 'crm', eventId: 'crm-1', dataPointId: 'crm/cust-1/email', data: { attribute: 'EMAIL', value: 'x@y.org' } },
      });
      t.deepEqual(repeated.body, written.audit1, 'an audit event it had recorded is answered as before, not recorded again');
      const rolled = await request('POST', `/applications/${written.appId}/key`, { body: {} });
      t.is(rolled.status, 200, JSON.stringify(rolled.body));

      const after = await request('GET', '/activity/verify');
      t.is(after.body.data.valid, true, 'records of this release chain onto those of the older one');
      const entries = await everyEntry(v);
      t.deepEqual(entries.slice(0, before.length).map(listed), before.map(listed));
      t.true(entries.some((e) => e.eventType === 'CHANGE'), 'a change of this release is in the chain');
    });
  }
}
