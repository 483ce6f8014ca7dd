import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { activityCount, defineAttribute, recordsOf, stubRules, unique } from './fixtures.js';

let v: TestVault;
const seen = { data: [] as unknown[], activity: [] as unknown[] };
const EMAIL = unique('EMAIL');
const NAME = unique('NAME');
const AGE = unique('AGE');

test.before(async () => {
  v = await startTestVault();
  v.vault.rules = stubRules(seen);
  await defineAttribute(v, EMAIL, 'string', { tags: ['contact'] });
  await defineAttribute(v, NAME, { first: 'string', last: 'string', '[aliases]': 'string' });
  await defineAttribute(v, AGE, 'int');
});
test.after.always(async () => v?.close());

const post = (body: unknown, apiKey?: string) => v.request('POST', '/auditlogs', { body, apiKey });

function store(subjectId: string, attribute: string, extra: Record<string, unknown> = {}) {
  const { value, ...rest } = extra;
  return { eventType: 'STORE', subjectId, applicationId: 'crm', data: value === undefined ? { attribute } : { attribute, value }, ...rest };
}

test('a STORE without an id gets one, creates the subject and a report-only point, and answers the bare summary', async (t) => {
  const subject = unique('subject');
  const res = await post(store(subject, EMAIL, { value: 'ada@example.org' }));
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), ['attribute', 'dataPointId', 'eventType', 'subjectId']);
  t.like(res.body, { eventType: 'STORE', subjectId: subject, attribute: EMAIL });
  t.regex(res.body.dataPointId, /^[0-9a-f-]{36}$/);

  const point = await v.vault.db.selectFrom('datapoints').selectAll().where('id', '=', res.body.dataPointId).executeTakeFirstOrThrow();
  t.is(Number(point.report_only), 1);
  t.is(point.ciphertext, null);
  t.is(point.blind_index, null);
  t.is(point.entity_id, subject);
  const tags = await v.vault.db.selectFrom('datapoint_tags').select('tag').where('datapoint_id', '=', res.body.dataPointId).execute();
  t.deepEqual(tags.map((r) => r.tag), ['contact'], 'the definition’s tags reach the point');
  const entity = await v.vault.db.selectFrom('entities').selectAll().where('id', '=', subject).executeTakeFirstOrThrow();
  t.is(entity.type, 'datasubject');
});

test('the value is shown to the rules and kept nowhere', async (t) => {
  const subject = unique('subject');
  const secret = `secret-${unique('value')}`;
  const res = await post(store(subject, EMAIL, { value: secret }));
  t.is(res.status, 200);
  t.true(seen.data.some((d: any) => d.reportOnly === true && d.points[0].value === secret));
  for (const table of ['datapoints', 'activity_log', 'activity_pending', 'entities', 'datapoint_tags'] as const) {
    const rows = await v.vault.db.selectFrom(table).selectAll().execute();
    t.false(JSON.stringify(rows).includes(secret), `${table} does not hold the value`);
  }
  t.false(v.logs.join('').includes(secret), 'nor do the logs');
  const listed = await v.request('GET', '/activity', { query: { subjectId: subject } });
  t.false(JSON.stringify(listed.body).includes(secret));
});

test('a structured value yields sub-points with their own ids, one per leaf', async (t) => {
  const subject = unique('subject');
  const res = await post(store(subject, NAME, { value: { first: 'Ada', last: 'Lovelace', aliases: ['A', 'L'] }, dataPointId: unique('name-point') }));
  t.is(res.status, 200);
  t.is(res.body.subPoints.length, 4);
  t.deepEqual(res.body.subPoints.map((p: any) => p.attribute).sort(), [`${NAME}.aliases`, `${NAME}.aliases`, `${NAME}.first`, `${NAME}.last`]);
  const ids = new Set(res.body.subPoints.map((p: any) => p.dataPointId));
  t.is(ids.size, 4);
  const rows = await v.vault.db.selectFrom('datapoints').selectAll().where('structure_root_id', '=', res.body.dataPointId).execute();
  t.is(rows.length, 4);
  t.true(rows.every((r) => Number(r.report_only) === 1 && r.ciphertext === null && ids.has(r.id)));
});

