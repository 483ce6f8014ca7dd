/**
 * Rules and alerts through the SDK against a real vault process: every constraint and
 * action type the SDK's types describe is accepted and round-trips, the validation answers
 * arrive exactly, and rules act on stores and audit events.
 */
import test from 'ava';
import type { Alert, AttributeConstraint, RuleInput } from './types.js';
import { apiError, startSdkVault, unique, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
let ATTR: string;
let REG: string;
test.before(async () => {
  v = await startSdkVault();
  ATTR = unique('RULED');
  REG = unique('REG');
  await v.admin.definitions.save({ key: ATTR, schema: 'string', repeatable: true });
  await v.admin.regulations.save({ key: REG });
});
test.after.always(async () => {
  await v?.dispose();
});

const alert = { type: 'alert', alertLevel: 'NORMAL', message: 'noticed' } as const;

test('save (created, then updated), get by key or name, list, delete, and 404s', async (t) => {
  const key = unique('rule');
  const name = unique('Rule name');
  const rule: RuleInput = { key, name, type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: [ATTR] }, action: alert };
  t.is(await v.admin.rules.save(rule), 'Rule created');
  const stored = await v.admin.rules.get(key);
  t.like(stored, rule);
  t.true(Number.isInteger(stored.executionOrder));
  t.truthy(Date.parse(stored.createdDate));
  t.deepEqual(await v.admin.rules.get(name), stored);

  t.is(await v.admin.rules.save({ ...rule, action: { ...alert, message: 'changed' } }), 'Rule updated');
  const updated = await v.admin.rules.get(key);
  t.is(updated.executionOrder, stored.executionOrder, 'an update keeps its place');
  t.deepEqual(updated.action, { ...alert, message: 'changed' });
  t.true((await v.admin.rules.list()).some((r) => r.key === key));

  // A name sent as null comes back as null, as the OpenAPI document declares it.
  t.is(await v.admin.rules.save({ ...rule, key: `${key}_unnamed`, name: null }), 'Rule created');
  const unnamed: string | null | undefined = (await v.admin.rules.get(`${key}_unnamed`)).name;
  t.is(unnamed, null);
  t.is(await v.admin.rules.delete(`${key}_unnamed`), 'Rule deleted');

  t.is(await v.admin.rules.delete(name), 'Rule deleted');
  await apiError(t, v.admin.rules.get(key), 404, 'Rule not found');
  await apiError(t, v.admin.rules.delete(key), 404, 'Rule not found');
});

