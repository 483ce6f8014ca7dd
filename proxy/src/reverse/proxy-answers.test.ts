import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import test from 'ava';
import { request } from 'undici';
import type { SidecarHandle } from '../index.js';
import { FakeVault } from '../testing/fake-vault.js';
import { capturingLogger, cleanupRedis, metricValue, startTestSidecar, uniquePrefix, waitFor, type LogLine } from '../testing/helpers.js';

/** How the proxy hands the service's answers back, and what it makes of them. */

let server: Server;
let vault: FakeVault;
let sidecar: SidecarHandle;
let lines: LogLine[];
let dir: string;
const prefix = uniquePrefix('proxy-answers');

test.before(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/legacy-error') {
        // A service whose clients show the reason phrase it chose.
        res.writeHead(422, 'Validation Failed', { 'content-type': 'application/json' });
        return res.end('{"errors":["email"]}');
      }
      if (req.url === '/legacy-headers') {
        // Names spelt as the service spells them, which a client may look up as spelt.
        res.setHeader('Content-Type', 'text/plain');
        res.setHeader('X-Request-ID', 'r-1');
        res.setHeader('Set-Cookie', ['a=1', 'b=2']);
        res.writeHead(200);
        return res.end('ok');
      }
      if (req.method === 'PUT') {
        res.writeHead(204);
        return res.end();
      }
      // A service that serialises a user without an e-mail address as `null`.
      const body = JSON.stringify(req.url === '/users/u-null' ? { id: 'u-null', email: null } : { id: 'u-1', email: 'u-1@example.test' });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  dir = mkdtempSync(join(tmpdir(), 'proxy-answers-'));
  const routesFile = join(dir, 'routes.json');
  // Routes as a service with Express's habits is audited: GET answers HEAD too, a PUT may answer 204.
  writeFileSync(routesFile, JSON.stringify({
    applicationId: 'crm',
    routes: [
      { method: ['GET', 'HEAD'], path: '/users/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: { response: '/email' } } },
      { method: 'PUT', path: '/users/:id', eventType: 'UPDATE', subjectId: { param: 'id' }, attributes: { email: { response: '/email' } } },
      { method: 'POST', path: '/users', eventType: 'STORE', subjectId: { request: '/id' }, attributes: { email: { request: '/email' } } },
      { method: 'PATCH', path: '/users/:id', eventType: 'UPDATE', subjectId: { param: 'id' }, attributes: { email: { request: '/email' } } },
    ],
  }));
  vault = new FakeVault();
  await vault.start();
  const captured = capturingLogger('debug');
  lines = captured.lines;
  sidecar = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, upstream: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, routesFile, batchMs: 10,
  }, { logger: captured.logger });
});

test.after.always(async () => {
  await sidecar?.close();
  await vault?.stop();
  await cleanupRedis(prefix);
  server?.closeAllConnections();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test.serial('answers that have no body by definition (HEAD, 204) lose no events and raise no warning', async (t) => {
  const head = await request(`${sidecar.proxyUrl}/users/u-1`, { method: 'HEAD' });
  t.is(head.statusCode, 200);
  t.is(head.headers['content-length'], '39', 'the length of the GET body, as the upstream said');
  await head.body.dump();
  const put = await request(`${sidecar.proxyUrl}/users/u-1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is(put.statusCode, 204);
  await put.body.dump();
  // Then a GET, whose event shows the ones before it were handled.
  const get = await request(`${sidecar.proxyUrl}/users/u-1`);
  t.is(get.statusCode, 200);
  await get.body.dump();
  await waitFor(() => vault.records.length > 0, { message: "the GET's event" });
  t.deepEqual(vault.records.map((e) => [e.eventType, e.subjectId, e.data?.attribute]), [['READ', 'u-1', 'email']]);
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), 0);
  t.deepEqual(lines.filter((l) => l.msg.startsWith('events lost')), []);
});

test.serial("a null shows nothing (no READ, nothing lost), and an UPDATE setting one is reported as the value's erasure", async (t) => {
  const before = vault.records.length;
  const shown = await request(`${sidecar.proxyUrl}/users/u-null`);
  t.is(shown.statusCode, 200);
  t.deepEqual(await shown.body.json(), { id: 'u-null', email: null });
  const erased = await request(`${sidecar.proxyUrl}/users/u-2`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"email":null}' });
  t.is(erased.statusCode, 200);
  await erased.body.dump();
  // Then a GET, whose event shows the ones before it were handled.
  const get = await request(`${sidecar.proxyUrl}/users/u-1`);
  await get.body.dump();
  await waitFor(() => vault.records.slice(before).some((e) => e.eventType === 'READ'), { message: "the last GET's event" });
  t.deepEqual(vault.records.slice(before).map((e) => [e.eventType, e.dataPointId, e.data]), [
    ['DELETE', 'crm/u-2/email', { attribute: 'email' }],
    ['READ', 'crm/u-1/email', { attribute: 'email', value: 'u-1@example.test' }],
  ]);
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), 0);
});

/** The proxy's whole answer to a GET, as bytes on the wire. */
async function rawGet(path: string): Promise<string> {
  const { hostname, port } = new URL(sidecar.proxyUrl!);
  const socket = connect(Number(port), hostname);
  try {
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`);
    let answer = '';
    for await (const chunk of socket) answer += (chunk as Buffer).toString('latin1');
    return answer;
  } finally {
    socket.destroy();
  }
}

test.serial('the status line comes back as the service wrote it, reason phrase included', async (t) => {
  const answer = await rawGet('/legacy-error');
  t.regex(answer, /^HTTP\/1\.1 422 Validation Failed\r\n/);
  t.true(answer.includes('{"errors":["email"]}'));
});

test.serial('header names come back spelt as the service wrote them', async (t) => {
  const answer = await rawGet('/legacy-headers');
  const head = answer.slice(0, answer.indexOf('\r\n\r\n'));
  for (const line of ['Content-Type: text/plain', 'X-Request-ID: r-1', 'Set-Cookie: a=1', 'Set-Cookie: b=2']) {
    t.true(head.split('\r\n').includes(line), `${line} in:\n${head}`);
  }
});

test.serial('a client that hangs up while sending a body the proxy reads is no error of the proxy', async (t) => {
  const { hostname, port } = new URL(sidecar.proxyUrl!);
  const socket = connect(Number(port), hostname);
  socket.write(`POST /users HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"id":"u-9","email":"`);
  await new Promise((r) => setTimeout(r, 200));
  socket.destroy();
  const line = await waitFor(() => lines.find((l) => l.component === 'proxy' && l.err === 'aborted'), { message: 'the hang-up logged' });
  t.true(line.level < 40, `logged at level ${line.level}: ${line.msg}`);
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), 0, 'nothing reached the service, so nothing is lost');
});

