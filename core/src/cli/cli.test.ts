import test from 'ava';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { runCli } from './main.js';
import { dataDir, io } from './cli-testing.js';
import { commands } from './commands.js';
import { createPostgresDatabase } from '../testing/harness.js';
import { closedPort } from '../testing/process.js';
import { connect, disconnect } from '../db/connect.js';
import { migrations } from '../db/migrations/index.js';
import { Migrator } from 'kysely';
import pg from 'pg';
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { generateKeyPair } from '../crypto/keys.js';
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { Vault } from '../vault.js';
import { ActivityService } from '../activity/service.js';

test('every verb answers --help with its usage', async (t) => {
  for (const name of Object.keys(commands)) {
    const { io: x, out } = io();
    t.is(await runCli([...name.split(' '), '--help'], x), 0, name);
    t.regex(out.join('\n'), new RegExp(`Usage: vault ${name}`));
  }
  const { io: x, out } = io();
  t.is(await runCli(['--help'], x), 0);
  t.regex(out.join('\n'), /applications create/);
});

test('every command group answers --help with its commands; a group without one is a usage error', async (t) => {
  const groups = [...new Set(Object.keys(commands).filter((n) => n.includes(' ')).map((n) => n.split(' ')[0]))];
  t.deepEqual(groups.sort(), ['activity', 'applications', 'keys']);
  for (const group of groups) {
    for (const flag of ['--help', '-h', 'help']) {
      const asked = io();
      t.is(await runCli([group, flag], asked.io), 0, `${group} ${flag}`);
      t.deepEqual(asked.err, []);
      const text = asked.out.join('\n');
      t.regex(text, new RegExp(`^Usage: vault ${group} <command>`));
      for (const name of Object.keys(commands).filter((n) => n.startsWith(`${group} `))) t.true(text.includes(name), `${group} --help lists ${name}`);
    }
    const bare = io();
    t.is(await runCli([group], bare.io), 2);
    t.regex(bare.err.join('\n'), new RegExp(`${group} needs a command`));
    const unknown = io();
    t.is(await runCli([group, 'frobnicate'], unknown.io), 2);
    t.regex(unknown.err.join('\n'), new RegExp(`Unknown command: ${group} frobnicate`));
    t.regex(unknown.out.join('\n'), new RegExp(`Usage: vault ${group} <command>`));
  }
  const keys = io();
  await runCli(['keys', '--help'], keys.io);
  t.regex(keys.out.join('\n'), /keys rewrap/);
});

test('an unknown verb or option is exit code 2 with help', async (t) => {
  const unknown = io();
  t.is(await runCli(['frobnicate'], unknown.io), 2);
  t.regex(unknown.err.join('\n'), /Unknown command: frobnicate/);
  const badOption = io();
  t.is(await runCli(['keygen', '--colour', 'red'], badOption.io), 2);
  t.regex(badOption.err.join('\n'), /Unknown option '--colour'/);
});

test('an argument a verb does not take is a usage error, not ignored', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'kept'], created.io), 0);
  const id = /Created application (\S+)/.exec(created.out.join('\n'))![1];
  const cases: [string[], string, string][] = [
    [['activity', 'verify', '10500:a41f'], '10500:a41f', 'vault activity verify [--head SEQUENCE:HASH]'],
    [['applications', 'delete', id, 'another-id'], 'another-id', 'vault applications delete ID'],
    [['keys', 'list', 'extra'], 'extra', 'vault keys list'],
  ];
  for (const [args, stray, usage] of cases) {
    const { io: x, err } = io(env);
    t.is(await runCli(args, x), 2, args.join(' '));
    t.is(err[0].split('\n')[0], `Unexpected argument: ${stray}`);
    t.true(err.join('\n').includes(`Usage: ${usage}`));
  }
  const listed = io(env);
  await runCli(['applications', 'list'], listed.io);
  t.true(listed.out.some((l) => l.startsWith(`${id}\tkept`)), 'nothing was deleted');
});

test('keygen writes a usable key pair, the private half 0600', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-keygen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { io: x, out } = io();
  t.is(await runCli(['keygen', '--bits', '2048', '--out', dir], x), 0);
  t.is(statSync(join(dir, 'private-key.pem')).mode & 0o777, 0o600);
  t.regex(readFileSync(join(dir, 'public-key.pem'), 'utf8'), /BEGIN PUBLIC KEY/);
  const line = out.find((l) => l.startsWith('VAULT_ENCRYPTION_PUBLIC_KEY='))!;
  t.regex(Buffer.from(line.split('=')[1], 'base64').toString(), /BEGIN PUBLIC KEY/);
});

test('keygen never writes over a key pair already in --out: it replaced the private key there, and a new one took the old file\'s mode (0644 here)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-keygen-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A key pair from before, its private half left readable by others (copied, unpacked).
  t.is(await runCli(['keygen', '--bits', '2048', '--out', dir], io().io), 0);
  const privatePath = join(dir, 'private-key.pem');
  chmodSync(privatePath, 0o644);
  const before = readFileSync(privatePath, 'utf8');
  const again = io();
  t.is(await runCli(['keygen', '--bits', '2048', '--out', dir], again.io), 2);
  t.deepEqual(again.err, [`${privatePath} already exists: keygen writes a new pair only where there is none (nothing was written)`]);
  t.deepEqual(again.out, []);
  t.is(readFileSync(privatePath, 'utf8'), before, 'the key that may already encrypt data is not lost');

  const file = join(dir, 'file.pem');
  writeFileSync(file, 'x');
  const notDir = io();
  t.is(await runCli(['keygen', '--out', file], notDir.io), 2);
  t.deepEqual(notDir.err, [`--out names a file (${file}): give the directory to write the key pair in`]);
});

