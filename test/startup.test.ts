import test from 'ava';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { closedPort, REPO_ROOT, runVaultCli, VAULT_NODE_FLAGS, vaultListening, waitForHttp } from '../core/src/testing/process.js';
import { createPostgresDatabase, testKeyPair } from '../core/src/testing/harness.js';
import pg from 'pg';

function start(env: Record<string, string>, as: { uid?: number; gid?: number } = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'core/src/main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    ...as,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.once('exit', (c) => res(c)));
  return { child, output: () => out, exited };
}

test('first start with nothing configured prints the admin key and where the private key went', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-first-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const vault = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: '0', VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '' });
  t.teardown(() => vault.child.kill('SIGKILL'));
  const url = await vaultListening(vault.output, vault.exited);

  const adminKey = /Admin API key \(shown once, store it safely\): (\S+)/.exec(vault.output())?.[1];
  const keyPath = /Private key: (\S+) \(mode 0600\)/.exec(vault.output())?.[1];
  t.truthy(adminKey);
  t.is(keyPath, join(dataDir, 'vault-private-key.pem'));
  t.is(statSync(keyPath!).mode & 0o777, 0o600);
  t.regex(readFileSync(keyPath!, 'utf8'), /BEGIN PRIVATE KEY/);

  const res = await fetch(`${url}/entitytypes`, { headers: { authorization: `Bearer ${adminKey}` } });
  t.is(res.status, 200);

  vault.child.kill('SIGTERM');
  t.is(await vault.exited, 0, 'SIGTERM is a clean shutdown');

  // A second start finds its admin and its key: nothing is generated or printed again.
  const again = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: '0', VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '' });
  t.teardown(() => again.child.kill('SIGKILL'));
  const urlAgain = await vaultListening(again.output, again.exited);
  t.false(again.output().includes('Admin API key'));
  t.false(again.output().includes('Generated'));
  const still = await fetch(`${urlAgain}/entitytypes`, { headers: { authorization: `Bearer ${adminKey}` } });
  t.is(still.status, 200);
});

test('a start logs one line with the version, the configuration (its secrets masked) and the address it listens on', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-started-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const secrets = {
    VAULT_ADMIN_API_KEY: `admin_${randomBytes(16).toString('hex')}`,
    VAULT_INDEX_KEY: randomBytes(32).toString('base64'),
    VAULT_ALERT_WEBHOOK_SECRET: `hook-secret-${randomBytes(8).toString('hex')}`,
  };
  // Port 0: the line names the port the vault was given, which nothing could take from it.
  const vault = start({
    ...secrets,
    VAULT_DATA_DIR: dataDir,
    VAULT_PORT: '0',
    VAULT_ENCRYPTION_PUBLIC_KEY: testKeyPair().publicKey,
    VAULT_ALERT_WEBHOOKS: 'https://ops:hookpassword@hooks.example/vault',
    VAULT_LOG_LEVEL: 'info',
  });
  t.teardown(() => vault.child.kill('SIGKILL'));
  const url = await vaultListening(vault.output, vault.exited);
  t.regex(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.not(url, 'http://127.0.0.1:0');
  const res = await fetch(`${url}/entitytypes`, { headers: { authorization: `Bearer ${secrets.VAULT_ADMIN_API_KEY}` } });
  t.is(res.status, 200, 'the vault at that address is this one: its admin key signs in');
  const lines = vault
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  const started = lines.filter((l) => l.msg === 'vault started');
  t.is(started.length, 1);
  t.is(started[0].level, 30);
  t.is(started[0].url, url);
  t.true(lines.every((l) => l.level >= 30), 'nothing below VAULT_LOG_LEVEL=info');
  t.is(started[0].version, JSON.parse(readFileSync(join(REPO_ROOT, 'core/package.json'), 'utf8')).version);
  t.like(started[0].config, { port: 0, logLevel: 'info', adminApiKey: '***', indexKey: '***', alertWebhooks: { urls: ['https://hooks.example/***'], secret: '***' } });
  for (const secret of [...Object.values(secrets), 'hookpassword']) t.false(vault.output().includes(secret), secret);
  vault.child.kill('SIGTERM');
  t.is(await vault.exited, 0);
});

