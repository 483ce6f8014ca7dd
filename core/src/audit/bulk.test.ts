import test from 'ava';
import fc from 'fast-check';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes, hostileJson } from '../testing/fuzz.js';
import { activityCount, defineAttribute, pointCount, recordsOf, stubRules, unique } from './fixtures.js';

let v: TestVault;
const seen = { data: [] as unknown[], activity: [] as unknown[] };
const EMAIL = unique('EMAIL');
const NAME = unique('NAME');
const AGE = unique('AGE');

test.before(async () => {
  v = await startTestVault();
  v.vault.rules = stubRules(seen);
  await defineAttribute(v, EMAIL);
  await defineAttribute(v, NAME, { first: 'string', last: 'string' });
  await defineAttribute(v, AGE, 'int');
});
test.after.always(async () => v?.close());

const bulk = (body: unknown, apiKey?: string) => v.request('POST', '/auditlogs/bulk', { body, apiKey });

function store(subjectId: string, attribute: string, extra: Record<string, unknown> = {}) {
  const { value, ...rest } = extra;
  return { eventType: 'STORE', subjectId, applicationId: 'crm', data: value === undefined ? { attribute } : { attribute, value }, ...rest };
}

test('a bulk answers an array of bare summaries, in order', async (t) => {
  const subject = unique('subject');
  const id = unique('point');
  const res = await bulk([
    store(subject, EMAIL, { dataPointId: id, value: 'a@example.org' }),
    store(subject, NAME, { value: { first: 'Ada', last: 'Lovelace' } }),
    { eventType: 'READ', dataPointId: id, applicationId: 'crm' },
    { eventType: 'UPDATE', dataPointId: id, applicationId: 'crm', data: { value: 'b@example.org' } },
    { eventType: 'DELETE', dataPointId: id, applicationId: 'crm' },
  ]);
  t.is(res.status, 200);
  t.is(res.body.length, 5);
  t.deepEqual(res.body[0], { eventType: 'STORE', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.is(res.body[1].subPoints.length, 2);
  t.deepEqual(res.body.slice(2).map((s: any) => [s.eventType, s.dataPointId, s.subjectId, s.attribute]), [
    ['READ', id, subject, EMAIL],
    ['UPDATE', id, subject, EMAIL],
    ['DELETE', id, subject, EMAIL],
  ]);
  // Stored, read, updated and deleted within the bulk: the point is gone, its history is not.
  t.is(await v.vault.db.selectFrom('datapoints').select('id').where('id', '=', id).executeTakeFirst(), undefined);
  const history = await v.request('GET', '/activity', { query: { dataPointId: id } });
  t.deepEqual(history.body.data.map((r: any) => r.eventType), ['STORE', 'READ', 'UPDATE', 'DELETE']);
});

test('an empty bulk is an empty answer', async (t) => {
  const res = await bulk([]);
  t.is(res.status, 200);
  t.deepEqual(res.body, []);
});

test('a point deleted earlier in a bulk can be stored again under its id', async (t) => {
  const subject = unique('subject');
  const id = unique('point');
  t.is((await bulk([store(subject, NAME, { dataPointId: id, value: { first: 'A' } })])).status, 200);
  const res = await bulk([
    { eventType: 'DELETE', dataPointId: id, applicationId: 'crm' },
    store(subject, NAME, { dataPointId: id, value: { last: 'B' } }),
  ]);
  t.is(res.status, 200);
  const rows = await v.vault.db.selectFrom('datapoints').select(['id', 'attribute']).where((eb) => eb.or([eb('id', '=', id), eb('structure_root_id', '=', id)])).execute();
  t.deepEqual(rows.map((r) => r.attribute).sort(), [NAME, `${NAME}.last`]);
});

test('a repeated bulk STORE of the same id, subject and attribute is accepted unchanged', async (t) => {
  const subject = unique('subject');
  const id = unique('point');
  const first = await bulk([store(subject, NAME, { dataPointId: id, value: { first: 'Ada' } })]);
  t.is(first.status, 200);
  const before = await v.vault.db.selectFrom('datapoints').selectAll().where('entity_id', '=', subject).orderBy('id').execute();
  const again = await bulk([store(subject, NAME, { dataPointId: id, value: { first: 'Ada' } }), store(subject, NAME, { dataPointId: id })]);
  t.is(again.status, 200);
  // Answered as the first time: the summary lists the point's sub-points (none for a STORE without a value).
  t.deepEqual(again.body[0], first.body[0]);
  t.deepEqual(again.body[1], first.body[0]);
  const after = await v.vault.db.selectFrom('datapoints').selectAll().where('entity_id', '=', subject).orderBy('id').execute();
  t.deepEqual(after, before, 'the point and its sub-points are untouched');
});

test('a resent STORE of a structured value lists the existing sub-points, as the first answer did', async (t) => {
  const subject = unique('subject');
  const id = unique('point');
  const event = store(subject, NAME, { dataPointId: id, value: { first: 'Ada', last: 'Lovelace' } });
  const first = await bulk([event]);
  t.is(first.status, 200);
  t.deepEqual(first.body[0].subPoints.map((s: any) => s.attribute), [`${NAME}.first`, `${NAME}.last`]);
  // A sidecar redelivering the same report, alone and beside a STORE of the same point made in the same bulk.
  const again = await bulk([event]);
  t.is(again.status, 200);
  t.deepEqual(again.body, first.body);
  const other = unique('point');
  const within = await bulk([store(subject, NAME, { dataPointId: other, value: { last: 'B' } }), store(subject, NAME, { dataPointId: other, value: { last: 'B' } })]);
  t.is(within.status, 200);
  t.deepEqual(within.body[1], within.body[0]);
  t.is(within.body[0].subPoints.length, 1);
  // A sub-point deleted since is no longer listed.
  const last = first.body[0].subPoints[1].dataPointId;
  t.is((await bulk([{ eventType: 'DELETE', dataPointId: last, applicationId: 'crm' }, event])).body[1].subPoints.length, 1);
  t.deepEqual((await bulk([event])).body[0].subPoints, [first.body[0].subPoints[0]]);
});

test.serial('a bulk STORE of an id in use by another subject or attribute is 409 Data point ID is in use', async (t) => {
  const subject = unique('subject');
  const id = unique('point');
  await bulk([store(subject, EMAIL, { dataPointId: id })]);
  const count = await activityCount(v);
  const otherSubject = await bulk([store(subject, EMAIL), store(unique('other'), EMAIL, { dataPointId: id })]);
  t.is(otherSubject.status, 409);
  t.is(otherSubject.body.message, 'Data point ID is in use');
  t.is(otherSubject.body.index, 1);
  const otherAttribute = await bulk([store(subject, AGE, { dataPointId: id })]);
  t.is(otherAttribute.status, 409);
  t.is(otherAttribute.body.message, 'Data point ID is in use');
  t.is(otherAttribute.body.index, 0);
  const withinBulk = await bulk([store(subject, AGE, { dataPointId: `${id}-x` }), store(subject, EMAIL, { dataPointId: `${id}-x` })]);
  t.is(withinBulk.status, 409);
  t.is(withinBulk.body.index, 1);
  t.is(await activityCount(v), count);
});

test.serial('every error of a bulk carries its index and its bulk status, and nothing is recorded', async (t) => {
  const { body: [existing] } = await bulk([store(unique('subject'), EMAIL)]);
  const good = store(unique('subject'), EMAIL);
  const cases: Array<[unknown, number, string]> = [
    [{ applicationId: 'crm', dataPointId: 'x' }, 400, 'Event type is required'],
    [{ eventType: 'COPY', applicationId: 'crm', dataPointId: 'x' }, 400, 'Unrecognized event type'],
    [{ eventType: 'READ', applicationId: 'crm' }, 400, 'Data point ID is required for events other than creation'],
    [{ ...store('s', EMAIL), timestamp: new Date(Date.now() + 2 * 86400_000).toISOString() }, 400, 'Timestamp out of range'],
    [{ eventType: 'READ', dataPointId: 'x' }, 400, 'Application ID is required'],
    [store('s', unique('UNKNOWN')), 400, 'No such attribute'],
    [store('ctl\u0001x', EMAIL), 400, 'Entity ID must be 1 to 512 characters, without control characters'],
    [{ eventType: 'READ', dataPointId: existing.dataPointId, subjectId: 'tab\there', applicationId: 'crm' }, 400, 'Entity ID must be 1 to 512 characters, without control characters'],
    [store('s', AGE, { value: 'old' }), 400, `Expected int for value of attribute ${AGE}`],
    [store('s', NAME, { value: 'Ada' }), 400, `Expected object for value of attribute ${NAME}`],
    [store('s', NAME, { value: { nick: 'A' } }), 400, `Unknown sub-attribute ${NAME}.nick`],
    [{ eventType: 'UPDATE', dataPointId: existing.dataPointId, applicationId: 'crm', data: { value: 5 } }, 400, `Expected string for value of attribute ${EMAIL}`],
    [{ eventType: 'READ', dataPointId: unique('nothing'), applicationId: 'crm' }, 404, 'Data Not Found'],
    [{ eventType: 'UPDATE', dataPointId: existing.dataPointId, applicationId: 'crm', data: { attribute: AGE } }, 409, 'Attribute given for datapoint ID does not match attribute of existing point with that ID'],
    [{ eventType: 'UPDATE', dataPointId: existing.dataPointId, subjectId: 'someone-else', applicationId: 'crm' }, 409, 'Data subject ID given for datapoint ID does not match attribute of existing point with that ID'],
    [store('s', EMAIL, { value: 'BLOCK ME' }), 403, 'The provided data could not be stored, as a rule disallows it'],
    [{ ...store('s', EMAIL), applicationId: 'blocked-app' }, 403, 'The provided data could not be stored, as a rule disallows it'],
  ];
  const count = await activityCount(v);
  const points = await pointCount(v);
  for (const [event, status, message] of cases) {
    const res = await bulk([good, good, event, good]);
    t.is(res.status, status, message);
    t.is(res.body.message, message);
    t.is(res.body.index, 2, message);
  }
  t.is(await activityCount(v), count, 'not one event was recorded');
  t.is(await pointCount(v), points, 'not one point was written');
});

test.serial('the first failing event is the one answered', async (t) => {
  const res = await bulk([store('s', EMAIL), store('s', unique('NOPE')), { eventType: 'READ' }]);
  t.is(res.status, 400);
  t.is(res.body.message, 'No such attribute');
  t.is(res.body.index, 1);
});

test.serial('schema violations of a bulk name the event too', async (t) => {
  const count = await activityCount(v);
  const res = await bulk([store('s', EMAIL), store('s', EMAIL), { ...store('s', EMAIL), surprise: true }]);
  t.is(res.status, 400);
  t.is(res.body.index, 2);
  const notArray = await bulk(store('s', EMAIL));
  t.is(notArray.status, 400);
  t.is(notArray.body.index, undefined);
  t.is(await activityCount(v), count);
});

test('a repeated eventId in a later bulk, or twice in one bulk, is answered as before and recorded once', async (t) => {
  const a = unique('evt');
  const b = unique('evt');
  const subject = unique('subject');
  const first = await bulk([{ ...store(subject, EMAIL), eventId: a }]);
  t.is(first.status, 200);
  const second = await bulk([{ ...store(subject, EMAIL), eventId: a }, { ...store(subject, AGE), eventId: b }, { ...store(subject, AGE), eventId: b }]);
  t.is(second.status, 200);
  t.deepEqual(second.body[0], first.body[0]);
  t.deepEqual(second.body[2], second.body[1]);
  t.is((await recordsOf(v, a)).length, 1);
  t.is((await recordsOf(v, b)).length, 1);
  const single = await v.request('POST', '/auditlogs', { body: { ...store(subject, EMAIL), eventId: b } });
  t.deepEqual(single.body, second.body[1], 'the single endpoint shares the memory');
});

test('a bulk resent after a partial crash records only what is new', async (t) => {
  const subject = unique('subject');
  const events = Array.from({ length: 20 }, (_, i) => ({ ...store(subject, EMAIL, { dataPointId: `${subject}-${i}` }), eventId: `${subject}-e${i}` }));
  const firstHalf = await bulk(events.slice(0, 10));
  const all = await bulk(events);
  t.is(all.status, 200);
  t.deepEqual(all.body.slice(0, 10), firstHalf.body);
  await v.vault.sealer.sealAll();
  const rows = await v.vault.db.selectFrom('activity_log').select('event_id').where('subject_id', '=', subject).execute();
  t.is(rows.length, 20);
});

test('concurrent duplicate bulks are recorded once', async (t) => {
  const subject = unique('subject');
  const events = Array.from({ length: 50 }, (_, i) => ({ ...store(subject, EMAIL), eventId: `${subject}-e${i}` }));
  const answers = await Promise.all(Array.from({ length: 6 }, () => bulk(events)));
  t.true(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => [a.status, a.body.message])));
  for (const a of answers) t.deepEqual(a.body, answers[0].body);
  await v.vault.sealer.sealAll();
  const rows = await v.vault.db.selectFrom('activity_log').select('event_id').where('subject_id', '=', subject).execute();
  t.is(rows.length, 50);
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', subject).execute();
  t.is(points.length, 50);
});

