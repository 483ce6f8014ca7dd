import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { SidecarHandle } from '../index.js';
import { FakeVault } from '../testing/fake-vault.js';
import { cleanupRedis, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

/**
 * What hostile or sloppy clients do. Request targets and headers are sent as written, on a raw socket
 * (an HTTP client library would tidy them first), against a service that reads its path as
 * many servers do: fragment cut off (Express's parseurl does), `.` and `..` resolved and runs
 * of slashes merged (nginx and Tomcat do both), a backslash read as a slash (WHATWG URL
 * parsing does, and with it servers built on `new URL`).
 */

let server: Server;
let vault: FakeVault;
let sidecar: SidecarHandle;
let dir: string;
const seen: string[] = [];
/** How the connection of each request to `/slow`, which the service never answers, ended. */
const slowClosed: boolean[] = [];
const prefix = uniquePrefix('proxy-hostile');

test.before(async () => {
  server = createServer((req, res) => {
    if (req.url!.startsWith('/refuse-upload')) {
      // A size limit or a failed login answers at once, without reading the upload.
      res.writeHead(413, { 'content-type': 'application/json', connection: req.url!.endsWith('close') ? 'close' : 'keep-alive' });
      return res.end('{"error":"too large"}');
    }
    req.resume();
    seen.push(req.url!);
    if (req.url === '/slow') return res.on('close', () => slowClosed.push(true));
    const path = new URL(`http://service${req.url!}`).pathname.replace(/\/{2,}/g, '/');
    const user = /^\/users\/([^/]+)$/.exec(path);
    if (!user) {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end('{"error":"not found"}');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: user[1], email: `${user[1]}@example.test` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'proxy-hostile-'));
  const routesFile = join(dir, 'routes.json');
  writeFileSync(routesFile, JSON.stringify({
    applicationId: 'crm',
    routes: [{ method: 'GET', path: '/users/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: { response: '/email' } } }],
  }));
  vault = new FakeVault();
  await vault.start();
  sidecar = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, upstream: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, routesFile, batchMs: 10,
  });
});

test.after.always(async () => {
  await sidecar?.close();
  await vault?.stop();
  await cleanupRedis(prefix);
  server?.closeAllConnections();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Sends `head` as written and resolves to the status line of the answer (or all of it). */
function send(head: string, whole = false, proxyUrl = sidecar.proxyUrl!): Promise<string> {
  const proxy = new URL(proxyUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(proxy.port), proxy.hostname);
    let answer = '';
    socket.on('data', (data) => {
      answer += data.toString('latin1');
      // Answers here are small and end their body: the whole message is in once it ends in `}`.
      if (answer.includes('\r\n\r\n') && answer.endsWith('}')) socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(whole ? answer : answer.slice(0, answer.indexOf('\r\n'))));
    socket.write(`${head}\r\nConnection: close\r\n\r\n`);
  });
}

/** The data points read since `from` records, once the READ of `last` (sent after the others) is in. */
async function readsUpTo(from: number, last: string): Promise<string[]> {
  const status = await send(`GET /users/${last} HTTP/1.1\r\nHost: service`);
  if (status !== 'HTTP/1.1 200 OK') throw new Error(`the last request was answered ${status}`);
  await waitFor(() => vault.records.some((e) => e.subjectId === last), { message: `the READ of ${last}` });
  return vault.records.slice(from).map((e) => e.dataPointId!);
}

test.serial("a fragment in the target is not sent on: the service and the audit see the same user", async (t) => {
  const from = vault.records.length;
  t.is(await send('GET /users/u-1#profile HTTP/1.1\r\nHost: service'), 'HTTP/1.1 200 OK');
  t.is(await send('GET /users/u-2?tab=1#x/../../u-3 HTTP/1.1\r\nHost: service'), 'HTTP/1.1 200 OK');
  t.deepEqual(seen.slice(-2), ['/users/u-1', '/users/u-2?tab=1']);
  const reads = await readsUpTo(from, 'fragment-done');
  t.deepEqual(reads, ['crm/u-1/email', 'crm/u-2/email', 'crm/fragment-done/email'], 'never a READ of "u-1#profile", a user that does not exist');
});

test.serial('a path with . or .. segments, a run of slashes or a backslash is audited as the path the service makes of it', async (t) => {
  const from = vault.records.length;
  for (const path of ['/admin/../users/u-4', '/x/%2E%2e/users/u-5', '/users/./u-6', '/users/u-0/../u-7', '//users//u-8', '/users\\u-9']) {
    t.is(await send(`GET ${path} HTTP/1.1\r\nHost: service`), 'HTTP/1.1 200 OK', path);
  }
  // What resolves to no route's path is no route's: `/users/u-8/..` is `/users/`, here a 404 anyway.
  t.is(await send('GET /users/u-8/.. HTTP/1.1\r\nHost: service'), 'HTTP/1.1 404 Not Found');
  t.deepEqual(seen.slice(-7), ['/admin/../users/u-4', '/x/%2E%2e/users/u-5', '/users/./u-6', '/users/u-0/../u-7', '//users//u-8', '/users\\u-9', '/users/u-8/..'], 'sent on as written');
  const reads = await readsUpTo(from, 'dots-done');
  t.deepEqual(reads, ['crm/u-4/email', 'crm/u-5/email', 'crm/u-6/email', 'crm/u-7/email', 'crm/u-8/email', 'crm/u-9/email', 'crm/dots-done/email']);
});

test.serial('a request with two Host headers is a 400, as RFC 9112 requires, not a 502 blaming the service', async (t) => {
  const before = seen.length;
  const answer = await send('GET /users/u-9 HTTP/1.1\r\nHost: service\r\nHost: other', true);
  t.is(answer.slice(0, answer.indexOf('\r\n')), 'HTTP/1.1 400 Bad Request');
  t.is(answer.slice(answer.indexOf('\r\n\r\n') + 4), '{"statusCode":400,"error":"Bad Request","message":"Request has more than one Host header"}');
  t.is(seen.length, before, 'nothing reached the service');
  const from = vault.records.length;
  t.deepEqual(await readsUpTo(from, 'host-done'), ['crm/host-done/email']);
});

test.serial('a client that hangs up before an unrouted request is answered frees the service from it at once', async (t) => {
  // Nothing is audited for it, so nothing needs the answer: the service sees the hang-up, as it
  // would without the proxy, rather than holding the request for SIDECAR_UPSTREAM_TIMEOUT_MS.
  const proxy = new URL(sidecar.proxyUrl!);
  for (let i = 1; i <= 3; i++) {
    const socket = connect(Number(proxy.port), proxy.hostname);
    socket.write('GET /slow HTTP/1.1\r\nHost: service\r\n\r\n');
    await waitFor(() => seen.filter((url) => url === '/slow').length === i, { message: `request ${i} at the service` });
    socket.destroy();
    await waitFor(() => slowClosed.length === i, { message: `the service seeing hang-up ${i}` });
  }
  t.is(await send('GET /users/after HTTP/1.1\r\nHost: service'), 'HTTP/1.1 200 OK', 'the proxy carries on');
});

test.serial('a path whose .. segments climb above the root is a 400: it would leave the upstream base path', async (t) => {
  // SIDECAR_UPSTREAM with a path: the service the proxy fronts is everything under /api, and
  // a server that resolves dot segments would serve /api/../users/u-1 as /users/u-1.
  const prefix2 = uniquePrefix('proxy-hostile-base');
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`,
    routesFile: join(dir, 'routes.json'),
  });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  const before = seen.length;
  for (const path of ['/../users/u-1', '/x/../../users/u-1', '/%2E%2E/users/u-1', '//../users/u-1', '/..\\users\\u-1']) {
    const answer = await send(`GET ${path} HTTP/1.1\r\nHost: service`, true, other.proxyUrl!);
    t.is(answer.slice(0, answer.indexOf('\r\n')), 'HTTP/1.1 400 Bad Request', path);
    t.is(answer.slice(answer.indexOf('\r\n\r\n') + 4), '{"statusCode":400,"error":"Bad Request","message":"Request path climbs above the root"}');
  }
  t.deepEqual(seen.slice(before), [], 'nothing reached the service');
  // Dot segments that stay inside are sent on as written.
  t.is(await send('GET /x/../users/u-1 HTTP/1.1\r\nHost: service', false, other.proxyUrl!), 'HTTP/1.1 404 Not Found');
  t.deepEqual(seen.slice(before), ['/api/x/../users/u-1']);
});

/**
 * Sends an upload of `size` bytes, as fast as the proxy takes it, then another request on the
 * same connection; resolves to the status lines answered.
 */
function uploadThenAsk(path: string, size: number): Promise<string[]> {
  const proxy = new URL(sidecar.proxyUrl!);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(proxy.port), proxy.hostname);
    let answers = '';
    const stalled = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection stalled; answered so far: ${answers.match(/HTTP\/1\.1 [^\r]*/g)}`));
    }, 15_000);
    socket.on('data', (data) => (answers += data.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(stalled);
      resolve(answers.match(/HTTP\/1\.1 [^\r]*/g) ?? []);
    });
    void (async () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: service\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`);
      const chunk = Buffer.alloc(64 * 1024, 1);
      for (let sent = 0; sent < size; sent += chunk.length) {
        if (!socket.write(chunk.subarray(0, Math.min(chunk.length, size - sent)))) await new Promise((r) => socket.once('drain', r));
      }
      socket.write('GET /users/after-upload HTTP/1.1\r\nHost: service\r\nConnection: close\r\n\r\n');
    })();
  });
}

test.serial('an upload the service refuses before reading it is answered, and the connection serves the next request', async (t) => {
  t.timeout(60_000);
  t.deepEqual(await uploadThenAsk('/refuse-upload', 16 * 1024 * 1024), ['HTTP/1.1 413 Payload Too Large', 'HTTP/1.1 200 OK']);
  // A service that closes its connection too: undici, the proxy's HTTP client, mostly loses its
  // answer to the write that fails (README), but the client's connection goes on all the same.
  const [first, next] = await uploadThenAsk('/refuse-upload-close', 16 * 1024 * 1024);
  t.regex(first, /^HTTP\/1\.1 (413 Payload Too Large|502 Bad Gateway)$/);
  t.is(next, 'HTTP/1.1 200 OK');
});
