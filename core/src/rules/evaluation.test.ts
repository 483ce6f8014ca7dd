/**
 * Rules at work: stores through the data plane and events through the audit endpoints, with
 * each rule's effect observed from outside. Every test defines its own attributes (and its
 * rules constrain on them), so concurrent tests never fire each other's rules.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type Response, type TestVault } from '../testing/harness.js';
import { PROHIBITED_MESSAGE } from './prohibitions.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
const BLOCKED = 'The provided data could not be stored, as a rule disallows it';

async function define(key: string, schema: unknown = 'string', extra: Record<string, unknown> = {}): Promise<string> {
  const res = await v.request('POST', '/attributes', { body: { key, schema, ...extra } });
  if (res.status >= 300) throw new Error(`define ${key}: ${JSON.stringify(res.body)}`);
  return key;
}

async function rule(body: Record<string, unknown>): Promise<string> {
  const key = (body.key as string | undefined) ?? uid('rule');
  const res = await v.request('POST', '/rules', { body: { key, ...body } });
  if (res.status >= 300) throw new Error(`rule ${key}: ${JSON.stringify(res.body)}`);
  return key;
}

function store(entityId: string, data: unknown[], extra: Record<string, unknown> = {}): Promise<Response> {
  return v.request('POST', `/entities/${entityId}/attributes`, { body: { data, ...extra }, headers: { 'x-encryption-key': v.keys.publicKey } });
}

function readAttribute(entityId: string, attribute: string): Promise<Response> {
  return v.request('GET', `/entities/${entityId}/attributes/${attribute}`, { headers: { 'x-decryption-key': v.keys.privateKey } });
}

const on = (attribute: string) => ({ type: 'attribute', operator: 'any', attributes: [attribute] });

async function alertsOf(ruleKey: string): Promise<any[]> {
  const res = await v.request('GET', '/alerts', { query: { rule: ruleKey } });
  return res.body.data;
}

/** Alerts of a blocked store are recorded after its rollback, so they appear a moment later. */
async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  let value = await probe();
  for (let i = 0; i < 100 && !done(value); i++) {
    await new Promise((r) => setTimeout(r, 20));
    value = await probe();
  }
  return value;
}

test('tag and regulation actions label the stored point', async (t) => {
  const attr = await define(uid('EMAIL'));
  const tag = uid('pii').toLowerCase();
  await rule({ constraint: on(attr), action: { type: 'tag', tag } });
  await rule({ constraint: on(attr), action: { type: 'regulation', regulation: 'GDPR' } });
  const other = await define(uid('OTHER'));
  const res = await store(uid('e'), [{ attribute: attr, value: 'ada@example.org' }, { attribute: other, value: 'x' }]);
  t.is(res.status, 200, JSON.stringify(res.body));
  const [point, untouched] = res.body.data;
  t.true(point.tags.includes(tag));
  t.deepEqual(point.regulations, ['GDPR']);
  t.false(untouched.tags.includes(tag), 'a rule acts on the points it matches only');
  t.deepEqual(untouched.regulations, []);
});

test('a tag action with status false takes the tag off the point, even one its definition gives', async (t) => {
  const tag = uid('public').toLowerCase();
  const attr = await define(uid('HANDLE'), 'string', { tags: [tag] });
  const plain = await define(uid('PLAIN'), 'string', { tags: [tag] });
  await rule({ constraint: on(attr), action: { type: 'tag', tag, status: false } });
  const res = await store(uid('e'), [{ attribute: attr, value: 'x' }, { attribute: plain, value: 'y' }]);
  t.false(res.body.data[0].tags.includes(tag));
  t.true(res.body.data[1].tags.includes(tag));
});

