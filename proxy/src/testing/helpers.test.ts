/**
 * A spawned sidecar must be the test's own: test files run side by side, and another one's
 * server can hold (or take) the port a test meant for its sidecar. One answering like a
 * sidecar must not be taken for it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { FakeVault } from './fake-vault.js';
import { OwnRedis, cleanupRedis, getJson, spawnedSidecarEnv, startSpawnedSidecar, stopChild, uniquePrefix } from './helpers.js';

test("a port another process's server holds is not taken for the sidecar's, even though that server answers as one", async (t) => {
  const foreign = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'ok', redis: 'up', worker: 'delivering' }));
  });
  await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('spawn-foreign');
  t.teardown(async () => {
    foreign.closeAllConnections();
    await new Promise<void>((resolve) => foreign.close(() => resolve()));
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const port = (foreign.address() as AddressInfo).port;
  const env = { ...spawnedSidecarEnv({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix }), SIDECAR_PORT: String(port) };
  const refused = await t.throwsAsync(startSpawnedSidecar(env));
  t.regex(refused!.message, /EADDRINUSE/);
});

test('a spawned sidecar listens on free ports of its own, ingest and proxy, and reports them', async (t) => {
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('spawn-ports');
  const dir = mkdtempSync(join(tmpdir(), 'sidecar-spawn-'));
  const routes = join(dir, 'routes.json');
  writeFileSync(routes, JSON.stringify({ applicationId: 'crm', routes: [{ method: 'GET', path: '/users/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: {} } }] }));
  const sidecar = await startSpawnedSidecar({
    ...spawnedSidecarEnv({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix }), SIDECAR_UPSTREAM: vault.url, SIDECAR_ROUTES: routes,
  });
  t.teardown(async () => {
    await stopChild(sidecar.child);
    await vault.stop();
    await cleanupRedis(prefix);
    rmSync(dir, { recursive: true, force: true });
  });
  t.regex(sidecar.url, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  t.regex(sidecar.proxyUrl ?? '', /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  t.not(sidecar.url, sidecar.proxyUrl);
  t.is((await getJson(`${sidecar.url}/healthz`)).status, 200);
  // The fake vault behind the proxy answers an unknown path 404: the proxy forwarded it.
  t.is((await getJson(`${sidecar.proxyUrl}/users/u-1`)).status, 404);
});

test("a test's own Redis is not mistaken for another's that holds its port, though that one answers PING", async (t) => {
  const foreign = await OwnRedis.started('own-redis-foreign');
  const dir = mkdtempSync(join(tmpdir(), 'own-redis-'));
  const mine = new OwnRedis(foreign.port, dir);
  t.teardown(async () => {
    await mine.dispose();
    await foreign.dispose();
  });
  const refused = await t.throwsAsync(mine.start());
  t.regex(refused!.message, new RegExp(`port ${foreign.port} (was taken|is another process's Redis)`));
  t.is(await foreign.configSet('maxmemory', '0').then(() => 'up'), 'up', 'the other one left alone');
});
