/**
 * A client after close(): every call, a new reporter and a closed reporter's report() fail
 * with a VaultClientClosedError, sending nothing; calls already made when close() began are
 * answered; a call waiting to retry ends at once; a second close() is harmless.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { VaultClient } from './client.js';
import { VaultClientClosedError } from './errors.js';
import { generateKeyPair } from './keys.js';

const keys = await generateKeyPair({ modulusLength: 2048 });
const apiKey = 'close-test-key-0000000';

async function server(t: { teardown(fn: () => unknown): void }, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const requests: string[] = [];
  const s = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (s.closeAllConnections(), s.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, requests };
}

const answer = (res: ServerResponse, body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** Every method of every group of endpoints, and the client's own. */
function everyCall(c: VaultClient): Array<[string, () => unknown]> {
  const calls: Array<[string, () => unknown]> = [];
  for (const [group, api] of Object.entries(c)) {
    for (let proto = Object.getPrototypeOf(api); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || typeof api[name] !== 'function') continue;
        // logBulk checks that it was given a list before anything else.
        calls.push([`${group}.${name}`, () => (name === 'logBulk' ? api[name]([{ eventType: 'READ' }]) : api[name]('x', 'y', {}))]);
      }
    }
  }
  calls.push(['search', () => c.search({ query: { attribute: 'x', value: 'y' } } as never)]);
  calls.push(['searchAll', () => c.searchAll({ attribute: 'x', value: 'y' } as never)]);
  for (const name of ['health', 'ready', 'stats', 'metrics'] as const) calls.push([name, () => c[name]()]);
  calls.push(['request', () => c.request({ method: 'GET', path: '/tags', idempotent: true })]);
  return calls;
}

test('after close() every call fails with a VaultClientClosedError and sends nothing; a second close() is harmless', async (t) => {
  const { url, requests } = await server(t, (_req, res) => answer(res, { data: [] }));
  const c = new VaultClient({ url, apiKey, encryptionKey: keys.publicKey, decryptionKey: keys.privateKey });
  const reporter = c.reporter({ flushIntervalMs: 60_000 });
  await c.tags.list();
  await c.close();
  await c.close();
  requests.length = 0;

  const calls = everyCall(c);
  t.true(calls.length > 40, `${calls.length} calls`);
  for (const [name, call] of calls) {
    const result = call();
    const pending = (result as AsyncGenerator<unknown>)?.next ? (result as AsyncGenerator<unknown>).next() : result;
    const err = await t.throwsAsync(pending as Promise<unknown>, { instanceOf: VaultClientClosedError }, name);
    t.like(err, { name: 'VaultClientClosedError', code: 'CLIENT_CLOSED', closed: 'client', attempts: 0 }, name);
    t.regex(err?.message ?? '', /^(GET|POST|PATCH|DELETE) \/\S* was not sent: the vault client is closed$/, name);
    t.false(err?.message.includes(apiKey), name);
  }
  t.like(await t.throwsAsync(c.tags.get('a b'), { instanceOf: VaultClientClosedError }), { method: 'GET', path: '/tags/a%20b', message: 'GET /tags/a%20b was not sent: the vault client is closed' });

  const closedReporter = t.throws(() => reporter.report({ eventType: 'READ', dataPointId: 'x', applicationId: 'a' }), { instanceOf: VaultClientClosedError });
  t.like(closedReporter, { closed: 'reporter', code: 'CLIENT_CLOSED', message: 'The reporter is closed' });
  const newReporter = t.throws(() => c.reporter(), { instanceOf: VaultClientClosedError });
  t.like(newReporter, { closed: 'client', message: 'The vault client is closed: it makes no more reporters' });
  t.deepEqual(requests, [], 'nothing reached the vault');
});

test('close() answers the calls already made, then closes; a call waiting to retry ends with a VaultClientClosedError', async (t) => {
  const held: ServerResponse[] = [];
  const { url, requests } = await server(t, (req, res) => {
    if (req.url === '/healthz') held.push(res);
    else req.socket.destroy(); // no answer: an idempotent call waits to retry
  });
  // Backoff of half a minute or more: the retry is surely still waiting when close() comes.
  const c = new VaultClient({ url, apiKey, retry: { retries: 3, minDelayMs: 60_000, maxDelayMs: 60_000 } });
  const inFlight = c.health();
  const retrying = c.tags.list();
  await until(() => held.length === 1 && requests.includes('GET /tags'));

  const closing = c.close();
  const refused = await t.throwsAsync(retrying, { instanceOf: VaultClientClosedError });
  t.like(refused, { method: 'GET', path: '/tags', attempts: 1, message: 'GET /tags was not sent again: the vault client was closed while it waited to retry (1 attempt sent)' });
  await t.throwsAsync(c.health(), { instanceOf: VaultClientClosedError }, 'refused from the moment close() is called');

  answer(held[0], { status: 'ok' });
  t.deepEqual(await inFlight, { status: 'ok' }, 'the call made before close() is answered');
  await closing;
  t.deepEqual(requests, ['GET /healthz', 'GET /tags']);
});

test('close() delivers what a reporter holds before it refuses calls on the connections', async (t) => {
  const { url, requests } = await server(t, (_req, res) => answer(res, []));
  const c = new VaultClient({ url, apiKey });
  const reporter = c.reporter({ flushIntervalMs: 60_000 });
  reporter.report({ eventType: 'READ', dataPointId: 'p', applicationId: 'a' });
  await c.close();
  t.deepEqual(requests, ['POST /auditlogs/bulk']);
  t.like(reporter.stats, { delivered: 1, queued: 0 });
});