test('a structured attribute without a value has no sub-points; a primitive one never does', async (t) => {
  const a = await post(store(unique('subject'), NAME));
  t.is(a.status, 200);
  t.is(a.body.subPoints, undefined);
  const b = await post(store(unique('subject'), AGE, { value: 42 }));
  t.is(b.body.subPoints, undefined);
});

test('a subject an event registers follows the entity id rule, so the rest of the API finds it', async (t) => {
  const control = await post(store('ctl\u0001x', EMAIL));
  t.is(control.status, 400);
  t.is(control.body.message, 'Entity ID must be 1 to 512 characters, without control characters');
  t.is((await v.request('GET', '/entities')).body.data.filter((e: { id: string }) => e.id.startsWith('ctl')).length, 0, 'no subject registered');
  // 300 emoji are 300 characters: registered, and found by the id as given.
  const emoji = '😀'.repeat(300);
  t.is((await post(store(emoji, EMAIL))).status, 200);
  const read = await v.request('GET', `/entities/${encodeURIComponent(emoji)}`);
  t.is(read.status, 200);
  t.is(read.body.data.id, emoji);
});

test('tag names an event carries follow the rule of every other path that creates tags', async (t) => {
  const subject = unique('subject');
  const bad = `${unique('tag')}\u0001`;
  const message = 'Tag name must be 1 to 256 characters, without control characters';
  const single = await post(store(subject, EMAIL, { data: { attribute: EMAIL, tags: [bad] } }));
  t.is(single.status, 400);
  t.is(single.body.message, message);
  const bulk = await v.request('POST', '/auditlogs/bulk', { body: [store(subject, EMAIL), { ...store(subject, EMAIL), data: { attribute: EMAIL, tags: ['fine', bad] } }] });
  t.is(bulk.status, 400);
  t.like(bulk.body, { message, index: 1 });
  const unseen = await post({ eventType: 'READ', dataPointId: unique('point'), subjectId: subject, applicationId: 'crm', data: { attribute: EMAIL, tags: [bad] } });
  t.is(unseen.status, 400);
  t.is(unseen.body.message, message);
  t.is((await v.request('GET', `/tags/${encodeURIComponent(bad)}`)).status, 404, 'no such tag was created');
  t.is((await v.request('GET', `/entities/${subject}`)).status, 404, 'nor the subject');
  // An empty name is dropped, as before: some clients send the tags they have, none as [""].
  t.is((await post(store(subject, EMAIL, { data: { attribute: EMAIL, tags: [''] } }))).status, 200);
});

test('a caller-chosen id is kept; a second STORE with it is 409', async (t) => {
  const id = unique('point');
  const subject = unique('subject');
  const first = await post(store(subject, EMAIL, { dataPointId: id }));
  t.is(first.status, 200);
  t.is(first.body.dataPointId, id);
  const again = await post(store(subject, EMAIL, { dataPointId: id }));
  t.is(again.status, 409);
  t.is(again.body.message, 'Cannot create data point with ID, as there is already a point with that ID');
  t.is(again.body.index, undefined);
});

test('data.dataPointId names the new point when the event has none', async (t) => {
  const id = unique('point');
  const res = await post({ ...store(unique('subject'), EMAIL), data: { attribute: EMAIL, dataPointId: id } });
  t.is(res.body.dataPointId, id);
});

test('a STORE naming two different ids, at the top and in data, is refused and registers neither', async (t) => {
  const [top, inData] = [unique('top'), unique('in-data')];
  const res = await post({ ...store(unique('subject'), EMAIL, { dataPointId: top }), data: { attribute: EMAIL, dataPointId: inData } });
  t.is(res.status, 400);
  t.is(res.body.message, 'dataPointId and data.dataPointId name different points');
  for (const id of [top, inData]) t.is((await post({ eventType: 'READ', dataPointId: id, applicationId: 'crm' })).status, 404);
  const same = unique('same');
  t.is((await post({ ...store(unique('subject'), EMAIL, { dataPointId: same }), data: { attribute: EMAIL, dataPointId: same } })).body.dataPointId, same);
});

