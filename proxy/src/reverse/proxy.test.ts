import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { Agent, request } from 'undici';
import type { SidecarHandle } from '../index.js';
import type { StampedEvent } from '../ingest/event.js';
import { FakeVault } from '../testing/fake-vault.js';
import { capturingLogger, cleanupRedis, closedPort, metricValue, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

/**
 * The reverse proxy in front of a small users service, with the example routes file that the
 * README documents. Events go through Redis to the fake vault as in ingest mode.
 */

const routesFile = fileURLToPath(new URL('./fixtures/routes.example.json', import.meta.url));
const chunk = 64 * 1024;
const bigSize = 32 * 1024 * 1024;
/** 20 KiB of cookies, more than Node's default 16 KiB of headers. */
const bigCookies = Array.from({ length: 5 }, (_, i) => `c${i}=${String(i).repeat(4096)}`);

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

class Upstream {
  server!: Server;
  seen: Seen[] = [];
  streamedIn = 0;
  upload: { bytes: number; sha256: string } | undefined;
  downloadClosed: 'finished' | 'aborted' | undefined;
  slowAnswerClosed: 'finished' | 'aborted' | undefined;
  slowAnswerId: string | undefined;
  private openGate: (() => void) | undefined;
  openSlow: (() => void) | undefined;
  private nextId = 1;

  async start(): Promise<string> {
    // As generous as the proxy, so that headers over Node's 16 KiB reach it.
    this.server = createServer({ maxHeaderSize: 64 * 1024 }, async (req, res) => {
      const url = req.url!;
      if (url === '/big-headers') {
        req.resume();
        res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': bigCookies });
        return res.end('ok');
      }
      if (url === '/stream-up') {
        const hash = createHash('sha256');
        this.streamedIn = 0;
        for await (const part of req) {
          this.streamedIn += (part as Buffer).length;
          hash.update(part as Buffer);
        }
        this.upload = { bytes: this.streamedIn, sha256: hash.digest('hex') };
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify(this.upload));
      }
      if (url === '/slow') {
        req.resume();
        await new Promise<void>((resolve) => (this.openSlow = resolve));
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end('late');
      }
      // The second is a matched READ, whose answer the proxy copies aside for its events.
      if (url === '/stream-down' || url === '/users/stream-down') {
        res.on('close', () => (this.downloadClosed = res.writableFinished ? 'finished' : 'aborted'));
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(Buffer.alloc(chunk, 1));
        // The rest only once the client has the first chunk: a buffering proxy would deadlock.
        await new Promise<void>((resolve) => (this.openGate = resolve));
        for (let sent = chunk; sent < bigSize; sent += chunk) {
          if (!res.write(Buffer.alloc(chunk, sent / chunk))) await new Promise((r) => res.once('drain', r));
        }
        return res.end();
      }
      const parts: Buffer[] = [];
      for await (const part of req) parts.push(part as Buffer);
      const body = Buffer.concat(parts);
      this.seen.push({ method: req.method!, url, headers: req.headers, rawHeaders: req.rawHeaders, body });
      const json = (status: number, value: unknown, headers: Record<string, string | string[]> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      // As Express routes by default: in any case, with or without a trailing slash.
      const user = /^\/users\/([^/?]+)\/?$/i.exec(url);
      if (req.method === 'POST' && url === '/users' && req.headers['x-answer-slowly']) {
        // A JSON answer in twenty pieces over a second: a client may hang up in between.
        res.on('close', () => (this.slowAnswerClosed = res.writableFinished ? 'finished' : 'aborted'));
        res.writeHead(201, { 'content-type': 'application/json' });
        this.slowAnswerId = `u-${this.nextId++}`;
        const answer = JSON.stringify({ id: this.slowAnswerId, ...JSON.parse(body.toString()), padding: '.'.repeat(1000) });
        const piece = Math.ceil(answer.length / 20);
        for (let at = 0; at < answer.length && !res.destroyed; at += piece) {
          res.write(answer.slice(at, at + piece));
          await new Promise((r) => setTimeout(r, 50));
        }
        return res.end();
      }
      const legacy = req.headers['x-body-encoding'] as BufferEncoding | undefined;
      if (req.method === 'POST' && url === '/users' && legacy) {
        // A service that reads and answers in a legacy charset, labelled as such.
        const sent = JSON.parse(body.toString(legacy)) as { id: string };
        res.writeHead(201, { 'content-type': `application/json; charset=${req.headers['x-answer-charset']}` });
        return res.end(Buffer.from(JSON.stringify(sent), legacy));
      }
      if (req.method === 'POST' && url === '/users') {
        return json(201, { id: `u-${this.nextId++}`, ...JSON.parse(body.toString()) }, { 'x-upstream': 'users', 'set-cookie': ['a=1', 'b=2'] });
      }
      if (user?.[1] === 'missing') return json(404, { error: 'no such user' });
      if (req.method === 'GET' && user) {
        return json(200, { id: user[1], email: `${user[1]}@example.test`, phone: '+49 30 1234' }, { etag: '"v1"' });
      }
      if ((req.method === 'PUT' || req.method === 'PATCH') && user) return json(200, { ok: true });
      if (req.method === 'DELETE' && user) {
        res.writeHead(204);
        return res.end();
      }
      // Everything else echoes what arrived.
      return json(299, { method: req.method, url, length: body.length }, { 'x-echo': 'yes' });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  releaseDownload(): void {
    this.openGate?.();
    this.openGate = undefined;
  }

  async stop(): Promise<void> {
    this.releaseDownload();
    this.openSlow?.();
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

let upstream: Upstream;
let vault: FakeVault;
let sidecar: SidecarHandle;
let proxy: string;
let upstreamUrl: string;
const prefix = uniquePrefix('proxy');

test.before(async () => {
  upstream = new Upstream();
  upstreamUrl = await upstream.start();
  vault = new FakeVault();
  await vault.start();
  sidecar = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, upstream: upstreamUrl, routesFile, proxyBodyLimit: 4096, batchMs: 10,
  });
  proxy = sidecar.proxyUrl!;
});

test.after.always(async () => {
  await sidecar?.close();
  await upstream?.stop();
  await vault?.stop();
  await cleanupRedis(prefix);
});

function eventsFor(predicate: (e: StampedEvent) => boolean): StampedEvent[] {
  return vault.records.filter(predicate);
}

test.serial('a matched STORE is forwarded unchanged and yields one event per attribute', async (t) => {
  const body = JSON.stringify({ email: 'new@example.test', phone: '+1 555' });
  const res = await request(`${proxy}/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-custom': 'kept', 'x-user': 'clerk', connection: 'keep-alive' },
    body,
  });
  const answer = await res.body.text();
  t.is(res.statusCode, 201);
  t.is(res.headers['x-upstream'], 'users');
  t.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
  t.deepEqual(JSON.parse(answer), { id: 'u-1', email: 'new@example.test', phone: '+1 555' });

  const seen = upstream.seen.at(-1)!;
  t.is(seen.method, 'POST');
  t.is(seen.url, '/users');
  t.is(seen.body.toString(), body, 'request body byte for byte');
  t.is(seen.headers['x-custom'], 'kept');
  t.is(seen.headers['content-type'], 'application/json');
  t.is(seen.headers['x-forwarded-for'], '127.0.0.1');

  const stores = await waitFor(() => {
    const found = eventsFor((e) => e.eventType === 'STORE' && e.subjectId === 'u-1');
    return found.length === 2 ? found : undefined;
  }, { message: 'two STORE events' });
  t.like(stores[0], {
    applicationId: 'crm', dataPointId: 'crm/u-1/email', dataStoreName: 'crm-db', dataStoreEntityName: 'users',
    data: { attribute: 'email', value: 'new@example.test', regulations: ['GDPR'], reportOnly: true },
  });
  t.like(stores[1], { dataPointId: 'crm/u-1/phone', data: { attribute: 'phone', value: '+1 555' } });
  t.truthy(stores[0].eventId);
  t.truthy(stores[0].timestamp);
});

test.serial('a matched READ reports without values, with the user from a header; non-2xx yields nothing', async (t) => {
  const missing = await request(`${proxy}/users/missing`, { headers: { 'x-user': 'clerk' } });
  t.is(missing.statusCode, 404);
  t.deepEqual(await missing.body.json(), { error: 'no such user' });

  const res = await request(`${proxy}/users/u-1`, { headers: { 'x-user': 'clerk' } });
  t.is(res.statusCode, 200);
  t.is(res.headers.etag, '"v1"');
  t.deepEqual(await res.body.json(), { id: 'u-1', email: 'u-1@example.test', phone: '+49 30 1234' });
  const reads = await waitFor(() => {
    const found = eventsFor((e) => e.eventType === 'READ');
    return found.length === 2 ? found : undefined;
  }, { message: 'two READ events' });
  t.deepEqual(reads.map((e) => [e.subjectId, e.dataPointId, e.applicationUser, e.data]), [
    ['u-1', 'crm/u-1/email', 'clerk', { attribute: 'email' }],
    ['u-1', 'crm/u-1/phone', 'clerk', { attribute: 'phone' }],
  ]);

  const del = await request(`${proxy}/users/u-1`, { method: 'DELETE' });
  t.is(del.statusCode, 204);
  await del.body.dump();
  await waitFor(() => eventsFor((e) => e.eventType === 'DELETE').length === 2, { message: 'DELETE events' });
  t.deepEqual(eventsFor((e) => e.subjectId === 'missing'), [], 'the 404 produced no event');
});

test.serial("a client's next request cannot overtake the events of the previous one", async (t) => {
  const subjects = new Set<string>();
  for (let i = 0; i < 5; i++) {
    const created = await request(`${proxy}/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"o@example.test"}' });
    const { id } = (await created.body.json()) as { id: string };
    subjects.add(id);
    await (await request(`${proxy}/users/${id}`)).body.dump();
    await (await request(`${proxy}/users/${id}`, { method: 'DELETE' })).body.dump();
  }
  // Per round: one STORE (no phone given), two READs, two DELETEs.
  const ordered = await waitFor(() => {
    const mine = eventsFor((e) => subjects.has(e.subjectId!));
    return mine.length === 5 * 5 ? mine : undefined;
  }, { message: 'events of five create-read-delete rounds' });
  const bySubject = new Map<string, string[]>();
  for (const e of ordered) bySubject.set(e.subjectId!, [...(bySubject.get(e.subjectId!) ?? []), e.eventType]);
  for (const [subject, types] of bySubject) t.deepEqual(types, ['STORE', 'READ', 'READ', 'DELETE', 'DELETE'], subject);
});

test.serial('unmatched traffic passes through untouched and produces no events', async (t) => {
  const before = vault.records.length;
  const res = await request(`${proxy}/reports/7?format=csv&x=%20y`, {
    method: 'PATCH',
    headers: [['x-multi', 'one'], ['x-multi', 'two'], ['content-type', 'text/plain'], ['authorization', 'Bearer app-token']].flat(),
    body: 'plain text body',
  });
  t.is(res.statusCode, 299);
  t.is(res.headers['x-echo'], 'yes');
  t.deepEqual(await res.body.json(), { method: 'PATCH', url: '/reports/7?format=csv&x=%20y', length: 15 });
  const seen = upstream.seen.at(-1)!;
  t.is(seen.body.toString(), 'plain text body');
  t.is(seen.headers.authorization, 'Bearer app-token');
  t.deepEqual(seen.rawHeaders.filter((_, i, all) => i % 2 === 1 && all[i - 1].toLowerCase() === 'x-multi'), ['one', 'two'], 'repeated headers kept in order');
  t.true((await metricValue(sidecar.url, 'sidecar_proxy_requests_total')) >= 1);
  // Drain the pipeline with a matched request, then check nothing came from the unmatched one.
  await (await request(`${proxy}/users/u-9`)).body.dump();
  await waitFor(() => eventsFor((e) => e.subjectId === 'u-9').length === 2, { message: 'marker events' });
  t.is(vault.records.length, before + 2);
});

test.serial('a matched request whose body is over the limit is still forwarded, just not reported', async (t) => {
  const big = JSON.stringify({ email: 'x'.repeat(10_000) });
  const res = await request(`${proxy}/users/u-1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: big });
  t.is(res.statusCode, 200);
  await res.body.dump();
  t.is(upstream.seen.at(-1)!.body.toString(), big);
  await waitFor(async () => (await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total')) >= 1, { message: 'loss counted' });
  t.deepEqual(eventsFor((e) => e.eventType === 'UPDATE'), []);

  const small = await request(`${proxy}/users/u-1`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"email":"s@example.test"}' });
  await small.body.dump();
  const [update] = await waitFor(() => {
    const found = eventsFor((e) => e.eventType === 'UPDATE');
    return found.length === 1 ? found : undefined;
  }, { message: 'UPDATE event' });
  t.like(update, { subjectId: 'u-1', data: { attribute: 'email', value: 's@example.test' } });
});

test.serial('large unmatched bodies stream in both directions', async (t) => {
  // Upload: the upstream must see bytes before the client has finished sending.
  const body = new PassThrough();
  const expected = createHash('sha256');
  const uploading = request(`${proxy}/stream-up`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
  const first = Buffer.alloc(chunk, 7);
  body.write(first);
  expected.update(first);
  await waitFor(() => upstream.streamedIn > 0, { message: 'upstream receiving before the upload ended' });
  for (let sent = chunk; sent < bigSize; sent += chunk) {
    const part = Buffer.alloc(chunk, sent / chunk);
    expected.update(part);
    if (!body.write(part)) await new Promise((r) => body.once('drain', r));
  }
  body.end();
  const res = await uploading;
  t.is(res.statusCode, 200);
  t.deepEqual(await res.body.json(), { bytes: bigSize, sha256: expected.digest('hex') });

  // Download: the client must get bytes before the upstream has finished sending.
  const download = await request(`${proxy}/stream-down`);
  t.is(download.statusCode, 200);
  const received = createHash('sha256');
  const sent = createHash('sha256');
  let bytes = 0;
  for await (const part of download.body) {
    if (bytes === 0) upstream.releaseDownload();
    bytes += (part as Buffer).length;
    received.update(part as Buffer);
  }
  sent.update(Buffer.alloc(chunk, 1));
  for (let n = chunk; n < bigSize; n += chunk) sent.update(Buffer.alloc(chunk, n / chunk));
  t.is(bytes, bigSize);
  t.is(received.digest('hex'), sent.digest('hex'));
});

test.serial('a client hanging up mid-response stops the upstream transfer', async (t) => {
  upstream.downloadClosed = undefined;
  const controller = new AbortController();
  const download = await request(`${proxy}/stream-down`, { signal: controller.signal });
  for await (const _ of download.body) break;
  controller.abort();
  upstream.releaseDownload();
  await waitFor(() => upstream.downloadClosed === 'aborted', { message: 'upstream response closed early' });
  const after = await request(`${proxy}/users/u-1`);
  t.is(after.statusCode, 200, 'the proxy carries on');
  await after.body.dump();
});

test.serial('a client hanging up mid-response stops the upstream transfer once it is over the body limit', async (t) => {
  upstream.downloadClosed = undefined;
  const controller = new AbortController();
  const download = await request(`${proxy}/users/stream-down`, { signal: controller.signal });
  for await (const _ of download.body) break;
  controller.abort();
  upstream.releaseDownload();
  await waitFor(() => upstream.downloadClosed, { message: 'upstream response closed' });
  t.is(upstream.downloadClosed as string | undefined, 'aborted');
});

test.serial('a client hanging up while a STORE is answered still gets the STORE audited', async (t) => {
  upstream.slowAnswerClosed = undefined;
  const lostBefore = await lostEvents('response-body-unavailable');
  const controller = new AbortController();
  const res = await request(`${proxy}/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-answer-slowly': 'yes' },
    body: '{"email":"gone@example.test"}',
    signal: controller.signal,
  });
  t.is(res.statusCode, 201);
  for await (const _ of res.body) break;
  controller.abort();
  // The subject id is only in the part of the answer the client never got.
  const [store] = await waitFor(() => {
    const found = eventsFor((e) => e.eventType === 'STORE' && e.data?.value === 'gone@example.test');
    return found.length > 0 ? found : undefined;
  }, { message: 'the STORE event' });
  t.like(store, { subjectId: upstream.slowAnswerId, dataPointId: `crm/${upstream.slowAnswerId}/email`, data: { attribute: 'email' } });
  const upstreamAnswer = await waitFor(() => upstream.slowAnswerClosed, { message: 'the upstream answer closed' });
  t.is(upstreamAnswer, 'finished', 'the upstream answer was read to its end');
  t.is(await lostEvents('response-body-unavailable'), lostBefore);
});

test.serial('a client hanging up before the upstream answers does not disturb the proxy', async (t) => {
  for (let i = 0; i < 3; i++) {
    upstream.openSlow = undefined;
    const controller = new AbortController();
    const pending = request(`${proxy}/slow`, { signal: controller.signal }).catch(() => 'aborted');
    await waitFor(() => upstream.openSlow !== undefined, { message: 'upstream holding the request' });
    controller.abort();
    t.is(await pending, 'aborted');
    // Let the upstream answer to a client that is gone.
    await new Promise((r) => setTimeout(r, 50));
    upstream.openSlow!();
  }
  await new Promise((r) => setTimeout(r, 100));
  const after = await request(`${proxy}/users/u-1`);
  t.is(after.statusCode, 200, 'the proxy carries on');
  await after.body.dump();
});

async function lostEvents(reason: string, sidecarUrl = sidecar.url): Promise<number> {
  const text = await (await fetch(`${sidecarUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`sidecar_proxy_events_lost_total{reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test.serial('a path the upstream serves in another case or with a trailing slash is audited like the route', async (t) => {
  for (const path of ['/Users/u-case', '/users/u-slash/', '/USERS/u-both/']) {
    const res = await request(`${proxy}${path}`);
    t.is(res.statusCode, 200, path);
    await res.body.dump();
  }
  for (const subject of ['u-case', 'u-slash', 'u-both']) {
    await waitFor(() => eventsFor((e) => e.eventType === 'READ' && e.subjectId === subject).length === 2, { message: `READs of ${subject}` });
  }
  t.pass();
});

test.serial('events the traffic shows but that cannot be built are counted as lost and logged, never dropped silently', async (t) => {
  const before = vault.records.length;
  const undecodable = await lostEvents('undecodable-path');
  const invalid = await lostEvents('invalid-event');
  // The upstream serves each (a lenient decoder), so data was read: two events lost each time.
  for (const path of ['/users/bad%E0', '/users/%ZZ', '/users/a%ED%A0%80b']) {
    const res = await request(`${proxy}${path}`);
    t.is(res.statusCode, 200, path);
    await res.body.dump();
  }
  await waitFor(async () => (await lostEvents('undecodable-path')) === undecodable + 6, { message: 'undecodable paths counted' });
  for (const path of [`/users/${'L'.repeat(600)}`, '/users/a%00b']) {
    const res = await request(`${proxy}${path}`);
    t.is(res.statusCode, 200, path);
    await res.body.dump();
  }
  // An application user over the vault's 1,024 characters, from a client's header.
  const longUser = await request(`${proxy}/users/u-long-user`, { headers: { 'x-user': 'U'.repeat(1025) } });
  t.is(longUser.statusCode, 200);
  await longUser.body.dump();
  // An application user with a control character, which the vault refuses: it could forge a
  // line of the activity log or the console.
  const controlUser = await request(`${proxy}/users/u-control-user`, { headers: { 'x-user': 'clerk\tadmin' } });
  t.is(controlUser.statusCode, 200);
  await controlUser.body.dump();
  // A subject id over 512 characters; a NUL, which the vault could never store; the two users.
  await waitFor(async () => (await lostEvents('invalid-event')) === invalid + 8, { message: 'invalid events counted' });
  // Drain the pipeline with a matched request, then check that nothing else reached the vault.
  await (await request(`${proxy}/users/u-marker`)).body.dump();
  await waitFor(() => eventsFor((e) => e.subjectId === 'u-marker').length === 2, { message: 'marker events' });
  t.is(vault.records.length, before + 2, 'none of the lost events was sent on');
});

test('events lost to a body over the limit are logged, without the body', async (t) => {
  const prefix2 = uniquePrefix('proxy-body-lost');
  const { logger, lines } = capturingLogger();
  // Small enough that both the request below and the user the upstream answers with are over it.
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: upstreamUrl, routesFile, proxyBodyLimit: 40,
  }, { logger });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  // A 404: nothing was stored, so no event is due and none is lost.
  const missing = await request(`${other.proxyUrl}/users/missing`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'secret-address-of-nobody@example.test' }),
  });
  t.is(missing.statusCode, 404);
  await missing.body.dump();
  const put = await request(`${other.proxyUrl}/users/u-7`, {
    method: 'PUT', headers: { 'content-type': 'application/json', 'x-user': 'clerk-secret' }, body: JSON.stringify({ email: 'secret-address-of-someone@example.test' }),
  });
  t.is(put.statusCode, 200);
  await put.body.dump();
  const get = await request(`${other.proxyUrl}/users/u-7`);
  t.is(get.statusCode, 200);
  t.like(await get.body.json(), { email: 'u-7@example.test' });

  const lost = await waitFor(() => {
    const found = lines.filter((l) => l.msg.startsWith('events lost'));
    return found.length === 2 ? found : undefined;
  }, { message: 'two warnings' });
  t.is(lines.filter((l) => l.msg.startsWith('events lost')).length, 2);
  t.like(lost[0], { level: 40, component: 'proxy', route: 2, reason: 'request-body-unavailable', eventCount: 1 });
  t.like(lost[1], { level: 40, component: 'proxy', route: 1, reason: 'response-body-unavailable', eventCount: 2 });
  const text = JSON.stringify(lines);
  for (const secret of ['secret-address', 'clerk-secret', 'u-7@example.test', '+49 30']) t.false(text.includes(secret), secret);
});

test('JSON bodies are read in their declared charset; in one Node cannot decode, their events are logged as lost', async (t) => {
  const prefix2 = uniquePrefix('proxy-charset');
  const { logger, lines } = capturingLogger();
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: upstreamUrl, routesFile, proxyBodyLimit: 4096, batchMs: 10,
  }, { logger });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  const store = async (user: { id: string; email: string; phone: string }, encoding: BufferEncoding, requestCharset: string, answerCharset: string) => {
    const body = Buffer.from(JSON.stringify(user), encoding);
    // Tests outside test.serial send to the same upstream meanwhile, so its last request may be theirs.
    const tag = uniquePrefix('charset-request');
    const res = await request(`${other.proxyUrl}/users`, {
      method: 'POST', headers: { 'content-type': `application/json; charset=${requestCharset}`, 'x-body-encoding': encoding, 'x-answer-charset': answerCharset, 'x-test-tag': tag }, body,
    });
    t.is(res.statusCode, 201);
    const answer = Buffer.from(await res.body.arrayBuffer());
    t.deepEqual(answer, Buffer.from(JSON.stringify(user), encoding), 'the answer byte for byte');
    t.is(res.headers['content-type'], `application/json; charset=${answerCharset}`);
    t.deepEqual(upstream.seen.find((s) => s.headers['x-test-tag'] === tag)?.body, body, 'the request byte for byte');
  };
  const storesOf = (id: string) => waitFor(() => {
    const found = eventsFor((e) => e.eventType === 'STORE' && e.subjectId === id);
    return found.length === 2 ? found : undefined;
  }, { message: `two STORE events for ${id}` });

  for (const [label, encoding] of [['iso-8859-1', 'latin1'], ['latin1', 'latin1'], ['"windows-1252"', 'latin1'], ['UTF-16LE', 'utf16le']] as const) {
    const user = { id: `${uniquePrefix('jürgen')}-${label}`, email: 'jürgen@straße.example', phone: '+49 30 ½' };
    await store(user, encoding, label, label);
    const stores = await storesOf(user.id);
    t.deepEqual(stores.map((e) => e.data), [
      { attribute: 'email', value: user.email, regulations: ['GDPR'], reportOnly: true },
      { attribute: 'phone', value: user.phone, regulations: ['GDPR'], reportOnly: true },
    ], label);
  }

  // A charset Node has no decoder for: the traffic goes through untouched, the events are lost and said so.
  const lostRequest = await lostEvents('request-body-unavailable', other.url);
  const lostResponse = await lostEvents('response-body-unavailable', other.url);
  await store({ id: uniquePrefix('klingon-answer'), email: 'qapla@example.test', phone: '1' }, 'latin1', 'latin1', 'x-klingon');
  await store({ id: uniquePrefix('klingon-request'), email: 'qapla@example.test', phone: '2' }, 'latin1', 'x-klingon', 'latin1');
  // (An answer without its subject id also loses its events as subject-not-found, logged apart.)
  const lost = await waitFor(() => {
    const found = lines.filter((l) => String(l.reason).endsWith('-body-unavailable'));
    return found.length === 2 ? found : undefined;
  }, { message: 'two warnings' });
  t.like(lost[0], { level: 40, component: 'proxy', route: 0, reason: 'response-body-unavailable', eventCount: 2, contentType: 'application/json; charset=x-klingon' });
  t.is(lost[0].msg, "events lost: the response body's charset cannot be decoded");
  t.like(lost[1], { level: 40, component: 'proxy', route: 0, reason: 'request-body-unavailable', eventCount: 2, contentType: 'application/json; charset=x-klingon' });
  t.is(lost[1].msg, "events lost: the request body's charset cannot be decoded");
  t.is(await lostEvents('request-body-unavailable', other.url), lostRequest + 1);
  t.is(await lostEvents('response-body-unavailable', other.url), lostResponse + 1);
  t.false(JSON.stringify(lines).includes('qapla'), 'never the body');
  t.deepEqual(eventsFor((e) => e.subjectId?.includes('klingon') === true), [], 'no event from a body read in the wrong charset');
});

