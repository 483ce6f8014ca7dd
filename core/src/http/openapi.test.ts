/**
 * The OpenAPI document against the routes the server really has and the answers they really
 * give: every route is documented, every body has a schema, every operation states its
 * security, and every status a route is seen to answer is one its operation lists.
 */
import test from 'ava';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
let doc: any;
let userKey: string;
test.before(async () => {
  v = await startTestVault({ env: { VAULT_BODY_LIMIT: '4096' } });
  doc = (await v.request('GET', '/openapi.json', { apiKey: null })).body;
  userKey = await v.createApplication(['EMAIL']);
});
test.after.always(async () => v?.close());

const PUBLIC = new Set(['/healthz', '/readyz', '/metrics']);
/** Served but not API operations: the document itself, its UI, and a documented alias of /search. */
// The API reference, its document, an alias, and the web console's pages and files (not API).
const UNDOCUMENTED = [/^\/docs/, /^\/openapi\.json$/, /^\/data\/search$/, /^\/console/];

interface Operation {
  method: string;
  path: string;
  op: any;
}

function operations(): Operation[] {
  return Object.entries<any>(doc.paths).flatMap(([path, ops]) => Object.entries<any>(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
}

/** Every route the router holds, from Fastify's own listing (`/a/:b`, with its methods). */
function registeredRoutes(): Array<{ path: string; methods: string[] }> {
  const stack: string[] = [];
  const routes: Array<{ path: string; methods: string[] }> = [];
  for (const line of v.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    stack.length = depth;
    stack.push(m[2]);
    if (m[3]) routes.push({ path: stack.join(''), methods: m[3].split(', ').filter((x) => x !== 'HEAD') });
  }
  return routes;
}

const toOpenApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');
const fill = (path: string) => path.replace(/\{\w+\}/g, 'no-such-id');
const declared = (op: any, status: number) => Object.keys(op.responses ?? {}).includes(String(status));

test('the document is valid OpenAPI', async (t) => {
  const result = await new Validator().validate(doc);
  t.true(result.valid, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
  t.is(doc.openapi, '3.0.3');
});

test('every route the server has is in the document, with its methods', (t) => {
  const routes = registeredRoutes();
  t.true(routes.length > 40, 'the route listing was read');
  for (const { path, methods } of routes) {
    if (UNDOCUMENTED.some((re) => re.test(path))) continue;
    for (const method of methods) t.truthy(doc.paths[toOpenApiPath(path)]?.[method.toLowerCase()], `${method} ${path} is documented`);
  }
});

/** Every operation the interface names, as it writes them. */
const INTERFACE = [
  'POST /entities', 'GET /entities', 'GET /entities/{entityId}',
  'POST /datasubjects', 'GET /datasubjects', 'GET /datasubjects/{entityId}',
  'POST /entities/{entityId}/attributes', 'POST /datasubjects/{entityId}/attributes',
  'GET /entities/{entityId}/attributes/{attributeKey}', 'GET /datasubjects/{entityId}/attributes/{attributeKey}',
  'GET /entities/{entityId}/attribute/{attributeKey}', 'GET /datasubjects/{entityId}/attribute/{attributeKey}',
  'GET /entities/{entityId}/attributes', 'GET /datasubjects/{entityId}/attributes',
  'DELETE /entities/{entityId}/attributes/{attributeKey}', 'DELETE /datasubjects/{entityId}/attributes/{attributeKey}',
  'DELETE /datasubjects/{entityId}/data', 'DELETE /entities/{entityId}/data',
  'GET /data/{dataPointId}', 'DELETE /data/{dataPointId}', 'POST /search',
  'POST /regulations', 'GET /regulations', 'GET /regulations/{regulationKey}', 'DELETE /regulations/{regulationKey}',
  'POST /tags', 'GET /tags', 'GET /tags/{tagName}', 'DELETE /tags/{tagName}',
  'POST /entitytypes', 'GET /entitytypes', 'GET /entitytypes/{typeKey}', 'DELETE /entitytypes/{typeKey}',
  'POST /rules', 'GET /rules', 'GET /rules/{ruleName}', 'DELETE /rules/{ruleName}',
  'POST /auditlogs', 'POST /auditlogs/bulk',
];

test('every operation of the interface is in the document, under the interface\'s own path and parameter names', (t) => {
  for (const operation of INTERFACE) {
    const [method, path] = operation.split(' ');
    t.truthy(doc.paths[path]?.[method.toLowerCase()], `${operation} is documented`);
  }
});

/** The statuses the interface names for its operations (the datasubjects forms add their 400s). */
const INTERFACE_STATUSES: Record<string, number[]> = {
  'GET /entities/{entityId}': [200, 404],
  'GET /datasubjects/{entityId}': [200, 400, 404],
  'POST /entities/{entityId}/attributes': [200, 400, 403, 409, 413, 422],
  'POST /datasubjects/{entityId}/attributes': [200, 400, 403, 409, 413, 422],
  'GET /entities/{entityId}/attributes/{attributeKey}': [200, 400, 403, 404],
  'GET /datasubjects/{entityId}/attributes/{attributeKey}': [200, 400, 403, 404],
  'GET /datasubjects/{entityId}/attributes': [200, 400],
  'DELETE /entities/{entityId}/attributes/{attributeKey}': [200, 403, 404],
  'DELETE /datasubjects/{entityId}/attributes/{attributeKey}': [200, 400, 403, 404],
  'DELETE /datasubjects/{entityId}/data': [200, 400, 404],
  'GET /data/{dataPointId}': [200, 400, 403, 404],
  'DELETE /data/{dataPointId}': [200, 403, 404],
  'POST /search': [200, 404],
  'POST /regulations': [402],
  'GET /regulations/{regulationKey}': [200, 404],
  'DELETE /regulations/{regulationKey}': [200, 404],
  'POST /tags': [201],
  'GET /tags/{tagName}': [200, 404],
  'DELETE /tags/{tagName}': [200, 404, 409],
  'GET /entitytypes/{typeKey}': [200, 404],
  'DELETE /entitytypes/{typeKey}': [200, 404, 405, 409],
  'POST /rules': [400, 402, 422],
  'GET /rules/{ruleName}': [200, 404],
  'DELETE /rules/{ruleName}': [200, 404],
  'POST /auditlogs': [200, 400, 403, 409, 422],
  'POST /auditlogs/bulk': [200, 400, 409],
};

test('every status the interface names for an operation is one the document lists for it', (t) => {
  for (const [operation, statuses] of Object.entries(INTERFACE_STATUSES)) {
    const [method, path] = operation.split(' ');
    const op = doc.paths[path]?.[method.toLowerCase()];
    for (const status of statuses) t.true(op !== undefined && declared(op, status), `${operation} lists ${status}`);
  }
});

test('every operation states its security: health, readiness and metrics need no key, everything else a bearer key', (t) => {
  t.deepEqual(doc.security, [{ apiKey: [] }]);
  t.deepEqual(doc.components.securitySchemes.apiKey, { type: 'http', scheme: 'bearer' });
  for (const { method, path, op } of operations()) {
    if (PUBLIC.has(path)) {
      t.deepEqual(op.security, [], `${method} ${path} is public`);
      t.false(declared(op, 401), `${method} ${path} never answers 401`);
    } else {
      t.is(op.security, undefined, `${method} ${path} inherits the bearer key`);
      t.true(declared(op, 401), `${method} ${path} lists 401`);
      t.true(declared(op, 429), `${method} ${path} lists 429`);
    }
  }
});

test('every operation that takes a body has a JSON request schema and lists 400, 413 and 415', (t) => {
  let withBody = 0;
  for (const { method, path, op } of operations()) {
    if (method !== 'POST' && method !== 'PATCH') {
      t.is(op.requestBody, undefined, `${method} ${path} takes no body`);
      continue;
    }
    withBody++;
    const schema = op.requestBody?.content?.['application/json']?.schema;
    t.truthy(schema, `${method} ${path} has a request schema`);
    t.truthy(schema.type ?? schema.oneOf ?? schema.anyOf, `${method} ${path}: the schema says what the body is`);
    for (const status of [400, 413, 415]) t.true(declared(op, status), `${method} ${path} lists ${status}`);
  }
  t.true(withBody >= 12);
  const rule = doc.paths['/rules'].post.requestBody.content['application/json'].schema;
  t.deepEqual(rule.required, ['key', 'constraint', 'action']);
  t.true(rule.properties.constraint.oneOf.length >= 10, 'every constraint type is described');
  t.true(rule.properties.action.oneOf.length >= 8, 'every action type is described');
});

test('a list constraint\'s operator is required in the document, as the vault requires it', async (t) => {
  const rule = doc.paths['/rules'].post.requestBody.content['application/json'].schema;
  const lists = rule.properties.constraint.oneOf.filter((variant: any) => variant.properties.operator);
  t.true(lists.length >= 5, 'attribute, tag, regulation, geolocation and application constraints take an operator');
  for (const variant of lists) t.true(variant.required.includes('operator'), `${variant.properties.type.enum.join('/')} requires operator`);
  // A client generated from the document, leaving it out, is refused.
  const res = await v.request('POST', '/rules', { body: { key: 'no-operator', constraint: { type: 'tag', tags: ['x'] }, action: { type: 'alert' } } });
  t.is(res.status, 400);
  t.is(res.body.message, 'Tag constraint operator must be specified as a string');
});

test('every operation with path or query parameters lists 400', (t) => {
  for (const { method, path, op } of operations()) {
    if ((op.parameters ?? []).some((p: any) => p.in === 'path' || p.in === 'query')) t.true(declared(op, 400), `${method} ${path}`);
  }
});

test('every status an operation is seen to answer is one it lists', async (t) => {
  const seen: string[] = [];
  const undeclared = new Set<string>();
  const check = (method: string, path: string, op: any, status: number, how: string) => {
    seen.push(`${method} ${path} ${status}`);
    if (!declared(op, status)) undeclared.add(`${method} ${path} answered ${status} ${how}`);
  };
  for (const { method, path, op } of operations()) {
    const url = fill(path);
    const keyHeaders = { 'x-encryption-key': v.keys.publicKey, 'x-decryption-key': v.keys.privateKey };
    const noKey = await v.request(method, url, { apiKey: null });
    check(method, path, op, noKey.status, 'without a key');
    for (const apiKey of [userKey, v.adminKey]) {
      const who = apiKey === userKey ? 'to a non-admin' : 'to an admin';
      const plain = await v.request(method, url, { apiKey, headers: keyHeaders, ...(method === 'POST' ? { body: {} } : {}) });
      check(method, path, op, plain.status, `${who} with an empty body`);
      if (method !== 'POST') continue;
      for (const [payload, type, how] of [
        ['key=x', 'text/plain', 'with a text body'],
        ['{"a":', 'application/json', 'with broken JSON'],
        [JSON.stringify({ filler: 'x'.repeat(5000) }), 'application/json', 'with a body over the limit'],
        ['[]', 'application/json', 'with a list'],
      ]) {
        const res = await v.request(method, url, { apiKey, payload, headers: { ...keyHeaders, 'content-type': type } });
        check(method, path, op, res.status, `${who} ${how}`);
      }
    }
  }
  t.deepEqual([...undeclared], [], 'statuses answered but not listed');
  for (const status of [401, 400, 403, 404, 413, 415]) t.true(seen.some((s) => s.endsWith(` ${status}`)), `some operation answered ${status}`);
});
