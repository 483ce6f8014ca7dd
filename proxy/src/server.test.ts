import test from 'ava';
import { connect } from 'node:net';
import { FakeVault } from './testing/fake-vault.js';
import { readFileSync } from 'node:fs';
import { capturingLogger, cleanupRedis, closedPort, getJson, makeEvent, metricValue, postEvents, repoRoot, startTestSidecar, uniquePrefix, waitFor } from './testing/helpers.js';

test('healthz, readyz and Prometheus metrics', async (t) => {
  const prefix = uniquePrefix('server');
  const vault = new FakeVault();
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  t.deepEqual((await getJson(`${sidecar.url}/healthz`)).body, { status: 'ok' });
  const ready = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.status === 200 && r.body.worker === 'delivering' ? r.body : undefined;
  });
  t.deepEqual(ready, { status: 'ready', redis: 'ok', worker: 'delivering' });

  await postEvents(sidecar.url, [makeEvent(1), makeEvent(2), { eventType: 'READ' }]);
  await waitFor(() => vault.records.length === 2);
  const res = await fetch(`${sidecar.url}/metrics`);
  t.regex(res.headers.get('content-type')!, /text\/plain/);
  const text = await res.text();
  for (const line of [
    /^sidecar_events_accepted_total\{source="api"\} 2$/m,
    /^sidecar_events_rejected_total\{source="api"\} 1$/m,
    /^sidecar_events_delivered_total 2$/m,
    /^sidecar_queue_jobs\{state="waiting"\} 0$/m,
    /^sidecar_dead_letters 0$/m,
    /^sidecar_batch_latency_seconds_count 1$/m,
    /^# TYPE sidecar_delivery_retries_total counter$/m,
    /^# TYPE sidecar_events_dead_lettered_total counter$/m,
    /^sidecar_vault_request_seconds_bucket\{le="0.005",outcome="ok"\}/m,
    /^sidecar_process_cpu_user_seconds_total/m,
  ]) {
    t.regex(text, line);
  }
});

test('a vault refusing the key shows in /readyz and is retried slowly, sparing the host its lockout', async (t) => {
  const prefix = uniquePrefix('server-401');
  const vault = new FakeVault({ apiKey: 'the-right-key' });
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: 'a-wrong-key', vaultUrl: vault.url, prefix, retryBaseMs: 10, retryMaxMs: 2000, batchMs: 0 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  t.is((await postEvents(sidecar.url, [makeEvent(1)])).status, 202);
  const refused = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.body.vault ? r : undefined;
  }, { message: 'the refusal shown' });
  t.is(refused.status, 200, 'still ready: events are taken and wait in Redis');
  t.like(refused.body, { status: 'ready', vault: 'refuses the sidecar (http 401): check SIDECAR_API_KEY' });
  // Backing off from 10 ms would have sent about eight requests by now; a refused key waits
  // the longest delay (2 s here) between attempts.
  await new Promise((r) => setTimeout(r, 1500));
  t.true(vault.requests <= 2, `${vault.requests} attempts in 1.5 s`);

  vault.apiKey = 'a-wrong-key'; // the operator gives the vault the key the sidecar holds
  await waitFor(() => vault.records.length === 1, { timeoutMs: 10_000, message: 'delivered once the key is accepted' });
  await waitFor(async () => (await getJson(`${sidecar.url}/readyz`)).body.vault === undefined, { message: 'the refusal cleared' });
  t.pass();
});

test('a SIDECAR_VAULT_URL answering 200 with something other than the vault\'s answer delivers nothing and shows in /readyz', async (t) => {
  const prefix = uniquePrefix('server-not-vault');
  const { createServer } = await import('node:http');
  // A catch-all web server: 200 and a page for any request.
  const other = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>Welcome</html>'));
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  const sidecar = await startTestSidecar({
    apiKey: 'k', vaultUrl: `http://127.0.0.1:${(other.address() as { port: number }).port}`, prefix, retryBaseMs: 10, retryMaxMs: 2000, batchMs: 0,
  });
  t.teardown(async () => {
    await sidecar.close();
    await new Promise((r) => other.close(r));
    await cleanupRedis(prefix);
  });
  t.is((await postEvents(sidecar.url, [makeEvent(1)])).status, 202);
  const refused = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.body.vault ? r : undefined;
  }, { message: 'the wrong URL shown' });
  t.like(refused.body, { status: 'ready', vault: "refuses the sidecar (http 200, not the vault's answer): check SIDECAR_VAULT_URL" });
  t.is(await metricValue(sidecar.url, 'sidecar_events_delivered_total'), 0);
  t.is(await metricValue(sidecar.url, 'sidecar_buffered_events'), 1, 'the event still held, for the right vault');
});

