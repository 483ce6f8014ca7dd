import test from 'ava';
import { spawnVault, type VaultProcess } from '../core/src/testing/process.js';

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
  const vault = await spawnVault({ env: { VAULT_SHUTDOWN_GRACE_MS: '1000' } });
  t.teardown(() => vault.dispose());
  t.is((await fetch(`${vault.url}/readyz`)).status, 200);
  const exit = vault.stop('SIGTERM');
  await new Promise((r) => setTimeout(r, 200));
  const ready = await fetch(`${vault.url}/readyz`);
  t.is(ready.status, 503);
  t.deepEqual(await ready.json(), { status: 'unavailable', reason: 'shutting down' });
  t.is(ready.headers.get('connection'), 'close');
  t.is(await exit, 0);
});