test('invalid configuration stops the start with a message naming the setting, before anything is created', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-invalid-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const adminKeyRule = 'VAULT_ADMIN_API_KEY must be 16 to 512 characters of printable ASCII, without spaces';
  const indexKeyRule = 'VAULT_INDEX_KEY must be the base64 of at least 32 random bytes (`openssl rand -base64 32` makes one)';
  const webhookRule = 'VAULT_ALERT_WEBHOOKS must be http(s) URLs separated by commas; entry 2 is not one';
  // Secrets the messages must not repeat.
  const shortIndexKey = randomBytes(24).toString('base64');
  const passphrase = 'correct horse battery staple, correct horse battery staple';
  const cases: Array<[Record<string, string>, string]> = [
    [{ VAULT_PORT: 'eighty' }, 'VAULT_PORT must be an integer from 0 to 65535, got "eighty"'],
    [{ VAULT_LOG_LEVEL: 'loud' }, 'VAULT_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent'],
    [{ VAULT_ADMIN_API_KEY: 'k'.repeat(513) }, adminKeyRule],
    [{ VAULT_ADMIN_API_KEY: 'admin key with a space' }, adminKeyRule],
    [{ VAULT_ADMIN_API_KEY: 'admin\tkey\u0007bell_0123456789' }, adminKeyRule],
    [{ VAULT_ADMIN_API_KEY: 'admin_kéy_0123456789' }, adminKeyRule],
    [{ VAULT_INDEX_KEY: shortIndexKey }, indexKeyRule],
    [{ VAULT_INDEX_KEY: passphrase }, indexKeyRule],
    [{ VAULT_ALERT_WEBHOOKS: 'https://hooks.example/a, ftp://ops:hookpassword@files.example/x' }, webhookRule],
    [{ VAULT_ALERT_WEBHOOKS: 'https://hooks.example/a,not a url' }, webhookRule],
    [{ VAULT_RETENTION_SWEEP_MS: 'hourly' }, 'VAULT_RETENTION_SWEEP_MS must be an integer from 0 to 86400000, got "hourly"'],
    [{ VAULT_RETENTION_SWEEP_MS: '-1' }, 'VAULT_RETENTION_SWEEP_MS must be an integer from 0 to 86400000, got "-1"'],
    [{ VAULT_ENCRYPTION_PUBLIC_KEY: 'notbase64' }, 'VAULT_ENCRYPTION_PUBLIC_KEY must be the base64 of a PEM RSA public key (PKCS#1 or SPKI)'],
    [{ VAULT_ENCRYPTION_PUBLIC_KEY: testKeyPair().privateKey }, 'VAULT_ENCRYPTION_PUBLIC_KEY holds a private key: give the public key only, the vault must never hold a private key'],
    [{ VAULT_TLS_CERT: join(dataDir, 'nope.crt'), VAULT_TLS_KEY: join(dataDir, 'nope.key') }, `VAULT_TLS_CERT names no readable file: ${join(dataDir, 'nope.crt')}`],
    [{ VAULT_HOST: 'no-such-host.invalid' }, 'VAULT_HOST "no-such-host.invalid" does not resolve to an address'],
    [{ VAULT_DB: 'sqlite:' }, 'VAULT_DB must be sqlite:<path>, with the path of the database file; the path is empty'],
    [{ VAULT_DB: `sqlite:${dataDir}` }, `VAULT_DB must name the database file, not a directory: ${dataDir}`],
    [{ VAULT_DB: 'postgres://vault:pgpassword@:5432/vault' }, 'VAULT_DB is not a URL PostgreSQL can be reached by: postgres://user:password@host:port/database'],
  ];
  for (const [env, message] of cases) {
    const vault = start({ VAULT_DATA_DIR: dataDir, VAULT_ADMIN_API_KEY: '', ...env });
    t.is(await vault.exited, 2, message);
    t.is(vault.output().trim(), `Invalid configuration: ${message}`);
    for (const secret of [shortIndexKey, passphrase, 'hookpassword', 'pgpassword', 'admin key with a space', 'bell_0123456789', 'admin_kéy']) {
      t.false(vault.output().includes(secret), `${message} repeats a secret`);
    }
  }
  t.deepEqual(readdirSync(dataDir), [], 'no admin key, key pair or database was made');
});

test('a database that cannot be reached, or a port already taken, stops the start with one line saying so', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-unreachable-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // A port nothing listens on, nor will: another test's server would answer on one freePort() gave.
  const closed = await closedPort();
  const unreachable = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: '0', VAULT_DB: `postgres://vault@127.0.0.1:${closed}/vault` });
  t.is(await unreachable.exited, 1);
  t.is(unreachable.output().trim(), `The vault could not start: the database could not be migrated: connect ECONNREFUSED 127.0.0.1:${closed}`);

  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => void taken.close());
  const port = (taken.address() as AddressInfo).port;
  const clash = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: String(port), VAULT_ADMIN_API_KEY: 'admin_startup_test_key_0123456789' });
  t.is(await clash.exited, 1);
  t.regex(clash.output(), new RegExp(`The vault could not start: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}\n$`));
});