test('every constraint and action type of the SDK is accepted and round-trips exactly', async (t) => {
  const tag = unique('tag');
  await v.admin.tags.save(tag);
  const type = unique('type');
  await v.admin.entityTypes.save({ key: type });
  const scoped: AttributeConstraint = { type: 'attribute', operator: 'any', attributes: [ATTR] };
  const rules: Array<Omit<RuleInput, 'key'>> = [
    { type: 'data', constraint: { type: 'tag', operator: 'all', tags: [tag] }, action: { type: 'tag', tag: unique('t'), status: true } },
    { type: 'data', constraint: { type: 'regulation', operator: 'none', regulations: [REG] }, action: { type: 'regulation', regulation: REG } },
    { type: 'data', constraint: { type: 'geolocation', operator: 'any', countries: ['de', 'FR'], subdivisions: ['US-CA'] }, action: { type: 'alert', alertLevel: 'WARNING', message: 'geo' } },
    { type: 'data', constraint: { type: 'geo', operator: 'none', countries: ['JP'] }, action: { type: 'entityTag', tag: unique('t'), status: false } },
    { type: 'data', constraint: { type: 'entityType', entityTypes: [type] }, action: { type: 'legalHold', status: true } },
    { type: 'data', constraint: { type: 'user', attribute: ATTR, predicate: 'regex', value: '^no-such-value-[0-9]+$' }, action: { type: 'block', message: 'not that' } },
    { type: 'data', constraint: { type: 'value', attribute: ATTR, predicate: 'in', value: 'never-a,never-b' }, action: { type: 'prohibition', status: true, prohibitions: ['DELETE'] } },
    { type: 'data', constraint: { type: 'user', attribute: ATTR, predicate: 'geq', value: 1e12 }, action: { type: 'retention', daysSinceStore: 30, daysSinceRead: 7, autoDelete: true } },
    { type: 'data', constraint: { type: 'user', attribute: ATTR, predicate: 'before', value: '1900-01-01T00:00:00Z' }, action: { type: 'retention', expirationDate: '2100-01-01T00:00:00Z' } },
    { type: 'data', constraint: { type: 'sentiment', threshold: -0.99 }, action: { type: 'alert', alertLevel: 'DANGER', message: 'angry' } },
    { constraint: { type: 'all', constraints: [scoped, { type: 'any', constraints: [{ type: 'tag', operator: 'any', tags: [tag] }] }] }, action: { type: 'alert' } },
    { type: 'activity', constraint: { type: 'eventType', eventTypes: ['READ', 'DELETE'] }, action: { type: 'alert', alertLevel: 'INFO', message: 'activity' } },
    { type: 'activity', constraint: { type: 'application', operator: 'none', applications: ['x'] }, action: { type: 'tag', tag: unique('t') } },
    { type: 'activity', constraint: { type: 'all', constraints: [scoped, { type: 'geolocation', operator: 'any', subdivisions: ['GB-LND'] }] }, action: { type: 'block' } },
    // null stands for a member left out, and comes back as sent.
    { type: null, constraint: { type: 'geolocation', operator: 'any', countries: null, subdivisions: ['US-CA'] }, action: { type: 'alert', alertLevel: null, message: null } },
    { constraint: { type: 'user', attribute: ATTR, predicate: null, value: 'never' }, action: { type: 'tag', tag: unique('t'), status: null } },
    { constraint: scoped, action: { type: 'entityTag', tag: unique('t'), status: null } },
    { constraint: scoped, action: { type: 'block', message: null } },
    { constraint: scoped, action: { type: 'prohibition', status: null, prohibitions: ['READ'] } },
    { constraint: scoped, action: { type: 'legalHold', status: null } },
    { constraint: scoped, action: { type: 'retention', expirationDate: null, daysSinceStore: null, daysSinceAccess: 3, autoDelete: null } },
  ];
  for (const [i, body] of rules.entries()) {
    const rule = { key: unique(`shape${i}`), ...body, executionOrder: 1000 + i } as RuleInput;
    t.is(await v.admin.rules.save(rule), 'Rule created', JSON.stringify(rule));
    const { createdDate, modifiedDate, ...back } = await v.admin.rules.get(rule.key);
    t.deepEqual(back, rule);
    await v.admin.rules.delete(rule.key);
  }
});