test('READ, UPDATE and DELETE answer with the subject and attribute of the point', async (t) => {
  const subject = unique('subject');
  const { body: stored } = await post(store(subject, EMAIL));
  const id = stored.dataPointId;
  const read = await post({ eventType: 'READ', dataPointId: id, applicationId: 'crm', applicationUser: 'alice' });
  t.deepEqual(read.body, { eventType: 'READ', dataPointId: id, subjectId: subject, attribute: EMAIL });
  const update = await post({ eventType: 'UPDATE', dataPointId: id, applicationId: 'crm', data: { value: 'new@example.org', tags: ['ignored'] } });
  t.deepEqual(update.body, { eventType: 'UPDATE', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.true(seen.data.some((d: any) => d.eventType === 'UPDATE' && d.points[0].value === 'new@example.org'));
  const del = await post({ eventType: 'DELETE', dataPointId: id, subjectId: subject, applicationId: 'crm' });
  t.deepEqual(del.body, { eventType: 'DELETE', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.is(await v.vault.db.selectFrom('datapoints').select('id').where('id', '=', id).executeTakeFirst(), undefined);

  const after = await post({ eventType: 'READ', dataPointId: id, applicationId: 'crm' });
  t.is(after.status, 404);
  t.is(after.body.message, 'Data Not Found');
  const history = await v.request('GET', '/activity', { query: { dataPointId: id } });
  t.deepEqual(history.body.data.map((r: any) => r.eventType), ['STORE', 'READ', 'UPDATE', 'DELETE'], 'the history stays');
});

test('deleting a structured point removes its sub-points', async (t) => {
  const { body } = await post(store(unique('subject'), NAME, { value: { first: 'Grace' } }));
  await post({ eventType: 'DELETE', dataPointId: body.dataPointId, applicationId: 'crm' });
  const rows = await v.vault.db.selectFrom('datapoints').select('id').where('structure_root_id', '=', body.dataPointId).execute();
  t.is(rows.length, 0);
});

test('an UPDATE of a sub-point checks the value against the sub-attribute’s schema', async (t) => {
  const { body } = await post(store(unique('subject'), NAME, { value: { first: 'Grace', aliases: ['G'] } }));
  const first = body.subPoints.find((p: any) => p.attribute === `${NAME}.first`).dataPointId;
  const ok = await post({ eventType: 'UPDATE', dataPointId: first, applicationId: 'crm', data: { value: 'Gracie' } });
  t.is(ok.status, 200);
  t.is(ok.body.attribute, `${NAME}.first`);
  const bad = await post({ eventType: 'UPDATE', dataPointId: first, applicationId: 'crm', data: { value: 7 } });
  t.is(bad.status, 422);
  t.is(bad.body.message, `Expected string for value of attribute ${NAME}.first`);
});

test('an UPDATE moves the point’s modification date forward, never back', async (t) => {
  const { body } = await post(store(unique('subject'), EMAIL, { timestamp: '2024-01-01T00:00:00Z' }));
  const modified = async () =>
    (await v.vault.db.selectFrom('datapoints').select('modified_date').where('id', '=', body.dataPointId).executeTakeFirstOrThrow()).modified_date;
  t.is(await modified(), '2024-01-01T00:00:00.000Z');
  await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, applicationId: 'crm', timestamp: '2024-03-01T00:00:00+01:00' });
  t.is(await modified(), '2024-02-29T23:00:00.000Z');
  await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, applicationId: 'crm', timestamp: '2024-02-01T00:00:00Z' });
  t.is(await modified(), '2024-02-29T23:00:00.000Z');
});

test('an UPDATE of a structured point moves its sub-points’ modification dates with it', async (t) => {
  const { body } = await post(store(unique('subject'), NAME, { value: { first: 'Ada', last: 'Lovelace' }, timestamp: '2024-01-01T00:00:00Z' }));
  t.is(body.subPoints.length, 2);
  await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, applicationId: 'crm', timestamp: '2024-05-01T00:00:00Z' });
  const rows = await v.vault.db.selectFrom('datapoints').select(['id', 'modified_date']).where((eb) => eb.or([eb('id', '=', body.dataPointId), eb('structure_root_id', '=', body.dataPointId)])).execute();
  t.is(rows.length, 3);
  t.true(rows.every((r) => r.modified_date === '2024-05-01T00:00:00.000Z'), JSON.stringify(rows));
});