test('hostile bodies never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/auditlogs' },
    { method: 'POST', url: '/auditlogs/bulk' },
    { method: 'POST', url: '/auditlogs/bulk', body: fc.array(hostileJson, { maxLength: 5 }) },
  ]);
});

/** Events that are often valid and often almost valid: the interesting edge. */
const mostly = <T>(good: fc.Arbitrary<T>, bad: fc.Arbitrary<T>) => fc.oneof({ arbitrary: good, weight: 12 }, { arbitrary: bad, weight: 1 });
const plausibleEvent = fc.record(
  {
    eventType: mostly(fc.constantFrom('READ', 'STORE', 'UPDATE', 'DELETE'), fc.constantFrom('store', '', null)),
    dataPointId: mostly(fc.constantFrom('p-1', 'p-2', 'p-3'), fc.string({ maxLength: 8 })),
    subjectId: mostly(fc.constantFrom('fz-1', 'fz-2'), fc.constant('')),
    applicationId: mostly(fc.constant('crm'), fc.constantFrom('', 'blocked-app')),
    eventId: fc.string({ minLength: 1, maxLength: 3 }),
    timestamp: mostly(fc.constant('2020-01-01T00:00:00Z'), fc.constantFrom('2999-01-01T00:00:00Z', 'not a date', 0)),
    data: fc.record(
      {
        attribute: mostly(fc.constantFrom(EMAIL, NAME, AGE), fc.constantFrom('NOPE', '')),
        value: fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.constant({ first: 'x' }), fc.constant({ bad: 1 }), fc.constant('BLOCK ME')),
        tags: fc.array(fc.string({ maxLength: 5 }), { maxLength: 2 }),
      },
      { requiredKeys: ['attribute'] },
    ),
  },
  { requiredKeys: ['eventType', 'applicationId', 'subjectId', 'data'] },
);