test('every validation answer of the interface, exactly', async (t) => {
  const key = unique('bad');
  const attr = { type: 'attribute', operator: 'any', attributes: [ATTR] };
  const save = (rule: unknown) => v.admin.rules.save(rule as RuleInput);
  const withConstraint = (constraint: unknown) => save({ key, type: 'data', constraint, action: alert });
  const cases: Array<[Promise<unknown>, number, string]> = [
    [save({ constraint: attr, action: alert }), 400, 'Rule key is required'],
    [save('not a rule'), 400, 'Cannot parse JSON of rule'],
    [save({ key, constraint: 'attribute', action: alert }), 400, 'Rule constraint must be specified as an object'],
    [save({ key, constraint: attr, action: 'alert' }), 400, 'Rule action must be specified as an object'],
    [withConstraint({ type: 7 }), 400, 'Constraint type must be specified as a string'],
    [withConstraint({ type: 'attribute', operator: 1, attributes: [ATTR] }), 400, 'Attribute constraint operator must be specified as a string'],
    [withConstraint({ type: 'tag', operator: null, tags: ['x'] }), 400, 'Tag constraint operator must be specified as a string'],
    [withConstraint({ type: 'regulation', regulations: [REG] }), 400, 'Regulation constraint operator must be specified as a string'],
    [withConstraint({ type: 'geolocation', operator: [], countries: ['DE'] }), 400, 'Geolocation constraint operator must be specified as a string'],
    [withConstraint({ type: 'attribute', operator: 'all', attributes: [ATTR] }), 400, 'Unsupported attribute list operator'],
    [withConstraint({ type: 'tag', operator: 'most', tags: ['x'] }), 400, 'Unsupported tag list operator'],
    [withConstraint({ type: 'regulation', operator: 'some', regulations: [REG] }), 400, 'Unsupported regulation list operator'],
    [withConstraint({ type: 'geolocation', operator: 'all', countries: ['DE'] }), 400, 'Unsupported geolocation list operator'],
    [withConstraint({ type: 'attribute', operator: 'any', attributes: ATTR }), 400, 'Constraint attribute list must be specified as an array'],
    [withConstraint({ type: 'tag', operator: 'any', tags: 'x' }), 400, 'Constraint tag list must be specified as an array'],
    [withConstraint({ type: 'regulation', operator: 'any' }), 400, 'Constraint regulation list must be specified as an array'],
    [withConstraint({ type: 'geolocation', operator: 'any' }), 400, 'Neither countries nor subdivisions specified for geolocation constraint'],
    [withConstraint({ type: 'geolocation', operator: 'any', countries: 'DE' }), 400, 'Geolocation constraint country list must be an array'],
    [withConstraint({ type: 'geolocation', operator: 'any', subdivisions: 'US-CA' }), 400, 'Geolocation constraint subdivision list must be an array'],
    [withConstraint({ type: 'geolocation', operator: 'any', countries: ['Germany'] }), 400, 'Countries for geolocation constraint must be specified as ISO 3166-1 two-letter codes'],
    [withConstraint({ type: 'geolocation', operator: 'any', subdivisions: ['USCA'] }), 400, 'Subdivisions for geolocation constraint must be specified as ISO 3166-2 hyphenated codes'],
    [withConstraint({ type: 'user', attribute: 5, predicate: 'eq', value: 'x' }), 400, 'Entity value constraint attribute must be specified as a string'],
    [withConstraint({ type: 'user', attribute: ATTR, predicate: 'eq' }), 400, 'No value specified for entity value constraint'],
    [withConstraint({ type: 'user', attribute: ATTR, predicate: 'like', value: 'x' }), 400, 'Entity-value attribute constraint predicate like is not supported.'],
    [withConstraint({ type: 'weather', operator: 'any' }), 400, 'Unrecognized constraint type'],
    [withConstraint({ type: 'attribute', operator: 'any', attributes: [unique('NOPE')] }), 422, 'No such attribute'],
    [withConstraint({ type: 'user', attribute: unique('NOPE'), predicate: 'eq', value: 'x' }), 422, 'No such attribute'],
    [withConstraint({ type: 'regulation', operator: 'any', regulations: [unique('NOPE')] }), 422, 'No such regulation'],
  ];
  for (const [promise, status, message] of cases) await apiError(t, promise, status, message);
  await apiError(t, v.admin.rules.get(key), 404, 'Rule not found');
});

test('admins only: 403 Forbidden for another application', async (t) => {
  const { client } = await v.appClient(['*']);
  await apiError(t, client.rules.save({ key: unique('r'), constraint: { type: 'attribute', operator: 'any', attributes: [ATTR] }, action: alert }), 403, 'Forbidden');
  await apiError(t, client.alerts.list(), 403, 'Forbidden');
});

test('names a rule references cannot be deleted while it does', async (t) => {
  const tag = unique('tag');
  await v.admin.tags.save(tag);
  const reg = unique('REG');
  await v.admin.regulations.save({ key: reg });
  const attr = unique('REFD');
  await v.admin.definitions.save({ key: attr });
  const key = unique('refs');
  await v.admin.rules.save({
    key,
    constraint: {
      type: 'all',
      constraints: [
        { type: 'tag', operator: 'any', tags: [tag] },
        { type: 'regulation', operator: 'any', regulations: [reg] },
        { type: 'attribute', operator: 'any', attributes: [attr] },
      ],
    },
    action: alert,
  });
  await apiError(t, v.admin.tags.delete(tag), 409, 'Cannot delete tag, because it is referenced by rule');
  await apiError(t, v.admin.regulations.delete(reg), 409, 'Cannot delete regulation, because it is referenced by rule');
  await apiError(t, v.admin.definitions.delete(attr), 409, 'Cannot delete attribute, because it is referenced by rule');
  await v.admin.rules.delete(key);
  t.is(await v.admin.tags.delete(tag), 'Successfully Deleted Tag');
});

