import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { request } from 'undici';
import type { ExternalActivityEvent } from '../proxy/src/index.js';
import {
  OwnRedis, capturingLogger, cleanupRedis, getJson, metricValue, postEvents, sharedRedisUrl, spawnSidecar, startTestSidecar,
  stopChild, uniquePrefix, waitFor, type SpawnedSidecar,
} from '../proxy/src/testing/helpers.js';
import { AnswerDelay, RealVault } from './sidecar-vault.js';

/**
 * The sidecar's guarantees against the real vault process (`core/src/main.ts`) and its real
 * `POST /auditlogs/bulk`: atomic bulks with an error `index`, eventId deduplication, and the
 * hash-chained activity log to check what was recorded, once and in which order.
 * One vault for the file; tests run one after the other because one restarts it.
 */

const apiKey = `e2e-admin-${randomBytes(12).toString('hex')}`;
const EMAIL = `EMAIL_${randomBytes(4).toString('hex')}`;
let vault: RealVault;
let dataDir: string;

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sidecar-e2e-vault-'));
  vault = new RealVault(dataDir, apiKey);
  await vault.start();
  await vault.defineAttribute(EMAIL);
});

test.after.always(async () => {
  await vault?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

function app(label: string): string {
  return `e2e-${label}-${randomBytes(4).toString('hex')}`;
}

function store(applicationId: string, i: number, attribute = EMAIL): ExternalActivityEvent {
  return { eventType: 'STORE', applicationId, subjectId: `subject-${i}`, data: { attribute, value: `user${i}@example.test` } };
}

async function postStores(url: string, applicationId: string, requests: number, perRequest: number, offset = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let r = 0; r < requests; r++) {
    const answer = await postEvents(url, Array.from({ length: perRequest }, (_, i) => store(applicationId, offset + r * perRequest + i)));
    if (answer.status !== 202) throw new Error(`ingest answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    ids.push(...answer.body.accepted.map((a) => a.eventId));
  }
  return ids;
}

/** Waits until the vault's activity log holds `count` records of the application; returns their eventIds in log order. */
async function recorded(applicationId: string, count: number, timeoutMs = 60_000): Promise<string[]> {
  const records = await waitFor(async () => {
    const list = await vault.activity(applicationId);
    return list.length >= count ? list : undefined;
  }, { timeoutMs, intervalMs: 250, message: `${count} activity records of ${applicationId}` });
  return records.map((r) => r.eventId);
}

async function chainIsValid(): Promise<boolean> {
  const res = await vault.call('GET', '/activity/verify');
  return res.status === 200 && res.body.data.valid === true;
}

test.serial('real vault: a poison event in a batch of 1000 is dead-lettered with the vault reason, 999 recorded, replay works', async (t) => {
  const prefix = uniquePrefix('e2e-poison');
  const applicationId = app('poison');
  const sidecar = await startTestSidecar({ apiKey, vaultUrl: vault.url, prefix, batchSize: 1000, batchMs: 200 });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const MISSING = `MISSING_${randomBytes(4).toString('hex')}`;
  const events = Array.from({ length: 1000 }, (_, i) => (i === 421 ? store(applicationId, i, MISSING) : store(applicationId, i)));
  const answer = await postEvents(sidecar.url, [...events, { eventType: 'STORE', applicationId }]);
  t.is(answer.status, 202);
  t.is(answer.body.accepted.length, 1000);
  t.deepEqual(answer.body.rejected, [{ index: 1000, message: 'event 1000: field "subjectId" is required for STORE events' }]);
  const ids = answer.body.accepted.map((a) => a.eventId);
  const poisonId = ids[421];

  t.deepEqual(await recorded(applicationId, 999), ids.filter((id) => id !== poisonId), '999 recorded, in order');
  const list = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/deadletters`);
    return r.body.total === 1 ? r.body : undefined;
  }, { message: 'dead letter listed' });
  t.is(list.items[0].eventId, poisonId);
  t.like(list.items[0].reason, { kind: 'rejected', statusCode: 400, answer: { statusCode: 400, error: 'Bad Request', message: 'No such attribute', index: 421 } });

  // Fix the cause in the vault, then replay.
  await vault.defineAttribute(MISSING);
  const replay = await getJson(`${sidecar.url}/deadletters/replay`, { method: 'POST' });
  t.deepEqual(replay.body.replayed.map((r: { eventId: string }) => r.eventId), [poisonId]);
  const all = await recorded(applicationId, 1000);
  t.is(all.length, 1000);
  t.is(all[999], poisonId);
  t.is((await getJson(`${sidecar.url}/deadletters`)).body.total, 0);
  t.true(await chainIsValid());
});