test('tags added by data rules reach the report-only point', async (t) => {
  const { body } = await post(store(unique('subject'), EMAIL, { value: 'TAG ME' }));
  const tags = await v.vault.db.selectFrom('datapoint_tags').select('tag').where('datapoint_id', '=', body.dataPointId).orderBy('tag').execute();
  t.deepEqual(tags.map((r) => r.tag), ['contact', 'tagged_by_rule']);
});

test.serial('the six exact 400 answers of a single event', async (t) => {
  const cases: Array<[unknown, string]> = [
    [{ applicationId: 'crm', dataPointId: 'x' }, 'Event type is required'],
    [{ eventType: null, applicationId: 'crm', dataPointId: 'x' }, 'Event type is required'],
    [{ eventType: 'WRITE', applicationId: 'crm', dataPointId: 'x' }, 'Unrecognized event type'],
    [{ eventType: 'read', applicationId: 'crm', dataPointId: 'x' }, 'Unrecognized event type'],
    [{ eventType: 7, applicationId: 'crm', dataPointId: 'x' }, 'Unrecognized event type'],
    [{ eventType: 'READ', applicationId: 'crm' }, 'Data point ID is required for events other than creation'],
    [{ eventType: 'DELETE', applicationId: 'crm', dataPointId: '' }, 'Data point ID is required for events other than creation'],
    [{ eventType: 'UPDATE', applicationId: 'crm', data: { dataPointId: 'x' } }, 'Data point ID is required for events other than creation'],
    [{ ...store('s', EMAIL), timestamp: new Date(Date.now() + 25 * 3600_000).toISOString() }, 'Timestamp out of range'],
    [{ eventType: 'READ', dataPointId: 'x' }, 'Application ID is required'],
    [{ eventType: 'READ', dataPointId: 'x', applicationId: '' }, 'Application ID is required'],
    [store('s', unique('UNKNOWN')), 'No such attribute'],
    [{ ...store('s', EMAIL), subjectId: undefined }, 'Data subject ID is required for creation'],
    [{ eventType: 'STORE', subjectId: 's', applicationId: 'crm' }, 'Attribute is required for creation'],
    [{ ...store('s', EMAIL), timestamp: 'yesterday' }, 'Timestamp must be an ISO 8601 date-time'],
    [{ ...store('s', EMAIL), timestamp: '2024-02-30T00:00:00Z' }, 'Timestamp must be an ISO 8601 date-time'],
    [{ ...store('s', EMAIL), data: { attribute: EMAIL, sensitivity: 'SECRET' } }, 'Sensitivity must be one of NORMAL, PERSONAL, SENSITIVE, CONFIDENTIAL'],
    [{ ...store('s', EMAIL), data: { attribute: EMAIL, regulations: [unique('NOREG')] } }, 'No such regulation'],
  ];
  const before = await activityCount(v);
  for (const [body, message] of cases) {
    const res = await post(body);
    t.is(res.status, 400, message);
    t.is(res.body.message, message);
  }
  t.is(await activityCount(v), before, 'nothing was recorded');
});

test('a timestamp up to a day ahead, in the past, or as epoch milliseconds is accepted', async (t) => {
  const soon = new Date(Date.now() + 23 * 3600_000).toISOString();
  for (const timestamp of [soon, '2001-02-03T04:05:06+02:00', 981_173_106_000]) {
    const res = await post(store(unique('subject'), EMAIL, { timestamp }));
    t.is(res.status, 200, String(timestamp));
  }
  const eventId = unique('evt');
  await post(store(unique('subject'), EMAIL, { timestamp: '2001-02-03T04:05:06+02:00', eventId }));
  t.is((await recordsOf(v, eventId))[0].event_time, '2001-02-03T02:05:06.000Z');
});

test('a value that does not fit the schema is 422 on a single event', async (t) => {
  const mismatch = await post(store(unique('subject'), AGE, { value: 'forty' }));
  t.is(mismatch.status, 422);
  t.is(mismatch.body.message, `Expected int for value of attribute ${AGE}`);
  const notObject = await post(store(unique('subject'), NAME, { value: 'Ada' }));
  t.is(notObject.status, 422);
  t.is(notObject.body.message, `Expected object for value of attribute ${NAME}`);
  const sub = await post(store(unique('subject'), NAME, { value: { middle: 'x' } }));
  t.is(sub.status, 422);
  t.is(sub.body.message, `Unknown sub-attribute ${NAME}.middle`);
  const update = await post({ eventType: 'UPDATE', dataPointId: (await post(store(unique('subject'), AGE))).body.dataPointId, applicationId: 'crm', data: { value: true } });
  t.is(update.status, 422);
  t.is(update.body.message, `Expected int for value of attribute ${AGE}`);
});