test('applications are created, listed and deleted from the command line', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'reports', '--attributes', 'EMAIL,NAME'], created.io), 0);
  const match = /Created application (\S+) \(reports\)\. API key \(shown once\): (\S+)/.exec(created.out.join('\n'));
  t.truthy(match);
  const listed = io(env);
  await runCli(['applications', 'list'], listed.io);
  t.true(listed.out.some((l) => l.startsWith(`${match![1]}\treports\t-\tEMAIL,NAME`)));
  t.false(listed.out.join('\n').includes(match![2]), 'keys are never listed');
  const deleted = io(env);
  t.is(await runCli(['applications', 'delete', match![1]], deleted.io), 0);
  const missing = io(env);
  t.is(await runCli(['applications', 'delete', match![1]], missing.io), 1);
  t.deepEqual(missing.err, ['Application not found']);
});

test('a name stored before control characters were refused is listed escaped: it cannot drive the terminal', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'reports'], created.io), 0);
  const [, id] = /Created application (\S+) /.exec(created.out.join('\n'))!;
  const db = new Database(join(env.VAULT_DATA_DIR, 'vault.db'));
  db.prepare('update applications set name = ? where id = ?').run('old\u001b[2J\tname\u0085', id);
  db.close();
  const listed = io(env);
  t.is(await runCli(['applications', 'list'], listed.io), 0);
  const line = listed.out.find((l) => l.startsWith(id));
  t.is(line, `${id}\told\\u001b[2J\\u0009name\\u0085\t-\t*`);
  const updated = io(env);
  t.is(await runCli(['applications', 'update', id, '--admin'], updated.io), 0);
  t.deepEqual(updated.out, [`Updated application ${id}\told\\u001b[2J\\u0009name\\u0085\tadmin\t*`]);
});

test('an application is changed and its key rolled from the command line: same id, the old key stops', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'reports', '--attributes', 'EMAIL'], created.io), 0);
  const [, id, oldKey] = /Created application (\S+) \(reports\)\. API key \(shown once\): (\S+)/.exec(created.out.join('\n'))!;

  const updated = io(env);
  t.is(await runCli(['applications', 'update', id, '--attributes', 'EMAIL,NAME', '--admin'], updated.io), 0);
  t.deepEqual(updated.out, [`Updated application ${id}\treports\tadmin\tEMAIL,NAME`]);
  const refused = io(env);
  t.is(await runCli(['applications', 'update', id], refused.io), 2);
  t.deepEqual(refused.err, ['nothing to change: give --name, --attributes, --admin or --no-admin']);

  const kept = io(env);
  t.is(await runCli(['applications', 'roll-key', id, '--keep-previous', '3600'], kept.io), 0);
  const [, , keptKey, until] = /Rolled the key of application (\S+) \(reports\)\. API key \(shown once\): (\S+); the previous key is valid until (\S+)$/.exec(kept.out.join('\n'))!;
  t.true(Date.parse(until) > Date.now());
  const rolled = io(env);
  t.is(await runCli(['applications', 'roll-key', id], rolled.io), 0);
  const [, newKey] = /API key \(shown once\): (\S+); the previous key no longer works$/.exec(rolled.out.join('\n'))!;
  // A key longer than a request may carry could never sign in: refused, and the key in use stays.
  const tooLong = `vk_${'x'.repeat(510)}`;
  for (const verb of [['applications', 'roll-key', id, '--api-key', tooLong], ['applications', 'create', '--name', 'long', '--api-key', tooLong]]) {
    const refusedKey = io(env);
    t.is(await runCli(verb, refusedKey.io), 1, verb[1]);
    t.deepEqual(refusedKey.err, ['API key must be at most 512 characters'], verb[1]);
    t.deepEqual(refusedKey.out, []);
  }

  const vault = await Vault.open({ config: loadConfig(env), logger: createLogger('silent'), existing: true });
  try {
    t.is(await vault.applications.authenticate(oldKey), undefined);
    t.is(await vault.applications.authenticate(keptKey), undefined, 'a roll without --keep-previous ends the key it replaces');
    t.like(await vault.applications.authenticate(newKey), { applicationId: id, admin: true });
    // Each change is in the activity log, made by the command line as this system user, without a key.
    await vault.sealer.sealAll();
    const recorded = await new ActivityService(vault.db).list({ eventType: 'CHANGE' });
    t.deepEqual(
      recorded.map((e) => [e.applicationId, e.applicationUser, e.change?.action]),
      ['create', 'update', 'rollKey', 'rollKey'].map((action) => ['vault-cli', userInfo().username, action]),
    );
    for (const key of [oldKey, keptKey, newKey]) t.false(JSON.stringify(recorded).includes(key));
  } finally {
    await vault.close();
  }
  const listed = io(env);
  await runCli(['applications', 'list'], listed.io);
  t.false(listed.out.join('\n').includes(newKey), 'keys are never listed');
});