test('ordering: tag rules, then regulation rules, then alerts, then blocks, each seeing what earlier rules added', async (t) => {
  const attr = await define(uid('NOTE'));
  const first = uid('first').toLowerCase();
  const second = uid('second').toLowerCase();
  const ahead = uid('ahead').toLowerCase();
  const both = (tag: string) => ({ type: 'all', constraints: [on(attr), { type: 'tag', operator: 'any', tags: [tag] }] });
  // Saved in reverse, and with orders that would put the dependants first if groups did not come first.
  const alertKey = await rule({ constraint: both(second), action: { type: 'alert', alertLevel: 'INFO', message: 'second tag seen' }, executionOrder: -10 });
  await rule({ constraint: both(second), action: { type: 'regulation', regulation: 'CCPA' }, executionOrder: -5 });
  await rule({ constraint: both(first), action: { type: 'tag', tag: second }, executionOrder: 20 });
  await rule({ constraint: on(attr), action: { type: 'tag', tag: first }, executionOrder: 10 });
  // Within the tag group, executionOrder decides: this one runs before `first` exists.
  await rule({ constraint: both(first), action: { type: 'tag', tag: ahead }, executionOrder: 5 });
  const entity = uid('e');
  const res = await store(entity, [{ attribute: attr, value: 'hello' }]);
  t.is(res.status, 200, JSON.stringify(res.body));
  const point = res.body.data[0];
  t.true(point.tags.includes(first));
  t.true(point.tags.includes(second), 'a tag rule sees the tag an earlier tag rule added');
  t.false(point.tags.includes(ahead), 'a rule ordered before the one adding its tag does not see it');
  t.deepEqual(point.regulations, ['CCPA'], 'regulation rules see the tags');
  const alerts = await alertsOf(alertKey);
  t.is(alerts.length, 1, 'alert rules see the tags');
  t.like(alerts[0], { ruleKey: alertKey, level: 'INFO', message: 'second tag seen', entityId: entity, attribute: attr, eventType: 'STORE' });

  // A block sees them too, and refuses the whole store.
  const blockAttr = await define(uid('NOTE'));
  const blockTag = uid('blocked').toLowerCase();
  await rule({ constraint: on(blockAttr), action: { type: 'tag', tag: blockTag } });
  await rule({ constraint: { type: 'all', constraints: [on(blockAttr), { type: 'tag', operator: 'all', tags: [blockTag] }] }, action: { type: 'block' } });
  const blocked = await store(uid('e'), [{ attribute: blockAttr, value: 'x' }]);
  t.is(blocked.status, 403);
  t.is(blocked.body.message, BLOCKED);
});

test('block: 403 with the block’s message, and nothing of the store is written', async (t) => {
  const attr = await define(uid('SSN'));
  const keep = await define(uid('NAME'));
  await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'user', attribute: attr, predicate: 'regex', value: '^\\d{3}-\\d{2}-\\d{4}$' }] }, action: { type: 'block', message: 'SSNs are not kept here' } });
  const entity = uid('e');
  const res = await store(entity, [{ attribute: keep, value: 'Ada' }, { attribute: attr, value: '123-45-6789' }]);
  t.is(res.status, 403);
  t.is(res.body.message, 'SSNs are not kept here');
  t.is((await readAttribute(entity, keep)).status, 404, 'the other attribute of the request was not stored either');
  t.is((await v.request('GET', `/entities/${entity}`)).status, 404, 'nor was the entity created');
  t.is((await store(entity, [{ attribute: attr, value: 'not an SSN' }])).status, 200, 'a value the rule does not match passes');
});

test('alert: recorded with rule, level, entity, attribute and point, never the value; logged without it', async (t) => {
  const attr = await define(uid('PHONE'));
  const key = await rule({ constraint: on(attr), action: { type: 'alert', alertLevel: 'DANGER', message: 'phone stored' } });
  const entity = uid('e');
  const secret = `+1-555-${randomBytes(3).toString('hex')}`;
  const res = await store(entity, [{ attribute: attr, value: secret }]);
  t.is(res.status, 200);
  const alerts = await alertsOf(key);
  t.is(alerts.length, 1);
  const members = new Set(['attribute', 'createdDate', 'dataPointId', 'entityId', 'eventType', 'id', 'level', 'message', 'ruleKey']);
  t.true(Object.keys(alerts[0]).every((m) => members.has(m)), Object.keys(alerts[0]).join());
  t.like(alerts[0], { ruleKey: key, level: 'DANGER', message: 'phone stored', entityId: entity, attribute: attr, eventType: 'STORE' });
  t.is(alerts[0].dataPointId, res.body.data[0].dataPointId, 'the alert names the point that was stored');
  t.false(JSON.stringify(alerts).includes(secret));
  const logged = v.logs.filter((l) => l.includes(alerts[0].id) && l.includes('rule alert'));
  t.is(logged.length, 1, 'the alert was logged');
  // JSON parsers keep the last of two equal keys: pino's numeric level must be the only one.
  t.is(logged[0].match(/"level":/g)?.length, 1, logged[0]);
  t.like(JSON.parse(logged[0]), { level: 40, alertLevel: 'DANGER', ruleKey: key, msg: 'rule alert: phone stored' });
  t.false(v.logs.some((l) => l.includes(secret)), 'no value reaches the log');
  const rows = await v.vault.db.selectFrom('alerts').selectAll().where('rule_key', '=', key).execute();
  t.false(JSON.stringify(rows).includes(secret));
});