test('a first start on a port already taken prints no admin key and makes nothing', async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'vault-taken-'));
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => void taken.close());
  const port = (taken.address() as AddressInfo).port;
  const clash = start({ VAULT_DATA_DIR: join(parent, 'data'), VAULT_PORT: String(port), VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '', VAULT_INDEX_KEY: '' });
  t.is(await clash.exited, 1);
  t.is(clash.output(), `The vault could not start: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`);
  t.deepEqual(readdirSync(parent), [], 'no data directory, database, key pair or admin');
});

test('replicas first started together on a new PostgreSQL database make one admin and one key pair between them', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const indexKey = randomBytes(32).toString('base64');
  const replicas = await Promise.all(
    [1, 2, 3].map(async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'vault-replica-'));
      t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
      return start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: '0', VAULT_DB: database.url, VAULT_INDEX_KEY: indexKey, VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '' });
    }),
  );
  for (const replica of replicas) {
    t.teardown(() => replica.child.kill('SIGKILL'));
    await waitForHttp(`${await vaultListening(replica.output, replica.exited)}/readyz`);
  }
  const printed = replicas.map((r) => r.output()).join('');
  t.is(printed.match(/Admin API key/g)?.length, 1, printed);
  t.is(printed.match(/Generated the vault's RSA key pair/g)?.length, 1, printed);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(() => client.end());
  t.is((await client.query('select id from applications')).rowCount, 1);
  t.deepEqual((await client.query('select status from encryption_keys')).rows, [{ status: 'active' }]);
});

test('an index.key emptied or cut short stops the start, and is not replaced by a new key', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-index-key-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const keyFile = join(dataDir, 'index.key');
  for (const kept of ['', randomBytes(32).toString('base64').slice(0, 20)]) {
    writeFileSync(keyFile, kept, { mode: 0o600 });
    const vault = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: '0' });
    t.is(await vault.exited, 1);
    t.is(
      vault.output().trim(),
      `The vault could not start: ${keyFile} does not hold the base64 of 32 or more bytes: put back the copy kept with the backups (a new key would leave every stored value unsearchable)`,
    );
    t.is(readFileSync(keyFile, 'utf8'), kept);
    t.deepEqual(readdirSync(dataDir), ['index.key'], 'no database was created');
  }
});

test('a database the vault cannot write stops the start with one line naming the file and why, and changes nothing', async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'vault-unwritable-'));
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const dataDir = join(parent, 'data');
  const env = { VAULT_DATA_DIR: dataDir, VAULT_INDEX_KEY: randomBytes(32).toString('base64'), VAULT_ADMIN_API_KEY: 'admin_startup_test_key_0123456789' };
  runVaultCli(['migrate'], env);
  const database = join(dataDir, 'vault.db');
  const before = readFileSync(database);
  // Not writable by the vault's user: root ignores modes, so as root the vault runs as nobody
  // on root's files (a data directory left to another user, as a restore run as root leaves it).
  const root = process.getuid?.() === 0;
  chmodSync(parent, 0o755);
  chmodSync(dataDir, root ? 0o755 : 0o500);
  for (const file of readdirSync(dataDir)) chmodSync(join(dataDir, file), root ? 0o644 : 0o400);
  t.teardown(() => chmodSync(dataDir, 0o700));
  const vault = start({ ...env, VAULT_PORT: '0' }, root ? { uid: 65534, gid: 65534 } : {});
  t.is(await vault.exited, 1);
  t.regex(
    vault.output(),
    new RegExp(`The vault could not start: the vault cannot write its database ${database} \\(EACCES\\): give the user it runs as write access to it and to ${dataDir}, where it writes the database's -wal and -shm files\n$`),
  );
  t.deepEqual(readFileSync(database), before);
});