test('a key of your own is read from --api-key-file or standard input, never from an argument, and never printed back', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const fileKey = `file-key-${randomBytes(12).toString('hex')}`;
  const file = join(env.VAULT_DATA_DIR, 'sidecar.key');
  writeFileSync(file, `${fileKey}\n`, { mode: 0o600 });
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'sidecar', '--api-key-file', file], created.io), 0, created.err.join('\n'));
  const [, id] = /^Created application (\S+) \(sidecar\)\. API key: the one given$/.exec(created.out.join('\n'))!;
  t.false(created.out.join('\n').includes(fileKey), 'the key is where the operator keeps it, not in the output');

  const stdinKey = `stdin-key-${randomBytes(12).toString('hex')}`;
  const rolled = io(env);
  const fed = { ...rolled.io, in: async () => `${stdinKey}\n` };
  t.is(await runCli(['applications', 'roll-key', id, '--api-key-file', '-'], fed), 0, rolled.err.join('\n'));
  t.deepEqual(rolled.out, [`Rolled the key of application ${id} (sidecar). API key: the one given; the previous key no longer works`]);

  // Mistakes name the option and the file, never what the file holds.
  const secret = `secret-${randomBytes(12).toString('hex')}`;
  const spaced = join(env.VAULT_DATA_DIR, 'spaced.key');
  writeFileSync(spaced, `KEY=${secret} other`);
  const empty = join(env.VAULT_DATA_DIR, 'empty.key');
  writeFileSync(empty, '\n');
  const cases: Array<[string[], number, string]> = [
    [['applications', 'create', '--name', 'x', '--api-key-file', join(env.VAULT_DATA_DIR, 'missing.key')], 2, `--api-key-file: ${join(env.VAULT_DATA_DIR, 'missing.key')} does not exist`],
    [['applications', 'create', '--name', 'x', '--api-key-file', env.VAULT_DATA_DIR], 2, `--api-key-file: ${env.VAULT_DATA_DIR} is a directory: name the file holding the key`],
    [['applications', 'roll-key', id, '--api-key-file', empty], 2, `--api-key-file: ${empty} is empty`],
    [['applications', 'create', '--name', 'x', '--api-key', secret, '--api-key-file', file], 2, 'give --api-key or --api-key-file, not both'],
    [['applications', 'create', '--name', 'x', '--api-key-file', spaced], 1, 'API key must be printable ASCII, without spaces'],
  ];
  for (const [args, code, message] of cases) {
    const refused = io(env);
    t.is(await runCli(args, refused.io), code, args.join(' '));
    t.is(refused.err.join('\n').split('\n')[0], message);
    t.false(refused.err.join('\n').includes(secret) || refused.err.join('\n').includes(fileKey));
    t.deepEqual(refused.out, []);
  }

  const vault = await Vault.open({ config: loadConfig(env), logger: createLogger('silent'), existing: true });
  try {
    t.is(await vault.applications.authenticate(fileKey), undefined, 'rolled away');
    t.like(await vault.applications.authenticate(stdinKey), { applicationId: id });
    t.is((await vault.applications.list()).length, 2, 'the admin and the sidecar: nothing refused was created');
  } finally {
    await vault.close();
  }
});

test('rewrap given the active key’s own private key says so, rather than to register a key', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0); // a first open generates the vault's pair
  const own = join(env.VAULT_DATA_DIR, 'vault-private-key.pem');
  const { io: x, err } = io(env);
  t.is(await runCli(['keys', 'rewrap', '--old-private-key', own], x), 1);
  t.regex(err.join('\n'), /^Failed: --old-private-key is the active key's own \([0-9a-f]+\): give the private key of the key being replaced, or register the new key first \(vault keys register\)$/);
});

test('the rotation verbs given the wrong file name the option and what the file is not', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const dir = env.VAULT_DATA_DIR;
  const stranger = generateKeyPair(2048);
  writeFileSync(join(dir, 'stranger-private.pem'), stranger.privatePem);
  writeFileSync(join(dir, 'garbage.pem'), 'not a key');
  const cases: [string[], string][] = [
    // The private half where the public one belongs: the vault never holds a private key.
    [['keys', 'register', '--public-key', join(dir, 'vault-private-key.pem')], `--public-key: ${join(dir, 'vault-private-key.pem')} is a private key: register the public half (public-key.pem), never the private one`],
    [['keys', 'register', '--public-key', join(dir, 'garbage.pem')], `--public-key: ${join(dir, 'garbage.pem')} is not a PEM RSA public key`],
    [['keys', 'register', '--public-key', dir], `--public-key: ${dir} is a directory: name the public key file in it (public-key.pem)`],
    [['keys', 'rewrap', '--old-private-key', join(dir, 'vault-public-key.pem')], `--old-private-key: ${join(dir, 'vault-public-key.pem')} is not the PEM private key of a key registered with this vault (see vault keys list; a retired key's private key opens nothing)`],
    [['keys', 'rewrap', '--old-private-key', join(dir, 'stranger-private.pem')], `--old-private-key: ${join(dir, 'stranger-private.pem')} is not the PEM private key of a key registered with this vault (see vault keys list; a retired key's private key opens nothing)`],
    [['keys', 'rewrap', '--old-private-key', dir], `--old-private-key: ${dir} is a directory: name the private key file in it`],
  ];
  for (const [args, message] of cases) {
    const { io: x, err } = io(env);
    t.is(await runCli(args, x), args.includes(dir) ? 2 : 1, args.join(' '));
    t.deepEqual(err, [args.includes(dir) ? message : `Failed: ${message}`], args.join(' '));
  }
  const listed = io(env);
  await runCli(['keys', 'list'], listed.io);
  t.is(listed.out.length, 1, 'nothing was registered');
});

test('migrate brings a fresh database up to date', async (t) => {
  const { io: x, out } = io(dataDir(t));
  t.is(await runCli(['migrate'], x), 0);
  t.deepEqual(out, ['Database is up to date']);
});

test('invalid configuration is reported, exit code 2', async (t) => {
  const { io: x, err } = io({ VAULT_DB: 'mysql://nope' });
  t.is(await runCli(['migrate'], x), 2);
  t.deepEqual(err, ['Invalid configuration: VAULT_DB must be sqlite:<path> or a postgres:// URL']);
  const timeout = io({ VAULT_DB_STATEMENT_TIMEOUT_MS: '-1' });
  t.is(await runCli(['migrate'], timeout.io), 2);
  t.deepEqual(timeout.err, ['Invalid configuration: VAULT_DB_STATEMENT_TIMEOUT_MS must be an integer from 0 to 3600000, got "-1"']);
});