test('an alert raised before a block is still recorded, though the store is refused', async (t) => {
  const attr = await define(uid('CARD'));
  const alertKey = await rule({ constraint: on(attr), action: { type: 'alert', alertLevel: 'WARNING', message: 'card number attempted' } });
  await rule({ constraint: on(attr), action: { type: 'block' } });
  const res = await store(uid('e'), [{ attribute: attr, value: '4111111111111111' }]);
  t.is(res.status, 403);
  const alerts = await eventually(() => alertsOf(alertKey), (a) => a.length > 0);
  t.is(alerts.length, 1);
  t.is(alerts[0].message, 'card number attempted');
  t.is(alerts[0].dataPointId, undefined, 'no point was stored');
});

test('an alert a first value raised is recorded when an overwrite in the same store is blocked', async (t) => {
  // First values and overwrites are judged in two passes: the first pass's alerts went into the
  // store's transaction, and the second pass's block rolled them back with it.
  const note = await define(uid('NOTE'), 'string', { repeatable: true });
  const age = await define(uid('AGE'), 'int');
  const alertKey = await rule({ constraint: on(note), action: { type: 'alert', message: 'note stored' } });
  await rule({ constraint: { type: 'all', constraints: [on(age), { type: 'value', attribute: age, predicate: 'lt', value: 13 }] }, action: { type: 'block' } });
  const subject = uid('e');
  t.is((await store(subject, [{ attribute: age, value: 30 }])).status, 200);
  const res = await store(subject, [{ attribute: note, value: 'x' }, { attribute: age, value: 10 }]);
  t.is(res.status, 403);
  const alerts = await eventually(() => alertsOf(alertKey), (a) => a.length > 0);
  t.is(alerts.length, 1);
  t.is(alerts[0].dataPointId, undefined, 'no point was stored');
});

test('entity value across the request: an e-mail stored with an age under 13 is tagged', async (t) => {
  const email = await define(uid('EMAIL'));
  const age = await define(uid('AGE'), 'int');
  const tag = uid('child').toLowerCase();
  await rule({ constraint: { type: 'all', constraints: [on(email), { type: 'value', attribute: age, predicate: 'lt', value: 13 }] }, action: { type: 'tag', tag } });
  const young = await store(uid('e'), [{ attribute: email, value: 'kid@example.org' }, { attribute: age, value: 10 }]);
  t.true(young.body.data[0].tags.includes(tag));
  t.false(young.body.data[1].tags.includes(tag), 'the AGE point is not an e-mail');
  const older = await store(uid('e'), [{ attribute: email, value: 'adult@example.org' }, { attribute: age, value: 30 }]);
  t.false(older.body.data[0].tags.includes(tag));
});

test('entity value across the request: a value that overwrites an earlier one is read beside a first one', async (t) => {
  // A store's new values and its overwrites are judged in two passes (STORE, then UPDATE);
  // each pass read the values of its own points only, so correcting AGE while adding an
  // e-mail left the e-mail untagged.
  const email = await define(uid('EMAIL'));
  const age = await define(uid('AGE'), 'int');
  const tag = uid('child').toLowerCase();
  await rule({ constraint: { type: 'all', constraints: [on(email), { type: 'value', attribute: age, predicate: 'lt', value: 13 }] }, action: { type: 'tag', tag } });
  const subject = uid('e');
  t.is((await store(subject, [{ attribute: age, value: 30 }])).status, 200);
  const corrected = await store(subject, [{ attribute: email, value: 'kid@example.org' }, { attribute: age, value: 10 }]);
  t.is(corrected.status, 200);
  t.true(corrected.body.data[0].tags.includes(tag));
});

