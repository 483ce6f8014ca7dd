import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { spawnVault, type VaultProcess } from '../core/src/testing/process.js';
import { TcpRelay } from './shutdown-helpers.js';

/** Fires 400 creates over ~400 ms, sends SIGTERM after 150 ms, and sorts what came back. */
async function loadThroughShutdown(vault: VaultProcess) {
  const headers = { authorization: `Bearer ${vault.adminKey}`, 'content-type': 'application/json' };
  const done: string[] = [];
  const failed: string[] = [];
  const bad: string[] = [];
  const one = async (key: string) => {
    try {
      const res = await fetch(`${vault.url}/entitytypes`, { method: 'POST', headers, body: JSON.stringify({ key }) });
      const body = (await res.json()) as { data: { key: string } };
      if (res.status === 201 && body.data.key === key) done.push(key);
      else if (res.status === 503) failed.push(key);
      else bad.push(`${key}: ${res.status}`);
    } catch {
      // Refused, or a kept-alive socket closed before the request reached the server.
      failed.push(key);
    }
  };
  const load = Array.from({ length: 400 }, (_, i) => new Promise((r) => setTimeout(r, i)).then(() => one(`type_${i}`)));
  await new Promise((r) => setTimeout(r, 150));
  const exit = vault.stop('SIGTERM');
  await Promise.all(load);
  return { exitCode: await exit, done, failed, bad, headers };
}

async function committedTypes(vault: VaultProcess, headers: Record<string, string>): Promise<Set<string>> {
  const list = (await (await fetch(`${vault.url}/entitytypes`, { headers })).json()) as { data: { key: string }[] };
  return new Set(list.data.map((e: { key: string }) => e.key).filter((k: string) => k !== 'datasubject'));
}

test('SIGTERM under load: every answered request committed, every failed one did not, clean exit', async (t) => {
  const vault = await spawnVault();
  t.teardown(() => vault.dispose());
  const { exitCode, done, failed, bad, headers } = await loadThroughShutdown(vault);
  t.is(exitCode, 0);
  t.deepEqual(bad, []);
  t.true(done.length > 0);
  const again = await vault.restart();
  t.teardown(() => again.stop('SIGKILL'));
  const committed = await committedTypes(again, headers);
  t.deepEqual([...committed].sort(), [...done].sort(), 'exactly the answered requests committed: none was cut half-done');
  t.true(failed.every((key) => !committed.has(key)));
});

test('during the drain period the vault still serves, then exits cleanly', async (t) => {
  const vault = await spawnVault({ env: { VAULT_SHUTDOWN_GRACE_MS: '5000' } });
  t.teardown(() => vault.dispose());
  const headers = { authorization: `Bearer ${vault.adminKey}`, 'content-type': 'application/json' };
  const exit = vault.stop('SIGTERM');
  // Sent after SIGTERM, inside the drain period: served, not refused.
  const results = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const res = await fetch(`${vault.url}/entitytypes`, { method: 'POST', headers, body: JSON.stringify({ key: `drain_${i}` }) });
      return res.status;
    }),
  );
  t.deepEqual([...new Set(results)], [201]);
  t.is(await exit, 0);
});

test('while draining, readiness fails so a load balancer stops routing here', async (t) => {
  // A drain long enough that a loaded machine still asks within it.
  const vault = await spawnVault({ env: { VAULT_SHUTDOWN_GRACE_MS: '5000' } });
  t.teardown(() => vault.dispose());
  t.is((await fetch(`${vault.url}/readyz`)).status, 200);
  const exit = vault.stop('SIGTERM');
  // Asked until the signal is handled (a busy machine may take a while to deliver it), and
  // within the drain: it must fail readiness well before the process goes.
  const drainEnds = Date.now() + 4000;
  let ready = await fetch(`${vault.url}/readyz`);
  while (ready.status === 200 && Date.now() < drainEnds) {
    await ready.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
    ready = await fetch(`${vault.url}/readyz`);
  }
  t.is(ready.status, 503);
  t.deepEqual(await ready.json(), { status: 'unavailable', reason: 'shutting down' });
  t.is(ready.headers.get('connection'), 'close');
  t.is(await exit, 0);
});

/**
 * Stopping always stops: within VAULT_SHUTDOWN_GRACE_MS + 10 s of SIGTERM whatever is stuck,
 * answering nothing it did not commit; a second signal exits at once.
 */
const STOP_BOUND_MS = 10_000;
// Serial: each of these loads a vault process on purpose, and the machine may have two cores.