test('activity verify reports an intact chain, then the first record edited behind its back', async (t) => {
  const env = dataDir(t);
  const { loadConfig } = await import('../config.js');
  const { createLogger } = await import('../logger.js');
  const { Vault } = await import('../vault.js');
  const vault = await Vault.open({ config: loadConfig(env), logger: createLogger('silent'), announce: () => {} });
  const now = new Date().toISOString();
  await vault.db.transaction().execute((trx) =>
    vault.activity.append(trx, [1, 2, 3].map((i) => ({ eventType: 'READ' as const, dataPointId: `p${i}`, applicationId: 'crm', reportOnly: true, timestamp: now }))),
  );
  const before = io(env);
  t.is(await runCli(['activity', 'verify'], before.io), 0);
  t.deepEqual(before.out, ['Activity log intact: 3 records. Records cut off the end would not show: check against a head kept elsewhere with --head']);
  const head = io(env);
  t.is(await runCli(['activity', 'head'], head.io), 0);
  t.regex(head.out[0], /^3:[0-9a-f]{64}$/);
  const withHead = io(env);
  t.is(await runCli(['activity', 'verify', '--head', head.out[0]], withHead.io), 0);
  t.deepEqual(withHead.out, [`Activity log intact: 3 records, and it still holds the kept head ${head.out[0]}: nothing up to it was removed or rewritten`]);
  t.is(await runCli(['activity', 'verify', '--head', 'yesterday'], io(env).io), 2);
  // The append-only triggers stop honest code; a tamperer with the database file drops them.
  const { sql } = await import('kysely');
  await sql`drop trigger activity_log_no_update`.execute(vault.db);
  await vault.db.updateTable('activity_log' as never).set({ data_point_id: 'forged' } as never).where('data_point_id' as never, '=', 'p2' as never).execute();
  await vault.close();
  const after = io(env);
  t.is(await runCli(['activity', 'verify'], after.io), 1);
  t.regex(after.out[0], /^Activity log BROKEN at sequence 2 \(event \S+\) after 3 records$/);
  // The break is before the kept head, which is still there: nothing was cut off the end.
  const brokenWithHead = io(env);
  t.is(await runCli(['activity', 'verify', '--head', head.out[0]], brokenWithHead.io), 1);
  t.is(brokenWithHead.out.length, 2);
  t.regex(brokenWithHead.out[0], /^Activity log BROKEN at sequence 2 /);
  t.is(brokenWithHead.out[1], `It still holds the kept head ${head.out[0]} unchanged: nothing up to it was cut off the end`);

  // Cutting records off the end leaves a valid chain: only the head kept elsewhere shows it.
  const reopened = await Vault.open({ config: loadConfig(env), logger: createLogger('silent'), announce: () => {} });
  await sql`drop trigger activity_log_no_delete`.execute(reopened.db);
  await reopened.db.deleteFrom('activity_log').where('sequence', '=', 3).execute();
  await reopened.close();
  const brokenAndCut = io(env);
  t.is(await runCli(['activity', 'verify', '--head', head.out[0]], brokenAndCut.io), 1);
  t.deepEqual(brokenAndCut.out.slice(1), [`Nor does it hold the kept head ${head.out[0]} as it was: that record was removed or rewritten`]);
  const again = await Vault.open({ config: loadConfig(env), logger: createLogger('silent'), announce: () => {} });
  await again.db.deleteFrom('activity_log').where('sequence', '>=', 2).execute();
  await again.close();
  const cut = io(env);
  t.is(await runCli(['activity', 'verify', '--head', head.out[0]], cut.io), 1);
  t.regex(cut.out[0], /^Activity log does not hold the expected head 3:[0-9a-f]{64} \(it has 1 records\)/);
});

test('deadletters sends the sidecar ingest token from the environment and asks for values only with --values', async (t) => {
  const { createServer } = await import('node:http');
  const seen: { url?: string; authorization?: string }[] = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url, authorization: req.headers.authorization });
    res.writeHead(req.headers.authorization === 'Bearer cli-token-0123456789' ? 200 : 401, { 'content-type': 'application/json' });
    res.end('{"offset":0,"limit":100,"total":0,"items":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const sidecar = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const withToken = io({ SIDECAR_INGEST_TOKEN: 'cli-token-0123456789' });
  t.is(await runCli(['deadletters', '--sidecar', sidecar], withToken.io), 0);
  t.is(await runCli(['deadletters', '--sidecar', sidecar, '--values'], withToken.io), 0);
  t.is(await runCli(['deadletters', '--sidecar', sidecar], io().io), 1, 'without the token the sidecar refuses');
  t.deepEqual(seen, [
    { url: '/deadletters', authorization: 'Bearer cli-token-0123456789' },
    { url: '/deadletters?values=true', authorization: 'Bearer cli-token-0123456789' },
    { url: '/deadletters', authorization: undefined },
  ]);
});

test('deadletters pages past the first 100 with --offset and --limit, as GET /deadletters does', async (t) => {
  const { createServer } = await import('node:http');
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"offset":100,"limit":50,"total":250,"items":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const sidecar = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  t.is(await runCli(['deadletters', '--sidecar', sidecar, '--offset', '100', '--limit', '50'], io().io), 0);
  t.is(await runCli(['deadletters', '--sidecar', sidecar, '--offset', '200', '--values'], io().io), 0);
  t.deepEqual(seen, ['/deadletters?offset=100&limit=50', '/deadletters?offset=200&values=true']);
});

test('deadletters: a sidecar it cannot reach is named with how to point elsewhere; SIDECAR_PORT sets the default', async (t) => {
  const { createServer } = await import('node:http');
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"offset":0,"limit":100,"total":0,"items":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const viaEnv = io({ SIDECAR_PORT: String(port) });
  t.is(await runCli(['deadletters'], viaEnv.io), 0, 'found at SIDECAR_PORT without --sidecar');
  t.deepEqual(viaEnv.err, []);
  await new Promise<void>((resolve) => server.close(() => resolve()));

  // Nothing answers there, nor will: the port just closed could be given to another test's server.
  const nowhere = await closedPort();
  const how = 'is it running there? Name its address with --sidecar URL, or its port with SIDECAR_PORT';
  const closed = io({ SIDECAR_PORT: String(nowhere) });
  t.is(await runCli(['deadletters'], closed.io), 1);
  t.deepEqual(closed.err, [`Failed: could not reach the sidecar at http://127.0.0.1:${nowhere} (ECONNREFUSED): ${how}`]);
  const named = io();
  t.is(await runCli(['deadletters', '--replay', '--sidecar', `http://127.0.0.1:${nowhere}/`], named.io), 1);
  t.deepEqual(named.err, [`Failed: could not reach the sidecar at http://127.0.0.1:${nowhere} (ECONNREFUSED): ${how}`]);

  const badPort = io({ SIDECAR_PORT: 'eighty' });
  t.is(await runCli(['deadletters'], badPort.io), 2);
  t.deepEqual(badPort.err, ['Invalid configuration: SIDECAR_PORT must be an integer from 1 to 65535, got "eighty" (or name the sidecar with --sidecar URL)']);
});