test('geolocation: the store’s origin is matched by country and subdivision', async (t) => {
  const attr = await define(uid('LOC'));
  await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'geolocation', operator: 'any', subdivisions: ['US-CA'] }] }, action: { type: 'block', message: 'not from California' } });
  const blocked = await store(uid('e'), [{ attribute: attr, value: 'x' }], { origin: 'us-ca' });
  t.is(blocked.status, 403);
  t.is(blocked.body.message, 'not from California');
  t.is((await store(uid('e'), [{ attribute: attr, value: 'x' }], { origin: 'US-NY' })).status, 200);
  t.is((await store(uid('e'), [{ attribute: attr, value: 'x' }])).status, 200, 'a loopback store has no location');
});

test('sentiment: an angry note raises an alert, a friendly one does not', async (t) => {
  const attr = await define(uid('NOTE'));
  const key = await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'sentiment', threshold: -0.5 }] }, action: { type: 'alert', message: 'angry note' } });
  await store(uid('e'), [{ attribute: attr, value: 'Thank you, wonderful service' }]);
  t.is((await alertsOf(key)).length, 0);
  await store(uid('e'), [{ attribute: attr, value: 'This is terrible, I hate it, awful' }]);
  t.is((await alertsOf(key)).length, 1);
});

test('entityType: a rule for one entity type ignores the others', async (t) => {
  const type = uid('employee').toLowerCase();
  t.true((await v.request('POST', '/entitytypes', { body: { key: type } })).status < 300);
  const attr = await define(uid('BADGE'), 'string', { entityTypes: [type, 'datasubject'] });
  const tag = uid('staff').toLowerCase();
  await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'entityType', entityTypes: [type] }] }, action: { type: 'tag', tag } });
  const staff = await store(uid('e'), [{ attribute: attr, value: 'b1' }], { entityType: type });
  t.is(staff.status, 200, JSON.stringify(staff.body));
  t.true(staff.body.data[0].tags.includes(tag));
  const subject = await store(uid('e'), [{ attribute: attr, value: 'b2' }]);
  t.false(subject.body.data[0].tags.includes(tag));
});

test('entityTag tags the entity (and status false removes the tag)', async (t) => {
  const attr = await define(uid('FLAG'));
  const clear = await define(uid('CLEAR'));
  const tag = uid('watch').toLowerCase();
  await rule({ constraint: on(attr), action: { type: 'entityTag', tag } });
  await rule({ constraint: on(clear), action: { type: 'entityTag', tag, status: false } });
  const entity = uid('e');
  await store(entity, [{ attribute: attr, value: 'x' }]);
  t.true((await v.request('GET', `/entities/${entity}`)).body.data.tags.includes(tag));
  await store(entity, [{ attribute: clear, value: 'x' }]);
  t.false((await v.request('GET', `/entities/${entity}`)).body.data.tags.includes(tag));
});

test('legalHold puts the entity under hold: its nonrepeatable values can no longer be overwritten or deleted', async (t) => {
  const trigger = await define(uid('LITIGATION'));
  const attr = await define(uid('NAME'));
  await rule({ constraint: on(trigger), action: { type: 'legalHold' } });
  const entity = uid('e');
  t.is((await store(entity, [{ attribute: attr, value: 'Ada' }])).status, 200);
  t.false((await v.request('GET', `/entities/${entity}`)).body.data.legalHold);
  t.is((await store(entity, [{ attribute: trigger, value: 'case 42' }])).status, 200);
  t.true((await v.request('GET', `/entities/${entity}`)).body.data.legalHold);
  const overwrite = await store(entity, [{ attribute: attr, value: 'Grace' }]);
  t.is(overwrite.status, 403);
  t.is(overwrite.body.message, 'Cannot overwrite attribute for data subject, as the data subject is under a legal hold');
  t.is((await v.request('DELETE', `/entities/${entity}/data`)).status, 403);
});