test.serial('a request body the client compressed is read for its events, as the service reads it', async (t) => {
  // Express's body-parser inflates gzip, deflate and br request bodies by default.
  const before = vault.records.length;
  const lostBefore = await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total');
  const sent = JSON.stringify({ id: 'u-gzip', email: 'gzip@example.test' });
  for (const [encoding, body] of [['gzip', gzipSync(sent)], ['deflate', deflateSync(sent)], ['br', brotliCompressSync(sent)]] as const) {
    const res = await request(`${sidecar.proxyUrl}/users`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body,
    });
    t.is(res.statusCode, 200, encoding);
    await res.body.dump();
  }
  await waitFor(() => vault.records.length >= before + 3, { message: 'three STOREs' });
  t.deepEqual(vault.records.slice(before).map((e) => [e.eventType, e.dataPointId, e.data?.value]), Array(3).fill(['STORE', 'crm/u-gzip/email', 'gzip@example.test']));
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), lostBefore);
});

test.serial('a JSON body that opens with a byte order mark is read, as services read it', async (t) => {
  // Express's body-parser drops the UTF-8 BOM some Windows tools write; RFC 8259 allows that.
  const before = vault.records.length;
  const lostBefore = await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total');
  const res = await request(`${sidecar.proxyUrl}/users`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: `\uFEFF${JSON.stringify({ id: 'u-bom', email: 'bom@example.test' })}`,
  });
  t.is(res.statusCode, 200);
  await res.body.dump();
  await waitFor(() => vault.records.length > before, { message: 'the STORE' });
  t.deepEqual(vault.records.slice(before).map((e) => [e.eventType, e.dataPointId, e.data?.value]), [['STORE', 'crm/u-bom/email', 'bom@example.test']]);
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), lostBefore);
});

test('a keep-alive connection the service closes just as a request goes out is retried on a new one, not answered 502', async (t) => {
  // A service that closes an idle connection without announcing its idle timeout (no
  // Keep-Alive header, as many servers do), at the moment the proxy sends the next request on it.
  const answered: string[] = [];
  const service = createNetServer((socket) => {
    let requests = 0;
    socket.on('data', (chunk) => {
      if (++requests > 1) return socket.destroy();
      answered.push(chunk.toString('latin1').split(' ', 2).join(' '));
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
  const prefix2 = uniquePrefix('proxy-keep-alive-race');
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: `http://127.0.0.1:${(service.address() as AddressInfo).port}`, routesFile: join(dir, 'routes.json'),
  });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
    service.close();
  });
  for (const method of ['GET', 'DELETE', 'GET'] as const) {
    const res = await request(`${other.proxyUrl}/reports/7`, { method });
    t.is(res.statusCode, 200, method);
    t.is(await res.body.text(), 'ok');
  }
  t.deepEqual(answered, ['GET /reports/7', 'DELETE /reports/7', 'GET /reports/7']);
  // A POST may not be sent twice: the service may have acted on it.
  const post = await request(`${other.proxyUrl}/reports/7`, { method: 'POST', body: 'x' });
  t.is(post.statusCode, 502);
  await post.body.dump();
  t.is(answered.length, 3);
});
