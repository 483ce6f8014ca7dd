/**
 * A database that cannot take a write (a full disk) answers 503 with a message a client can
 * act on, keeps nothing of the request, and the vault writes again once there is room.
 * SQLite's page limit stands in for the disk: past it, writes fail with SQLITE_FULL as they
 * do on a full one.
 */
import test from 'ava';
import SqliteDatabase from 'better-sqlite3';
import { startTestVault } from '../testing/harness.js';

const onSqlite = process.env.VAULT_TEST_DB === 'postgres' ? test.skip : test.serial;

onSqlite('a full disk answers 503, keeps nothing, and the vault writes again once there is room', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  t.is((await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string', repeatable: true } })).status, 201);
  const store = (i: number) => v.request('POST', '/entities/ada/attributes', { body: { data: [{ attribute: 'NOTE', value: `note ${i} ${'x'.repeat(2000)}` }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  t.is((await store(0)).status, 200);

  const sqlite = v.vault.handle.sqlite!;
  const pages = sqlite.pragma('page_count', { simple: true }) as number;
  sqlite.pragma(`max_page_count = ${pages}`);
  let full: Awaited<ReturnType<typeof store>> | undefined;
  let stored = 1;
  for (let i = 1; i < 200 && !full; i++) {
    const res = await store(i);
    if (res.status === 200) stored++;
    else full = res;
  }
  t.truthy(full, 'the page limit was reached');
  t.is(full!.status, 503);
  t.deepEqual(full!.body, { statusCode: 503, error: 'Service Unavailable', message: "The vault's storage is full, retry the request later" });
  t.is(full!.headers['retry-after'], '60');
  t.true(
    v.logs.some((line) => line.includes('"request failed"') && line.includes('database or disk is full')),
    'the log names the cause',
  );

  sqlite.pragma(`max_page_count = ${pages * 100}`);
  const notes = await v.request('GET', '/entities/ada/attributes/NOTE', { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(notes.status, 200);
  t.is(notes.body.data.length, stored, 'the refused store kept nothing');
  t.is((await store(999)).status, 200);
  const verify = await v.request('GET', '/activity/verify');
  t.is(verify.body.data.valid, true);
});

onSqlite('a write lock held elsewhere past the busy timeout answers 503 busy, and keeps nothing', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  t.is((await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string', repeatable: true } })).status, 201);
  const store = () => v.request('POST', '/entities/ada/attributes', { body: { data: [{ attribute: 'NOTE', value: 'hello' }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  // Another process (the command line, say) holding the write lock for longer than the vault waits (5 s).
  const other = new SqliteDatabase(v.config.db.slice('sqlite:'.length));
  t.teardown(() => other.close());
  other.exec('begin immediate');
  const busy = await store();
  other.exec('rollback');
  t.is(busy.status, 503);
  t.deepEqual(busy.body, { statusCode: 503, error: 'Service Unavailable', message: 'The vault is busy with conflicting requests, retry the request' });
  t.is(busy.headers['retry-after'], '1');
  t.is((await store()).status, 200);
  const notes = await v.request('GET', '/entities/ada/attributes/NOTE', { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(notes.body.data.length, 1, 'the refused store kept nothing');
});