test.serial('real vault: down for a while (process stopped, restarted): nothing lost, order kept', async (t) => {
  const prefix = uniquePrefix('e2e-vault-down');
  const applicationId = app('down');
  const sidecar = await startTestSidecar({ apiKey, vaultUrl: vault.url, prefix, batchSize: 100 });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const ids = await postStores(sidecar.url, applicationId, 2, 50);
  await recorded(applicationId, 100);

  await vault.stop();
  ids.push(...(await postStores(sidecar.url, applicationId, 10, 50, 100)));
  await waitFor(async () => (await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) >= 2, { message: 'retries while the vault is down' });
  await vault.start();

  const log = await recorded(applicationId, ids.length);
  t.deepEqual(log, ids, 'each accepted event recorded once, in acceptance order');
  t.true(await chainIsValid());
});

/**
 * A sidecar delivering 1000 stores through a proxy that holds the vault's answers, SIGKILLed
 * while a batch the vault recorded awaits its answer: the sidecar started again (with `key`)
 * must send that batch again, and the vault must recognise it.
 */
async function killedAwaitingAnswer(t: ExecutionContext, label: string, key: string) {
  const prefix = uniquePrefix(`e2e-${label}`);
  const applicationId = app(label);
  const delay = new AnswerDelay(vault.url);
  const delayUrl = await delay.start();
  delay.holdMs = 400;
  const env = {
    SIDECAR_VAULT_URL: delayUrl, SIDECAR_PORT: '0', SIDECAR_PREFIX: prefix, REDIS_URL: sharedRedisUrl,
    SIDECAR_BATCH_SIZE: '100', SIDECAR_BATCH_MS: '20', SIDECAR_LOCK_MS: '2000', SIDECAR_RETRY_BASE_MS: '20', SIDECAR_RETRY_MAX_MS: '200',
    SIDECAR_LOG_LEVEL: 'info',
  };
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    await delay.stop();
    await cleanupRedis(prefix);
  });
  const start = async (apiKey: string) => {
    const sidecar = spawnSidecar({ ...env, SIDECAR_API_KEY: apiKey });
    children.push(sidecar);
    const { url } = await sidecar.listening;
    await waitFor(async () => {
      const r = await getJson(`${url}/readyz`);
      return r.status === 200 && r.body.worker === 'delivering';
    }, { timeoutMs: 60_000, message: 'sidecar delivering' });
    return { sidecar, url };
  };

  const { sidecar: first, url } = await start(key);
  const ids = await postStores(url, applicationId, 20, 50);
  await waitFor(() => delay.forwarded >= 2 && delay.inFlight > 0, { message: 'a recorded batch awaiting its answer' });
  first.child.kill('SIGKILL');
  await first.exited;
  const before = (await vault.activity(applicationId)).length;
  t.true(before > 0 && before < ids.length, `killed mid-way (${before} of ${ids.length} recorded)`);
  /** Resolves to where the restarted sidecar listens. */
  const restart = async (apiKey: string) => {
    delay.holdMs = 0;
    return (await start(apiKey)).url;
  };
  return { applicationId, ids, delay, restart };
}

test.serial('real vault: sidecar SIGKILLed mid-batch and restarted: nothing lost, nothing recorded twice', async (t) => {
  const { applicationId, ids, delay, restart } = await killedAwaitingAnswer(t, 'sigkill', apiKey);
  const url = await restart(apiKey);
  ids.push(...(await postStores(url, applicationId, 2, 50, 1000)));
  // The resent batch comes before the later events, so a duplicate would be inside this list.
  const log = await recorded(applicationId, ids.length);
  t.is(new Set(log).size, log.length, 'nothing recorded twice');
  t.deepEqual(log, ids, 'nothing lost, acceptance order kept');
  t.true([...delay.sent.values()].some((n) => n > 1), 'the unacknowledged batch was sent again and deduplicated by the vault');
  t.true(await chainIsValid());
});