test('an UPDATE naming another attribute or subject than the point’s is 409', async (t) => {
  const subject = unique('subject');
  const { body } = await post(store(subject, EMAIL));
  const attr = await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, applicationId: 'crm', data: { attribute: AGE, value: 3 } });
  t.is(attr.status, 409);
  t.is(attr.body.message, 'Attribute given for datapoint ID does not match attribute of existing point with that ID');
  const subj = await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, subjectId: unique('other'), applicationId: 'crm' });
  t.is(subj.status, 409);
  t.is(subj.body.message, 'Data subject ID given for datapoint ID does not match attribute of existing point with that ID');
  const same = await post({ eventType: 'UPDATE', dataPointId: body.dataPointId, subjectId: subject, applicationId: 'crm', data: { attribute: EMAIL } });
  t.is(same.status, 200);
});

test('a DELETE naming another subject or attribute than the point’s is 409 and deletes nothing; a READ is recorded against the point', async (t) => {
  const subject = unique('subject');
  const { body } = await post(store(subject, EMAIL));
  const point = () => v.vault.db.selectFrom('datapoints').select('id').where('id', '=', body.dataPointId).executeTakeFirst();
  const other = await post({ eventType: 'DELETE', dataPointId: body.dataPointId, subjectId: unique('other'), applicationId: 'crm', data: { attribute: EMAIL } });
  t.is(other.status, 409);
  t.is(other.body.message, 'Data subject ID given for datapoint ID does not match attribute of existing point with that ID');
  const attr = await post({ eventType: 'DELETE', dataPointId: body.dataPointId, applicationId: 'crm', data: { attribute: AGE } });
  t.is(attr.status, 409);
  t.is(attr.body.message, 'Attribute given for datapoint ID does not match attribute of existing point with that ID');
  const inBulk = await v.request('POST', '/auditlogs/bulk', { body: [{ eventType: 'DELETE', dataPointId: body.dataPointId, subjectId: unique('other'), applicationId: 'crm' }] });
  t.like(inBulk, { status: 409, body: { index: 0 } });
  t.truthy(await point(), 'the point is still there');
  const read = await post({ eventType: 'READ', dataPointId: body.dataPointId, subjectId: unique('other'), applicationId: 'crm' });
  t.is(read.status, 200);
  t.is(read.body.subjectId, subject, 'the answer names the point’s own subject');
  t.is((await post({ eventType: 'DELETE', dataPointId: body.dataPointId, subjectId: subject, applicationId: 'crm' })).status, 200);
  t.is(await point(), undefined);
});

test('READ, UPDATE and DELETE of an unknown point are 404 Data Not Found', async (t) => {
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    const res = await post({ eventType, dataPointId: unique('nothing'), applicationId: 'crm' });
    t.is(res.status, 404);
    t.is(res.body.message, 'Data Not Found');
  }
});

test.serial('a rule that forbids the event is 403 with the exact text, and nothing is kept', async (t) => {
  const subject = unique('subject');
  const before = await activityCount(v);
  const byData = await post(store(subject, EMAIL, { value: 'BLOCK ME' }));
  t.is(byData.status, 403);
  t.is(byData.body.message, 'The provided data could not be stored, as a rule disallows it');
  const byActivity = await post({ ...store(subject, EMAIL), applicationId: 'blocked-app' });
  t.is(byActivity.status, 403);
  t.is(byActivity.body.message, 'The provided data could not be stored, as a rule disallows it');
  t.is(await activityCount(v), before);
  t.is(await v.vault.db.selectFrom('entities').select('id').where('id', '=', subject).executeTakeFirst(), undefined, 'not even the subject');
});

