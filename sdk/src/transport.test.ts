/**
 * What the client does when the network misbehaves: which requests are retried (idempotent
 * ones, on connection errors only), timeouts, keep-alive, cancellation, a vault restart,
 * and the licence answers of a vault with a restricted licence.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import test from 'ava';
import { VaultClient } from './client.js';
import { VaultAbortError, VaultApiError, VaultClientClosedError, VaultNetworkError } from './errors.js';
import { closedPort } from '../../core/src/testing/process.js';
import { startRecordingProxy, type RecordingProxy } from './testing/proxy.js';
import { apiError, startSdkVault, unique, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
test.before(async () => {
  v = await startSdkVault({ env: { VAULT_LICENSE_MAX_CUSTOM_REGULATIONS: '1', VAULT_LICENSE_CUSTOM_RULES: 'false' } });
  await v.admin.definitions.save({ key: 'NOTE', repeatable: true });
});
test.after.always(async () => {
  await v?.dispose();
});

const fast = { retries: 3, minDelayMs: 5, maxDelayMs: 20 };

async function proxied(t: { teardown(fn: () => unknown): void }): Promise<{ proxy: RecordingProxy; client: VaultClient }> {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const client = v.client({ url: proxy.url, retry: fast });
  return { proxy, client };
}

/** A server that takes requests and answers them however `handler` says (or never). */
async function rawServer(t: { teardown(fn: () => unknown): void }, handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    handler!(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, hits: () => hits };
}

test('connection refused: a VaultNetworkError after the retries, for stores too (nothing was sent)', async (t) => {
  const port = await closedPort();
  const c = new VaultClient({ url: `http://127.0.0.1:${port}`, apiKey: 'k'.repeat(20), encryptionKey: v.keys.publicKey, retry: fast });
  t.teardown(() => c.close());
  const read = await t.throwsAsync(c.tags.list(), { instanceOf: VaultNetworkError });
  t.is(read?.code, 'ECONNREFUSED');
  t.is(read?.attempts, 4);
  t.is(read?.method, 'GET');
  t.is(read?.path, '/tags');
  t.false(read!.message.includes('k'.repeat(20)), 'no credentials in the message');
  const store = await t.throwsAsync(c.dataSubjects.storeAttributes('s', [{ attribute: 'NOTE', value: 'x' }]), { instanceOf: VaultNetworkError });
  t.is(store?.code, 'ECONNREFUSED');
  t.is(store?.attempts, 4);
  const created = await t.throwsAsync(c.applications.create({ name: 'x' }), { instanceOf: VaultNetworkError });
  t.is(created?.attempts, 4);
});

test('reset connections: idempotent reads, deletes and upserts are retried until they get through', async (t) => {
  const { proxy, client } = await proxied(t);
  const tag = unique('tag');
  proxy.fate = (_r, n) => (n <= 2 ? 'reset' : 'forward');
  t.is((await client.tags.save(tag)).name, tag);
  t.is(proxy.requests.length, 3);

  proxy.requests.length = 0;
  proxy.fate = (_r, n) => (n === 1 ? 'drop-answer' : 'forward');
  t.is((await client.tags.get(tag)).name, tag);
  t.is(proxy.requests.length, 2);

  proxy.requests.length = 0;
  proxy.fate = (_r, n) => (n === 1 ? 'reset' : 'forward');
  t.is(await client.tags.delete(tag), 'Successfully Deleted Tag');
  t.is(proxy.requests.length, 2);

  // A delete whose answer was lost has done its work: the resend finds nothing, and says how it got there.
  await client.tags.save(tag);
  proxy.requests.length = 0;
  proxy.fate = (_r, n) => (n === 1 ? 'drop-answer' : 'forward');
  const gone = await apiError(t, client.tags.delete(tag), 404, 'No such tag');
  t.is(gone.attempts, 2);
  await t.throwsAsync(v.admin.tags.get(tag), { message: 'No such tag' });

  // The entity upsert: sent again after its answer was lost, it leaves one entity as asked.
  proxy.requests.length = 0;
  proxy.fate = (_r, n) => (n === 1 ? 'drop-answer' : 'forward');
  const id = unique('ent');
  t.like(await client.entities.save({ id, tags: ['a'] }), { id, tags: ['a'] });
  t.is(proxy.requests.length, 2);
});

