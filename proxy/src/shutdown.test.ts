import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { Queue } from 'bullmq';
import { FakeVault } from './testing/fake-vault.js';
import {
  OwnRedis, cleanupRedis, getJson, makeEvent, postEvents, sharedRedisUrl, spawnedSidecarEnv, spawnSidecar, stopChild, uniquePrefix, waitFor,
  type SpawnedSidecar,
} from './testing/helpers.js';

/**
 * Stopping always stops: the CLI exits within 10 s of SIGTERM whatever is stuck (Redis gone,
 * the vault or the upstream not answering), loses nothing it acknowledged, and a second signal
 * exits at once. Every test runs the sidecar as `npm run sidecar` does, with the default
 * SIDECAR_SHUTDOWN_MS unless it says otherwise; serially, as each loads processes on purpose.
 */

const exitBoundMs = 10_000;

function env(vaultUrl: string, prefix: string, redisUrl = sharedRedisUrl): Record<string, string> {
  return spawnedSidecarEnv({ apiKey: 'test-api-key', vaultUrl, prefix, redisUrl });
}

/** Sends the signal and resolves to the exit code, or to 'still running' once `boundMs` has passed. */
async function signalAndAwaitExit(sidecar: SpawnedSidecar, boundMs = exitBoundMs, signal: NodeJS.Signals = 'SIGTERM') {
  sidecar.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    sidecar.exited,
    new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), boundMs))),
  ]);
  clearTimeout(timer);
  return outcome;
}

async function untilDelivering(url: string): Promise<void> {
  await waitFor(async () => {
    const r = await getJson(`${url}/readyz`);
    return r.status === 200 && r.body.worker === 'delivering';
  }, { timeoutMs: 30_000, message: `sidecar at ${url} delivering` });
}

/** A server that takes connections and never answers: a hung vault or upstream. */
async function silentServer(): Promise<{ server: Server; port: number; requests: () => number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => requests++);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as { port: number }).port,
    requests: () => requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function accept(url: string, from: number, count: number): Promise<string[]> {
  const answer = await postEvents(url, Array.from({ length: count }, (_, i) => makeEvent(from + i)));
  if (answer.status !== 202) throw new Error(`ingest answered ${answer.status}`);
  return answer.body.accepted.map((a) => a.eventId);
}

test.serial('Redis killed: SIGTERM still exits within 10 s, and what was accepted is delivered once Redis is back', async (t) => {
  const redis = await OwnRedis.started('sidecar-stop-redis');
  const vault = new FakeVault();
  await vault.start();
  // Failing while events are accepted, so they are still in Redis, with a batch being retried.
  vault.mode = 'failing';
  const prefix = uniquePrefix('stop-redis');
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    await vault.stop();
    await redis.dispose();
  });

  const first = spawnSidecar(env(vault.url, prefix, redis.url));
  children.push(first);
  const { url } = await first.listening;
  await untilDelivering(url);
  const accepted = await accept(url, 0, 150);
  await waitFor(() => vault.requests > 0, { message: 'a batch being retried' });
  await redis.kill();
  // Once its lease can no longer be confirmed, the sidecar hands the batch back to Redis.
  await waitFor(async () => {
    const r = await getJson(`${url}/readyz`);
    return r.status === 503 && r.body.worker === 'standby';
  }, { message: 'standing by without Redis' });

  t.is(await signalAndAwaitExit(first), 0);
  t.regex(first.output(), /sidecar stopped/);

  await redis.start();
  vault.mode = 'up';
  const second = spawnSidecar(env(vault.url, prefix, redis.url));
  children.push(second);
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 60_000, message: 'every accepted event recorded' });
  t.deepEqual(vault.recordedIds(), accepted, 'every accepted event, once, in order');
  t.is(await signalAndAwaitExit(second), 0, 'with nothing stuck, a clean stop');
});

test.serial('Redis killed while idle: SIGTERM exits with 0', async (t) => {
  const redis = await OwnRedis.started('sidecar-stop-idle');
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('stop-idle');
  const sidecar = spawnSidecar(env(vault.url, prefix, redis.url));
  t.teardown(async () => {
    await stopChild(sidecar.child);
    await vault.stop();
    await redis.dispose();
  });
  const { url } = await sidecar.listening;
  await untilDelivering(url);
  const accepted = await accept(url, 0, 10);
  await waitFor(() => vault.records.length === accepted.length, { message: 'delivered' });
  const queue = new Queue('vault-audit', { connection: { url: redis.url }, prefix });
  try {
    await waitFor(async () => (await queue.getActiveCount()) + (await queue.getWaitingCount()) === 0, { message: 'jobs completed' });
  } finally {
    await queue.close();
  }
  await redis.kill();
  await waitFor(async () => (await getJson(`${url}/readyz`)).status === 503, { message: 'not ready without Redis' });
  t.is(await signalAndAwaitExit(sidecar), 0);
  t.regex(sidecar.output(), /sidecar stopped/);
});