test('a data rule alerts on a matching store; alerts are listed with filters and pages', async (t) => {
  const attr = unique('WATCHED');
  await v.admin.definitions.save({ key: attr, repeatable: true });
  const key = unique('watch');
  await v.admin.rules.save({ key, type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: [attr] }, action: { type: 'alert', alertLevel: 'WARNING', message: 'watched attribute stored' } });
  const subject = unique('subj');
  const before = new Date(Date.now() - 1000);
  for (let i = 0; i < 3; i++) await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: attr, value: `v${i}` }]);

  const alerts = await v.admin.alerts.list({ rule: key });
  t.is(alerts.length, 3);
  t.like(alerts[0], { ruleKey: key, level: 'WARNING', message: 'watched attribute stored', entityId: subject, attribute: attr, eventType: 'STORE' });
  t.false(JSON.stringify(alerts).includes('v0'), 'an alert carries no value');
  t.is((await v.admin.alerts.list({ rule: key, level: 'WARNING', from: before, to: new Date(Date.now() + 1000) })).length, 3);
  t.deepEqual(await v.admin.alerts.list({ rule: key, level: 'DANGER' }), []);
  t.deepEqual(await v.admin.alerts.list({ rule: key, from: new Date(Date.now() + 60_000) }), []);
  t.deepEqual(await v.admin.alerts.list({ rule: key, page: 1, count: 2 }), alerts.slice(2));
  const walked: Alert[] = [];
  for await (const a of v.admin.alerts.all({ rule: key, count: 2 })) walked.push(a);
  t.deepEqual(walked, alerts);
});

test('a blocking data rule refuses the store with its message, and stores nothing', async (t) => {
  const attr = unique('GUARDED');
  await v.admin.definitions.save({ key: attr });
  await v.admin.rules.save({
    key: unique('guard'),
    constraint: { type: 'user', attribute: attr, predicate: 'regex', value: '^forbidden' },
    action: { type: 'block', message: 'That value is not allowed here' },
  });
  const subject = unique('subj');
  await apiError(t, v.admin.dataSubjects.storeAttributes(subject, [{ attribute: attr, value: 'forbidden fruit' }]), 403, 'That value is not allowed here');
  await apiError(t, v.admin.dataSubjects.getAttribute(subject, attr), 404, 'Data Not Found');
  t.is((await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: attr, value: 'fine' }])).length, 1);
});

test('an entity value constraint without a predicate compares for equality', async (t) => {
  const attr = unique('STATUS');
  await v.admin.definitions.save({ key: attr });
  const key = unique('closed');
  await v.admin.rules.save({
    key,
    constraint: { type: 'user', attribute: attr, value: 'closed' },
    action: { type: 'block', message: 'Closed accounts take no data' },
  });
  t.teardown(() => v.admin.rules.delete(key));
  const subject = unique('subj');
  await apiError(t, v.admin.dataSubjects.storeAttributes(subject, [{ attribute: attr, value: 'closed' }]), 403, 'Closed accounts take no data');
  t.is((await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: attr, value: 'closed soon' }])).length, 1);
});

test('an activity rule that blocks refuses the audit event with the interface message', async (t) => {
  const app = unique('app');
  await v.admin.rules.save({
    key: unique('noDeletes'),
    type: 'activity',
    constraint: { type: 'all', constraints: [{ type: 'eventType', eventTypes: ['DELETE'] }, { type: 'application', operator: 'any', applications: [app] }] },
    action: { type: 'block' },
  });
  const subject = unique('subj');
  const { dataPointId } = await v.admin.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: ATTR }, applicationId: app });
  await apiError(t, v.admin.audit.log({ eventType: 'DELETE', dataPointId, applicationId: app }), 403, 'The provided data could not be stored, as a rule disallows it');
  const err = await apiError(
    t,
    v.admin.audit.logBulk([
      { eventType: 'READ', dataPointId, applicationId: app },
      { eventType: 'DELETE', dataPointId, applicationId: app },
    ]),
    403,
    'The provided data could not be stored, as a rule disallows it',
  );
  t.is(err.index, 1);
  t.like(await v.admin.audit.log({ eventType: 'DELETE', dataPointId, applicationId: unique('other') }), { eventType: 'DELETE' });
});
