/**
 * Input the vault refuses rather than store changed, answer with a 5xx, or echo back: bytes
 * that are not UTF-8, lone surrogates, nesting deep enough to overflow a recursive walker,
 * over-long ids and malformed paths. Also what the request log may say about a path.
 */
import test from 'ava';
import fc from 'fast-check';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { idDigester } from './request-log.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  const res = await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: { text: 'string', '[items]': { label: 'string' } } } });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
});
test.after.always(async () => v?.close());

const json = { 'content-type': 'application/json' };

/** Every route that takes a body, with a body it accepts; `$` marks where hostile text goes. */
const bodyRoutes: Array<{ method: string; url: string; template: string; check: string; headers?: Record<string, string> }> = [
  { method: 'POST', url: '/tags', template: '{"name":$}', check: '/tags/%s' },
  { method: 'POST', url: '/entitytypes', template: '{"key":"t_utf","name":$}', check: '' },
  { method: 'POST', url: '/entities', template: '{"id":$}', check: '/entities/%s' },
  { method: 'POST', url: '/datasubjects', template: '{"id":$}', check: '/datasubjects/%s' },
  { method: 'POST', url: '/regulations', template: '{"key":"REG_UTF","name":$}', check: '' },
  { method: 'POST', url: '/attributes', template: '{"key":"UTF_ATTR","name":$}', check: '' },
  { method: 'POST', url: '/applications', template: '{"name":$,"attributes":["*"]}', check: '' },
  { method: 'POST', url: '/rules', template: '{"key":"utf_rule","name":$,"constraint":{"type":"attribute","operator":"any","attributes":["NOTE"]},"action":{"type":"block"}}', check: '' },
  { method: 'POST', url: '/datasubjects/utf-subject/attributes', template: '{"data":[{"attribute":"NOTE","value":{"text":$}}]}', check: '' },
  { method: 'POST', url: '/auditlogs', template: '{"eventType":"STORE","subjectId":"utf-audit","applicationId":"crm","data":{"attribute":"NOTE","value":{"text":$}}}', check: '' },
  { method: 'POST', url: '/auditlogs/bulk', template: '[{"eventType":"STORE","subjectId":"utf-audit","applicationId":$,"data":{"attribute":"NOTE"}}]', check: '' },
  { method: 'POST', url: '/search', template: '{"query":{"entityId":$}}', check: '' },
];

async function unchanged(t: import('ava').ExecutionContext) {
  // Nothing that any of the refused bodies would have created exists.
  for (const url of ['/entitytypes/t_utf', '/regulations/REG_UTF', '/attributes/UTF_ATTR', '/rules/utf_rule', '/datasubjects/utf-subject', '/datasubjects/utf-audit']) {
    t.is((await v.request('GET', url)).status, 404, `${url} was not created`);
  }
}

test('bytes that are not UTF-8 are refused with 400 on every route that stores text, and nothing changes', async (t) => {
  for (const route of bodyRoutes) {
    const [before, after] = route.template.split('$');
    const payload = Buffer.concat([Buffer.from(before), Buffer.from([0x22, 0xff, 0xfe, 0x22]), Buffer.from(after)]);
    const res = await v.request(route.method, route.url, { payload, headers: { ...json, 'x-encryption-key': v.keys.publicKey } });
    t.is(res.status, 400, route.url);
    t.is(res.body.message, 'Body is not valid UTF-8', route.url);
  }
  await unchanged(t);
  t.is((await v.request('GET', `/tags/${encodeURIComponent('\uFFFD\uFFFD')}`)).status, 404, 'no tag of replacement characters');
});

test('lone surrogates are refused with 400, in values and in keys; a proper pair is fine', async (t) => {
  for (const hostile of ['"\\ud800"', '"a\\udc00b"', '"\\udbff\\ud800"']) {
    for (const route of bodyRoutes) {
      const res = await v.request(route.method, route.url, { payload: route.template.replace('$', hostile), headers: { ...json, 'x-encryption-key': v.keys.publicKey } });
      t.is(res.status, 400, `${route.url} ${hostile}`);
      t.is(res.body.message, 'Strings may not contain unpaired surrogates', route.url);
    }
  }
  const inKey = await v.request('POST', '/entitytypes', { payload: '{"key":"t_utf","\\ud800":1}', headers: json });
  t.is(inKey.body.message, 'Strings may not contain unpaired surrogates');
  await unchanged(t);
  const pair = await v.request('POST', '/tags', { payload: '{"name":"pile-\\ud83d\\udca9"}', headers: json });
  t.is(pair.status, 201);
  t.is(pair.body.data.name, 'pile-💩');
});

test('NUL characters are refused however deep they sit', async (t) => {
  const value = `${'{"items":[{"label":"x"}],"text":'.repeat(1)}"a\\u0000b"}`;
  const nested = `${'['.repeat(100)}"\\u0000"${']'.repeat(100)}`;
  for (const payload of [`{"data":[{"attribute":"NOTE","value":${value}}]}`, `{"data":[{"attribute":"NOTE","value":${nested}}]}`]) {
    const res = await v.request('POST', '/datasubjects/nul-subject/attributes', { payload, headers: { ...json, 'x-encryption-key': v.keys.publicKey } });
    t.is(res.status, 400);
    t.is(res.body.message, 'Strings may not contain NUL characters');
  }
});