test('20 KiB of headers go through both ways', async (t) => {
  // A client that accepts them, as browsers do.
  const client = new Agent({ maxHeaderSize: 64 * 1024 });
  t.teardown(() => client.close());
  const answer = await request(`${proxy}/big-headers`, { dispatcher: client });
  t.is(answer.statusCode, 200);
  t.deepEqual(answer.headers['set-cookie'], bigCookies);
  t.is(await answer.body.text(), 'ok');

  const cookie = bigCookies.join('; ');
  const sent = await request(`${proxy}/reports/big-cookie`, { headers: { cookie }, dispatcher: client });
  t.is(sent.statusCode, 299);
  await sent.body.dump();
  const seen = upstream.seen.find((s) => s.url === '/reports/big-cookie');
  t.true(seen?.headers.cookie === cookie, 'the cookie reached the upstream');
});

/** Raw HTTP/1.1 on one connection, to see what the proxy does with it between requests. */
function rawConnection(url: string) {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  socket.setEncoding('latin1');
  socket.on('data', (text: string) => (received += text));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    closed,
    async get(path: string): Promise<string> {
      const before = received.length;
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
      return waitFor(() => {
        const answer = received.slice(before);
        const head = answer.indexOf('\r\n\r\n');
        if (head < 0) return undefined;
        const length = /\r\ncontent-length: (\d+)/i.exec(answer.slice(0, head));
        const complete = length ? answer.length >= head + 4 + Number(length[1]) : answer.endsWith('\r\n0\r\n\r\n');
        return complete ? answer : undefined;
      }, { message: `the answer to ${path}` });
    },
    destroy: () => socket.destroy(),
  };
}

