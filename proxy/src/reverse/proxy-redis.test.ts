import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { request } from 'undici';
import { FakeVault } from '../testing/fake-vault.js';
import type { SidecarHandle } from '../index.js';
import { OwnRedis, capturingLogger, closedPort, getJson, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

/**
 * The reverse proxy while Redis is away: the service behind it must not notice, and the events
 * of its traffic, held back meanwhile, must reach the vault in the order the traffic happened.
 */

const routesFile = fileURLToPath(new URL('./fixtures/routes.example.json', import.meta.url));

/** A users service as the example routes file expects it. */
async function usersService(): Promise<{ url: string; server: Server }> {
  let next = 1;
  const server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const user = /^\/users\/([^/?]+)$/.exec(req.url!);
    if (req.method === 'POST' && req.url === '/users') {
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ id: `u-${next++}`, ...JSON.parse(Buffer.concat(parts).toString()) }));
    }
    if (req.method === 'GET' && user) {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ id: user[1], email: `${user[1]}@example.test`, phone: '+1 555' }));
    }
    if (req.method === 'DELETE' && user) {
      res.writeHead(204);
      return res.end();
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test('while Redis is away the service is served as usual, and its events reach the vault afterwards in traffic order', async (t) => {
  const redis = await OwnRedis.started('proxy-redis');
  const vault = new FakeVault();
  await vault.start();
  const service = await usersService();
  const prefix = uniquePrefix('proxy-redis');
  const sidecar = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: redis.url, upstream: service.url, routesFile, batchMs: 10,
  });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await redis.dispose();
    service.server.closeAllConnections();
    service.server.close();
  });

  await redis.kill();
  await waitFor(async () => (await getJson(`${sidecar.url}/readyz`)).status === 503, { message: 'not ready without Redis' });

  // Create, read and delete users one after another, as a client of the service would,
  // spread over a few seconds so that their events wait for Redis for different lengths of time.
  const subjects: string[] = [];
  const started = Date.now();
  while (Date.now() - started < 4000) {
    const created = await request(`${sidecar.proxyUrl}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"o@example.test"}' });
    t.is(created.statusCode, 201);
    const { id } = (await created.body.json()) as { id: string };
    subjects.push(id);
    const read = await request(`${sidecar.proxyUrl}/users/${id}`);
    t.is(read.statusCode, 200);
    t.like(await read.body.json(), { id });
    const deleted = await request(`${sidecar.proxyUrl}/users/${id}`, { method: 'DELETE' });
    t.is(deleted.statusCode, 204);
    await deleted.body.dump();
    await new Promise((r) => setTimeout(r, 150));
  }

  await redis.start();
  // Per user: one STORE (no phone given), two READs, two DELETEs.
  const expected = subjects.flatMap((id) => [
    ['STORE', id, 'email'], ['READ', id, 'email'], ['READ', id, 'phone'], ['DELETE', id, 'email'], ['DELETE', id, 'phone'],
  ]);
  await waitFor(() => vault.records.length >= expected.length, { timeoutMs: 60_000, message: 'every event of the traffic recorded' });
  t.deepEqual(vault.records.map((e) => [e.eventType, e.subjectId, e.data?.attribute]), expected, 'in the order the traffic happened');
});

test('a sidecar started while Redis is away serves the service at once, not once it has given up waiting for Redis', async (t) => {
  const vault = new FakeVault();
  await vault.start();
  const service = await usersService();
  const prefix = uniquePrefix('proxy-redis-start');
  let started: SidecarHandle | undefined;
  const { logger, lines } = capturingLogger();
  // Nothing listens on that port: Redis is away for the whole start, which waits this long for it.
  const starting = startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: `redis://127.0.0.1:${await closedPort()}`, enqueueTimeoutMs: 15_000,
    upstream: service.url, routesFile,
  }, { logger }).then((sidecar) => (started = sidecar));
  t.teardown(async () => {
    await (await starting).close();
    await vault.stop();
    service.server.closeAllConnections();
    service.server.close();
  });

  // The proxy's own port, as it said it listens there: the start has not returned it yet.
  const { proxyUrl } = await waitFor(() => lines.find((l) => l.msg === 'proxy listening'), { timeoutMs: 60_000, message: 'the proxy listening' });
  const answer = await waitFor(
    () => request(`${proxyUrl as string}/users/u-1`).catch(() => undefined),
    { timeoutMs: 60_000, message: 'the proxy answering' },
  );
  t.is(started, undefined, 'answered while the start was still waiting for Redis');
  t.is(answer.statusCode, 200);
  t.like(await answer.body.json(), { id: 'u-1' });
});