test('a key file the vault may not make private is said to be still readable, not to have been made private', async (t) => {
  // Only root can leave the vault's user a file of another user's it may read but not chmod.
  if (process.getuid?.() !== 0) return t.pass('needs root, to run the vault as another user');
  t.timeout(300_000, 'a start from the TypeScript sources on a loaded machine');
  const parent = mkdtempSync(join(tmpdir(), 'vault-foreign-key-'));
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  chmodSync(parent, 0o755);
  const dataDir = join(parent, 'data');
  const env = { VAULT_DATA_DIR: dataDir, VAULT_ADMIN_API_KEY: 'admin_startup_test_key_0123456789' };
  runVaultCli(['migrate'], env);
  // The vault runs as nobody, who owns the directory and database; root left index.key 0644.
  for (const name of ['', ...readdirSync(dataDir)]) chownSync(join(dataDir, name), 65534, 65534);
  const keyFile = join(dataDir, 'index.key');
  chownSync(keyFile, 0, 0);
  chmodSync(keyFile, 0o644);
  const vault = start({ ...env, VAULT_PORT: '0', VAULT_LOG_LEVEL: 'warn' }, { uid: 65534, gid: 65534 });
  t.teardown(() => void vault.child.kill('SIGKILL'));
  const warned = async () => {
    // Up to two minutes: under load, transpiling the sources alone has taken more than 30 s.
    for (let i = 0; i < 1200 && !vault.output().includes('\n'); i++) await new Promise((r) => setTimeout(r, 100));
    return JSON.parse(vault.output().split('\n')[0]) as { msg: string; changes: string[] };
  };
  const line = await warned();
  t.deepEqual(line.changes, [`${keyFile} stays 0644: EPERM`]);
  t.is(line.msg, 'files of the vault are readable by other users and could not all be made private (a file of another user): change their owner or mode');
});

test('npm start builds dist/ and runs the compiled vault, not the TypeScript sources', async (t) => {
  t.timeout(300_000, 'a first build on a loaded machine');
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-npm-start-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // Its own process group: npm, its shell and the vault all stop together.
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: REPO_ROOT,
    env: { ...process.env, VAULT_DATA_DIR: dataDir, VAULT_PORT: '0', VAULT_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  npm.stdout.on('data', (d) => (out += d));
  npm.stderr.on('data', (d) => (out += d));
  const exited = new Promise<void>((res) => npm.once('exit', () => res()));
  t.teardown(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {}
  });
  // Where it listens, from its `vault started` line (the line is at info).
  const url = await vaultListening(() => out, exited, 280_000);
  await waitForHttp(`${url}/readyz`, 280_000).catch((err) => t.fail(`${err.message}\n${out}`));
  t.true(statSync(join(REPO_ROOT, 'dist/core/src/main.js')).isFile());
  // What runs is the compiled entry point, without a TypeScript loader.
  const children = spawn('ps', ['-o', 'args=', '-g', String(npm.pid)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let ps = '';
  children.stdout.on('data', (d) => (ps += d));
  await new Promise((res) => children.once('exit', res));
  const vault = ps.split('\n').find((line) => line.includes('main.js'));
  t.truthy(vault, ps);
  t.regex(vault!, /dist\/core\/src\/main\.js/);
  t.notRegex(vault!, /tsx/);
  // With V8's memory settings that keep the vault within its memory budget.
  for (const flag of VAULT_NODE_FLAGS) t.true(vault!.split(' ').includes(flag), `${flag} in: ${vault}`);
  // Files that are not TypeScript (the console's) are found from the compiled build too.
  const page = await fetch(`${url}/console`);
  t.is(page.status, 200);
  t.regex(await page.text(), /<html/i);
  // A read of many values is opened on the decryption thread, which runs compiled too.
  const adminKey = /Admin API key \(shown once, store it safely\): (\S+)/.exec(out)?.[1];
  t.truthy(adminKey, out);
  const [privateKey, publicKey] = ['private', 'public'].map((k) => readFileSync(join(dataDir, `vault-${k}-key.pem`)).toString('base64'));
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', 'x-decryption-key': privateKey, 'x-encryption-key': publicKey },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  t.is((await call('POST', '/attributes', { key: 'NOTE', schema: 'string', repeatable: true })).status, 201);
  const notes = Array.from({ length: 8 }, (_, i) => `note ${i}`);
  const stored = await call('POST', '/entities/compiled-reader/attributes', { data: notes.map((value) => ({ attribute: 'NOTE', value })) });
  t.is(stored.status, 200, JSON.stringify(stored.body));
  const read = await call('GET', '/entities/compiled-reader/attributes');
  t.is(read.status, 200);
  t.deepEqual(read.body.data.map((p: { value: string }) => p.value).sort(), notes);
  t.notRegex(out, /value-opening thread stopped/);
  process.kill(-npm.pid!, 'SIGTERM');
  await exited;
});

test('the image runs the vault with the same Node flags as npm start', (t) => {
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
  t.truthy(cmd, 'the Dockerfile has an exec-form CMD');
  const args = JSON.parse(cmd![1]) as string[];
  t.deepEqual(args.slice(-1 - VAULT_NODE_FLAGS.length), [...VAULT_NODE_FLAGS, 'dist/core/src/main.js']);
  const start = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).scripts.start as string;
  t.is(start, `node ${args.slice(1).join(' ')}`);
});
