/**
 * The OpenAPI document as a third-party client author uses it: fetched from the running vault,
 * then a whole session through every operation, successes and the interface's error answers,
 * each answer held to what the document declares for its status (see `Contract`), and each
 * resource checked for the members the interface shows.
 */
import test, { type ExecutionContext } from 'ava';
import type { AddressInfo } from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestVault, type RequestOptions, type Response, type TestVault } from '../testing/harness.js';
import { Contract } from '../testing/openapi-contract.js';

const contract = new Contract();
let v: TestVault;
let doc: any;
let user: { id: string; key: string };
const points: Record<string, string> = {};

test.before(async () => {
  v = await startTestVault({ instrument: contract.instrument });
  // As a client would: over HTTP, without a key.
  await v.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = v.app.server.address() as AddressInfo;
  const res = await fetch(`http://127.0.0.1:${port}/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  doc = await res.json();
  contract.use(doc);
});
test.after.always(async () => v?.close());

type Call = RequestOptions & { params?: Record<string, string> };

/** One request to a documented operation: its status, its message, and the document's word on it. */
async function call(t: ExecutionContext, method: string, template: string, opts: Call, status: number, message?: string | RegExp): Promise<Response> {
  const url = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(opts.params?.[name] ?? ''));
  const res = await v.request(method, url, opts);
  const what = `${method} ${url}`;
  t.is(res.status, status, `${what}: ${JSON.stringify(res.body).slice(0, 300)}`);
  if (typeof message === 'string') t.is(res.body?.message, message, what);
  else if (message) t.regex(String(res.body?.message), message, what);
  t.deepEqual(contract.check(method, template, res), [], `${what} answered ${res.status} as the document says`);
  return res;
}

/** The members the interface shows for a resource are all there (a response schema could drop them). */
function shows(t: ExecutionContext, item: Record<string, unknown>, members: string[], what: string): void {
  for (const m of members) t.true(item !== null && typeof item === 'object' && m in item, `${what} shows ${m}: ${JSON.stringify(item)}`);
}

const ENTITY = ['id', 'type', 'tags', 'legalHold', 'created', 'updated'];
const POINT = ['attribute', 'dataPointId', 'entityId', 'subjectId', 'createdDate', 'modifiedDate', 'regulations', 'sensitivity', 'reportOnly', 'structureRootId'];
const REGULATION = ['key', 'name', 'url', 'createdDate', 'modifiedDate'];
const TAG = ['name', 'createdDate', 'modifiedDate'];
const ENTITY_TYPE = ['key', 'name', 'description'];
const RULE = ['key', 'name', 'type', 'constraint', 'action', 'executionOrder', 'createdDate', 'modifiedDate'];
const SUMMARY = ['eventType', 'dataPointId', 'subjectId', 'attribute'];
const enc = () => ({ 'x-encryption-key': v.keys.publicKey });
const dec = () => ({ 'x-decryption-key': v.keys.privateKey });
const BAD_KEY = 'Encoded key provided is invalid';

test.serial('the served document is valid OpenAPI 3', async (t) => {
  const result = await new Validator().validate(doc);
  t.true(result.valid, JSON.stringify(result.errors, null, 1)?.slice(0, 2000));
  t.regex(doc.openapi, /^3\./);
});

test.serial('operations, health and the common refusals', async (t) => {
  await call(t, 'GET', '/healthz', { apiKey: null }, 200);
  await call(t, 'GET', '/readyz', { apiKey: null }, 200);
  await call(t, 'GET', '/metrics', { apiKey: null }, 200);
  await call(t, 'GET', '/entities', { apiKey: null }, 401, 'Unauthorized');
  await call(t, 'POST', '/entities', { payload: 'id=x', headers: { 'content-type': 'text/plain' } }, 415);
  await call(t, 'POST', '/entities', { payload: '{"id":', headers: { 'content-type': 'application/json' } }, 400);
});

test.serial('applications', async (t) => {
  const made = await call(t, 'POST', '/applications', { body: { name: 'crm', attributes: ['EMAIL'], admin: false } }, 201);
  shows(t, made.body.data, ['id', 'name', 'attributes', 'admin', 'apiKey'], 'a new application');
  user = { id: made.body.data.id, key: made.body.data.apiKey };
  await call(t, 'GET', '/applications', {}, 200);
  await call(t, 'GET', '/applications', { apiKey: user.key }, 403);
  await call(t, 'GET', '/applications/{id}', { params: { id: user.id } }, 200);
  await call(t, 'GET', '/applications/{id}', { params: { id: 'no-such-app' } }, 404);
  await call(t, 'GET', '/applications/me', { apiKey: user.key }, 200);
  const patched = await call(t, 'PATCH', '/applications/{id}', { params: { id: user.id }, body: { attributes: ['EMAIL', 'NUMBER'] } }, 200);
  t.deepEqual(patched.body.data.attributes, ['EMAIL', 'NUMBER']);
  const rolled = await call(t, 'POST', '/applications/{id}/key', { params: { id: user.id }, body: {} }, 200);
  user.key = rolled.body.data.apiKey;
  const temp = await call(t, 'POST', '/applications', { body: { name: 'temp' } }, 201);
  await call(t, 'DELETE', '/applications/{id}', { params: { id: temp.body.data.id } }, 200);
  await call(t, 'DELETE', '/applications/{id}', { params: { id: temp.body.data.id } }, 404);
});

test.serial('entity types, regulations, tags and attribute definitions', async (t) => {
  const type = await call(t, 'POST', '/entitytypes', { body: { key: 'customer', name: 'Customer', description: 'A business customer' } }, 201);
  shows(t, type.body.data, ENTITY_TYPE, 'an entity type');
  await call(t, 'POST', '/entitytypes', { body: { key: 'device', name: 'Device', description: 'A thing' } }, 201);
  await call(t, 'POST', '/entitytypes', { apiKey: user.key, body: { key: 'other' } }, 403);
  await call(t, 'GET', '/entitytypes', {}, 200);
  shows(t, (await call(t, 'GET', '/entitytypes/{typeKey}', { params: { typeKey: 'customer' } }, 200)).body.data, ENTITY_TYPE, 'an entity type');
  await call(t, 'GET', '/entitytypes/{typeKey}', { params: { typeKey: 'nope' } }, 404, 'No such entity type');

  await call(t, 'POST', '/regulations', { body: { key: 'SOX', name: 'Sarbanes-Oxley', url: 'https://example.com/sox' } }, 201);
  const updated = await call(t, 'POST', '/regulations', { body: { key: 'SOX', name: 'Sarbanes-Oxley Act', url: 'https://example.com/sox' } }, 200);
  t.is(typeof updated.body.data, 'string');
  const regs = await call(t, 'GET', '/regulations', {}, 200);
  shows(t, regs.body.data.find((r: any) => r.key === 'SOX'), REGULATION, 'a listed regulation');
  shows(t, (await call(t, 'GET', '/regulations/{regulationKey}', { params: { regulationKey: 'SOX' } }, 200)).body.data, REGULATION, 'a regulation');
  await call(t, 'GET', '/regulations/{regulationKey}', { params: { regulationKey: 'NOPE' } }, 404, 'No such regulation');
  await call(t, 'DELETE', '/regulations/{regulationKey}', { params: { regulationKey: 'NOPE' } }, 404, 'Regulation not found');

  const tag = await call(t, 'POST', '/tags', { body: { name: 'vip' } }, 201);
  shows(t, tag.body.data, TAG, 'a tag');
  await call(t, 'GET', '/tags', {}, 200);
  shows(t, (await call(t, 'GET', '/tags/{tagName}', { params: { tagName: 'vip' } }, 200)).body.data, TAG, 'a tag');
  await call(t, 'GET', '/tags/{tagName}', { params: { tagName: 'nope' } }, 404, 'No such tag');
  await call(t, 'DELETE', '/tags/{tagName}', { params: { tagName: 'nope' } }, 404, 'No such tag');

  for (const body of [
    { key: 'EMAIL', schema: 'string', indexed: true, regulations: ['GDPR'], tags: ['contact'] },
    { key: 'NUMBER', schema: 'int' },
    { key: 'PHONE', repeatable: true, indexed: true },
    { key: 'ADDRESS', schema: { street: 'string', city: 'string' } },
    { key: 'ACCOUNT', entityTypes: ['customer'] },
    { key: 'SPARE' },
  ]) {
    await call(t, 'POST', '/attributes', { body }, 201);
  }
  await call(t, 'GET', '/attributes', {}, 200);
  await call(t, 'GET', '/attributes/{attributeKey}', { params: { attributeKey: 'ADDRESS' } }, 200);
  await call(t, 'GET', '/attributes/{attributeKey}', { params: { attributeKey: 'NOPE' } }, 404, 'No such attribute');
  await call(t, 'DELETE', '/attributes/{attributeKey}', { params: { attributeKey: 'SPARE' } }, 200);
  await call(t, 'DELETE', '/attributes/{attributeKey}', { params: { attributeKey: 'SPARE' } }, 404, 'Attribute not found');
});

test.serial('rules', async (t) => {
  const alert = { type: 'alert', alertLevel: 'NORMAL', message: 'Email stored' };
  const watch = { key: 'watch-email', name: 'Watch email', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL'] }, action: alert };
  await call(t, 'POST', '/rules', { body: watch }, 201, undefined);
  await call(t, 'POST', '/rules', { body: watch }, 200);
  const vip = { key: 'vip-watch', type: 'data', constraint: { type: 'tag', operator: 'any', tags: ['vip'] }, action: { ...alert, message: 'VIP data' } };
  await call(t, 'POST', '/rules', { body: vip }, 201);
  await call(t, 'POST', '/rules', { body: { key: 'no-deletes', type: 'activity', constraint: { type: 'eventType', eventTypes: ['DELETE'] }, action: { type: 'block' } } }, 201);
  await call(t, 'POST', '/rules', { body: { name: 'x', constraint: watch.constraint, action: alert } }, 400, 'Rule key is required');
  await call(t, 'POST', '/rules', { payload: '{"key":', headers: { 'content-type': 'application/json' } }, 400, 'Cannot parse JSON of rule');
  await call(t, 'POST', '/rules', { body: { key: 'r', constraint: 'x', action: alert } }, 400, 'Rule constraint must be specified as an object');
  await call(t, 'POST', '/rules', { body: { key: 'r', constraint: { type: 'bogus' }, action: alert } }, 400, 'Unrecognized constraint type');
  await call(t, 'POST', '/rules', { body: { key: 'r', constraint: { type: 'attribute', operator: 'any', attributes: ['NOPE'] }, action: alert } }, 422, 'No such attribute');
  await call(t, 'POST', '/rules', { body: { key: 'r', constraint: { type: 'regulation', operator: 'any', regulations: ['NOPE'] }, action: alert } }, 422, 'No such regulation');
  const list = await call(t, 'GET', '/rules', {}, 200);
  shows(t, list.body.data[0], RULE, 'a listed rule');
  const one = await call(t, 'GET', '/rules/{ruleName}', { params: { ruleName: 'watch-email' } }, 200);
  shows(t, one.body.data, RULE, 'a rule');
  t.deepEqual(one.body.data.constraint, watch.constraint, 'a rule is returned as sent');
  await call(t, 'GET', '/rules/{ruleName}', { params: { ruleName: 'nope' } }, 404, 'Rule not found');
  await call(t, 'DELETE', '/tags/{tagName}', { params: { tagName: 'vip' } }, 409, 'Cannot delete tag, because it is referenced by rule');
});

test.serial('entities and data subjects', async (t) => {
  const alice = await call(t, 'POST', '/datasubjects', { body: { id: 'alice', tags: ['vip'] } }, 201);
  shows(t, alice.body.data, ENTITY, 'a new data subject');
  await call(t, 'POST', '/datasubjects', { body: { id: 'alice', tags: ['vip'] } }, 200);
  await call(t, 'POST', '/entities', { body: { id: 'acme', type: 'customer' } }, 201);
  await call(t, 'POST', '/entities', { body: { id: 'gadget', type: 'device' } }, 201);
  const all = await call(t, 'GET', '/entities', {}, 200);
  t.deepEqual(all.body.data.map((e: any) => e.id).sort(), ['acme', 'alice', 'gadget']);
  shows(t, (await call(t, 'GET', '/entities/{entityId}', { params: { entityId: 'acme' } }, 200)).body.data, ENTITY, 'an entity');
  await call(t, 'GET', '/entities/{entityId}', { params: { entityId: 'nobody' } }, 404, 'Not found');
  const subjects = await call(t, 'GET', '/datasubjects', {}, 200);
  t.deepEqual(subjects.body.data.map((e: any) => e.type), ['datasubject']);
  await call(t, 'GET', '/datasubjects/{entityId}', { params: { entityId: 'alice' } }, 200);
  await call(t, 'GET', '/datasubjects/{entityId}', { params: { entityId: 'acme' } }, 400, 'Entity is not a data subject');
});

test.serial('storing attribute values', async (t) => {
  const data = [
    { attribute: 'EMAIL', value: 'alice@example.com', regulations: ['SOX'], sensitivity: 'PERSONAL' },
    { attribute: 'ADDRESS', value: { street: '1 Main St', city: 'Springfield' } },
    { attribute: 'PHONE', value: '555-0100' },
    { attribute: 'NUMBER', value: 42 },
  ];
  const stored = await call(t, 'POST', '/datasubjects/{entityId}/attributes', { params: { entityId: 'alice' }, headers: enc(), body: { data } }, 200);
  for (const point of stored.body.data) {
    shows(t, point, [...POINT, 'value'], 'a stored data point');
    points[point.attribute] ??= point.dataPointId;
  }
  t.is(stored.body.data.find((p: any) => p.attribute === 'EMAIL').sensitivity, 'PERSONAL');
  await call(t, 'POST', '/entities/{entityId}/attributes', { params: { entityId: 'bob' }, headers: enc(), body: { data: [{ attribute: 'PHONE', value: '555-0101' }] } }, 200);
  const account = { data: [{ attribute: 'ACCOUNT', value: 'A-1' }] };
  await call(t, 'POST', '/entities/{entityId}/attributes', { params: { entityId: 'acme' }, headers: enc(), body: { ...account, entityType: 'customer' } }, 200);

  const store = (entityId: string, body: object, status: number, message: string | RegExp, opts: Call = {}) =>
    call(t, 'POST', '/entities/{entityId}/attributes', { params: { entityId }, headers: enc(), body, ...opts }, status, message);
  await store('alice', { data: [data[0]] }, 400, BAD_KEY, { headers: { 'x-encryption-key': 'bm90IGEga2V5' } });
  await store('alice', { data: [{ attribute: 'NOPE', value: 'x' }] }, 400, 'No such attribute');
  await store('alice', { data: [{ attribute: 'PHONE', value: 'x', regulations: ['NOPE'] }] }, 400, 'No such regulation');
  await store('acme', { ...account, entityType: 'datasubject' }, 400, 'Entity is of type customer, which does not match the provided entity type');
  await store('alice', account, 400, 'Attribute is not applicable to entity type');
  await store('alice', { data: [{ attribute: 'ADDRESS', value: { street: 'x', zip: '1' } }] }, 400, /^Unknown sub-attribute \S*zip$/);
  await store('alice', { data: [data[0], data[0]] }, 409, 'Received multiple values for nonrepeatable attribute');
  await store('alice', { data: [{ attribute: 'EMAIL', value: 'x'.repeat(1_048_577) }] }, 413, 'Datapoint values may not exceed 1 MB in size');
  await store('alice', { data: [{ attribute: 'NUMBER', value: 'many' }] }, 422, /^Expected \S+ for value of attribute NUMBER$/);
  await store('alice', { data: [{ attribute: 'PHONE', value: 'x' }] }, 403, 'Forbidden access to attribute', { apiKey: user.key });
  await call(t, 'POST', '/entities', { body: { id: 'alice', legalHold: true } }, 200);
  await store('alice', { data: [data[0]] }, 403, 'Cannot overwrite attribute for data subject, as the data subject is under a legal hold');
  t.false((await call(t, 'POST', '/entities', { body: { id: 'alice', legalHold: false } }, 200)).body.data.legalHold);
});

test.serial('reading values', async (t) => {
  for (const form of ['entities', 'datasubjects']) {
    for (const spelling of ['attributes', 'attribute']) {
      const res = await call(t, 'GET', `/${form}/{entityId}/${spelling}/{attributeKey}`, { params: { entityId: 'alice', attributeKey: 'ADDRESS' }, headers: dec() }, 200);
      shows(t, res.body.data[0], [...POINT, 'value'], 'a read data point');
      t.deepEqual(res.body.data[0].value, { street: '1 Main St', city: 'Springfield' });
    }
    const listed = await call(t, 'GET', `/${form}/{entityId}/attributes`, { params: { entityId: 'alice' }, headers: dec(), query: { attributes: 'EMAIL,NUMBER' } }, 200);
    t.deepEqual(listed.body.data.map((p: any) => p.value).sort(), [42, 'alice@example.com']);
    await call(t, 'GET', `/${form}/{entityId}/attributes`, { params: { entityId: 'alice' }, headers: dec() }, 200);
    await call(t, 'GET', `/${form}/{entityId}/attributes/{attributeKey}`, { params: { entityId: 'alice', attributeKey: 'EMAIL' }, headers: { 'x-decryption-key': 'bm9wZQ==' } }, 400, BAD_KEY);
    await call(t, 'GET', `/${form}/{entityId}/attributes/{attributeKey}`, { params: { entityId: 'alice', attributeKey: 'PHONE' }, headers: dec(), apiKey: user.key }, 403, 'Forbidden');
    await call(t, 'GET', `/${form}/{entityId}/attributes/{attributeKey}`, { params: { entityId: 'bob', attributeKey: 'EMAIL' }, headers: dec() }, 404, 'Data Not Found');
  }
  await call(t, 'GET', '/entities/{entityId}/attributes', { params: { entityId: 'acme' }, headers: dec() }, 200);
  await call(t, 'GET', '/datasubjects/{entityId}/attributes', { params: { entityId: 'acme' }, headers: dec() }, 400, 'Entity is not a data subject');
  const one = await call(t, 'GET', '/data/{dataPointId}', { params: { dataPointId: points.EMAIL }, headers: dec() }, 200);
  shows(t, one.body.data, [...POINT, 'value'], 'a data point');
  t.deepEqual(one.body.data.regulations.sort(), ['GDPR', 'SOX']);
  await call(t, 'GET', '/data/{dataPointId}', { params: { dataPointId: points.EMAIL }, headers: { 'x-decryption-key': 'bm9wZQ==' } }, 400, BAD_KEY);
  // README, "no existence oracle by id": by id, a point the caller may not access is an unknown id.
  await call(t, 'GET', '/data/{dataPointId}', { params: { dataPointId: points.PHONE }, headers: dec(), apiKey: user.key }, 404, 'Data Not Found');
  await call(t, 'GET', '/data/{dataPointId}', { params: { dataPointId: 'no-such-point' }, headers: dec() }, 404, 'Data Not Found');
});

test.serial('search', async (t) => {
  const found = await call(t, 'POST', '/search', { body: { query: { values: [{ attribute: 'EMAIL', value: 'alice@example.com' }] } } }, 200);
  t.is(found.body.data.length, 1);
  shows(t, found.body.data[0], POINT, 'a search result');
  t.false('value' in found.body.data[0], 'a search result carries no value');
  await call(t, 'POST', '/search', { body: { query: { entityId: ['alice', 'bob'], attributes: ['PHONE'] }, page: 0, count: 10 } }, 200);
  await call(t, 'POST', '/search', { body: { query: { values: [{ attribute: 'EMAIL', value: 'nobody@example.com' }] } } }, 404, 'Data Not Found');
  await call(t, 'POST', '/search', { body: { query: {}, count: 0 } }, 400);
});

test.serial('report-only audit logs', async (t) => {
  const event = (more: object) => ({ eventType: 'STORE', subjectId: 'carol', applicationId: 'crm', ...more });
  const audit = (body: object, status: number, message?: string | RegExp) => call(t, 'POST', '/auditlogs', { body }, status, message);
  shows(t, (await audit(event({ data: { attribute: 'EMAIL', value: 'carol@example.com' } }), 200)).body, SUMMARY, 'an activity summary');
  const structured = await audit(event({ data: { attribute: 'ADDRESS', value: { street: '2 Elm St', city: 'Shelbyville' } } }), 200);
  t.deepEqual(structured.body.subPoints.map((s: any) => s.attribute).sort(), ['ADDRESS.city', 'ADDRESS.street']);
  await audit(event({ dataPointId: 'ext-1', data: { attribute: 'PHONE' } }), 200);
  await audit(event({ dataPointId: 'ext-1', data: { attribute: 'PHONE' } }), 409, 'Cannot create data point with ID, as there is already a point with that ID');
  await audit(event({ eventType: 'UPDATE', dataPointId: 'ext-1', data: { attribute: 'EMAIL' } }), 409, 'Attribute given for datapoint ID does not match attribute of existing point with that ID');
  await audit(event({ eventType: 'UPDATE', dataPointId: 'ext-1', subjectId: 'dave' }), 409, 'Data subject ID given for datapoint ID does not match attribute of existing point with that ID');
  await audit(event({ eventType: 'READ', dataPointId: 'ext-1' }), 200);
  await audit(event({ eventType: 'DELETE', dataPointId: 'ext-1' }), 403, 'The provided data could not be stored, as a rule disallows it');
  await audit({ subjectId: 'carol', applicationId: 'crm' }, 400, 'Event type is required');
  await audit(event({ eventType: 'COPY' }), 400, 'Unrecognized event type');
  await audit(event({ eventType: 'READ' }), 400, 'Data point ID is required for events other than creation');
  await audit(event({ data: { attribute: 'PHONE' }, timestamp: new Date(Date.now() + 3 * 86_400_000).toISOString() }), 400, 'Timestamp out of range');
  await audit({ eventType: 'STORE', subjectId: 'carol', data: { attribute: 'PHONE' } }, 400, 'Application ID is required');
  await audit(event({ data: { attribute: 'NOPE' } }), 400, 'No such attribute');
  await audit(event({ data: { attribute: 'NUMBER', value: 'many' } }), 422, /^Expected \S+ for value of attribute NUMBER$/);
  await audit(event({ data: { attribute: 'ADDRESS', value: { zip: '1' } } }), 422, /^Unknown sub-attribute \S*zip$/);

  const bulk = (body: object[], status: number, message?: string | RegExp) => call(t, 'POST', '/auditlogs/bulk', { body }, status, message);
  const ok = await bulk([event({ data: { attribute: 'PHONE' } }), event({ eventType: 'READ', dataPointId: 'ext-1' })], 200);
  for (const summary of ok.body) shows(t, summary, SUMMARY, 'a bulk activity summary');
  const bad = await bulk([event({ data: { attribute: 'PHONE' } }), event({ data: { attribute: 'NUMBER', value: 'many' } })], 400, /^Expected \S+ for value of attribute NUMBER$/);
  t.is(bad.body.index, 1);
  await bulk([event({ data: { attribute: 'ADDRESS', value: { zip: '1' } } })], 400, /^Unknown sub-attribute \S*zip$/);
  await bulk([event({ subjectId: 'dave', dataPointId: 'ext-1', data: { attribute: 'PHONE' } })], 409, 'Data point ID is in use');
});

test.serial('activity, alerts and stats', async (t) => {
  const activity = await call(t, 'GET', '/activity', { query: { subjectId: 'carol' } }, 200);
  t.true(activity.body.data.length > 0);
  await call(t, 'GET', '/activity', { apiKey: user.key }, 403);
  await call(t, 'GET', '/activity', { query: { count: '0' } }, 400);
  t.true((await call(t, 'GET', '/activity/verify', {}, 200)).body.data.valid);
  await call(t, 'GET', '/activity/head', {}, 200);
  const alerts = await call(t, 'GET', '/alerts', { query: { rule: 'watch-email' } }, 200);
  t.true(alerts.body.data.length > 0, 'storing an email raised an alert');
  shows(t, alerts.body.data[0], ['ruleKey', 'level', 'message', 'createdDate'], 'an alert');
  await call(t, 'GET', '/alerts', { apiKey: user.key }, 403);
  await call(t, 'GET', '/stats', {}, 200);
  await call(t, 'GET', '/stats', { apiKey: user.key }, 200);
});

test.serial('answers of every shape: nested rules, lists in structures, change records, paging, a rolled key kept', async (t) => {
  const nested = {
    key: 'tag-vip-phones',
    name: 'Tag VIP phones',
    type: 'data',
    constraint: { type: 'all', constraints: [{ type: 'attribute', operator: 'any', attributes: ['CONTACTS'] }, { type: 'any', constraints: [{ type: 'user', attribute: 'NUMBER', predicate: 'gt', value: '10' }, { type: 'geolocation', operator: 'none', countries: ['DE'] }] }] },
    action: { type: 'entityTag', tag: 'has-contacts', status: true },
  };
  await call(t, 'POST', '/attributes', { body: { key: 'CONTACTS', schema: { '[phones]': 'string', owner: { name: 'string' } }, indexed: true } }, 201);
  await call(t, 'POST', '/rules', { body: nested }, 201);
  const rule = (await call(t, 'GET', '/rules/{ruleName}', { params: { ruleName: 'Tag VIP phones' } }, 200)).body.data;
  t.like(rule, { ...nested, executionOrder: rule.executionOrder });
  t.deepEqual(rule.constraint, nested.constraint, 'a nested constraint comes back as sent');
  const contacts = { attribute: 'CONTACTS', value: { phones: ['555-1', '555-2'], owner: { name: 'Alice' } } };
  const stored = await call(t, 'POST', '/entities/{entityId}/attributes', { params: { entityId: 'alice' }, headers: enc(), body: { data: [contacts], origin: 'US' } }, 200);
  t.deepEqual(stored.body.data.find((p: any) => p.attribute === 'CONTACTS').value, contacts.value);
  const subs = await call(t, 'POST', '/search', { body: { query: { values: [{ attribute: 'CONTACTS.phones', value: '555-2' }] } } }, 200);
  t.truthy(subs.body.data[0]?.structureRootId, 'a sub-point names its root');
  t.true((await call(t, 'GET', '/entities/{entityId}', { params: { entityId: 'alice' } }, 200)).body.data.tags.includes('has-contacts'));

  const page = await call(t, 'GET', '/entities', { query: { page: '0', count: '2' } }, 200);
  t.is(page.body.data.length, 2);
  const rolled = await call(t, 'POST', '/applications/{id}/key', { params: { id: user.id }, body: { keepPreviousForSeconds: 600 } }, 200);
  user.key = rolled.body.data.apiKey;
  t.truthy((await call(t, 'GET', '/applications/{id}', { params: { id: user.id } }, 200)).body.data.previousKeyValidUntil);
  await call(t, 'GET', '/applications', {}, 200);

  await call(t, 'DELETE', '/rules/{ruleName}', { params: { ruleName: 'no-deletes' } }, 200);
  const event = { subjectId: 'carol', applicationId: 'crm', applicationUser: 'agent-7', dataStoreName: 'crm', dataStoreServer: 'db1', dataStoreEntityName: 'people', location: { country: 'US', subdivision: 'CA', city: 'Oakland' } };
  await call(t, 'POST', '/auditlogs', { body: { ...event, eventType: 'UPDATE', dataPointId: 'ext-1', data: { value: '555-0199' } } }, 200);
  await call(t, 'POST', '/auditlogs', { body: { ...event, eventType: 'DELETE', dataPointId: 'ext-1' } }, 200);
  const everything = await call(t, 'GET', '/activity', { query: { order: 'newest', count: '1000' } }, 200);
  const kinds = new Set(everything.body.data.map((r: any) => r.eventType));
  for (const kind of ['READ', 'STORE', 'UPDATE', 'DELETE', 'CHANGE']) t.true(kinds.has(kind), `the log holds ${kind} records`);
  t.true(everything.body.data.some((r: any) => r.change?.fields), 'change records carry what they set');
  await call(t, 'GET', '/activity/verify', { query: { head: (await call(t, 'GET', '/activity/head', {}, 200)).body.data.sequence + ':' + '0'.repeat(64) } }, 200);
  await call(t, 'GET', '/alerts', { query: { count: '1000' } }, 200);
  await call(t, 'GET', '/stats', {}, 200);
});

test.serial('deletes', async (t) => {
  const del = (template: string, params: Record<string, string>, status: number, message?: string, apiKey?: string) =>
    call(t, 'DELETE', template, { params, apiKey }, status, message);
  t.is(typeof (await del('/entities/{entityId}/attributes/{attributeKey}', { entityId: 'alice', attributeKey: 'PHONE' }, 200)).body.data, 'string');
  await del('/entities/{entityId}/attributes/{attributeKey}', { entityId: 'alice', attributeKey: 'PHONE' }, 404, 'Data Not Found');
  await del('/datasubjects/{entityId}/attributes/{attributeKey}', { entityId: 'alice', attributeKey: 'NUMBER' }, 200);
  await del('/datasubjects/{entityId}/attributes/{attributeKey}', { entityId: 'acme', attributeKey: 'ACCOUNT' }, 400, 'Entity is not of type datasubject');
  await del('/entities/{entityId}/attributes/{attributeKey}', { entityId: 'alice', attributeKey: 'ADDRESS' }, 403, 'Forbidden', user.key);
  await del('/data/{dataPointId}', { dataPointId: points.ADDRESS }, 404, 'Data Not Found', user.key);
  await del('/data/{dataPointId}', { dataPointId: points.ADDRESS }, 200);
  await del('/data/{dataPointId}', { dataPointId: points.ADDRESS }, 404, 'Data Not Found');
  await del('/datasubjects/{entityId}/data', { entityId: 'acme' }, 400, 'Entity is not of type datasubject');
  await del('/datasubjects/{entityId}/data', { entityId: 'nobody' }, 404, 'Data Subject Not Found');
  await del('/datasubjects/{entityId}/data', { entityId: 'bob' }, 200);
  await del('/entities/{entityId}/data', { entityId: 'acme' }, 200);

  await del('/entitytypes/{typeKey}', { typeKey: 'datasubject' }, 405, 'Cannot delete entity type, as it is managed by the system');
  await del('/entitytypes/{typeKey}', { typeKey: 'device' }, 409, 'Cannot delete entity type, as there are entities belonging to it');
  await del('/entitytypes/{typeKey}', { typeKey: 'customer' }, 409, 'Cannot delete entity type, as there are attributes referencing it');
  await del('/entitytypes/{typeKey}', { typeKey: 'nope' }, 404, 'Entity type not found');
  await del('/entities/{entityId}/data', { entityId: 'gadget' }, 200);
  await del('/entitytypes/{typeKey}', { typeKey: 'device' }, 200);

  await del('/attributes/{attributeKey}', { attributeKey: 'EMAIL' }, 409, 'Cannot delete attribute, because it is referenced by rule');
  await del('/attributes/{attributeKey}', { attributeKey: 'ADDRESS' }, 409, 'Cannot delete attribute, because it is in use');
  await del('/rules/{ruleName}', { ruleName: 'vip-watch' }, 200);
  await del('/rules/{ruleName}', { ruleName: 'vip-watch' }, 404, 'Rule not found');
  await del('/tags/{tagName}', { tagName: 'vip' }, 200);
  await del('/regulations/{regulationKey}', { regulationKey: 'SOX' }, 200);
});

test.serial('the licence refusals', async (t) => {
  const limited = await startTestVault({ env: { VAULT_LICENSE_MAX_CUSTOM_REGULATIONS: '0', VAULT_LICENSE_CUSTOM_RULES: 'false' }, instrument: contract.instrument });
  try {
    const check = async (url: string, body: object, message: string) => {
      const res = await limited.request('POST', url, { body });
      t.is(res.status, 402, url);
      t.is(res.body.message, message);
      t.deepEqual(contract.check('POST', url, res), [], `POST ${url} answered 402 as the document says`);
    };
    await check('/regulations', { key: 'SOX', name: 'Sarbanes-Oxley' }, 'Your current subscription is limited to 0 custom regulations');
    await check('/rules', { key: 'r', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: [] }, action: { type: 'alert', alertLevel: 'NORMAL', message: 'm' } }, 'Your current subscription does not support custom rules');
  } finally {
    await limited.close();
  }
});

test.serial('every documented operation was driven to a success', (t) => {
  t.deepEqual(contract.unseen, [], 'every JSON answer was compared with what its handler gave');
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(ops)) {
      const key = `${method.toUpperCase()} ${path} `;
      t.true([...contract.answered].some((a) => a.startsWith(key) && a.slice(key.length).startsWith('2')), `${key.trim()} answered a success in the session`);
    }
  }
});