test('activity rules see every event with the body’s application', async (t) => {
  const user = unique('user');
  const { body } = await post({ ...store(unique('subject'), EMAIL), applicationUser: user, location: { country: 'de', city: 'Berlin' } });
  await post({ eventType: 'READ', dataPointId: body.dataPointId, applicationId: 'reporting', applicationUser: user });
  const events = seen.activity.filter((e: any) => e.applicationUser === user) as any[];
  t.deepEqual(events.map((e) => [e.eventType, e.applicationId]), [['STORE', 'crm'], ['READ', 'reporting']]);
  t.deepEqual(events[0].location, { country: 'DE', city: 'Berlin' });
});

test('the API key is required, and the record keeps both the body’s application and the key’s', async (t) => {
  const none = await post(store(unique('subject'), EMAIL), null as unknown as string);
  t.is(none.status, 401);
  const apiKey = await v.createApplication(['*']);
  const eventId = unique('evt');
  const res = await post({ ...store(unique('subject'), EMAIL), eventId, applicationId: 'billing' }, apiKey);
  t.is(res.status, 200);
  const [row] = await recordsOf(v, eventId);
  t.is(row.application_id, 'billing');
  const apps = await v.request('GET', '/applications');
  const submitter = apps.body.data.find((a: any) => a.id === row.recorded_by);
  t.truthy(submitter, 'recorded_by is the submitting application');
  t.false(submitter.admin);
});

test('an application may only report on the attributes it may access', async (t) => {
  const apiKey = await v.createApplication([AGE]);
  const stored = await post(store(unique('subject'), EMAIL), apiKey);
  t.is(stored.status, 403);
  t.is(stored.body.message, 'Forbidden access to attribute');
  const { body } = await post(store(unique('subject'), EMAIL));
  const read = await post({ eventType: 'READ', dataPointId: body.dataPointId, applicationId: 'x' }, apiKey);
  t.is(read.status, 403);
  t.is(read.body.message, 'Forbidden');
  t.is((await post(store(unique('subject'), AGE), apiKey)).status, 200);
});

test('an attribute the subject’s entity type may not hold is 400, as on a vaulted store, on both endpoints', async (t) => {
  const type = unique('venue').toLowerCase();
  t.is((await v.request('POST', '/entitytypes', { body: { key: type } })).status, 201);
  const venue = unique('venue');
  t.is((await v.request('POST', '/entities', { body: { id: venue, type } })).status, 201);
  const pointId = unique('point');
  const stored = await post(store(venue, EMAIL, { dataPointId: pointId }));
  t.is(stored.status, 400);
  t.is(stored.body.message, 'Attribute is not applicable to entity type');
  const registering = await post({ eventType: 'READ', dataPointId: pointId, subjectId: venue, applicationId: 'crm', data: { attribute: EMAIL } });
  t.is(registering.status, 400);
  t.is(registering.body.message, 'Attribute is not applicable to entity type');
  const inBulk = await v.request('POST', '/auditlogs/bulk', { body: [store(unique('subject'), EMAIL), store(venue, AGE)] });
  t.is(inBulk.status, 400);
  t.like(inBulk.body, { message: 'Attribute is not applicable to entity type', index: 1 });
  t.is(await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', venue).executeTakeFirst(), undefined, 'no point registered');
});

test.serial('unknown fields, wrong types and broken JSON are 400 and record nothing', async (t) => {
  const before = await activityCount(v);
  for (const body of [
    { ...store('s', EMAIL), extra: 1 },
    { ...store('s', EMAIL), data: { attribute: EMAIL, colour: 'red' } },
    { ...store('s', EMAIL), location: { planet: 'Mars' } },
    { ...store('s', EMAIL), subjectId: 5 },
    { ...store('s', EMAIL), eventId: 'x'.repeat(600) },
    { ...store('s\u0000', EMAIL) },
    [store('s', EMAIL)],
  ]) {
    const res = await post(body);
    t.is(res.status, 400, JSON.stringify(body).slice(0, 80));
  }
  const broken = await v.request('POST', '/auditlogs', { payload: '{"eventType":', headers: { 'content-type': 'application/json' } });
  t.is(broken.status, 400);
  t.is(await activityCount(v), before);
});

test('null stands for an absent optional field', async (t) => {
  const res = await post({
    eventType: 'STORE',
    subjectId: unique('subject'),
    dataPointId: null,
    applicationId: 'crm',
    applicationUser: null,
    timestamp: null,
    location: null,
    data: { attribute: EMAIL, value: null, tags: null, regulations: null, sensitivity: null, reportOnly: null, accessibility: null, dataPointId: null },
  });
  t.is(res.status, 200);
});

test('a repeated eventId is answered as before and recorded once', async (t) => {
  const eventId = unique('evt');
  const event = { ...store(unique('subject'), NAME, { value: { first: 'Ada' } }), eventId };
  const first = await post(event);
  t.is(first.status, 200);
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', event.subjectId).execute();
  const second = await post(event);
  t.deepEqual(second.body, first.body);
  // Answered from the log even if the resent copy differs or would now be refused.
  const third = await post({ ...event, data: { attribute: unique('GONE') } });
  t.deepEqual(third.body, first.body);
  t.is((await recordsOf(v, eventId)).length, 1);
  const after = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', event.subjectId).execute();
  t.is(after.length, points.length);
});

test('event ids are per submitting application', async (t) => {
  const eventId = unique('evt');
  const other = await v.createApplication(['*']);
  const a = await post({ ...store(unique('subject'), EMAIL), eventId });
  const b = await post({ ...store(unique('subject'), EMAIL), eventId }, other);
  t.is(a.status, 200);
  t.is(b.status, 200);
  t.not(a.body.dataPointId, b.body.dataPointId, 'another application’s answer is not handed out');
  t.is((await recordsOf(v, eventId)).length, 2);
});

test('concurrent duplicates of one event are recorded once and all answered alike', async (t) => {
  const eventId = unique('evt');
  const event = { ...store(unique('subject'), EMAIL), eventId };
  const answers = await Promise.all(Array.from({ length: 12 }, () => post(event)));
  t.true(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.status)));
  t.is(new Set(answers.map((a) => a.body.dataPointId)).size, 1);
  t.is((await recordsOf(v, eventId)).length, 1);
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', event.subjectId).execute();
  t.is(points.length, 1);
});