test('lost answers: stores and other non-idempotent requests are not sent again', async (t) => {
  const { proxy, client } = await proxied(t);
  proxy.fate = () => 'drop-answer';
  const subject = unique('subj');

  const store = await t.throwsAsync(client.dataSubjects.storeAttributes(subject, [{ attribute: 'NOTE', value: 'once' }]), { instanceOf: VaultNetworkError });
  t.is(store?.attempts, 1);
  t.is(proxy.requests.length, 1);
  // It did land: resending on the caller's behalf would have stored the repeatable value twice.
  t.is((await v.admin.dataSubjects.getAttribute(subject, 'NOTE')).length, 1);

  proxy.requests.length = 0;
  await t.throwsAsync(client.applications.create({ name: unique('app') }), { instanceOf: VaultNetworkError });
  await t.throwsAsync(client.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: 'NOTE' }, applicationId: 'x' }), { instanceOf: VaultNetworkError });
  t.is(proxy.requests.length, 2);
});

test('vault errors are never retried, 5xx included', async (t) => {
  const { url, hits } = await rawServer(t, (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '7' });
    res.end(JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'draining' }));
  });
  const c = new VaultClient({ url, apiKey: 'k'.repeat(20), retry: fast });
  t.teardown(() => c.close());
  const err = await apiError(t, c.tags.list(), 503, 'draining');
  t.is(err.retryAfter, 7);
  t.is(hits(), 1);
});

test('an error answer that is not JSON still becomes a VaultApiError', async (t) => {
  const { url } = await rawServer(t, (_req, res) => {
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html>bad gateway</html>');
  });
  const c = new VaultClient({ url, apiKey: 'k'.repeat(20), retry: false });
  t.teardown(() => c.close());
  const err = await apiError(t, c.tags.list(), 502, 'Bad Gateway');
  t.is(err.body, '<html>bad gateway</html>');
});

test('a 2xx answer that is not the vault\'s JSON is a VaultApiError naming the status and content type, never undefined', async (t) => {
  const answers: Array<[string | undefined, string]> = [
    ['text/plain', 'ok'],
    ['application/json', ''],
    ['application/json', '{"data":[{"name":"a"}'],
    ['application/json', '{"items":[]}'],
    [undefined, ''],
  ];
  let next = 0;
  const { url } = await rawServer(t, (_req, res) => {
    const [type, body] = answers[next++ % answers.length];
    res.writeHead(200, type === undefined ? {} : { 'content-type': type });
    res.end(body);
  });
  const c = new VaultClient({ url, apiKey: 'k'.repeat(20), retry: false });
  t.teardown(() => c.close());
  const messages: string[] = [];
  for (let i = 0; i < answers.length; i++) {
    const err = await t.throwsAsync(c.tags.list(), { instanceOf: VaultApiError });
    t.like(err, { status: 200, method: 'GET', path: '/tags' });
    messages.push(err!.message);
  }
  t.deepEqual(messages, [
    'The 200 answer (text/plain) is not JSON',
    'The 200 answer (application/json) is not JSON',
    'The 200 answer (application/json) is not JSON',
    'The 200 answer (application/json) has no data member',
    'The 200 answer (no content type) is not JSON',
  ]);
  next = 0;
  await apiError(t, c.audit.log({ eventType: 'READ', dataPointId: 'p', applicationId: 'a' }), 200, 'The 200 answer (text/plain) is not JSON');
  await apiError(t, c.search({ query: { attributes: ['X'] } }), 200, 'The 200 answer (application/json) is not JSON');
  next = 3;
  await apiError(t, c.stats(), 200, 'The 200 answer (application/json) has no data member');
});

test('an unusable 2xx answer to a value read or store is a VaultApiError without that answer: it holds the values', async (t) => {
  const cutOff = '{"data":[{"dataPointId":"p","attribute":"SSN","value":"078-05-1120"';
  const { url } = await rawServer(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(cutOff);
  });
  const c = new VaultClient({ url, apiKey: 'k'.repeat(20), encryptionKey: v.keys.publicKey, decryptionKey: v.keys.privateKey, retry: false });
  t.teardown(() => c.close());
  for (const call of [
    () => c.data.get('p'),
    () => c.dataSubjects.getAttribute('s', 'SSN'),
    () => c.entities.getAttributes('s'),
    () => c.dataSubjects.storeAttributes('s', [{ attribute: 'SSN', value: '078-05-1120' }]),
  ]) {
    const err = await apiError(t, call(), 200, 'The 200 answer (application/json) is not JSON');
    t.is(err.body, undefined);
    t.false(inspect(err, { depth: Infinity, showHidden: true }).includes('078-05-1120'));
  }
  // Other answers keep theirs, to show what stood in for the vault.
  const other = await apiError(t, c.tags.list(), 200, 'The 200 answer (application/json) is not JSON');
  t.is(other.body, cutOff);
});