test('prohibition: the prohibited operations are refused on the entity afterwards, until lifted', async (t) => {
  const trigger = await define(uid('RESTRICT'));
  const lift = await define(uid('UNRESTRICT'));
  const attr = await define(uid('NAME'));
  await rule({ constraint: on(trigger), action: { type: 'prohibition', prohibitions: ['READ', 'DELETE'] } });
  await rule({ constraint: on(lift), action: { type: 'prohibition', status: false, prohibitions: ['READ', 'DELETE'] } });
  const entity = uid('e');
  await store(entity, [{ attribute: attr, value: 'Ada' }]);
  t.is((await readAttribute(entity, attr)).status, 200);
  t.is((await store(entity, [{ attribute: trigger, value: 'yes' }])).status, 200);
  for (const res of [await readAttribute(entity, attr), await v.request('DELETE', `/entities/${entity}/attributes/${attr}`)]) {
    t.is(res.status, 403);
    t.is(res.body.message, PROHIBITED_MESSAGE);
  }
  t.is((await store(entity, [{ attribute: attr, value: 'Grace' }])).status, 200, 'stores were not prohibited');
  t.is((await store(entity, [{ attribute: lift, value: 'yes' }])).status, 200);
  t.is((await readAttribute(entity, attr)).status, 200);
});

test('prohibition of stores: the next store is refused', async (t) => {
  const attr = await define(uid('FREEZE'));
  await rule({ constraint: on(attr), action: { type: 'prohibition', prohibitions: ['STORE'] } });
  const entity = uid('e');
  t.is((await store(entity, [{ attribute: attr, value: 'first' }])).status, 200);
  const again = await store(entity, [{ attribute: attr, value: 'second' }]);
  t.is(again.status, 403);
  t.is(again.body.message, PROHIBITED_MESSAGE);
});

test('prohibition of updates: an overwrite is refused, a first value is not', async (t) => {
  const trigger = await define(uid('LOCK'));
  const name = await define(uid('NAME'));
  const other = await define(uid('CITY'));
  await rule({ constraint: on(trigger), action: { type: 'prohibition', prohibitions: ['UPDATE'] } });
  const entity = uid('e');
  t.is((await store(entity, [{ attribute: name, value: 'Ada' }])).status, 200);
  t.is((await store(entity, [{ attribute: trigger, value: 'yes' }])).status, 200);
  const overwrite = await store(entity, [{ attribute: name, value: 'Grace' }]);
  t.is(overwrite.status, 403);
  t.is(overwrite.body.message, PROHIBITED_MESSAGE);
  t.is((await store(entity, [{ attribute: other, value: 'Paris' }])).status, 200, 'a first value is a STORE, not an UPDATE');
  t.is((await readAttribute(entity, name)).body.data[0].value, 'Ada');
});

