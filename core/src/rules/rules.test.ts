import test from 'ava';
import fc from 'fast-check';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes, hostileJson } from '../testing/fuzz.js';
import { parseRule } from './compile.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const key of ['EMAIL', 'AGE', 'NOTE']) {
    const res = await v.request('POST', '/attributes', { body: { key, schema: key === 'AGE' ? 'int' : 'string' } });
    if (res.status >= 300) throw new Error(`could not define ${key}: ${JSON.stringify(res.body)}`);
  }
  const reg = await v.request('POST', '/regulations', { body: { key: 'RULES_TEST_REG', name: 'Test regulation' } });
  if (reg.status >= 300) throw new Error(`could not create regulation: ${JSON.stringify(reg.body)}`);
});
test.after.always(async () => v?.close());

const alert = { type: 'alert', alertLevel: 'NORMAL', message: 'hello' };
const onEmail = { type: 'attribute', operator: 'any', attributes: ['EMAIL'] };
/** `all` constraints nested `depth` deep around onEmail, as an object and (for depths no serialiser survives) as text. */
const nestedConstraint = (depth: number): unknown => Array.from({ length: depth }).reduce((c) => ({ type: 'all', constraints: [c] }), onEmail);
const nestedConstraintText = (depth: number) => `${'{"type":"all","constraints":['.repeat(depth)}${JSON.stringify(onEmail)}${']}'.repeat(depth)}`;
let counter = 0;
const uniqueKey = (prefix: string) => `${prefix}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;

function strip(rule: Record<string, unknown>) {
  const { executionOrder, createdDate, modifiedDate, ...rest } = rule;
  return rest;
}

test('a rule sent with a null name and a null type (a data rule) comes back with both null, as sent', async (t) => {
  const key = uniqueKey('nulls');
  const sent = { key, name: null, type: null, constraint: onEmail, action: alert };
  t.is((await v.request('POST', '/rules', { body: sent })).status, 201);
  const byKey = await v.request('GET', `/rules/${key}`);
  t.is(byKey.status, 200);
  t.deepEqual(strip(byKey.body.data), sent);
  const listed = (await v.request('GET', '/rules')).body.data.find((r: any) => r.key === key);
  t.deepEqual(strip(listed), sent);
});

test('a rule is created, read by key and by name, and round-trips exactly as sent', async (t) => {
  const key = uniqueKey('roundtrip');
  const sent = {
    key,
    name: `${key} name`,
    type: 'data',
    constraint: {
      type: 'all',
      constraints: [onEmail, { type: 'user', attribute: 'AGE', predicate: 'lt', value: '13' }, { type: 'geo', operator: 'none', countries: ['us', 'DE'], subdivisions: [] }],
    },
    action: { type: 'alert', alertLevel: 'WARNING', message: 'A child’s e-mail was stored' },
  };
  const created = await v.request('POST', '/rules', { body: sent });
  t.is(created.status, 201);
  t.deepEqual(created.body, { data: 'Rule created' });
  const byKey = await v.request('GET', `/rules/${key}`);
  t.is(byKey.status, 200);
  t.deepEqual(strip(byKey.body.data), sent);
  t.true(Number.isInteger(byKey.body.data.executionOrder));
  t.regex(byKey.body.data.createdDate, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.is(byKey.body.data.modifiedDate, byKey.body.data.createdDate);
  const byName = await v.request('GET', `/rules/${encodeURIComponent(sent.name)}`);
  t.deepEqual(byName.body.data, byKey.body.data);
  const list = await v.request('GET', '/rules');
  t.deepEqual(
    list.body.data.find((r: any) => r.key === key),
    byKey.body.data,
  );
});

test('posting the same key updates: creation date and execution order kept, modification date moves', async (t) => {
  const key = uniqueKey('update');
  t.is((await v.request('POST', '/rules', { body: { key, constraint: onEmail, action: alert, executionOrder: 70 } })).status, 201);
  const before = (await v.request('GET', `/rules/${key}`)).body.data;
  await new Promise((r) => setTimeout(r, 5));
  const changed = { key, name: 'renamed', constraint: onEmail, action: { type: 'tag', tag: 'changed_tag' } };
  const updated = await v.request('POST', '/rules', { body: changed });
  t.is(updated.status, 200);
  t.deepEqual(updated.body, { data: 'Rule updated' });
  const after = (await v.request('GET', `/rules/${key}`)).body.data;
  t.deepEqual(strip(after), changed);
  t.is(after.executionOrder, 70);
  t.is(after.createdDate, before.createdDate);
  t.true(after.modifiedDate > before.modifiedDate);
  // The members the vault sets are accepted (clients send them back) but not taken.
  await v.request('POST', '/rules', { body: { ...changed, createdDate: '2001-01-01T00:00:00Z', modifiedDate: null } });
  t.is((await v.request('GET', `/rules/${key}`)).body.data.createdDate, before.createdDate);
});

test('the default execution order is one more than the highest', async (t) => {
  const own = await startTestVault();
  try {
    await own.request('POST', '/attributes', { body: { key: 'EMAIL' } });
    await own.request('POST', '/rules', { body: { key: 'a', constraint: onEmail, action: alert } });
    await own.request('POST', '/rules', { body: { key: 'b', constraint: onEmail, action: alert, executionOrder: 40 } });
    await own.request('POST', '/rules', { body: { key: 'c', constraint: onEmail, action: alert } });
    const orders = Object.fromEntries((await own.request('GET', '/rules')).body.data.map((r: any) => [r.key, r.executionOrder]));
    t.deepEqual(orders, { a: 1, b: 40, c: 41 });
  } finally {
    await own.close();
  }
});

test('delete by key or by name answers Rule deleted; unknown rules are 404 Rule not found', async (t) => {
  const key = uniqueKey('del');
  await v.request('POST', '/rules', { body: { key, name: `${key}-by-name`, constraint: onEmail, action: alert } });
  const del = await v.request('DELETE', `/rules/${key}-by-name`);
  t.is(del.status, 200);
  t.deepEqual(del.body, { data: 'Rule deleted' });
  for (const [method, url] of [['GET', `/rules/${key}`], ['DELETE', `/rules/${key}`], ['GET', '/rules/never-was']]) {
    const res = await v.request(method, url);
    t.is(res.status, 404, `${method} ${url}`);
    t.is(res.body.message, 'Rule not found');
  }
});

test('only admins create and delete rules; any application may read them', async (t) => {
  const key = uniqueKey('admin');
  await v.request('POST', '/rules', { body: { key, constraint: onEmail, action: alert } });
  const apiKey = await v.createApplication(['*']);
  const post = await v.request('POST', '/rules', { apiKey, body: { key: uniqueKey('nope'), constraint: onEmail, action: alert } });
  t.is(post.status, 403);
  t.is(post.body.message, 'Forbidden');
  const del = await v.request('DELETE', `/rules/${key}`, { apiKey });
  t.is(del.status, 403);
  t.is(del.body.message, 'Forbidden');
  t.is((await v.request('GET', `/rules/${key}`, { apiKey })).status, 200);
  t.is((await v.request('GET', '/rules', { apiKey })).status, 200);
  t.is((await v.request('GET', '/rules', { apiKey: null })).status, 401);
});

test('402 when the licence excludes custom rules', async (t) => {
  const unlicensed = await startTestVault({ env: { VAULT_LICENSE_CUSTOM_RULES: 'false' } });
  try {
    const res = await unlicensed.request('POST', '/rules', { body: { key: 'x', constraint: { type: 'tag', operator: 'any', tags: ['a'] }, action: alert } });
    t.is(res.status, 402);
    t.is(res.body.message, 'Your current subscription does not support custom rules');
    t.deepEqual((await unlicensed.request('GET', '/rules')).body, { data: [] });
  } finally {
    await unlicensed.close();
  }
});

/** [description, body (or raw payload), status, exact message]. */
const refusals: Array<[string, unknown, number, string]> = [
  ['an array', { raw: '[{"key":"x"}]' }, 400, 'Cannot parse JSON of rule'],
  ['a string', { raw: '"rule"' }, 400, 'Cannot parse JSON of rule'],
  ['a number', { raw: '42' }, 400, 'Cannot parse JSON of rule'],
  ['null', { raw: 'null' }, 400, 'Cannot parse JSON of rule'],
  ['broken JSON', { raw: '{"key":"x",' }, 400, 'Cannot parse JSON of rule'],
  ['nothing', { raw: '' }, 400, 'Cannot parse JSON of rule'],
  ['no key', { constraint: onEmail, action: alert }, 400, 'Rule key is required'],
  ['a numeric key', { key: 5, constraint: onEmail, action: alert }, 400, 'Rule key is required'],
  ['an empty key', { key: '', constraint: onEmail, action: alert }, 400, 'Rule key is required'],
  ['no constraint', { key: 'K', action: alert }, 400, 'Rule constraint must be specified as an object'],
  ['a list constraint', { key: 'K', constraint: [onEmail], action: alert }, 400, 'Rule constraint must be specified as an object'],
  ['a string constraint', { key: 'K', constraint: 'attribute', action: alert }, 400, 'Rule constraint must be specified as an object'],
  ['no action', { key: 'K', constraint: onEmail }, 400, 'Rule action must be specified as an object'],
  ['a string action', { key: 'K', constraint: onEmail, action: 'alert' }, 400, 'Rule action must be specified as an object'],
  ['an untyped constraint', { key: 'K', constraint: { operator: 'any' }, action: alert }, 400, 'Constraint type must be specified as a string'],
  ['a numeric constraint type', { key: 'K', constraint: { type: 3 }, action: alert }, 400, 'Constraint type must be specified as a string'],
  ['an untyped nested constraint', { key: 'K', constraint: { type: 'any', constraints: [{}] }, action: alert }, 400, 'Constraint type must be specified as a string'],
  ['an unknown constraint type', { key: 'K', constraint: { type: 'weather' }, action: alert }, 400, 'Unrecognized constraint type'],
  ['an inherited member as type', { key: 'K', constraint: { type: 'toString' }, action: alert }, 400, 'Unrecognized constraint type'],
  ['attribute without operator', { key: 'K', constraint: { type: 'attribute', attributes: ['EMAIL'] }, action: alert }, 400, 'Attribute constraint operator must be specified as a string'],
  ['tag with numeric operator', { key: 'K', constraint: { type: 'tag', operator: 1, tags: ['x'] }, action: alert }, 400, 'Tag constraint operator must be specified as a string'],
  ['regulation without operator', { key: 'K', constraint: { type: 'regulation', regulations: ['GDPR'] }, action: alert }, 400, 'Regulation constraint operator must be specified as a string'],
  ['geolocation without operator', { key: 'K', constraint: { type: 'geolocation', countries: ['US'] }, action: alert }, 400, 'Geolocation constraint operator must be specified as a string'],
  ['attribute with all', { key: 'K', constraint: { type: 'attribute', operator: 'all', attributes: ['EMAIL'] }, action: alert }, 400, 'Unsupported attribute list operator'],
  ['tag with some', { key: 'K', constraint: { type: 'tag', operator: 'some', tags: ['x'] }, action: alert }, 400, 'Unsupported tag list operator'],
  ['regulation with most', { key: 'K', constraint: { type: 'regulation', operator: 'most', regulations: ['GDPR'] }, action: alert }, 400, 'Unsupported regulation list operator'],
  ['geolocation with all', { key: 'K', constraint: { type: 'geo', operator: 'all', countries: ['US'] }, action: alert }, 400, 'Unsupported geolocation list operator'],
  ['attribute list a string', { key: 'K', constraint: { type: 'attribute', operator: 'any', attributes: 'EMAIL' }, action: alert }, 400, 'Constraint attribute list must be specified as an array'],
  ['no tag list', { key: 'K', constraint: { type: 'tag', operator: 'any' }, action: alert }, 400, 'Constraint tag list must be specified as an array'],
  ['regulation list of numbers', { key: 'K', constraint: { type: 'regulation', operator: 'any', regulations: [1] }, action: alert }, 400, 'Constraint regulation list must be specified as an array'],
  // The list is an array; what is wrong is a name in it, so the message says so.
  ['an attribute name over 256 characters', { key: 'K', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL', 'A'.repeat(257)] }, action: alert }, 400, 'Constraint attribute names must be 1 to 256 characters, without control characters'],
  ['an empty attribute name', { key: 'K', constraint: { type: 'attribute', operator: 'any', attributes: [''] }, action: alert }, 400, 'Constraint attribute names must be 1 to 256 characters, without control characters'],
  ['a tag name over 256 characters', { key: 'K', constraint: { type: 'tag', operator: 'any', tags: ['t'.repeat(257)] }, action: alert }, 400, 'Constraint tag names must be 1 to 256 characters, without control characters'],
  ['an entity type name over 256 characters', { key: 'K', constraint: { type: 'entityType', entityTypes: ['e'.repeat(257)] }, action: alert }, 400, 'Constraint entity type names must be 1 to 256 characters, without control characters'],
  ['an attribute list of 1001 names', { key: 'K', constraint: { type: 'attribute', operator: 'any', attributes: Array.from({ length: 1001 }, (_, i) => `A${i}`) }, action: alert }, 400, 'Constraint attribute list may hold at most 1000 names'],
  ['an entity value attribute over 256 characters', { key: 'K', constraint: { type: 'user', attribute: 'A'.repeat(257), value: '1' }, action: alert }, 400, 'Entity value constraint attribute must be 1 to 256 characters, without control characters'],
  ['geolocation without lists', { key: 'K', constraint: { type: 'geolocation', operator: 'any' }, action: alert }, 400, 'Neither countries nor subdivisions specified for geolocation constraint'],
  ['geolocation with empty lists', { key: 'K', constraint: { type: 'geolocation', operator: 'any', countries: [], subdivisions: [] }, action: alert }, 400, 'Neither countries nor subdivisions specified for geolocation constraint'],
  ['countries a string', { key: 'K', constraint: { type: 'geolocation', operator: 'any', countries: 'US' }, action: alert }, 400, 'Geolocation constraint country list must be an array'],
  ['subdivisions an object', { key: 'K', constraint: { type: 'geolocation', operator: 'any', subdivisions: { US: 'CA' } }, action: alert }, 400, 'Geolocation constraint subdivision list must be an array'],
  ['an unassigned country', { key: 'K', constraint: { type: 'geolocation', operator: 'any', countries: ['XX'] }, action: alert }, 400, 'Countries for geolocation constraint must be specified as ISO 3166-1 two-letter codes'],
  ['a three-letter country', { key: 'K', constraint: { type: 'geolocation', operator: 'any', countries: ['USA'] }, action: alert }, 400, 'Countries for geolocation constraint must be specified as ISO 3166-1 two-letter codes'],
  ['UK for GB', { key: 'K', constraint: { type: 'geolocation', operator: 'any', countries: ['uk'] }, action: alert }, 400, 'Countries for geolocation constraint must be specified as ISO 3166-1 two-letter codes'],
  ['a subdivision without country', { key: 'K', constraint: { type: 'geolocation', operator: 'any', subdivisions: ['CA'] }, action: alert }, 400, 'Subdivisions for geolocation constraint must be specified as ISO 3166-2 hyphenated codes'],
  ['an underscore subdivision', { key: 'K', constraint: { type: 'geolocation', operator: 'any', subdivisions: ['US_CA'] }, action: alert }, 400, 'Subdivisions for geolocation constraint must be specified as ISO 3166-2 hyphenated codes'],
  ['a subdivision of no country', { key: 'K', constraint: { type: 'geolocation', operator: 'any', subdivisions: ['XX-CA'] }, action: alert }, 400, 'Subdivisions for geolocation constraint must be specified as ISO 3166-2 hyphenated codes'],
  ['an entity value without attribute', { key: 'K', constraint: { type: 'user', predicate: 'eq', value: '1' }, action: alert }, 400, 'Entity value constraint attribute must be specified as a string'],
  ['an entity value with numeric attribute', { key: 'K', constraint: { type: 'value', attribute: 7, value: '1' }, action: alert }, 400, 'Entity value constraint attribute must be specified as a string'],
  ['an entity value without value', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'eq' }, action: alert }, 400, 'No value specified for entity value constraint'],
  ['an entity value with null value', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'eq', value: null }, action: alert }, 400, 'No value specified for entity value constraint'],
  ['an unknown predicate', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'like', value: '1' }, action: alert }, 400, 'Entity-value attribute constraint predicate like is not supported.'],
  ['a numeric predicate', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 3, value: '1' }, action: alert }, 400, 'Entity-value attribute constraint predicate 3 is not supported.'],
  ['an unknown attribute', { key: 'K', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL', 'NO_SUCH_ATTR'] }, action: alert }, 422, 'No such attribute'],
  ['an unknown entity-value attribute', { key: 'K', constraint: { type: 'user', attribute: 'NO_SUCH_ATTR', predicate: 'eq', value: 1 }, action: alert }, 422, 'No such attribute'],
  ['an unknown regulation', { key: 'K', constraint: { type: 'regulation', operator: 'any', regulations: ['NO_SUCH_REG'] }, action: alert }, 422, 'No such regulation'],
  ['an unknown regulation in an action', { key: 'K', constraint: onEmail, action: { type: 'regulation', regulation: 'NO_SUCH_REG' } }, 422, 'No such regulation'],
  // The vocabulary of decisions.md, with the vault's own messages.
  ['an unknown rule type', { key: 'K', type: 'storage', constraint: onEmail, action: alert }, 400, 'Rule type must be data or activity'],
  ['an unknown member', { key: 'K', constraint: onEmail, action: alert, colour: 'red' }, 400, 'Unknown member colour in rule'],
  ['an unknown constraint member', { key: 'K', constraint: { ...onEmail, attribute: 'EMAIL' }, action: alert }, 400, 'Unknown member attribute in attribute constraint'],
  ['an activity constraint in a data rule', { key: 'K', constraint: { type: 'eventType', eventTypes: ['READ'] }, action: alert }, 400, 'Constraint type eventType cannot be used in a data rule'],
  ['an application constraint in a data rule', { key: 'K', type: 'data', constraint: { type: 'application', operator: 'any', applications: ['a'] }, action: alert }, 400, 'Constraint type application cannot be used in a data rule'],
  ['a data constraint in an activity rule', { key: 'K', type: 'activity', constraint: { type: 'tag', operator: 'any', tags: ['x'] }, action: alert }, 400, 'Constraint type tag cannot be used in an activity rule'],
  ['a nested data constraint in an activity rule', { key: 'K', type: 'activity', constraint: { type: 'all', constraints: [{ type: 'sentiment', threshold: -0.5 }] }, action: alert }, 400, 'Constraint type sentiment cannot be used in an activity rule'],
  ['a non-list all', { key: 'K', constraint: { type: 'all', constraints: onEmail }, action: alert }, 400, 'Constraint list of all must be specified as an array'],
  ['an entity type list a string', { key: 'K', constraint: { type: 'entityType', entityTypes: 'datasubject' }, action: alert }, 400, 'Constraint entity type list must be specified as an array'],
  ['an unknown entity type', { key: 'K', constraint: { type: 'entityType', entityTypes: ['no_such_type'] }, action: alert }, 422, 'No such entity type'],
  ['a number predicate on text', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'gt', value: 'old' }, action: alert }, 400, 'Entity value constraint value must be a number for predicate gt'],
  ['a time predicate on a non-date', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'before', value: 'soon' }, action: alert }, 400, 'Entity value constraint value must be an ISO 8601 date for predicate before'],
  ['an object value', { key: 'K', constraint: { type: 'user', attribute: 'AGE', predicate: 'eq', value: { a: 1 } }, action: alert }, 400, 'Entity value constraint value must be a string, number or boolean'],
  ['a backreference', { key: 'K', constraint: { type: 'user', attribute: 'EMAIL', predicate: 'regex', value: '(a)\\1' }, action: alert }, 400, 'Entity value constraint regular expression is not supported: backreferences are not supported'],
  ['a sentiment threshold above 1', { key: 'K', constraint: { type: 'sentiment', threshold: 1.5 }, action: alert }, 400, 'Sentiment constraint threshold must be a number from -1 to 1'],
  ['an unknown event type', { key: 'K', type: 'activity', constraint: { type: 'eventType', eventTypes: ['READ', 'COPY'] }, action: alert }, 400, 'Unrecognized event type'],
  ['an application list a string', { key: 'K', type: 'activity', constraint: { type: 'application', operator: 'any', applications: 'crm' }, action: alert }, 400, 'Constraint application list must be specified as an array'],
  ['an untyped action', { key: 'K', constraint: onEmail, action: { message: 'x' } }, 400, 'Action type must be specified as a string'],
  ['an unknown action', { key: 'K', constraint: onEmail, action: { type: 'email' } }, 400, 'Unrecognized action type'],
  ['an unknown alert level', { key: 'K', constraint: onEmail, action: { type: 'alert', alertLevel: 'PANIC' } }, 400, 'Alert level must be one of NORMAL, INFO, WARNING, DANGER, SUCCESS, NEUTRAL'],
  ['a numeric alert message', { key: 'K', constraint: onEmail, action: { type: 'alert', message: 5 } }, 400, 'Alert message must be a string of at most 4096 characters'],
  ['a tag action without tag', { key: 'K', constraint: onEmail, action: { type: 'tag' } }, 400, 'Tag action tag must be specified as a string'],
  ['an entity tag action with text status', { key: 'K', constraint: onEmail, action: { type: 'entityTag', tag: 't', status: 'yes' } }, 400, 'Entity tag action status must be a boolean'],
  ['a regulation action without regulation', { key: 'K', constraint: onEmail, action: { type: 'regulation' } }, 400, 'Regulation action regulation must be specified as a string'],
  ['an empty block message', { key: 'K', constraint: onEmail, action: { type: 'block', message: '' } }, 400, 'Block message must be a string of at most 4096 characters'],
  ['a prohibition of nothing', { key: 'K', constraint: onEmail, action: { type: 'prohibition', prohibitions: [] } }, 400, 'Prohibition action prohibitions must be a list of READ, STORE, UPDATE and DELETE'],
  ['a prohibition of COPY', { key: 'K', constraint: onEmail, action: { type: 'prohibition', prohibitions: ['READ', 'COPY'] } }, 400, 'Prohibition action prohibitions must be a list of READ, STORE, UPDATE and DELETE'],
  ['a legal hold with text status', { key: 'K', constraint: onEmail, action: { type: 'legalHold', status: 'on' } }, 400, 'Legal hold action status must be a boolean'],
  ['a retention of nothing', { key: 'K', constraint: onEmail, action: { type: 'retention', autoDelete: true } }, 400, 'Retention action needs expirationDate, daysSinceStore or daysSinceRead'],
  ['a retention with negative days', { key: 'K', constraint: onEmail, action: { type: 'retention', daysSinceStore: -1 } }, 400, 'Retention action daysSinceStore must be a whole number of days'],
  ['a retention with a bad date', { key: 'K', constraint: onEmail, action: { type: 'retention', expirationDate: 'tomorrow' } }, 400, 'Retention action expirationDate must be an ISO 8601 date'],
  ['a retention in an activity rule', { key: 'K', type: 'activity', constraint: { type: 'eventType', eventTypes: ['READ'] }, action: { type: 'retention', daysSinceStore: 1 } }, 400, 'Action type retention cannot be used in an activity rule'],
  ['an unknown action member', { key: 'K', constraint: onEmail, action: { type: 'block', level: 'x' } }, 400, 'Unknown member level in block action'],
  ['constraints nested too deeply', { key: 'K', constraint: Array.from({ length: 20 }).reduce((c) => ({ type: 'all', constraints: [c] }), onEmail), action: alert }, 400, 'Rule constraints are nested too deeply'],
  ['constraints nested 60 deep', { key: 'K', constraint: nestedConstraint(60), action: alert }, 400, 'Rule constraints are nested too deeply'],
  // Deeper than any recursive walker could follow: the body parser measures it first.
  ['constraints nested 3,000 deep', { raw: `{"key":"deep3000","constraint":${nestedConstraintText(3000)},"action":{"type":"block"}}` }, 400, 'Body is nested too deeply (at most 128 levels)'],
  ['constraints nested 100,000 deep', { raw: `{"key":"deep100k","constraint":${nestedConstraintText(100_000)},"action":{"type":"block"}}` }, 400, 'Body is nested too deeply (at most 128 levels)'],
  ...['.{0,99999}', 'a{1000000}', 'a{1001}', 'a{2,1001}', 'a{99999999999999999999}', '(?:ab){0,12345}'].map(
    (pattern): [string, unknown, number, string] => [
      `the repeat count of ${pattern}`,
      { key: 'K', constraint: { type: 'user', attribute: 'EMAIL', predicate: 'regex', value: pattern }, action: alert },
      400,
      'Entity value constraint regular expression is not supported: repetition count too large',
    ],
  ),
];

for (const [description, body, status, message] of refusals) {
  test(`POST /rules refuses ${description}: ${status} ${message}`, async (t) => {
    const raw = (body as { raw?: string }).raw;
    const key = uniqueKey('refused');
    const payload = raw ?? JSON.stringify({ ...(body as object), ...((body as { key?: unknown }).key === 'K' ? { key } : {}) });
    const res = await v.request('POST', '/rules', { payload, headers: { 'content-type': 'application/json' } });
    t.is(res.status, status);
    t.is(res.body.message, message);
    t.is((await v.request('GET', `/rules/${key}`)).status, 404, 'nothing was stored');
  });
}

test('parseRule measures depth before it recurses, whoever calls it', (t) => {
  const deep = { key: 'deep', constraint: nestedConstraint(50_000), action: alert };
  t.throws(() => parseRule(deep), { message: 'Rule constraints are nested too deeply' });
  let value: unknown = 'x';
  for (let i = 0; i < 50_000; i++) value = [value];
  t.throws(() => parseRule({ key: 'deep', constraint: { type: 'user', attribute: 'EMAIL', value }, action: alert }), { message: 'Rule constraints are nested too deeply' });
});

test('aliases and leniencies: geo, value, uppercase operators, codes in any case, a rule of every action', async (t) => {
  const constraints = [
    { type: 'geo', operator: 'ANY', countries: ['fr'], subdivisions: ['gb-eng', 'FR-75', 'jp-13'] },
    { type: 'value', attribute: 'NOTE', predicate: 'REGEX', value: '(?i)^urgent' },
    { type: 'user', attribute: 'AGE', value: 3 },
    { type: 'sentiment', threshold: -0.25 },
    { type: 'entityType', entityTypes: ['datasubject'] },
    { type: 'regulation', operator: 'all', regulations: ['RULES_TEST_REG', 'GDPR'] },
  ];
  const actions = [
    { type: 'alert', alertLevel: 'danger', message: 'm' },
    { type: 'tag', tag: 'some_tag' },
    { type: 'regulation', regulation: 'RULES_TEST_REG' },
    { type: 'entityTag', tag: 'flagged', status: false },
    { type: 'block' },
    { type: 'prohibition', prohibitions: ['read', 'DELETE'] },
    { type: 'legalHold' },
    { type: 'retention', expirationDate: '2031-01-01', daysSinceStore: 30, daysSinceAccess: 10, autoDelete: true },
  ];
  for (const constraint of constraints) {
    const res = await v.request('POST', '/rules', { body: { key: uniqueKey('ok'), constraint, action: alert } });
    t.is(res.status, 201, JSON.stringify(res.body));
  }
  for (const action of actions) {
    const res = await v.request('POST', '/rules', { body: { key: uniqueKey('ok'), constraint: onEmail, action } });
    t.is(res.status, 201, JSON.stringify(res.body));
  }
  const activity = await v.request('POST', '/rules', {
    body: {
      key: uniqueKey('activity'),
      type: 'activity',
      constraint: { type: 'any', constraints: [{ type: 'application', operator: 'none', applications: ['crm'] }, { type: 'eventType', eventTypes: ['read'] }, onEmail] },
      action: { type: 'tag', tag: 'seen', status: true },
    },
  });
  t.is(activity.status, 201, JSON.stringify(activity.body));
});

test('tags, attributes and regulations a rule references cannot be deleted until the rule is', async (t) => {
  const tag = uniqueKey('ri_tag');
  const attribute = uniqueKey('RI_ATTR').toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  const regulation = uniqueKey('RI_REG').toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  t.is((await v.request('POST', '/tags', { body: { name: tag } })).status, 201);
  t.true((await v.request('POST', '/attributes', { body: { key: attribute } })).status < 300);
  t.true((await v.request('POST', '/regulations', { body: { key: regulation, name: 'x' } })).status < 300);
  const key = uniqueKey('ri');
  const created = await v.request('POST', '/rules', {
    body: {
      key,
      constraint: { type: 'all', constraints: [{ type: 'attribute', operator: 'any', attributes: [attribute] }, { type: 'tag', operator: 'none', tags: [tag] }] },
      action: { type: 'regulation', regulation },
    },
  });
  t.is(created.status, 201);
  const refusals = [
    [`/tags/${tag}`, 'Cannot delete tag, because it is referenced by rule'],
    [`/attributes/${attribute}`, 'Cannot delete attribute, because it is referenced by rule'],
    [`/regulations/${regulation}`, 'Cannot delete regulation, because it is referenced by rule'],
  ];
  for (const [url, message] of refusals) {
    const res = await v.request('DELETE', url);
    t.is(res.status, 409, url);
    t.is(res.body.message, message);
  }
  t.is((await v.request('DELETE', `/rules/${key}`)).status, 200);
  for (const [url] of refusals) t.is((await v.request('DELETE', url)).status, 200, url);
});

test('a tag an action applies is created with the rule (tags are created on first use)', async (t) => {
  const tag = uniqueKey('action_tag');
  await v.request('POST', '/rules', { body: { key: uniqueKey('mk'), constraint: onEmail, action: { type: 'entityTag', tag } } });
  t.is((await v.request('GET', `/tags/${tag}`)).status, 200);
});

test('a tag an action would create follows the rule of every path that creates tags', async (t) => {
  for (const type of ['tag', 'entityTag']) {
    const tag = `${uniqueKey('ctl')}\u0001`;
    const key = uniqueKey('bad_tag');
    const res = await v.request('POST', '/rules', { body: { key, constraint: onEmail, action: { type, tag } } });
    t.is(res.status, 400, type);
    t.is(res.body.message, 'Tag name must be 1 to 256 characters, without control characters');
    t.is((await v.request('GET', `/tags/${encodeURIComponent(tag)}`)).status, 404, 'no such tag was created');
    t.is((await v.request('GET', `/rules/${key}`)).status, 404, 'nor the rule');
  }
});

test('a rule stored with such a tag before the check still loads and is evaluated', async (t) => {
  const key = uniqueKey('legacy');
  const definition = { key, type: 'data', constraint: onEmail, action: { type: 'tag', tag: 'legacy\u0001' } };
  const now = new Date().toISOString();
  await v.vault.db.insertInto('rules').values({ key, name: null, type: 'data', definition: JSON.stringify(definition), execution_order: 1, created_date: now, modified_date: now }).execute();
  await v.vault.db.updateTable('rules_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();
  const rules = await v.vault.ruleService.ruleSet(v.vault.db);
  t.true(rules.all.some((r) => r.key === key));
  t.false(v.logs.join('').includes('no longer compiles'));
  await v.vault.db.deleteFrom('rules').where('key', '=', key).execute();
  await v.vault.db.updateTable('rules_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();
});

test('the key and name of a rule, and the names it lists, are counted in characters, an emoji as one', async (t) => {
  const key = '\u{1F600}'.repeat(200);
  const tag = '\u{1F601}'.repeat(200);
  const body = { key, name: '\u{1F602}'.repeat(256), constraint: { type: 'tag', operator: 'any', tags: [tag] }, action: alert };
  const res = await v.request('POST', '/rules', { body });
  t.is(res.status, 201, JSON.stringify(res.body));
  const read = await v.request('GET', `/rules/${encodeURIComponent(key)}`);
  t.is(read.status, 200);
  t.like(read.body.data, { key, name: body.name });
  t.is((await v.request('DELETE', `/rules/${encodeURIComponent(key)}`)).status, 200);
  const tooLong = await v.request('POST', '/rules', { body: { ...body, key: '\u{1F600}'.repeat(257) } });
  t.is(tooLong.status, 400);
  t.is(tooLong.body.message, 'Rule key must be at most 256 characters, without control characters');
});

test('a rule changed by another vault process is seen at once', async (t) => {
  const other = await startTestVault({ env: { VAULT_DB: v.config.db, VAULT_INDEX_KEY: v.config.indexKey! } });
  try {
    const key = uniqueKey('elsewhere');
    t.is((await other.request('POST', '/rules', { body: { key, constraint: onEmail, action: { type: 'tag', tag: 'from_elsewhere' } } })).status, 201);
    t.truthy(await v.vault.rules.findReferencingRule(v.vault.db, 'tag', 'from_elsewhere'));
    t.is((await other.request('DELETE', `/rules/${key}`)).status, 200);
    t.is(await v.vault.rules.findReferencingRule(v.vault.db, 'tag', 'from_elsewhere'), undefined);
  } finally {
    await other.close();
  }
});

test('hostile bodies never cause a 5xx and never store a rule', async (t) => {
  // Hostile values under the right member names reach the deep checks, not just the first one.
  const shaped = fc.record(
    { key: fc.oneof(fc.constant('fuzzed'), hostileJson), type: fc.oneof(fc.constantFrom('data', 'activity'), hostileJson), constraint: hostileJson, action: hostileJson },
    { requiredKeys: [] },
  );
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/rules' },
    { method: 'POST', url: '/rules', body: shaped },
    { method: 'GET', url: '/rules/{id}' },
    { method: 'DELETE', url: '/rules/{id}' },
  ]);
  const after = (await v.request('GET', '/rules')).body.data;
  t.false(after.some((r: any) => r.key === 'fuzzed'));
});