test('headersTimeout and bodyTimeout end a stalled request with a network error', async (t) => {
  const silent = await rawServer(t, () => {});
  const c1 = new VaultClient({ url: silent.url, apiKey: 'k'.repeat(20), headersTimeout: 150, retry: { retries: 1, minDelayMs: 5, maxDelayMs: 5 } });
  t.teardown(() => c1.close());
  const started = Date.now();
  const headers = await t.throwsAsync(c1.tags.list(), { instanceOf: VaultNetworkError });
  t.is(headers?.code, 'UND_ERR_HEADERS_TIMEOUT');
  t.is(headers?.attempts, 2);
  t.is(silent.hits(), 2);
  t.true(Date.now() - started < 5_000);
  const once = await t.throwsAsync(c1.applications.create({ name: 'x' }), { instanceOf: VaultNetworkError });
  t.is(once?.attempts, 1);

  const stalled = await rawServer(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"data":');
  });
  const c2 = new VaultClient({ url: stalled.url, apiKey: 'k'.repeat(20), bodyTimeout: 150, retry: false });
  t.teardown(() => c2.close());
  const body = await t.throwsAsync(c2.tags.list(), { instanceOf: VaultNetworkError });
  t.is(body?.code, 'UND_ERR_BODY_TIMEOUT');
});

test('no HTTP answer: an untrusted certificate, TLS to a plain port, a server that is not HTTP are VaultNetworkErrors, not retried', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sdk-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
  let tlsHits = 0;
  const tls = createTlsServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (_req, res) => {
    tlsHits++;
    res.end();
  });
  let notHttpHits = 0;
  const sockets = new Set<Socket>();
  const notHttp: TcpServer = createTcpServer((socket) => {
    notHttpHits++;
    sockets.add(socket);
    socket.end('SSH-2.0-OpenSSH_9.6\r\n');
  });
  for (const server of [tls, notHttp]) {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }
  // Runs first: a server closes only once its connections have.
  t.teardown(() => {
    tls.closeAllConnections();
    for (const socket of sockets) socket.destroy();
  });
  const plain = await rawServer(t, (_req, res) => res.end());
  const port = (server: { address(): unknown }) => (server.address() as AddressInfo).port;
  const cases = {
    untrusted: `https://127.0.0.1:${port(tls)}`,
    tlsToPlain: plain.url.replace('http:', 'https:'),
    notHttp: `http://127.0.0.1:${port(notHttp)}`,
  };
  for (const [name, url] of Object.entries(cases)) {
    const c = new VaultClient({ url, apiKey: 'k'.repeat(20), retry: fast });
    t.teardown(() => c.close());
    const err = await t.throwsAsync(c.tags.list(), { instanceOf: VaultNetworkError }, name);
    t.is(err?.attempts, 1, `${name}: sending again would meet the same`);
    t.is(err?.path, '/tags');
    t.regex(err!.code, /^[A-Z_]+$|^HTTPParserError$/, name);
    t.truthy(err?.cause, name);
  }
  t.is(tlsHits + plain.hits(), 0, 'no request reached a server');
  t.is(notHttpHits, 1);

  // A header undici refuses is the caller's mistake, not the network's.
  const c = new VaultClient({ url: plain.url, apiKey: 'k'.repeat(20), retry: fast });
  t.teardown(() => c.close());
  const refused = await t.throwsAsync(c.request({ method: 'GET', path: '/tags', headers: { 'x-note': 'a\nb' }, idempotent: true }));
  t.false(refused instanceof VaultNetworkError);
});

test('an aborted request rejects with a VaultAbortError, and is not retried', async (t) => {
  const controller = new AbortController();
  // Aborted once the request is surely on its way: the server has it and never answers.
  const silent = await rawServer(t, () => controller.abort());
  const c = new VaultClient({ url: silent.url, apiKey: 'k'.repeat(20), retry: fast });
  t.teardown(() => c.close());
  const err = await t.throwsAsync(c.tags.list({ signal: controller.signal }), { instanceOf: VaultAbortError });
  t.false(err instanceof VaultNetworkError);
  t.is(err?.name, 'AbortError');
  t.false(err?.timedOut);
  t.like(err, { method: 'GET', path: '/tags', attempts: 1 });
  t.is((err?.reason as Error).name, 'AbortError');
  t.truthy(err?.cause, 'what the transport threw is kept');
  t.is(err?.message, "GET /tags was aborted by the caller's signal (1 attempt sent)");
  await new Promise((r) => setTimeout(r, 100));
  t.is(silent.hits(), 1);
});

test('an AbortSignal.timeout that runs out is a VaultAbortError that says it timed out', async (t) => {
  const silent = await rawServer(t, () => {});
  const c = new VaultClient({ url: silent.url, apiKey: 'k'.repeat(20), retry: fast });
  t.teardown(() => c.close());
  // Long enough for a loaded machine to deliver the request, so the abort comes after it was sent.
  const err = await t.throwsAsync(c.tags.list({ signal: AbortSignal.timeout(1_000) }), { instanceOf: VaultAbortError });
  t.true(err?.timedOut);
  t.is(err?.name, 'TimeoutError');
  t.is(err?.attempts, 1);
  t.is(err?.message, "GET /tags timed out by the caller's signal (1 attempt sent)");
  t.is(silent.hits(), 1);
});