test.serial('a failing bulk never leaves part of itself behind; a passing one records every new event', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(plausibleEvent, { maxLength: 8 }), async (events) => {
      const before = await activityCount(v);
      const points = await pointCount(v);
      const res = await bulk(events);
      if (res.status >= 500) return false;
      if (res.status !== 200) {
        return (await activityCount(v)) === before && (await pointCount(v)) === points && Number.isInteger(res.body.index);
      }
      return res.body.length === events.length && (await activityCount(v)) <= before + events.length;
    }),
    { numRuns: 150 },
  );
  t.pass();
});

// Serial: it counts every record and point, which the concurrent tests add to.
test.serial('a bulk carrying more than 50,000 values, however nested, is refused with 413 and records nothing', async (t) => {
  const DIARY = unique('DIARY');
  await defineAttribute(v, DIARY, { code: 'string', '[notes]': { text: 'string' } });
  const subject = unique('subject');
  const notes = Array.from({ length: 999 }, (_, i) => ({ text: `note ${i}` }));
  // 1,000 values an event: fifty fit, the fifty-first is one too many.
  const events = (n: number) => Array.from({ length: n }, () => store(subject, DIARY, { value: { code: 'c', notes } }));
  const before = { records: await activityCount(v), points: await pointCount(v) };
  const refused = await bulk(events(51));
  t.is(refused.status, 413);
  t.is(refused.body.message, 'Audit events may carry at most 50000 values in one request, each leaf of a structured value counted');
  t.deepEqual({ records: await activityCount(v), points: await pointCount(v) }, before);
  t.is((await bulk(events(50))).status, 200);
});