test.serial('the vault hanging with a batch in flight: SIGTERM exits within 10 s; the batch is delivered, once, by the next start', async (t) => {
  const hung = await silentServer();
  const prefix = uniquePrefix('stop-vault');
  const vault = new FakeVault();
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    await hung.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const first = spawnSidecar(env(`http://127.0.0.1:${hung.port}`, prefix));
  children.push(first);
  const { url } = await first.listening;
  await untilDelivering(url);
  const accepted = await accept(url, 0, 50);
  await waitFor(() => hung.requests() > 0, { message: 'a bulk request hanging' });
  t.is(await signalAndAwaitExit(first), 1);
  t.regex(first.output(), /"unfinished":\["delivery in progress"\]/);

  // The vault back, on a port of its own: the hung one's, once closed, another test could take.
  await hung.close();
  await vault.start();
  const second = spawnSidecar(env(vault.url, prefix));
  children.push(second);
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 60_000, message: 'the abandoned batch delivered' });
  t.deepEqual(vault.recordedIds(), accepted);
});

test.serial('a second SIGTERM or SIGINT exits at once, whatever the first is waiting for; nothing accepted is lost', async (t) => {
  const prefix = uniquePrefix('stop-twice');
  const vault = new FakeVault();
  const hungServers: Awaited<ReturnType<typeof silentServer>>[] = [];
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    for (const hung of hungServers) await hung.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const accepted: string[] = [];
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // A vault of its own per round, so the request seen hanging is this sidecar's.
    const hung = await silentServer();
    hungServers.push(hung);
    // A stop that would wait a minute for the hung vault, were it not for the second signal.
    const sidecar = spawnSidecar({ ...env(`http://127.0.0.1:${hung.port}`, prefix), SIDECAR_SHUTDOWN_MS: '60000' });
    children.push(sidecar);
    const { url } = await sidecar.listening;
    await untilDelivering(url);
    accepted.push(...(await accept(url, accepted.length, 5)));
    await waitFor(() => hung.requests() > 0, { message: 'a bulk request hanging' });
    sidecar.child.kill(signal);
    await waitFor(() => /shutting down/.test(sidecar.output()), { message: 'first signal handled' });
    t.is(await signalAndAwaitExit(sidecar, exitBoundMs, signal), 1, signal);
    t.regex(sidecar.output(), /second signal: exiting now/);
  }

  await vault.start();
  children.push(spawnSidecar(env(vault.url, prefix)));
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 60_000, message: 'every accepted event recorded' });
  t.deepEqual(vault.recordedIds(), accepted);
});

test.serial('reverse proxy with a hung upstream: SIGTERM exits within 10 s', async (t) => {
  const upstream = await silentServer();
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('stop-proxy');
  const dir = mkdtempSync(join(tmpdir(), 'sidecar-stop-proxy-'));
  const routes = join(dir, 'routes.json');
  writeFileSync(routes, JSON.stringify({
    applicationId: 'crm',
    routes: [{ method: 'GET', path: '/users/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: {} } }],
  }));
  const sidecar = spawnSidecar({ ...env(vault.url, prefix), SIDECAR_UPSTREAM: `http://127.0.0.1:${upstream.port}`, SIDECAR_ROUTES: routes });
  t.teardown(async () => {
    await stopChild(sidecar.child);
    await upstream.close();
    await vault.stop();
    await cleanupRedis(prefix);
    rmSync(dir, { recursive: true, force: true });
  });
  const { url, proxyUrl } = await sidecar.listening;
  await untilDelivering(url);
  const pending = fetch(`${proxyUrl}/users/u-1`).then((r) => r.status, () => 'cut');
  await waitFor(() => upstream.requests() > 0, { message: 'the proxied request reached the upstream' });
  t.is(await signalAndAwaitExit(sidecar), 1);
  t.regex(sidecar.output(), /"unfinished":\["proxied requests"\]/);
  t.is(await pending, 'cut', 'the client sees its request cut, not a made-up answer');
});