test('deadletters: a --sidecar URL carrying a password or a token is never repeated in a message', async (t) => {
  const withUser = io();
  t.is(await runCli(['deadletters', '--sidecar', 'http://ops:side-pw-1@127.0.0.1:1'], withUser.io), 2);
  t.deepEqual(withUser.err, ['--sidecar must not hold a user name or password: the sidecar takes the token in SIDECAR_INGEST_TOKEN']);
  const tokenAsUser = io();
  t.is(await runCli(['deadletters', '--sidecar', 'http://side-token-3@127.0.0.1:1'], tokenAsUser.io), 2);
  t.deepEqual(tokenAsUser.err, withUser.err);
  const withToken = io();
  t.is(await runCli(['deadletters', '--sidecar', 'http://127.0.0.1:1/?token=side-token-2'], withToken.io), 1);
  t.regex(withToken.err.join('\n'), /^Failed: could not reach the sidecar at http:\/\/127\.0\.0\.1:1\/\?token=\*\*\* /);
  for (const line of [...withUser.err, ...withToken.err, ...tokenAsUser.err, ...withUser.out, ...withToken.out, ...tokenAsUser.out]) {
    t.false(line.includes('side-pw-1') || line.includes('side-token-2') || line.includes('side-token-3'), line);
  }
});