test('a rule another process wrote straight to the database applies to the next store', async (t) => {
  const attr = await define(uid('NOTE'));
  const entity = uid('e');
  const before = await store(entity, [{ attribute: attr, value: 'one' }]);
  t.false(before.body.data[0].tags.includes('from_elsewhere'));
  const now = new Date().toISOString();
  await v.vault.db.transaction().execute(async (trx) => {
    const definition = JSON.stringify({ constraint: on(attr), action: { type: 'tag', tag: 'from_elsewhere' } });
    await trx.insertInto('rules').values({ key: uid('sql'), name: null, type: 'data', definition, execution_order: 1, created_date: now, modified_date: now }).execute();
    await trx.updateTable('rules_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();
  });
  const after = await store(entity, [{ attribute: attr, value: 'two' }]);
  t.is(after.status, 200);
  t.true(after.body.data[0].tags.includes('from_elsewhere'));
});

test('a purge takes the subject\'s prohibitions with it: a new subject under the same id starts clean', async (t) => {
  const attr = await define(uid('FROZEN'));
  await rule({ constraint: on(attr), action: { type: 'prohibition', prohibitions: ['STORE'] } });
  const entity = uid('e');
  t.is((await store(entity, [{ attribute: attr, value: 'first' }])).status, 200);
  t.is((await store(entity, [{ attribute: attr, value: 'refused' }])).status, 403);
  t.is((await v.request('DELETE', `/entities/${entity}/data`)).status, 200);
  t.is((await store(entity, [{ attribute: attr, value: 'fresh start' }])).status, 200);
});

async function pointRows(entityId: string) {
  return v.vault.db.selectFrom('datapoints').selectAll().where('entity_id', '=', entityId).execute();
}

test('retention: daysSinceStore and expirationDate set the expiry (the earliest wins); autoDelete marks the point', async (t) => {
  const attr = await define(uid('TEMP'));
  await rule({ constraint: on(attr), action: { type: 'retention', daysSinceStore: 30 } });
  await rule({ constraint: on(attr), action: { type: 'retention', expirationDate: '2999-01-01T00:00:00Z', autoDelete: true } });
  const entity = uid('e');
  const before = Date.now();
  await store(entity, [{ attribute: attr, value: 'x' }]);
  const [row] = await pointRows(entity);
  const expires = Date.parse(row.expires_at!);
  t.true(expires >= before + 30 * 86_400_000 - 1000 && expires <= Date.now() + 30 * 86_400_000 + 1000);
  t.is(row.auto_delete, 1);
});

test('the retention sweep deletes expired autoDelete points with their sub-points, and logs each delete', async (t) => {
  const attr = await define(uid('ADDRESS'), { street: 'string', city: 'string' });
  const keep = await define(uid('KEEP'));
  await rule({ constraint: on(attr), action: { type: 'retention', expirationDate: '2001-01-01', autoDelete: true } });
  await rule({ constraint: on(keep), action: { type: 'retention', expirationDate: '2001-01-01' } });
  const entity = uid('e');
  const res = await store(entity, [{ attribute: attr, value: { street: '1 Main St', city: 'Springfield' } }, { attribute: keep, value: 'y' }]);
  t.is(res.status, 200);
  t.is((await pointRows(entity)).length, 4, 'a root, two sub-points and the other attribute');
  // Other tests in this file expire points too and may sweep at the same moment: sweep until
  // this entity's turn has come (bounded).
  let left = await pointRows(entity);
  for (let i = 0; i < 20 && left.length > 1; i++) {
    await v.vault.retention.sweep();
    left = await pointRows(entity);
  }
  t.deepEqual(
    left.map((r) => r.attribute),
    [keep],
    'expired without autoDelete is kept',
  );
  t.is((await readAttribute(entity, attr)).status, 404);
  await v.vault.sealer.sealAll();
  const log = await v.vault.db.selectFrom('activity_log').selectAll().where('subject_id', '=', entity).where('event_type', '=', 'DELETE').execute();
  t.deepEqual(
    log.map((r) => [r.attribute, r.application_id]),
    [[attr, 'retention']],
  );
});

test('the sweep keeps the expired points of an entity under legal hold', async (t) => {
  const attr = await define(uid('HELD'));
  const hold = await define(uid('HOLD'));
  await rule({ constraint: on(attr), action: { type: 'retention', daysSinceStore: 0, autoDelete: true } });
  await rule({ constraint: on(hold), action: { type: 'legalHold' } });
  const entity = uid('e');
  await store(entity, [{ attribute: attr, value: 'x' }, { attribute: hold, value: 'y' }]);
  await v.vault.retention.sweep(new Date(Date.now() + 1000));
  t.is((await readAttribute(entity, attr)).status, 200);
});

// Serial: a sweep joins one already running, and another test's sweep runs at another hour.
test.serial('daysSinceRead: a point not read for that long is deleted; a read keeps it', async (t) => {
  const attr = await define(uid('IDLE'));
  await rule({ constraint: on(attr), action: { type: 'retention', daysSinceRead: 2, autoDelete: true } });
  const unread = uid('e');
  const read = uid('e');
  await store(unread, [{ attribute: attr, value: 'x' }]);
  await store(read, [{ attribute: attr, value: 'y' }]);
  // Both were written five days ago (so their policies came due three days ago); one is read now.
  const fiveDaysAgo = new Date(Date.now() - 5 * 86_400_000).toISOString();
  const due = new Date(Date.now() - 3 * 86_400_000).toISOString();
  await v.vault.db.updateTable('datapoints').set({ modified_date: fiveDaysAgo }).where('entity_id', 'in', [unread, read]).execute();
  await v.vault.db.updateTable('idle_retention').set({ next_check: due }).where('entity_id', 'in', [unread, read]).execute();
  t.is((await readAttribute(read, attr)).status, 200);
  await v.vault.retention.sweep(new Date(Date.now() + 86_400_000));
  t.is((await readAttribute(unread, attr)).status, 404, 'unread for five days: deleted');
  t.is((await readAttribute(read, attr)).status, 200, 'read a day ago: kept');
  await v.vault.retention.sweep(new Date(Date.now() + 3 * 86_400_000));
  t.is((await readAttribute(read, attr)).status, 404, 'three days after its last read: deleted');
});

async function audit(event: Record<string, unknown>): Promise<Response> {
  return v.request('POST', '/auditlogs', { body: event });
}

test('activity rules: a block refuses the audit event with the interface’s text; an alert names the event', async (t) => {
  const app = uid('app');
  const attr = await define(uid('EMAIL'));
  const alertKey = await rule({
    type: 'activity',
    constraint: { type: 'all', constraints: [{ type: 'application', operator: 'any', applications: [app] }, { type: 'eventType', eventTypes: ['STORE'] }] },
    action: { type: 'alert', alertLevel: 'WARNING', message: 'stored elsewhere' },
  });
  await rule({
    type: 'activity',
    constraint: { type: 'all', constraints: [{ type: 'application', operator: 'any', applications: [app] }, { type: 'eventType', eventTypes: ['DELETE'] }] },
    action: { type: 'block', message: 'deletes are not allowed' },
  });
  const subject = uid('s');
  const stored = await audit({ eventType: 'STORE', subjectId: subject, applicationId: app, data: { attribute: attr } });
  t.is(stored.status, 200, JSON.stringify(stored.body));
  const alerts = await alertsOf(alertKey);
  t.is(alerts.length, 1);
  t.like(alerts[0], { eventType: 'STORE', entityId: subject, attribute: attr, dataPointId: stored.body.dataPointId, level: 'WARNING' });
  const deleted = await audit({ eventType: 'DELETE', dataPointId: stored.body.dataPointId, applicationId: app });
  t.is(deleted.status, 403);
  t.is(deleted.body.message, BLOCKED);
  const otherApp = await audit({ eventType: 'DELETE', dataPointId: stored.body.dataPointId, applicationId: uid('other') });
  t.is(otherApp.status, 200, 'the rule is about one application');
});

test('data rules run on the value an audit STORE reports: a block refuses it with the interface’s text', async (t) => {
  const attr = await define(uid('SECRET'));
  await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'user', attribute: attr, predicate: 'eq', value: 'forbidden' }] }, action: { type: 'block', message: 'own text' } });
  const refused = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr, value: 'forbidden' } });
  t.is(refused.status, 403);
  t.is(refused.body.message, BLOCKED);
  const fine = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr, value: 'fine' } });
  t.is(fine.status, 200);
});