test('aborts before sending, during the backoff, and with a reason of its own are VaultAbortErrors too', async (t) => {
  const silent = await rawServer(t, () => {});
  const c = new VaultClient({ url: silent.url, apiKey: 'k'.repeat(20), retry: fast });
  t.teardown(() => c.close());
  const before = await t.throwsAsync(c.tags.list({ signal: AbortSignal.abort('stop') }), { instanceOf: VaultAbortError });
  t.is(before?.attempts, 0, 'nothing was sent');
  t.is(before?.reason, 'stop');
  t.is(before?.cause, 'stop');
  t.is(silent.hits(), 0);

  // The first attempt is reset, and the abort comes while the client waits to retry.
  const controller = new AbortController();
  const resetting = await rawServer(t, (req) => {
    req.socket.destroy();
    setTimeout(() => controller.abort(new Error('shutting down')), 50);
  });
  const slow = new VaultClient({ url: resetting.url, apiKey: 'k'.repeat(20), retry: { retries: 3, minDelayMs: 60_000, maxDelayMs: 60_000 } });
  t.teardown(() => slow.close());
  const backoff = await t.throwsAsync(slow.tags.list({ signal: controller.signal }), { instanceOf: VaultAbortError });
  t.is(backoff?.attempts, 1);
  t.is((backoff?.reason as Error).message, 'shutting down');
  t.is(backoff?.name, 'AbortError');
  t.is(resetting.hits(), 1);
});

test('keep-alive: requests share a connection; keepAlive false opens one per request', async (t) => {
  const { proxy, client } = await proxied(t);
  for (let i = 0; i < 20; i++) await client.health();
  // undici's pool may open a second socket while the first is still settling; never one per request.
  t.true(proxy.connections <= 2, `${proxy.connections} connections`);

  const proxy2 = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy2.close());
  const noKeepAlive = v.client({ url: proxy2.url, keepAlive: false });
  for (let i = 0; i < 5; i++) await noKeepAlive.health();
  t.is(proxy2.connections, 5);
});

test('connections: concurrent requests spread over at most `connections` sockets', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url, connections: 3 });
  await Promise.all(Array.from({ length: 30 }, () => c.tags.list()));
  t.true(proxy.connections <= 3);
  t.true(proxy.connections >= 2);
});

test('a base URL path prefix is kept', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: `${proxy.url}/vault/` });
  await apiError(t, c.tags.list(), 404, 'Not Found');
  t.is(proxy.requests[0].path, '/vault/tags');
});

test('licence: 402 for custom regulations past the limit, and for custom rules', async (t) => {
  t.is(await v.admin.regulations.save({ key: unique('REG') }), 'Regulation created');
  await apiError(t, v.admin.regulations.save({ key: unique('REG') }), 402, 'Your current subscription is limited to 1 custom regulations');
  await apiError(
    t,
    v.admin.rules.save({ key: unique('rule'), type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['NOTE'] }, action: { type: 'alert', alertLevel: 'NORMAL', message: 'm' } }),
    402,
    'Your current subscription does not support custom rules',
  );
});

test.serial('a vault restart: requests fail as network errors while it is down and work again with the same client', async (t) => {
  const c = v.client({ retry: { retries: 2, minDelayMs: 10, maxDelayMs: 20 } });
  t.deepEqual(await c.health(), { status: 'ok' });
  await v.proc.stop('SIGKILL');
  const err = await t.throwsAsync(c.tags.list(), { instanceOf: VaultNetworkError });
  t.true(['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(err!.code));
  v.proc = await v.proc.restart();
  t.deepEqual(await c.health(), { status: 'ok' });
  t.true(Array.isArray(await c.tags.list()));
});

test.serial('a vault restart: a store sent while the vault is down is retried until it is back, and stored once', async (t) => {
  const c = v.client({ retry: { retries: 1000, minDelayMs: 100, maxDelayMs: 200 } });
  const subject = unique('subj');
  await v.proc.stop('SIGKILL');
  const store = c.dataSubjects.storeAttributes(subject, [{ attribute: 'NOTE', value: 'during the restart' }]);
  v.proc = await v.proc.restart();
  t.is((await store).length, 1);
  t.deepEqual((await c.dataSubjects.getAttribute(subject, 'NOTE')).map((p) => p.value), ['during the restart']);
});

test('closing: a closed client refuses further requests', async (t) => {
  const c = v.client();
  await c.close();
  await t.throwsAsync(c.health(), { instanceOf: VaultClientClosedError, message: 'GET /healthz was not sent: the vault client is closed' });
});