test('deadletters: an answer that is not JSON (the proxy port, another service) is named, not a JSON parse error', async (t) => {
  const { createServer } = await import('node:http');
  // What the proxy port forwards to: the application's own 404 page, or nothing at all.
  const server = createServer((req, res) => {
    if (req.url === '/deadletters') {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html><body>Cannot GET /deadletters</body></html>');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const how = `is ${base} the sidecar's own API (SIDECAR_PORT, 8084 by default), not its proxy port or another service?`;
  const list = io();
  t.is(await runCli(['deadletters', '--sidecar', base], list.io), 1);
  t.deepEqual(list.err, [`Failed: ${base}/deadletters answered HTTP 404 with a body that is not JSON: ${how}`]);
  const replay = io();
  t.is(await runCli(['deadletters', '--replay', '--sidecar', base], replay.io), 1);
  t.deepEqual(replay.err, [`Failed: ${base}/deadletters/replay answered HTTP 404 with an empty body: ${how}`]);
});

test('vault sidecar runs the sidecar from the same environment, as npm run sidecar does', async (t) => {
  const { spawnSync } = await import('node:child_process');
  // Without SIDECAR_API_KEY the sidecar refuses to start, naming it: proof it is the sidecar that ran.
  const run = spawnSync(process.execPath, [new URL('../../bin/vault.mjs', import.meta.url).pathname, 'sidecar'], {
    env: { PATH: process.env.PATH, SIDECAR_PORT: '1' }, encoding: 'utf8', timeout: 60_000,
  });
  t.is(run.status, 78, run.stderr);
  t.is(run.stderr, 'vault-sidecar: invalid sidecar configuration:\n  - SIDECAR_API_KEY is required (the vault API key sent as a Bearer token)\n');
});

test('PostgreSQL: a backup that fails leaves the file already under its name as it was', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: database.url };
  t.is(await runCli(['migrate'], io(env).io), 0);
  const dir = env.VAULT_DATA_DIR;
  const backup = join(dir, 'copy.dump');
  writeFileSync(backup, 'an earlier good backup');
  const noTools = join(dir, 'no-tools');
  mkdirSync(noTools);
  const failingTools = join(dir, 'failing-tools');
  mkdirSync(failingTools);
  // Writes part of a dump into the file it is given, then fails, as pg_dump may midway.
  writeFileSync(join(failingTools, 'pg_dump'), '#!/bin/sh\nfor a; do case "$a" in --file=*) printf partial > "${a#--file=}";; esac; done\nexit 1\n');
  chmodSync(join(failingTools, 'pg_dump'), 0o755);
  for (const [path, message] of [
    [noTools, 'Failed: pg_dump is not installed (it comes with the PostgreSQL client tools)'],
    [failingTools, 'Failed: pg_dump failed (exit code 1); its own message is above'],
  ]) {
    const failed = io({ ...env, PATH: path });
    t.is(await runCli(['backup', '--to', backup], failed.io), 1, path);
    t.deepEqual(failed.err, [message]);
    t.is(readFileSync(backup, 'utf8'), 'an earlier good backup');
    t.deepEqual(readdirSync(dir).filter((f) => f.includes('partial')), [], 'nothing is left beside it');
  }
  const done = io(env);
  t.is(await runCli(['backup', '--to', backup], done.io), 0);
  t.regex(readFileSync(backup, 'latin1'), /^PGDMP/);
  t.is(statSync(backup).mode & 0o777, 0o600);
});

test('PostgreSQL: a password in the URL\'s query string (libpq and pg both read ?password=) is in no message and on no command line', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const password = `Qpw${randomBytes(6).toString('hex')}`;
  // Trust authentication ignores the password, so the URL works as written.
  const withPassword = `${database.url}?password=${password}&application_name=cli-test&options=-c%20statement_timeout%3D0`;
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: withPassword };

  const empty = io(env);
  t.is(await runCli(['keys', 'list'], empty.io), 1);
  t.deepEqual(empty.err, [`Failed: ${database.url}?password=***&application_name=cli-test&options=-c%20statement_timeout%3D0 holds no vault: check VAULT_DB (a start or \`vault migrate\` creates one)`]);

  t.is(await runCli(['migrate'], io(env).io), 0);
  // pg_dump as `ps` would see it: its arguments, and whether the password reached it at all.
  const tools = join(env.VAULT_DATA_DIR, 'tools');
  mkdirSync(tools);
  const seen = join(env.VAULT_DATA_DIR, 'seen');
  writeFileSync(join(tools, 'pg_dump'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${seen}\nprintf 'PGPASSWORD=%s\\n' "$PGPASSWORD" >> ${seen}\nfor a; do case "$a" in --file=*) printf PGDMP > "\${a#--file=}";; esac; done\n`);
  chmodSync(join(tools, 'pg_dump'), 0o755);
  const backup = io({ ...env, PATH: `${tools}:${process.env.PATH}` });
  t.is(await runCli(['backup', '--to', join(env.VAULT_DATA_DIR, 'copy.dump')], backup.io), 0, backup.err.join('\n'));
  const lines = readFileSync(seen, 'utf8').trim().split('\n');
  t.deepEqual(lines.filter((l) => l.includes(password)), [`PGPASSWORD=${password}`], 'only in the environment');
  // As written: libpq decodes %20 in a URI, but not +, which would reach the server as a plus.
  t.true(lines.some((l) => l.startsWith('--dbname=') && l.endsWith('?application_name=cli-test&options=-c%20statement_timeout%3D0')), lines.join('\n'));
});

/** A database as an older release left it: migrated up to `last` and no further. */
async function migratedTo(url: string, last: string): Promise<void> {
  const handle = connect({ url });
  try {
    const { error } = await new Migrator({ db: handle.db, provider: { getMigrations: async () => migrations } }).migrateTo(last);
    if (error) throw error;
  } finally {
    await disconnect(handle);
  }
}

/** One run of every verb that works on an existing vault, with valid arguments. */
function verbsOnAVault(t: { teardown: (fn: () => void) => void }): string[][] {
  const files = mkdtempSync(join(tmpdir(), 'vault-cli-args-'));
  t.teardown(() => rmSync(files, { recursive: true, force: true }));
  const pair = generateKeyPair(2048);
  writeFileSync(join(files, 'public-key.pem'), pair.publicPem);
  writeFileSync(join(files, 'private-key.pem'), pair.privatePem);
  return [
    ['applications', 'create', '--name', 'reports'],
    ['applications', 'list'],
    ['applications', 'update', 'some-id', '--name', 'renamed'],
    ['applications', 'roll-key', 'some-id'],
    ['applications', 'delete', 'some-id'],
    ['keys', 'list'],
    ['keys', 'register', '--public-key', join(files, 'public-key.pem')],
    ['keys', 'rewrap', '--old-private-key', join(files, 'private-key.pem')],
    ['keys', 'retire', '--key-id', 'some-id'],
    ['activity', 'verify'],
    ['activity', 'head'],
    ['backup', '--to', join(files, 'backup.db')],
  ];
}

test('no verb but migrate makes a vault where there is none: each refuses, creating nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-cli-none-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const env = { VAULT_DATA_DIR: join(dir, 'data') };
  const database = join(dir, 'data', 'vault.db');
  for (const verb of verbsOnAVault(t)) {
    const { io: x, out, err } = io(env);
    t.is(await runCli(verb, x), 1, verb.join(' '));
    t.deepEqual(err, [`Failed: there is no vault database at ${database}: check VAULT_DB and VAULT_DATA_DIR (a start or \`vault migrate\` creates one)`], verb.join(' '));
    t.deepEqual(out, []);
    t.deepEqual(readdirSync(dir), [], `${verb.join(' ')} created nothing: no database, no keys`);
  }
});

test('no verb but migrate migrates: each refuses a database an older release left, which stays as it was', async (t) => {
  const env = dataDir(t);
  const dir = env.VAULT_DATA_DIR;
  await migratedTo(`sqlite:${join(dir, 'vault.db')}`, '0005_key_rotation');
  const before = readdirSync(dir).sort();
  // All but `backup`, which the next test runs: the way back is taken before the upgrade.
  for (const verb of verbsOnAVault(t).filter((v) => v[0] !== 'backup')) {
    const { io: x, err } = io(env);
    t.is(await runCli(verb, x), 1, verb.join(' '));
    t.deepEqual(
      err,
      ["Failed: the database is not migrated to this release (0006_activity_sealing, 0007_activity_lean, 0008_activity_read_sets, 0009_vaulted_points_by_subject, 0010_application_key_roll, 0011_activity_changes, 0012_index_key_check, 0013_retired_api_keys not applied): run `vault migrate`, or start this release's vault, first"],
      verb.join(' '),
    );
  }
  t.deepEqual(readdirSync(dir).sort(), before, 'no key or index key was made');
  const probe = connect({ url: `sqlite:${join(dir, 'vault.db')}` });
  t.teardown(() => disconnect(probe));
  const applied = await probe.db.selectFrom('kysely_migration' as never).select('name' as never).execute();
  t.is(applied.length, 5, 'no migration ran');

  t.is(await runCli(['migrate'], io(env).io), 0);
  t.is(await runCli(['keys', 'list'], io(env).io), 0);
});

test('a database a newer release migrated: every verb but backup refuses it, naming what this release does not know, and changes nothing', async (t) => {
  const env = dataDir(t);
  const database = join(env.VAULT_DATA_DIR, 'vault.db');
  t.is(await runCli(['migrate'], io(env).io), 0);
  const probe = connect({ url: `sqlite:${database}` });
  t.teardown(() => disconnect(probe));
  await probe.db.insertInto('kysely_migration' as never).values({ name: '9999_from_a_newer_release', timestamp: new Date().toISOString() } as never).execute();
  const refusal = [
    'Failed: the database was migrated by a newer release of the vault (9999_from_a_newer_release, unknown to this one): run that release, or restore the backup taken before the upgrade',
  ];
  // An older release's verbs ran on it: `applications delete` left the deleted key unretired.
  for (const verb of [['migrate'], ...verbsOnAVault(t).filter((v) => v[0] !== 'backup')]) {
    const { io: x, err } = io(env);
    t.is(await runCli(verb, x), 1, verb.join(' '));
    t.deepEqual(err, refusal, verb.join(' '));
  }
  const applications = await probe.db.selectFrom('applications' as never).select('name' as never).execute();
  t.is(applications.length, 1, 'nothing was created');
  // The way back is copied whatever release made it.
  const backup = io(env);
  const newer = join(env.VAULT_DATA_DIR, 'newer.db');
  t.is(await runCli(['backup', '--to', newer], backup.io), 0, backup.err.join('\n'));

  // Restored by this release, it would have replaced a working vault with one it refuses.
  const current = dataDir(t);
  t.is(await runCli(['migrate'], io(current).io), 0);
  const restore = io(current);
  t.is(await runCli(['restore', '--from', newer], restore.io), 1);
  t.deepEqual(restore.err, [`${newer} was made by a newer release of the vault (9999_from_a_newer_release, unknown to this one): restore it with that release; nothing was changed`]);
  t.is(await runCli(['keys', 'list'], io(current).io), 0, 'the vault is as it was');
});

test('PostgreSQL: a backup of a database a newer release migrated is not restored by this release, which changes nothing', async (t) => {
  const database = await createPostgresDatabase();
  const newer = await createPostgresDatabase();
  t.teardown(async () => {
    await database.drop();
    await newer.drop();
  });
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: database.url };
  t.is(await runCli(['migrate'], io(env).io), 0);
  const newerEnv = { ...env, VAULT_DB: newer.url };
  t.is(await runCli(['migrate'], io(newerEnv).io), 0);
  const client = new pg.Client({ connectionString: newer.url });
  await client.connect();
  t.teardown(() => client.end());
  await client.query(`insert into kysely_migration (name, timestamp) values ('9999_from_a_newer_release', now()::text)`);
  const dump = join(env.VAULT_DATA_DIR, 'newer.dump');
  t.is(await runCli(['backup', '--to', dump], io(newerEnv).io), 0);
  const own = join(env.VAULT_DATA_DIR, 'own.dump');
  t.is(await runCli(['backup', '--to', own], io(env).io), 0);

  const refused = io(env);
  t.is(await runCli(['restore', '--from', dump], refused.io), 1);
  t.deepEqual(refused.err, [`${dump} was made by a newer release of the vault (9999_from_a_newer_release, unknown to this one): restore it with that release; nothing was changed`]);
  t.is(await runCli(['keys', 'list'], io(env).io), 0, 'the vault is as it was');
  // A backup of this release's own is restored as before.
  t.is(await runCli(['restore', '--from', own], io(env).io), 0);
});

