import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { request } from 'undici';
import type { SidecarHandle } from '../index.js';
import type { StampedEvent } from '../ingest/event.js';
import { FakeVault } from '../testing/fake-vault.js';
import { capturingLogger, cleanupRedis, startTestSidecar, uniquePrefix, waitFor, type LogLine } from '../testing/helpers.js';

/**
 * List endpoints (listings, searches, exports) behind the reverse proxy: one event per item per
 * attribute the item shows, delivered through Redis to the fake vault. The listing route is
 * the one of the example routes file that the README documents.
 */

const exampleRoutes = fileURLToPath(new URL('./fixtures/routes.example.json', import.meta.url));

function user(i: number, tag: string): Record<string, unknown> {
  // Every third user has no phone on file: the listing shows none of it.
  return { id: `${tag}-${i}`, email: `${tag}-${i}@example.test`, ...(i % 3 === 2 ? {} : { phone: `+49 30 ${i}` }) };
}

let server: Server;
let upstreamUrl: string;
let vault: FakeVault;
/** In front with the example routes file. */
let listing: SidecarHandle;
/** In front with export routes, and a bound of 5 events per request. */
let exports: SidecarHandle;
let exportLog: LogLine[];
let dir: string;
const prefixes = [uniquePrefix('proxy-lists'), uniquePrefix('proxy-exports')];

