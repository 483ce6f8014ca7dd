/**
 * Definitions made before sub-attribute paths were limited to 256 characters are still in
 * databases, and a store must never answer 5xx because of one: a path too long for the
 * database's indexes is refused with a 400 that names it, on both dialects, before anything
 * is written; a shorter one, which stored before the limit, still stores.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPostgresDatabase, startTestVault, type TestVault } from '../testing/harness.js';

const vaults: Array<{ dialect: string; v: TestVault }> = [];
const cleanups: Array<() => Promise<void> | void> = [];
test.before(async () => {
  // Both dialects whatever the pass: only PostgreSQL's btree entries are bounded, and the
  // answer must be the same on SQLite.
  const dir = mkdtempSync(join(tmpdir(), 'vault-paths-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  vaults.push({ dialect: 'sqlite', v: await startTestVault({ env: { VAULT_DB: `sqlite:${join(dir, 'vault.db')}` } }) });
  const database = await createPostgresDatabase();
  cleanups.push(database.drop);
  vaults.push({ dialect: 'postgres', v: await startTestVault({ env: { VAULT_DB: database.url } }) });
});
test.after.always(async () => {
  for (const { v } of vaults) await v.close();
  for (const cleanup of cleanups) await cleanup();
});

/** Alphanumeric and incompressible, as PostgreSQL would otherwise shrink a long index entry. */
const randomKey = (length: number) => {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from({ length }, () => chars[Math.floor(Math.random() * chars.length)]).join('');
};

/** As a release before the limit stored it: straight into the table, past the API's check. */
async function defineAsBefore(v: TestVault, key: string, schema: unknown): Promise<void> {
  const now = new Date().toISOString();
  await v.vault.db
    .insertInto('attribute_definitions')
    .values({ key, name: key, hint: null, schema: JSON.stringify(schema), repeatable: 1, indexed: 1, immutable: 0, created_date: now, modified_date: now })
    .execute();
}

const store = (v: TestVault, subject: string, data: unknown[]) =>
  v.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
const pointsOf = (v: TestVault, subject: string) => v.vault.db.selectFrom('datapoints').select('attribute').where('entity_id', '=', subject).execute();

test('a stored definition whose sub-attribute path is too long to store answers 400 naming it, and changes nothing', async (t) => {
  for (const { dialect, v } of vaults) {
    const long = randomKey(3000);
    await defineAsBefore(v, 'OLD_LONG', { short: 'string', [long]: 'string', [`[${randomKey(2600)}]`]: { leaf: 'int' } });
    const message = /^Sub-attribute path OLD_LONG\.[A-Za-z0-9]{55}… is over 2048 characters, too long to store: sub-attribute paths may be at most 256 characters$/;

    const res = await store(v, 'old-long-subject', [{ attribute: 'OLD_LONG', value: { short: 'kept?', [long]: 'x' } }]);
    t.is(res.status, 400, `${dialect}: ${JSON.stringify(res.body).slice(0, 200)}`);
    t.regex(res.body.message, message, dialect);
    t.deepEqual(await pointsOf(v, 'old-long-subject'), [], `${dialect}: nothing stored`);
    t.is((await v.request('GET', '/entities/old-long-subject')).status, 404, `${dialect}: no entity created`);

    const audited = await v.request('POST', '/auditlogs', {
      body: { eventType: 'STORE', applicationId: 'crm', subjectId: 'old-long-reported', data: { attribute: 'OLD_LONG', value: { [long]: 'x' } } },
    });
    t.is(audited.status, 400, `${dialect}: ${JSON.stringify(audited.body).slice(0, 200)}`);
    t.regex(audited.body.message, message, dialect);
    t.deepEqual(await pointsOf(v, 'old-long-reported'), [], `${dialect}: nothing registered`);

    // What the definition can hold still stores.
    const short = await store(v, 'old-long-subject', [{ attribute: 'OLD_LONG', value: { short: 'fine' } }]);
    t.is(short.status, 200, `${dialect}: ${JSON.stringify(short.body).slice(0, 200)}`);
  }
});

test('a stored definition with a path over 256 characters that the database holds still stores, as it did', async (t) => {
  for (const { dialect, v } of vaults) {
    const list = randomKey(1000);
    const leaf = randomKey(2048 - 'OLD_MID'.length - list.length - 2);
    await defineAsBefore(v, 'OLD_MID', { [`[${list}]`]: { [leaf]: 'string' } });
    const res = await store(v, 'old-mid-subject', [{ attribute: 'OLD_MID', value: { [list]: [{ [leaf]: 'one' }] } }]);
    t.is(res.status, 200, `${dialect}: ${JSON.stringify(res.body).slice(0, 200)}`);
    const attributes = (await pointsOf(v, 'old-mid-subject')).map((p) => p.attribute).sort((a, b) => a.length - b.length);
    t.deepEqual(attributes, ['OLD_MID', `OLD_MID.${list}.${leaf}`], dialect);
    t.is(attributes[1].length, 2048);
  }
});
