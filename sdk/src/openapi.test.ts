/**
 * Parity between the vault's OpenAPI document and the SDK: every operation the vault serves
 * is sent by some SDK method, and no SDK method sends a request the document does not list.
 * A new endpoint without an SDK method, or a method on a path the vault does not have, fails here.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { VaultClient } from './client.js';
import { generateKeyPair } from './keys.js';
import { startSdkVault } from './testing/vault.js';

interface Operation {
  method: string;
  path: string;
  pattern: RegExp;
}

/** Spellings the vault serves for compatibility whose twin the SDK sends: listed, with the twin, so the list stays true. */
const ALIASES: Record<string, string> = {
  'GET /entities/{entityId}/attribute/{attributeKey}': 'GET /entities/{entityId}/attributes/{attributeKey}',
  'GET /datasubjects/{entityId}/attribute/{attributeKey}': 'GET /datasubjects/{entityId}/attributes/{attributeKey}',
};

let operations: Operation[];
test.before(async () => {
  const v = await startSdkVault();
  try {
    const doc = (await (await fetch(`${v.proc.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((method) => ({
        method: method.toUpperCase(),
        path,
        pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
      })),
    );
  } finally {
    await v.dispose();
  }
});

/** Every method of every group of endpoints (found by reflection, so a new one is included), and the client's own. */
function everyCall(c: VaultClient): Array<[string, () => unknown]> {
  const calls: Array<[string, () => unknown]> = [];
  for (const [group, api] of Object.entries(c)) {
    for (let proto = Object.getPrototypeOf(api); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        if (name === 'constructor' || typeof api[name] !== 'function') continue;
        calls.push([`${group}.${name}`, () => (name === 'logBulk' ? api[name]([{ eventType: 'READ' }]) : api[name]('x', 'y', {}))]);
      }
    }
  }
  calls.push(['search', () => c.search({ query: {} })]);
  calls.push(['searchAll', () => c.searchAll({})]);
  for (const name of ['health', 'ready', 'stats', 'metrics'] as const) calls.push([name, () => c[name]()]);
  return calls;
}

/** What each SDK method sends, from a server that answers every request with an empty page. */
async function sentBy(t: { teardown(fn: () => unknown): void }): Promise<Map<string, string[]>> {
  let current = '';
  const sent = new Map<string, string[]>();
  const server = createServer((req, res) => {
    req.resume();
    const request = `${req.method} ${req.url!.split('?')[0]}`;
    sent.set(request, [...(sent.get(request) ?? []), current]);
    const body = req.url === '/activity/head' ? { data: { sequence: 1, hash: '0'.repeat(64) } } : { data: [] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  const keys = await generateKeyPair({ modulusLength: 2048 });
  const c = new VaultClient({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'parity-test-key-000000', ...{ encryptionKey: keys.publicKey, decryptionKey: keys.privateKey } });
  t.teardown(() => c.close());
  for (const [name, call] of everyCall(c)) {
    current = name;
    const result = call();
    // The walks send nothing until iterated; their first page is enough.
    await Promise.resolve((result as AsyncGenerator<unknown>)?.next ? (result as AsyncGenerator<unknown>).next() : result).catch(() => undefined);
  }
  return sent;
}

const named = (op: Operation) => `${op.method} ${op.path}`;

test('every operation of openapi.json has an SDK method', async (t) => {
  const sent = [...(await sentBy(t)).keys()];
  const missing = operations.filter((op) => !(named(op) in ALIASES) && !sent.some((request) => matches(op, request)));
  t.deepEqual(missing.map(named), [], 'operations no SDK method sends');
  t.true(operations.length > 50, `${operations.length} operations`);
});

test('every request an SDK method sends is an operation of openapi.json', async (t) => {
  const sent = await sentBy(t);
  const unknown = [...sent].filter(([request]) => !operations.some((op) => matches(op, request))).map(([request, by]) => `${request} (${by.join(', ')})`);
  t.deepEqual(unknown, []);
});

test('each alias the SDK leaves out is in openapi.json, as is the twin the SDK sends', (t) => {
  const listed = new Set(operations.map(named));
  for (const [alias, twin] of Object.entries(ALIASES)) {
    t.true(listed.has(alias), alias);
    t.true(listed.has(twin), twin);
  }
});

function matches(op: Operation, request: string): boolean {
  const [method, path] = request.split(' ');
  return op.method === method && op.pattern.test(path);
}