test('nesting of any depth is a 400 before anything walks it, on every body route (fuzzed)', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...bodyRoutes), fc.integer({ min: 129, max: 200_000 }), fc.constantFrom('[', '{"a":'), async (route, depth, opener) => {
      const closer = opener === '[' ? ']' : '}';
      const deep = `${opener.repeat(depth)}1${closer.repeat(depth)}`;
      const res = await v.request(route.method, route.url, { payload: route.template.replace('$', deep), headers: { ...json, 'x-encryption-key': v.keys.publicKey } });
      t.is(res.body.message, 'Body is nested too deeply (at most 128 levels)', `${route.url} at depth ${depth}`);
      return res.status === 400;
    }),
    { numRuns: 60 },
  );
  // Up to the limit a body is parsed and gets the route's own answer: never a 5xx.
  for (const route of bodyRoutes) {
    for (const depth of [1, 30, 120]) {
      const deep = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
      const res = await v.request(route.method, route.url, { payload: route.template.replace('$', deep), headers: { ...json, 'x-encryption-key': v.keys.publicKey } });
      t.true(res.status >= 400 && res.status < 500, `${route.url} at depth ${depth}: ${res.status}`);
    }
  }
  // Brackets inside strings are text, not nesting.
  const description = `${'['.repeat(500)}"\\{{`;
  t.is((await v.request('POST', '/entitytypes', { body: { key: 'brackets', description } })).status, 201);
  t.is((await v.request('GET', '/entitytypes/brackets')).body.data.description, description);
});

test('ids of any length past the limit get the same 400, and no answer echoes the path', async (t) => {
  for (const length of [513, 1024, 1025, 4000, 12_000]) {
    const id = 'x'.repeat(length);
    for (const url of [`/entities/${id}`, `/datasubjects/${id}/attributes`, `/data/${id}`, `/tags/${id}`]) {
      const res = await v.request('GET', url);
      t.is(res.status, 400, `${url.slice(0, 20)} ${length}`);
      t.regex(res.body.message, /must NOT have more than \d+ characters$/);
      t.false(JSON.stringify(res.body).includes('xxxxxxxxxx'), 'the path is not echoed');
      t.deepEqual(Object.keys(res.body).sort(), ['error', 'message', 'statusCode']);
    }
  }
  const a = await v.request('GET', `/entities/${'x'.repeat(513)}`);
  const b = await v.request('GET', `/entities/${'x'.repeat(5000)}`);
  t.is(a.body.message, b.body.message);
  t.is(a.body.message, 'params/entityId must NOT have more than 512 characters');
  t.is((await v.request('GET', `/entities/${'x'.repeat(2000)}`, { apiKey: null })).status, 401, 'authentication still comes first');
});

test('a path that is not valid UTF-8 is a plain 400 that does not echo it', async (t) => {
  for (const url of ['/tags/%FF', '/entities/%ED%A0%80', '/datasubjects/%C3%28/attributes']) {
    const res = await v.request('GET', url);
    t.is(res.status, 400, url);
    t.deepEqual(res.body, { statusCode: 400, error: 'Bad Request', message: 'Path is not valid UTF-8' });
  }
});

test('the request log names the route template and a keyed digest of the ids, never the raw path or query', async (t) => {
  const id = 'ada.lovelace@example.org';
  t.is((await v.request('POST', '/datasubjects', { body: { id } })).status, 201);
  const logsBefore = v.logs.length;
  await v.request('GET', `/datasubjects/${encodeURIComponent(id)}`);
  await v.request('GET', `/activity?subjectId=${encodeURIComponent(id)}`);
  await v.request('GET', `/datasubjects/${encodeURIComponent(id)}/attributes/NO_SUCH`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  await v.request('GET', `/no/such/${encodeURIComponent(id)}`);
  const lines = v.logs.slice(logsBefore).join('');
  t.false(lines.includes('ada.lovelace'), 'the id appears in no line');
  t.false(lines.includes('example.org'));
  const completed = v.logs
    .slice(logsBefore)
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('request completed'))
    .map((l) => JSON.parse(l));
  const digest = idDigester(v.vault.indexKey)(id);
  const read = completed.find((l) => l.route === '/datasubjects/:entityId');
  t.truthy(read, 'the read was logged under its route template');
  t.is(read.params.entityId, digest);
  t.is(read.statusCode, 200);
  t.is(read.method, 'GET');
  t.is(completed.find((l) => l.route === '/activity')?.statusCode, 200);
  t.is(completed.find((l) => l.route === 'unmatched')?.statusCode, 404);
  t.true(completed.every((l) => l.url === undefined && l.req === undefined));
  t.true(completed.every((l) => /^[0-9a-f-]{36}$/.test(l.reqId)), 'each line names its request');
  t.is(new Set(completed.map((l) => l.reqId)).size, completed.length, 'and each request has its own id');
  t.not(idDigester(Buffer.alloc(32, 7))(id), digest, 'the digest depends on the vault’s key');
});