test('idle client connections stay open for SIDECAR_PROXY_KEEP_ALIVE_MS, 65 s by default', async (t) => {
  // Clients (and load balancers that read it) are told how long an idle connection lasts.
  const usual = rawConnection(proxy);
  t.teardown(usual.destroy);
  t.regex(await usual.get('/users/u-ka'), /\r\nkeep-alive: timeout=65\r\n/i);

  const prefix2 = uniquePrefix('proxy-keep-alive');
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: upstreamUrl, routesFile, proxyKeepAliveMs: 2000,
  });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  const connection = rawConnection(other.proxyUrl!);
  t.teardown(connection.destroy);
  t.regex(await connection.get('/users/u-ka'), /^HTTP\/1\.1 200 [^]*\r\nkeep-alive: timeout=2\r\n/i);
  await new Promise((r) => setTimeout(r, 1000));
  t.regex(await connection.get('/users/u-ka'), /^HTTP\/1\.1 200 /, 'the idle connection was still open');
  // And then the proxy closes it.
  await connection.closed;
});

test('an upstream slower than SIDECAR_UPSTREAM_TIMEOUT_MS is a 504', async (t) => {
  const prefix2 = uniquePrefix('proxy-504');
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: upstreamUrl, routesFile, upstreamTimeoutMs: 300,
  });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  const res = await request(`${other.proxyUrl}/slow`);
  t.is(res.statusCode, 504);
  t.like(await res.body.json(), { statusCode: 504, error: 'Gateway Timeout' });
});

test('an unreachable upstream is a 502', async (t) => {
  const prefix2 = uniquePrefix('proxy-502');
  const other = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix: prefix2, upstream: `http://127.0.0.1:${await closedPort()}`, routesFile,
  });
  t.teardown(async () => {
    await other.close();
    await cleanupRedis(prefix2);
  });
  const res = await request(`${other.proxyUrl}/users/1`);
  t.is(res.statusCode, 502);
  t.like(await res.body.json(), { statusCode: 502, error: 'Bad Gateway' });
});