test.serial("real vault: the sidecar's key rolled while a batch awaits its answer: restarted with the new key, nothing recorded twice", async (t) => {
  const sidecarApp = await vault.call('POST', '/applications', { name: 'sidecar', attributes: ['*'] });
  t.is(sidecarApp.status, 201);
  const { id: sidecarId, apiKey: oldKey } = sidecarApp.body.data;
  const { applicationId, ids, delay, restart } = await killedAwaitingAnswer(t, 'roll', oldKey);

  // The operator rolls the key, ending the old one at once, and restarts the sidecar with the new one.
  const rolled = await vault.call('POST', `/applications/${sidecarId}/key`, {});
  t.is(rolled.status, 200);
  t.is(rolled.body.data.id, sidecarId);
  await restart(rolled.body.data.apiKey);
  const log = await recorded(applicationId, ids.length);
  t.is(new Set(log).size, log.length, 'nothing recorded twice');
  t.deepEqual(log, ids, 'nothing lost, acceptance order kept');
  t.true([...delay.sent.values()].some((n) => n > 1), 'the unacknowledged batch was sent again, under the new key, and recognised');
  const records = await vault.activity(applicationId);
  t.true(records.every((r) => r.recordedBy === sidecarId), 'every record names the same application');
  t.true(await chainIsValid());
});

test.serial('real vault: Redis restarted (AOF): nothing accepted lost, 503 and never 202 while it is away', async (t) => {
  const applicationId = app('redis');
  const redis = await OwnRedis.started('sidecar-e2e-redis');
  // Hold deliveries back (the vault refuses to be reached) so accepted events sit in Redis.
  const gate = await startGate(vault.url);
  gate.open = false;
  const prefix = uniquePrefix('e2e-redis');
  const sidecar = await startTestSidecar({ apiKey, vaultUrl: gate.url, prefix, redisUrl: redis.url, batchSize: 50 });
  t.teardown(async () => {
    await sidecar.close();
    await gate.close();
    await redis.dispose();
  });
  const ids = await postStores(sidecar.url, applicationId, 4, 25);

  await redis.kill();
  for (let i = 0; i < 5; i++) {
    const answer = await postEvents(sidecar.url, [store(applicationId, 500 + i)]);
    t.is(answer.status, 503);
    t.deepEqual(answer.body.accepted, []);
  }
  await redis.start();
  const back = await waitFor(async () => {
    const answer = await postEvents(sidecar.url, [store(applicationId, 900)]);
    return answer.status === 202 ? answer : undefined;
  }, { message: 'ingest accepting again' });
  ids.push(back.body.accepted[0].eventId);

  gate.open = true;
  t.deepEqual(await recorded(applicationId, ids.length), ids);
  t.true(await chainIsValid());
});

test.serial('real vault: Redis full (maxmemory, noeviction): 503 "out of memory" and not ready, then every accepted event recorded once', async (t) => {
  const applicationId = app('redis-full');
  const redis = await OwnRedis.started('sidecar-e2e-redis-full');
  await redis.configSet('maxmemory', '4mb');
  const gate = await startGate(vault.url);
  gate.open = false;
  const prefix = uniquePrefix('e2e-redis-full');
  const { logger, lines } = capturingLogger('warn');
  const sidecar = await startTestSidecar({ apiKey, vaultUrl: gate.url, prefix, redisUrl: redis.url, batchSize: 100 }, { logger });
  t.teardown(async () => {
    await sidecar.close();
    await gate.close();
    await redis.dispose();
  });

  // Nothing is delivered meanwhile, so ingest fills Redis up.
  const ids: string[] = [];
  let refusal: Awaited<ReturnType<typeof postEvents>> | undefined;
  for (let r = 0; !refusal; r++) {
    const answer = await postEvents(sidecar.url, Array.from({ length: 50 }, (_, i) => store(applicationId, r * 50 + i)));
    if (answer.status === 202) ids.push(...answer.body.accepted.map((a) => a.eventId));
    else refusal = answer;
  }
  t.is(refusal.status, 503);
  t.deepEqual(refusal.body.accepted, []);
  t.is(refusal.body.message, 'the event queue is full (Redis is out of memory); nothing was accepted, retry later (with the same eventIds to avoid duplicates)');
  t.true(ids.length > 0);
  const notReady = await getJson(`${sidecar.url}/readyz`);
  t.is(notReady.status, 503);
  t.like(notReady.body, { status: 'not ready', redis: 'out of memory' });
  t.is(await metricValue(sidecar.url, 'sidecar_redis_out_of_memory'), 1);
  t.true(lines.some((l) => l.level === 40 && /out of memory/.test(l.msg)), 'a warning operators can alert on');
  t.false(JSON.stringify(lines).includes('@example.test'), 'no values in the log');

  // The vault stays away long enough (some 5 s of retries) for the locks of the jobs in hand to
  // run out (lockMs 2 s): a full Redis refuses their renewal. It comes back while Redis is still
  // full, which stalls delivery too (taking a job needs memory); then memory is freed.
  const retries = await metricValue(sidecar.url, 'sidecar_delivery_retries_total');
  await waitFor(async () => (await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) >= retries + 25, { message: 'retries while Redis is full' });
  gate.open = true;
  await waitFor(async () => (await vault.activity(applicationId)).length > 0, { message: 'the batch in hand delivered' });
  await redis.configSet('maxmemory', '0');
  const back = await waitFor(async () => {
    const answer = await postEvents(sidecar.url, [store(applicationId, 100_000)]);
    return answer.status === 202 ? answer : undefined;
  }, { message: 'ingest accepting again' });
  ids.push(back.body.accepted[0].eventId);

  t.deepEqual(await recorded(applicationId, ids.length), ids, 'every accepted event recorded once, in acceptance order');
  t.is((await getJson(`${sidecar.url}/readyz`)).status, 200);
  t.is(await metricValue(sidecar.url, 'sidecar_redis_out_of_memory'), 0);
  t.true(await chainIsValid());
});

