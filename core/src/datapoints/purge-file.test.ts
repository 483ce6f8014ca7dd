/**
 * What a purge leaves in the SQLite file itself: a copy of the file taken after the purge
 * (a snapshot of the disk, a plain `cp`) must not hold the subject's wrapped data key, or
 * the private key would still open its values there, nor its blind-index entries.
 */
import test from 'ava';
import SqliteDatabase from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestVault } from '../testing/harness.js';

const onSqlite = process.env.VAULT_TEST_DB === 'postgres' ? test.skip : test;

onSqlite('a purged subject’s wrapped data key and blind indexes are gone from the database file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-purge-file-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'vault.db');
  const v = await startTestVault({ env: { VAULT_DB: `sqlite:${file}` } });
  let closed = false;
  t.teardown(async () => {
    if (!closed) await v.close();
  });
  const res = await v.request('POST', '/attributes', { body: { key: 'EMAIL', indexed: true } });
  t.is(res.status, 201);
  const store = (subject: string, value: string) =>
    v.request('POST', `/datasubjects/${subject}/attributes`, { body: { data: [{ attribute: 'EMAIL', value }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  // Neighbours share the pages of the erased subject's rows, as in any real vault.
  for (let i = 0; i < 20; i++) t.is((await store(`other-${i}`, `other-${i}@example.org`)).status, 200);
  const erased = `erased-${randomBytes(4).toString('hex')}`;
  t.is((await store(erased, 'ada@example.org')).status, 200);
  const key = await v.vault.db.selectFrom('subject_keys').select('wrapped_key').where('entity_id', '=', erased).executeTakeFirstOrThrow();
  const point = await v.vault.db.selectFrom('datapoints').select('blind_index').where('entity_id', '=', erased).executeTakeFirstOrThrow();
  t.truthy(point.blind_index);

  t.is((await v.request('DELETE', `/datasubjects/${erased}/data`)).status, 200);
  closed = true;
  await v.close();
  // Everything the write-ahead log holds goes into the file, and the log is emptied: the file is then the whole database.
  const last = new SqliteDatabase(file);
  last.pragma('wal_checkpoint(TRUNCATE)');
  last.close();
  const bytes = readFileSync(file);
  t.true(bytes.includes(Buffer.from('other-0')), 'the file is the vault’s (the neighbours are in it)');
  t.false(bytes.includes(key.wrapped_key), 'the wrapped data key is not left in the file');
  t.false(bytes.includes(Buffer.from(point.blind_index!)), 'the blind index is not left in the file');
});
