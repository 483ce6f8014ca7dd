import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, REPO_ROOT, waitForHttp } from '../core/src/testing/process.js';

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'core/src/main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
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
  const port = await freePort();
  const vault = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: String(port), VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '' });
  t.teardown(() => vault.child.kill('SIGKILL'));
  await waitForHttp(`http://127.0.0.1:${port}/openapi.json`);

  const adminKey = /Admin API key \(shown once, store it safely\): (\S+)/.exec(vault.output())?.[1];
  const keyPath = /Private key: (\S+) \(mode 0600\)/.exec(vault.output())?.[1];
  t.truthy(adminKey);
  t.is(keyPath, join(dataDir, 'vault-private-key.pem'));
  t.is(statSync(keyPath!).mode & 0o777, 0o600);
  t.regex(readFileSync(keyPath!, 'utf8'), /BEGIN PRIVATE KEY/);

  const res = await fetch(`http://127.0.0.1:${port}/entitytypes`, { headers: { authorization: `Bearer ${adminKey}` } });
  t.is(res.status, 200);

  vault.child.kill('SIGTERM');
  t.is(await vault.exited, 0, 'SIGTERM is a clean shutdown');

  // A second start finds its admin and its key: nothing is generated or printed again.
  const again = start({ VAULT_DATA_DIR: dataDir, VAULT_PORT: String(port), VAULT_ADMIN_API_KEY: '', VAULT_ENCRYPTION_PUBLIC_KEY: '' });
  t.teardown(() => again.child.kill('SIGKILL'));
  await waitForHttp(`http://127.0.0.1:${port}/openapi.json`);
  t.false(again.output().includes('Admin API key'));
  t.false(again.output().includes('Generated'));
  const still = await fetch(`http://127.0.0.1:${port}/entitytypes`, { headers: { authorization: `Bearer ${adminKey}` } });
  t.is(still.status, 200);
});

test('invalid configuration stops the start with a message naming the setting', async (t) => {
  const vault = start({ VAULT_PORT: 'eighty' });
  t.is(await vault.exited, 2);
  t.regex(vault.output(), /Invalid configuration: VAULT_PORT must be an integer from 0 to 65535, got "eighty"/);
});