test('upgrading: the new release backs up a database an older release left, as it is, before migrating it', async (t) => {
  const env = dataDir(t);
  const dir = env.VAULT_DATA_DIR;
  const database = join(dir, 'vault.db');
  await migratedTo(`sqlite:${database}`, '0005_key_rotation');
  const before = readdirSync(dir).sort();
  const backups = mkdtempSync(join(tmpdir(), 'vault-cli-upgrade-backup-'));
  t.teardown(() => rmSync(backups, { recursive: true, force: true }));
  const backup = join(backups, 'before-upgrade.db');

  // README's "Upgrading": back up first. Told to migrate first instead, the operator lost the way back.
  const taken = io(env);
  t.is(await runCli(['backup', '--to', backup], taken.io), 0, taken.err.join('\n'));
  t.regex(taken.out.join('\n'), /^Backed up to /);
  t.deepEqual(readdirSync(dir).sort(), before, 'no key or index key was made');
  const applied = async (url: string) => {
    const probe = connect({ url });
    try {
      return (await probe.db.selectFrom('kysely_migration' as never).select('name' as never).execute()).length;
    } finally {
      await disconnect(probe);
    }
  };
  t.is(await applied(`sqlite:${database}`), 5, 'the database was not migrated');
  t.is(await applied(`sqlite:${backup}`), 5, 'the backup is of the older release');
});

test('a verb closes the database it opened: a restore after it, in the same process, is not refused', async (t) => {
  const env = dataDir(t);
  const backup = join(env.VAULT_DATA_DIR, 'backup.db');
  // One process runs all three, as a script embedding the command line (or the vault) does.
  t.is(await runCli(['migrate'], io(env).io), 0);
  t.is(await runCli(['backup', '--to', backup], io(env).io), 0);
  t.is(await runCli(['keys', 'list'], io(env).io), 0);
  const restored = io(env);
  t.is(await runCli(['restore', '--from', backup], restored.io), 0, restored.err.join('\n'));
  t.deepEqual(restored.out, [`Restored ${backup}`]);
});

test('restore says when the blind-index key at hand is not the one the backup was indexed with', async (t) => {
  const env = { ...dataDir(t), VAULT_INDEX_KEY: randomBytes(32).toString('base64') };
  t.is(await runCli(['migrate'], io(env).io), 0);
  const backups = mkdtempSync(join(tmpdir(), 'vault-cli-restore-key-'));
  t.teardown(() => rmSync(backups, { recursive: true, force: true }));
  const backup = join(backups, 'vault.db');
  t.is(await runCli(['backup', '--to', backup], io(env).io), 0);

  const elsewhere = { VAULT_DATA_DIR: join(backups, 'data'), VAULT_INDEX_KEY: randomBytes(32).toString('base64') };
  const other = io(elsewhere);
  t.is(await runCli(['restore', '--from', backup], other.io), 0);
  t.deepEqual(other.err, [
    'The blind-index key here (VAULT_INDEX_KEY) is not the one this backup was indexed with: put the one kept with the backup in place before starting the vault; a start with this one is refused.',
  ]);
  t.false(other.err.join('').includes(elsewhere.VAULT_INDEX_KEY));

  const same = io({ ...elsewhere, VAULT_INDEX_KEY: env.VAULT_INDEX_KEY });
  t.is(await runCli(['restore', '--from', backup], same.io), 0);
  t.deepEqual(same.err, [], 'the backup’s own key: nothing to say');
});

test('restore onto a new machine: a data directory not there yet is made, private, for the restored database', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-cli-restore-new-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const backup = join(dir, 'vault-backup.db');
  await migratedTo(`sqlite:${backup}`, '0012_index_key_check');
  const fresh = join(dir, 'data');
  const restored = io({ VAULT_DATA_DIR: fresh });
  t.is(await runCli(['restore', '--from', backup], restored.io), 0, restored.err.join('\n'));
  t.deepEqual(restored.out, [`Restored ${backup}`]);
  t.is(statSync(fresh).mode & 0o777, 0o700);
  t.is(statSync(join(fresh, 'vault.db')).mode & 0o777, 0o600);
  t.deepEqual(readdirSync(fresh), ['vault.db']);
});