test.serial('real vault: reverse proxy events (README routes file) are recorded', async (t) => {
  await vault.defineAttribute('email');
  await vault.defineAttribute('phone');
  const users = new Map<string, Record<string, string>>();
  let next = 1;
  const upstream: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const match = /^\/users\/([^/]+)$/.exec(req.url!);
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/users') {
      const id = `e2e-user-${randomBytes(3).toString('hex')}-${next++}`;
      users.set(id, JSON.parse(body));
      res.writeHead(201).end(JSON.stringify({ id, ...users.get(id) }));
    } else if (req.method === 'GET' && match && users.has(match[1])) {
      res.writeHead(200).end(JSON.stringify({ id: match[1], ...users.get(match[1]) }));
    } else res.writeHead(404).end('{}');
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const prefix = uniquePrefix('e2e-proxy');
  const sidecar = await startTestSidecar({
    apiKey, vaultUrl: vault.url, prefix, upstream: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    routesFile: fileURLToPath(new URL('../proxy/src/reverse/fixtures/routes.example.json', import.meta.url)),
  });
  t.teardown(async () => {
    await sidecar.close();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
    await cleanupRedis(prefix);
  });

  const created = await request(`${sidecar.proxyUrl}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'p@example.test', phone: '+1 555' }) });
  t.is(created.statusCode, 201);
  const { id } = (await created.body.json()) as { id: string };
  const read = await request(`${sidecar.proxyUrl}/users/${id}`, { headers: { 'x-user': 'clerk' } });
  t.is(read.statusCode, 200);
  await read.body.dump();

  const records = await waitFor(async () => {
    const list = (await vault.activity('crm')).filter((r) => r.subjectId === id);
    return list.length === 4 ? list : undefined;
  }, { message: 'STORE and READ records of the proxied user' });
  t.deepEqual(records.map((r) => [r.eventType, r.attribute, r.dataPointId]), [
    ['STORE', 'email', `crm/${id}/email`],
    ['STORE', 'phone', `crm/${id}/phone`],
    ['READ', 'email', `crm/${id}/email`],
    ['READ', 'phone', `crm/${id}/phone`],
  ]);
  t.is(records[2].applicationUser, 'clerk');
  t.is((await getJson(`${sidecar.url}/deadletters`)).body.total, 0);
});

/** A switch in front of the vault: closed, it answers 503 without forwarding. */
async function startGate(target: string) {
  const state = { open: true, url: '', close: async () => {} };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (!state.open) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"statusCode":503}');
      return;
    }
    const answer = await request(`${target}${req.url}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: req.headers.authorization ?? '' },
      body: Buffer.concat(chunks),
    });
    res.writeHead(answer.statusCode, { 'content-type': 'application/json' }).end(await answer.body.text());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return state;
}