/** Sends the signal; resolves to the exit code, or 'still running' once `boundMs` has passed. */
async function signalAndAwaitExit(vault: VaultProcess, boundMs: number, signal: NodeJS.Signals = 'SIGTERM') {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    vault.stop(signal),
    new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), boundMs))),
  ]);
  clearTimeout(timer);
  return outcome;
}

/** Creates entity types until stopped; sorts the keys by how they were answered. */
function steadyLoad(vault: VaultProcess) {
  const headers = { authorization: `Bearer ${vault.adminKey}`, 'content-type': 'application/json' };
  const answered: string[] = [];
  let running = true;
  let n = 0;
  const worker = async () => {
    while (running) {
      const key = `steady_${n++}`;
      try {
        const res = await fetch(`${vault.url}/entitytypes`, { method: 'POST', headers, body: JSON.stringify({ key }) });
        await res.arrayBuffer();
        if (res.status === 201) answered.push(key);
      } catch {
        // Refused or cut: not answered.
      }
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  return {
    answered,
    headers,
    stop: async () => {
      running = false;
      await Promise.all(workers);
    },
  };
}

test.serial('SQLite: the data directory removed, SIGTERM still exits cleanly within the bound', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-stop-rm-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const vault = await spawnVault({ dataDir, env: { VAULT_DB: `sqlite:${join(dataDir, 'vault.db')}`, VAULT_SHUTDOWN_GRACE_MS: '500', VAULT_LOG_LEVEL: 'info' } });
  t.teardown(() => vault.dispose());
  const load = steadyLoad(vault);
  await waitUntil(() => load.answered.length > 20);
  rmSync(dataDir, { recursive: true, force: true });
  t.is(await signalAndAwaitExit(vault, 500 + STOP_BOUND_MS), 0);
  await load.stop();
  t.regex(vault.output(), /"msg":"stopped"/);
});

test.serial('PostgreSQL not answering: SIGTERM exits within the bound with 1, and every answered request was committed', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const target = new URL(database.url);
  const relay = new TcpRelay(target.hostname, Number(target.port || 5432));
  await relay.start();
  t.teardown(() => relay.cut());
  const vault = await spawnVault({ env: { VAULT_DB: relay.via(database.url), VAULT_SHUTDOWN_GRACE_MS: '1000' } });
  t.teardown(() => vault.dispose());
  const load = steadyLoad(vault);
  await waitUntil(() => load.answered.length > 20);
  relay.freeze();
  // Requests now hang on the database, and so would a stop that waited for them.
  t.is(await signalAndAwaitExit(vault, 1000 + STOP_BOUND_MS), 1);
  await load.stop();
  t.regex(vault.output(), /"unfinished":\["requests in flight","closing the database"\]/);

  // No VAULT_PORT: spawnVault picks one, and another if a foreign server takes it first.
  const { VAULT_PORT: _port, ...settings } = vault.env;
  const again = await spawnVault({ env: { ...settings, VAULT_DB: database.url } });
  t.teardown(() => again.stop('SIGKILL'));
  const committed = await committedTypes(again, load.headers);
  t.deepEqual(load.answered.filter((key) => !committed.has(key)), [], 'every answered create is committed');
});

test.serial('PostgreSQL gone (connections reset): the vault keeps running, answers errors, and stops cleanly', async (t) => {
  const database = await createPostgresDatabase();
  t.teardown(() => database.drop());
  const target = new URL(database.url);
  const relay = new TcpRelay(target.hostname, Number(target.port || 5432));
  await relay.start();
  const vault = await spawnVault({ env: { VAULT_DB: relay.via(database.url) } });
  t.teardown(() => vault.dispose());
  const load = steadyLoad(vault);
  await waitUntil(() => load.answered.length > 20);
  await relay.cut();
  await load.stop();
  const res = await fetch(`${vault.url}/entitytypes`, { method: 'POST', headers: load.headers, body: JSON.stringify({ key: 'after_cut' }) });
  t.true(res.status >= 500, 'an error answer, from a process still running');
  t.is(vault.child.exitCode, null);
  t.is(await signalAndAwaitExit(vault, STOP_BOUND_MS), 0);
});

test.serial('a second SIGTERM or SIGINT exits at once, even in the middle of a long drain', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const vault = await spawnVault({ env: { VAULT_SHUTDOWN_GRACE_MS: '120000', VAULT_LOG_LEVEL: 'info' } });
    t.teardown(() => vault.dispose());
    vault.child.kill(signal);
    await waitUntil(() => vault.output().includes('shutting down'));
    t.is(await signalAndAwaitExit(vault, STOP_BOUND_MS, signal), 1, signal);
    t.regex(vault.output(), /second signal: exiting now/);
  }
});

async function waitUntil(check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