test('a vault that cannot be reached shows in /readyz, and the oldest undelivered event\'s age in metrics', async (t) => {
  const prefix = uniquePrefix('server-vault-away');
  const sidecar = await startTestSidecar({ apiKey: 'k', vaultUrl: `http://127.0.0.1:${await closedPort()}`, prefix, batchMs: 0 });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  t.is(await metricValue(sidecar.url, 'sidecar_oldest_event_age_seconds'), 0, 'nothing waits');
  t.is((await postEvents(sidecar.url, [makeEvent(1)])).status, 202);
  const away = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/readyz`);
    return r.body.vault ? r : undefined;
  }, { message: 'the vault shown unreachable' });
  t.is(away.status, 200, 'still ready: events are taken and wait in Redis');
  t.like(away.body, { status: 'ready', vault: 'unreachable (econnrefused): retrying' });
  const age = await waitFor(async () => {
    const seconds = await metricValue(sidecar.url, 'sidecar_oldest_event_age_seconds');
    return seconds >= 1.5 ? seconds : undefined;
  }, { message: 'the waiting event ages' });
  t.true(age >= 1.5);
  t.true((await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) > 0);
});

test('a start logs the version and the configuration, its secrets masked', async (t) => {
  const prefix = uniquePrefix('server-start');
  const { logger, lines } = capturingLogger('info');
  const sidecar = await startTestSidecar({ apiKey: 'sidecar-key-secret-1', ingestToken: 'ingest-token-secret-2', prefix }, { logger });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const started = lines.filter((l) => l.msg === 'starting sidecar');
  t.is(started.length, 1);
  t.is(started[0].version, JSON.parse(readFileSync(`${repoRoot}/proxy/package.json`, 'utf8')).version);
  t.like(started[0].config as object, { apiKey: '[redacted]', ingestTokenSet: true });
  const text = JSON.stringify(lines);
  t.false(text.includes('sidecar-key-secret-1'));
  t.false(text.includes('ingest-token-secret-2'));
});

test('not ready while Redis is unreachable, but alive', async (t) => {
  const sidecar = await startTestSidecar({ apiKey: 'k', prefix: uniquePrefix('server-down'), redisUrl: `redis://127.0.0.1:${await closedPort()}`, enqueueTimeoutMs: 100 });
  t.teardown(() => sidecar.close());
  t.is((await getJson(`${sidecar.url}/healthz`)).status, 200);
  const ready = await getJson(`${sidecar.url}/readyz`);
  t.is(ready.status, 503);
  t.like(ready.body, { status: 'not ready', redis: 'unreachable' });
  t.is((await fetch(`${sidecar.url}/metrics`)).status, 200, 'metrics still answer');
  t.is((await getJson(`${sidecar.url}/deadletters`)).status, 503);
});

test('a caller that sends its events too slowly gets 408 and loses its connection; nothing is queued', async (t) => {
  const prefix = uniquePrefix('server-slow');
  const vault = new FakeVault();
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, requestTimeoutMs: 1000 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const { hostname, port } = new URL(sidecar.url);
  const body = JSON.stringify([makeEvent(1)]);
  const answer = await new Promise<string>((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let sent = 0;
    // The whole body would take 200 ms a byte.
    const timer = setInterval(() => sent < body.length && socket.write(body[sent++]), 200);
    socket.on('data', (d) => (received += d));
    socket.on('close', () => {
      clearInterval(timer);
      resolve(received);
    });
    socket.write(`POST /events HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  });
  t.regex(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  t.deepEqual(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { error: 'Request Timeout', message: 'Client Timeout', statusCode: 408 });
  t.regex(answer, /\r\nConnection: close\r\n/i, 'a keep-alive client must not send its next request down this connection');
  // Meanwhile and after, others are served; the trickled event never reached the queue.
  await postEvents(sidecar.url, [makeEvent(2)]);
  await waitFor(() => vault.records.length === 1);
  await new Promise((r) => setTimeout(r, 300));
  t.is(vault.records.length, 1);
});

test('headers too large are 431 with Connection: close, so a keep-alive client does not reuse the closed connection', async (t) => {
  const prefix = uniquePrefix('server-431');
  const sidecar = await startTestSidecar({ apiKey: 'k', vaultUrl: `http://127.0.0.1:${await closedPort()}`, prefix });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const { hostname, port } = new URL(sidecar.url);
  const answer = await new Promise<string>((resolve) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (d) => (received += d));
    socket.on('close', () => resolve(received));
    socket.on('error', () => resolve(received));
    socket.write(`POST /events HTTP/1.1\r\nHost: sidecar\r\nAuthorization: Bearer ${'t'.repeat(60_000)}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]`);
  });
  t.regex(answer, /^HTTP\/1\.1 431 /);
  t.regex(answer.slice(0, answer.indexOf('\r\n\r\n')), /\r\nConnection: close(\r\n|$)/i);
});
