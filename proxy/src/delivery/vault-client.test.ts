import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import type { StampedEvent } from '../ingest/event.js';
import { FakeVault } from '../testing/fake-vault.js';
import { closedPort } from '../testing/helpers.js';
import { VaultClient } from './vault-client.js';

const events: StampedEvent[] = [0, 1, 2].map((i) => ({ eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: `e${i}`, timestamp: '2024-01-01T00:00:00Z' }));

/** A server answering every request with the given status, headers and body; records paths and auth. */
async function scripted(status: number, body: string, headers: Record<string, string> = {}) {
  const seen: { path: string; auth: string | undefined; body: string }[] = [];
  const server: Server = createServer(async (req, res) => {
    let text = '';
    for await (const chunk of req) text += chunk;
    seen.push({ path: req.url!, auth: req.headers.authorization, body: text });
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => server.close(r)) };
}

test('200 from the fake vault: summaries, bearer key, JSON array body', async (t) => {
  const vault = new FakeVault({ apiKey: 'k1' });
  await vault.start();
  const client = new VaultClient({ vaultUrl: vault.url, apiKey: 'k1', timeoutMs: 5000 });
  try {
    const result = await client.send(events);
    t.is(result.kind, 'ok');
    t.is((result as { summaries: unknown[] }).summaries.length, 3);
    t.deepEqual(vault.recordedIds(), ['e0', 'e1', 'e2']);
  } finally {
    await client.close();
    await vault.stop();
  }
});

test('a vault URL with a path prefix is honoured', async (t) => {
  const server = await scripted(200, '[]');
  const client = new VaultClient({ vaultUrl: `${server.url}/vault/`, apiKey: 'k', timeoutMs: 5000 });
  try {
    await client.send(events);
    t.is(server.seen[0].path, '/vault/auditlogs/bulk');
    t.is(server.seen[0].auth, 'Bearer k');
    t.deepEqual(JSON.parse(server.seen[0].body), events);
  } finally {
    await client.close();
    await server.close();
  }
});

const classifications: [string, number, string, Record<string, string>, (t: any, r: any) => void][] = [
  ['400 with index is a rejection at that index', 400, JSON.stringify({ statusCode: 400, error: 'Bad Request', message: 'event 1: bad', index: 1 }), {},
    (t, r) => t.like(r, { kind: 'rejected', status: 400, index: 1, body: { message: 'event 1: bad' } })],
  ['400 without index is a rejection without index', 400, JSON.stringify({ statusCode: 400, message: 'bad' }), {},
    (t, r) => t.like(r, { kind: 'rejected', index: undefined })],
  ['an index outside the batch is ignored', 422, JSON.stringify({ index: 3 }), {}, (t, r) => t.like(r, { kind: 'rejected', index: undefined })],
  ['a non-JSON 400 keeps the text', 400, 'nope', {}, (t, r) => t.like(r, { kind: 'rejected', body: { message: 'nope' } })],
  ['413 means too large', 413, JSON.stringify({ statusCode: 413 }), {}, (t, r) => t.like(r, { kind: 'too-large' })],
  ['401 (wrong key) is retried, not dead-lettered', 401, '{}', {}, (t, r) => t.like(r, { kind: 'retry', status: 401 })],
  ['404 (no bulk endpoint yet) is retried', 404, '{}', {}, (t, r) => t.like(r, { kind: 'retry', status: 404 })],
  ['404 with an index is about that event', 404, JSON.stringify({ statusCode: 404, error: 'Not Found', message: 'Data Not Found', index: 2 }), {},
    (t, r) => t.like(r, { kind: 'rejected', status: 404, index: 2 })],
  ['403 with an index is about that event', 403, JSON.stringify({ statusCode: 403, message: 'Forbidden access to attribute', index: 0 }), {},
    (t, r) => t.like(r, { kind: 'rejected', status: 403, index: 0 })],
  ['403 without an index is retried', 403, JSON.stringify({ statusCode: 403 }), {}, (t, r) => t.like(r, { kind: 'retry', status: 403 })],
  ['409 with an index is about that event', 409, JSON.stringify({ statusCode: 409, message: 'Data point ID is in use', index: 1 }), {},
    (t, r) => t.like(r, { kind: 'rejected', status: 409, index: 1 })],
  ['429 is retried after Retry-After', 429, '{}', { 'retry-after': '3' }, (t, r) => t.like(r, { kind: 'retry', retryAfterMs: 3000 })],
  ['500 is retried', 500, '{}', {}, (t, r) => t.like(r, { kind: 'retry', reason: 'http 500' })],
  // A wrong SIDECAR_VAULT_URL whose server answers any POST with 200: taken as delivered, the
  // events were gone, recorded nowhere.
  ['200 that is not the vault\'s answer (a web page) is retried as a wrong URL, never taken as delivered', 200, '<html>Welcome</html>', {},
    (t, r) => t.like(r, { kind: 'retry', status: 200, reason: "http 200, not the vault's answer", configuration: true })],
  ['200 without a summary for every event is not the vault\'s answer either', 200, '[{"eventId":"e0"}]', {},
    (t, r) => t.like(r, { kind: 'retry', status: 200, configuration: true })],
  ['204 with no body is not the vault\'s answer', 204, '', {}, (t, r) => t.like(r, { kind: 'retry', status: 204, configuration: true })],
  ['503 is retried', 503, '{}', {}, (t, r) => t.like(r, { kind: 'retry', status: 503 })],
];

for (const [name, status, body, headers, check] of classifications) {
  test(name, async (t) => {
    const server = await scripted(status, body, headers);
    const client = new VaultClient({ vaultUrl: server.url, apiKey: 'k', timeoutMs: 5000 });
    try {
      check(t, await client.send(events));
    } finally {
      await client.close();
      await server.close();
    }
  });
}

test('connection refused and timeouts are retried', async (t) => {
  const refused = new VaultClient({ vaultUrl: `http://127.0.0.1:${await closedPort()}`, apiKey: 'k', timeoutMs: 5000 });
  t.like(await refused.send(events), { kind: 'retry', reason: 'econnrefused' });
  await refused.close();

  const silent = createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const slow = new VaultClient({ vaultUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, apiKey: 'k', timeoutMs: 200 });
  try {
    t.is((await slow.send(events)).kind, 'retry');
  } finally {
    await slow.close();
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  }
});