test('PostgreSQL: no verb but migrate makes a vault in a database without one', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: database.url };
  for (const verb of verbsOnAVault(t)) {
    const { io: x, err } = io(env);
    t.is(await runCli(verb, x), 1, verb.join(' '));
    t.deepEqual(err, [`Failed: ${database.url} holds no vault: check VAULT_DB (a start or \`vault migrate\` creates one)`], verb.join(' '));
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const { rows } = await client.query("select count(*)::int as n from information_schema.tables where table_schema = 'public'");
  await client.end();
  t.is(rows[0].n, 0, 'no table was created');
  t.deepEqual(readdirSync(env.VAULT_DATA_DIR), [], 'no key was made');
});

test('PostgreSQL: restoring a backup an older release made leaves a database this release starts on', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: database.url };
  const dir = env.VAULT_DATA_DIR;
  // The backup taken before the upgrade, of the schema the older release had.
  await migratedTo(database.url, '0005_key_rotation');
  const older = join(dir, 'before-upgrade.dump');
  execFileSync('pg_dump', ['--format=custom', '--no-owner', `--file=${older}`, `--dbname=${database.url}`]);
  // The upgrade: its migrations add tables the backup does not have.
  t.is(await runCli(['migrate'], io(env).io), 0);

  const restored = io(env);
  t.is(await runCli(['restore', '--from', older], restored.io), 0);
  t.deepEqual(restored.out, [`Restored ${older}`]);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(() => client.end());
  const applied = async () => (await client.query('select name from kysely_migration order by name')).rows.map((r) => r.name);
  t.deepEqual(await applied(), Object.keys(migrations).slice(0, 5), 'the database is the backup’s');
  t.is(await runCli(['migrate'], io(env).io), 0, 'this release migrates it again, as a start does');
  t.deepEqual(await applied(), Object.keys(migrations));
});

test('PostgreSQL: restore refuses a file that is not a vault backup, or a database that holds something else, changing nothing', async (t) => {
  const database = await createPostgresDatabase();
  const other = await createPostgresDatabase();
  t.teardown(async () => {
    await database.drop();
    await other.drop();
  });
  const env: Record<string, string> = { ...dataDir(t), VAULT_DB: database.url };
  const dir = env.VAULT_DATA_DIR;
  t.is(await runCli(['migrate'], io(env).io), 0);
  const notADump = join(dir, 'notes.txt');
  writeFileSync(notADump, 'not a backup at all');
  const client = new pg.Client({ connectionString: other.url });
  await client.connect();
  t.teardown(() => client.end());
  await client.query('create table customers (id int primary key)');
  const notAVault = join(dir, 'customers.dump');
  execFileSync('pg_dump', ['--format=custom', '--no-owner', `--file=${notAVault}`, `--dbname=${other.url}`]);
  for (const file of [notADump, notAVault]) {
    const refused = io(env);
    t.is(await runCli(['restore', '--from', file], refused.io), 1);
    t.deepEqual(refused.err, [`${file} is not a vault database made by \`vault backup\`: nothing was changed`]);
  }
  t.is(await runCli(['keys', 'list'], io(env).io), 0, 'the vault is as it was');

  const backup = join(dir, 'vault.dump');
  t.is(await runCli(['backup', '--to', backup], io(env).io), 0);
  const elsewhere = io({ ...env, VAULT_DB: other.url });
  t.is(await runCli(['restore', '--from', backup], elsewhere.io), 1);
  t.deepEqual(elsewhere.err, [`${other.url} holds tables but no vault: nothing was changed (restore into the vault's own database)`]);
  t.is((await client.query('select count(*)::int as n from customers')).rows[0].n, 0, 'its table is still there');
});

test('an install an older release left readable by others is made private when the vault opens it, with one warning', async (t) => {
  const env = dataDir(t);
  const dir = env.VAULT_DATA_DIR;
  t.is(await runCli(['migrate'], io(env).io), 0);
  const files = ['vault.db', 'index.key', 'vault-private-key.pem'].map((f) => join(dir, f));
  chmodSync(dir, 0o755);
  for (const file of files) chmodSync(file, 0o644);

  const { Writable } = await import('node:stream');
  const { loadConfig } = await import('../config.js');
  const { createLogger } = await import('../logger.js');
  const { Vault } = await import('../vault.js');
  const open = async (existing: boolean) => {
    const lines: { msg: string; changes?: string[] }[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => done(void lines.push(JSON.parse(String(chunk)))) });
    const vault = await Vault.open({ config: loadConfig(env), logger: createLogger('warn', sink), announce: () => {}, existing });
    await vault.close();
    return lines;
  };
  const first = await open(true);
  t.deepEqual(first.map((l) => [l.msg, l.changes]), [
    [
      'files of the vault were readable by other users (as older releases created them): made them private to their owner',
      [`${dir} 0755 -> 0700`, `${join(dir, 'index.key')} 0644 -> 0600`, `${join(dir, 'vault-private-key.pem')} 0644 -> 0600`, `${join(dir, 'vault.db')} 0644 -> 0600`],
    ],
  ]);
  t.is(statSync(dir).mode & 0o777, 0o700);
  for (const file of files) t.is(statSync(file).mode & 0o777, 0o600, file);
  t.deepEqual(await open(false), [], 'said once: the next start has nothing to change');
});

test('a data directory shared with others, such as /tmp, keeps its mode', async (t) => {
  const shared = mkdtempSync(join(tmpdir(), 'vault-cli-shared-'));
  t.teardown(() => rmSync(shared, { recursive: true, force: true }));
  chmodSync(shared, 0o1777);
  t.is(await runCli(['migrate'], io({ VAULT_DATA_DIR: shared, VAULT_ADMIN_API_KEY: 'cli-test-admin-key-0000' }).io), 0);
  t.is(statSync(shared).mode & 0o7777, 0o1777);
  t.is(statSync(join(shared, 'vault.db')).mode & 0o777, 0o600);
});