test('activity tag action tags the point the event is about', async (t) => {
  const attr = await define(uid('DOC'));
  const tag = uid('read_by_app').toLowerCase();
  const app = uid('reader');
  await rule({
    type: 'activity',
    constraint: { type: 'all', constraints: [on(attr), { type: 'eventType', eventTypes: ['READ'] }, { type: 'application', operator: 'any', applications: [app] }] },
    action: { type: 'tag', tag },
  });
  const stored = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: app, data: { attribute: attr } });
  t.is((await audit({ eventType: 'READ', dataPointId: stored.body.dataPointId, applicationId: app })).status, 200);
  const tags = await v.vault.db.selectFrom('datapoint_tags').select('tag').where('datapoint_id', '=', stored.body.dataPointId).execute();
  t.deepEqual(
    tags.map((r) => r.tag),
    [tag],
  );
});

test('a rule deleted is no longer evaluated', async (t) => {
  const attr = await define(uid('GONE'));
  const key = await rule({ constraint: on(attr), action: { type: 'block' } });
  t.is((await store(uid('e'), [{ attribute: attr, value: 'x' }])).status, 403);
  t.is((await v.request('DELETE', `/rules/${key}`)).status, 200);
  t.is((await store(uid('e'), [{ attribute: attr, value: 'x' }])).status, 200);
});