test('concurrent STOREs of one caller-chosen id: one wins, the others get the 409', async (t) => {
  const id = unique('point');
  const subject = unique('subject');
  const answers = await Promise.all(Array.from({ length: 8 }, () => post(store(subject, EMAIL, { dataPointId: id }))));
  t.is(answers.filter((a) => a.status === 200).length, 1);
  for (const a of answers.filter((x) => x.status !== 200)) {
    t.is(a.status, 409);
    t.is(a.body.message, 'Cannot create data point with ID, as there is already a point with that ID');
  }
});

test('a subdivision sent as its bare code beside a country is kept as the ISO 3166-2 code rules and search use', async (t) => {
  const bare = await post(store(unique('subject'), EMAIL, { location: { country: 'us', subdivision: 'ca' } }));
  const full = await post(store(unique('subject'), EMAIL, { location: { country: 'US', subdivision: 'US-TX' } }));
  const alone = await post(store(unique('subject'), EMAIL, { location: { subdivision: 'ca' } }));
  const place = async (id: string) => v.vault.db.selectFrom('datapoints').select(['country', 'subdivision']).where('id', '=', id).executeTakeFirstOrThrow();
  t.deepEqual(await place(bare.body.dataPointId), { country: 'US', subdivision: 'US-CA' });
  t.deepEqual(await place(full.body.dataPointId), { country: 'US', subdivision: 'US-TX' });
  t.deepEqual(await place(alone.body.dataPointId), { country: null, subdivision: 'CA' }, 'without a country there is nothing to add');
});

test('under a legal hold a reported DELETE is recorded and the report-only point stays', async (t) => {
  const subject = unique('subject');
  const { body } = await post(store(subject, EMAIL));
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, legalHold: true } })).status, 200);
  const point = () => v.vault.db.selectFrom('datapoints').select('id').where('id', '=', body.dataPointId).executeTakeFirst();
  const held = await post({ eventType: 'DELETE', dataPointId: body.dataPointId, applicationId: 'crm' });
  t.is(held.status, 200);
  t.truthy(await point(), 'the point stays while the hold does');
  const deletes = await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'DELETE' } });
  t.is(deletes.body.data.length, 1, 'the delete done elsewhere is on record');
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, legalHold: false } })).status, 200);
  t.is((await post({ eventType: 'DELETE', dataPointId: body.dataPointId, applicationId: 'crm' })).status, 200);
  t.is(await point(), undefined, 'without the hold a DELETE removes it');
});