test.before(async () => {
  server = createServer((req, res) => {
    req.resume();
    const url = new URL(req.url!, 'http://upstream');
    const count = Number(url.searchParams.get('count') ?? 3);
    const tag = url.searchParams.get('tag') ?? 'u';
    const users = Array.from({ length: count }, (_, i) => user(i, tag));
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === '/users') return json(Number(url.searchParams.get('status') ?? 200), { items: users, next: 'cursor-2' });
    if (url.pathname === '/export' || url.pathname.startsWith('/customers/')) return json(200, users);
    // A service whose answer is not the list the route expects.
    if (url.pathname === '/broken') return json(200, { items: users[0] });
    return json(404, { error: 'not here' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  vault = new FakeVault();
  await vault.start();

  dir = mkdtempSync(join(tmpdir(), 'proxy-lists-'));
  const exportRoutes = join(dir, 'routes.json');
  writeFileSync(exportRoutes, JSON.stringify({
    applicationId: 'crm',
    routes: [
      { method: 'GET', path: '/export', eventType: 'READ', items: { response: '' }, subjectId: { item: '/id' },
        attributes: { email: { item: '/email' } }, dataStoreName: 'crm-db' },
      { method: 'GET', path: '/customers/:id/contacts', eventType: 'READ', items: { response: '' }, subjectId: { param: 'id' },
        attributes: { email: { item: '/email' }, phone: { item: '/phone' } }, dataPointId: '{subjectId}/{attribute}/{item/id}' },
      { method: 'GET', path: '/broken', eventType: 'READ', items: { response: '/items' }, subjectId: { item: '/id' },
        attributes: { email: { item: '/email' } } },
    ],
  }));
  const common = { apiKey: vault.apiKey, vaultUrl: vault.url, upstream: upstreamUrl, batchMs: 10 };
  listing = await startTestSidecar({ ...common, prefix: prefixes[0], routesFile: exampleRoutes, proxyBodyLimit: 4096 });
  const captured = capturingLogger();
  exportLog = captured.lines;
  exports = await startTestSidecar({ ...common, prefix: prefixes[1], routesFile: exportRoutes, proxyMaxEvents: 5 }, { logger: captured.logger });
});

test.after.always(async () => {
  await listing?.close();
  await exports?.close();
  await new Promise((r) => server?.close(r));
  await vault?.stop();
  for (const prefix of prefixes) await cleanupRedis(prefix);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function eventsOf(tag: string): StampedEvent[] {
  return vault.records.filter((e) => e.subjectId?.startsWith(`${tag}-`));
}

async function lostEvents(sidecar: SidecarHandle, reason: string): Promise<number> {
  const text = await (await fetch(`${sidecar.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`sidecar_proxy_events_lost_total{reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

test('a listing yields a READ per user per attribute it shows, the answer unchanged', async (t) => {
  const tag = uniquePrefix('list');
  const res = await request(`${listing.proxyUrl}/users?tag=${tag}`, { headers: { 'x-user': 'clerk' } });
  t.is(res.statusCode, 200);
  t.deepEqual(await res.body.json(), { items: [user(0, tag), user(1, tag), user(2, tag)], next: 'cursor-2' });
  const reads = await waitFor(() => {
    const found = eventsOf(tag);
    return found.length >= 5 ? found : undefined;
  }, { message: 'five READ events' });
  t.deepEqual(reads.map((e) => [e.eventType, e.subjectId, e.dataPointId, e.applicationUser, e.data]), [
    ['READ', `${tag}-0`, `crm/${tag}-0/email`, 'clerk', { attribute: 'email' }],
    ['READ', `${tag}-0`, `crm/${tag}-0/phone`, 'clerk', { attribute: 'phone' }],
    ['READ', `${tag}-1`, `crm/${tag}-1/email`, 'clerk', { attribute: 'email' }],
    ['READ', `${tag}-1`, `crm/${tag}-1/phone`, 'clerk', { attribute: 'phone' }],
    // The third user shows no phone: no event for it.
    ['READ', `${tag}-2`, `crm/${tag}-2/email`, 'clerk', { attribute: 'email' }],
  ]);
  t.true(reads.every((e) => typeof e.eventId === 'string' && typeof e.timestamp === 'string'));
});

test('a listing answered other than 2xx yields nothing; one over the body limit is counted as lost', async (t) => {
  const failed = uniquePrefix('failed');
  const res = await request(`${listing.proxyUrl}/users?tag=${failed}&status=500`);
  t.is(res.statusCode, 500);
  await res.body.dump();
  // 100 users are well over the 4096 bytes this sidecar holds.
  const big = uniquePrefix('big');
  const unavailable = await lostEvents(listing, 'response-body-unavailable');
  const large = await request(`${listing.proxyUrl}/users?tag=${big}&count=100`);
  t.is(large.statusCode, 200);
  t.is(((await large.body.json()) as { items: unknown[] }).items.length, 100, 'forwarded all the same');
  await waitFor(async () => (await lostEvents(listing, 'response-body-unavailable')) === unavailable + 1, { message: 'the loss counted' });
  // Drain the pipeline with a listing that is reported, then check that nothing else came.
  const marker = uniquePrefix('marker');
  await (await request(`${listing.proxyUrl}/users?tag=${marker}&count=1`)).body.dump();
  await waitFor(() => eventsOf(marker).length === 2, { message: 'marker events' });
  t.deepEqual(eventsOf(failed), []);
  t.deepEqual(eventsOf(big), []);
});

test('an export over SIDECAR_PROXY_MAX_EVENTS delivers the bound and counts the rest as lost', async (t) => {
  const tag = uniquePrefix('export');
  const before = await lostEvents(exports, 'too-many-events');
  const res = await request(`${exports.proxyUrl}/export?tag=${tag}&count=8`);
  t.is(res.statusCode, 200);
  t.is(((await res.body.json()) as unknown[]).length, 8, 'the whole export reaches the client');
  const delivered = await waitFor(() => {
    const found = eventsOf(tag);
    return found.length >= 5 ? found : undefined;
  }, { message: 'five events' });
  t.deepEqual(delivered.map((e) => [e.dataPointId, e.dataStoreName, e.data]), [0, 1, 2, 3, 4].map((i) => (
    [`crm/${tag}-${i}/email`, 'crm-db', { attribute: 'email', value: `${tag}-${i}@example.test` }]
  )));
  await waitFor(async () => (await lostEvents(exports, 'too-many-events')) === before + 3, { message: 'three events lost' });
  const warning = exportLog.find((l) => l.reason === 'too-many-events');
  t.like(warning, { level: 40, component: 'proxy', route: 0, eventCount: 3, limit: 5, msg: 'events lost: the request shows more than SIDECAR_PROXY_MAX_EVENTS' });
  t.deepEqual(eventsOf(tag).length, 5, 'no more than the bound');
  t.false(JSON.stringify(exportLog).includes('@example.test'), 'never a value in the log');
});

test('an answer without the list where the route expects it is counted and logged', async (t) => {
  const tag = uniquePrefix('broken');
  const before = await lostEvents(exports, 'items-not-a-list');
  const res = await request(`${exports.proxyUrl}/broken?tag=${tag}`);
  t.is(res.statusCode, 200);
  await res.body.dump();
  await waitFor(async () => (await lostEvents(exports, 'items-not-a-list')) === before + 1, { message: 'the loss counted' });
  const warning = exportLog.find((l) => l.reason === 'items-not-a-list');
  t.like(warning, { level: 40, component: 'proxy', route: 2, items: 'response "/items"', found: 'object', eventsPerItem: 1 });
  t.deepEqual(eventsOf(tag), []);
});

test('a list route whose path does not decode counts the request once: how many items it showed is not known', async (t) => {
  const before = await lostEvents(exports, 'undecodable-path');
  const res = await request(`${exports.proxyUrl}/customers/bad%E0/contacts?count=4`);
  t.is(res.statusCode, 200);
  await res.body.dump();
  await waitFor(async () => (await lostEvents(exports, 'undecodable-path')) === before + 1, { message: 'the loss counted' });
  t.like(exportLog.find((l) => l.msg === 'events lost: the path does not decode'), { level: 40, route: 1, eventsPerItem: 2 });
  // And a path that decodes: an event per contact per attribute, told apart by the contact's id.
  const ok = await request(`${exports.proxyUrl}/customers/c-ok/contacts?count=2&tag=contact`);
  await ok.body.dump();
  const events = await waitFor(() => {
    const found = vault.records.filter((e) => e.subjectId === 'c-ok');
    return found.length >= 4 ? found : undefined;
  }, { message: 'four events' });
  t.deepEqual(events.map((e) => e.dataPointId), ['c-ok/email/contact-0', 'c-ok/phone/contact-0', 'c-ok/email/contact-1', 'c-ok/phone/contact-1']);
  t.is(await lostEvents(exports, 'undecodable-path'), before + 1);
});
