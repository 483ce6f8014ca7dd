/**
 * Control characters in the text an audit event names its origin and its ids with: refused,
 * since that text reaches the activity log, the console, the logs and exports, where an
 * escape sequence or a line break can forge or hide what is shown. Ids the vault already
 * holds keep working.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { activityCount, defineAttribute, pointCount, recordsOf, stubRules, unique } from './fixtures.js';

let v: TestVault;
const seen = { data: [] as unknown[], activity: [] as unknown[] };
const EMAIL = unique('EMAIL');

test.before(async () => {
  v = await startTestVault();
  v.vault.rules = stubRules(seen);
  await defineAttribute(v, EMAIL);
});
test.after.always(async () => v?.close());

// Serial where counting: the other tests of the file record events meanwhile.
const post = (body: unknown) => v.request('POST', '/auditlogs', { body });
const bulk = (body: unknown) => v.request('POST', '/auditlogs/bulk', { body });

function store(extra: Record<string, unknown> = {}) {
  return { eventType: 'STORE', subjectId: unique('subject'), applicationId: 'crm', data: { attribute: EMAIL }, ...extra };
}

const message = (field: string, max: number) => `${field} must be at most ${max} characters, without control characters`;

/** Each field, with text holding a C0 control, DEL, or a C1 control (NEL, which some viewers take for a line break). */
const cases: Array<[string, Record<string, unknown>, string]> = [
  ['applicationId', { applicationId: 'crm\u001b[2K' }, message('Application ID', 512)],
  ['applicationUser', { applicationUser: 'clerk\nadmin logged in' }, message('Application user', 1024)],
  ['dataStoreName', { dataStoreName: 'crm-db\u007f' }, message('Data store name', 1024)],
  ['dataStoreServer', { dataStoreServer: 'db1\r' }, message('Data store server', 1024)],
  ['dataStoreEntityName', { dataStoreEntityName: 'users\u0085' }, message('Data store entity name', 1024)],
  ['location.country', { location: { country: 'D\u0008E' } }, message('Location country', 64)],
  ['location.subdivision', { location: { country: 'DE', subdivision: 'BY\t' } }, message('Location subdivision', 64)],
  ['location.city', { location: { city: 'Munich\u009b31m' } }, message('Location city', 256)],
  ['eventId', { eventId: `evt\u0007${unique('x')}` }, message('Event ID', 512)],
  ['dataPointId of a STORE', { dataPointId: `point\n${unique('x')}` }, message('Data point ID', 512)],
  ['data.dataPointId of a STORE', { data: { attribute: EMAIL, dataPointId: `point\u0001${unique('x')}` } }, message('Data point ID', 512)],
];

test.serial('a single event with a control character in a field that names it is refused with 400, and nothing is recorded', async (t) => {
  const count = await activityCount(v);
  const points = await pointCount(v);
  for (const [field, extra, expected] of cases) {
    const res = await post(store(extra));
    t.is(res.status, 400, field);
    t.is(res.body.message, expected, field);
    t.is(res.body.index, undefined, field);
  }
  t.is(await activityCount(v), count, 'no event was recorded');
  t.is(await pointCount(v), points, 'no point was registered');
});

test.serial('in a bulk, the failing event is named by its index, and nothing of the bulk is recorded', async (t) => {
  const count = await activityCount(v);
  const points = await pointCount(v);
  for (const [field, extra, expected] of cases) {
    const res = await bulk([store(), store(extra), store()]);
    t.is(res.status, 400, field);
    t.is(res.body.message, expected, field);
    t.is(res.body.index, 1, field);
  }
  t.is(await activityCount(v), count, 'no event was recorded');
  t.is(await pointCount(v), points, 'no point was written');
});

test.serial('a READ, UPDATE or DELETE that would register a point the vault has not seen cannot give it such an id', async (t) => {
  const points = await pointCount(v);
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    const subjectId = unique('subject');
    const event = { eventType, dataPointId: `point\u001b${unique('x')}`, subjectId, applicationId: 'crm', data: { attribute: EMAIL } };
    const single = await post(event);
    t.is(single.status, 400, eventType);
    t.is(single.body.message, message('Data point ID', 512), eventType);
    const many = await bulk([store(), event]);
    t.is(many.status, 400, eventType);
    t.like(many.body, { message: message('Data point ID', 512), index: 1 }, eventType);
    t.is((await v.request('GET', `/entities/${subjectId}`)).status, 404, 'the subject was not registered either');
  }
  t.is(await pointCount(v), points);
});

test('text without control characters is taken as before, emoji and other scripts included', async (t) => {
  const eventId = unique('evt-😀');
  const res = await post(
    store({
      eventId,
      dataPointId: unique('point-ü'),
      applicationUser: 'José 😀',
      dataStoreName: 'Große DB',
      dataStoreServer: 'db-1.example',
      dataStoreEntityName: 'users',
      location: { country: 'de', subdivision: 'by', city: 'München' },
    }),
  );
  t.is(res.status, 200);
  const [record] = await recordsOf(v, eventId);
  t.like(record, { application_user: 'José 😀', data_store_name: 'Große DB', city: 'München', subdivision: 'DE-BY' });
});

/** What an earlier version let in: the id changed in place, as the data of such a vault holds it. */
async function legacyPoint(): Promise<{ id: string; subjectId: string }> {
  const subjectId = unique('subject');
  const clean = unique('legacy');
  const res = await post(store({ subjectId, dataPointId: clean }));
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  const id = `${clean}\u0007bell`;
  await v.vault.db.updateTable('datapoints').set({ id }).where('id', '=', clean).execute();
  return { id, subjectId };
}

test('a point stored earlier under an id with a control character is still reported on', async (t) => {
  const { id, subjectId } = await legacyPoint();
  // With and without its subject and attribute: it is known, so nothing is registered under the id.
  const read = { eventType: 'READ', dataPointId: id, applicationId: 'crm', eventId: unique('read') };
  const full = { ...read, subjectId, data: { attribute: EMAIL }, eventId: unique('read') };
  for (const event of [read, full]) {
    const res = await post(event);
    t.is(res.status, 200, JSON.stringify(res.body));
    t.deepEqual(res.body, { eventType: 'READ', dataPointId: id, subjectId, attribute: EMAIL });
    t.is((await recordsOf(v, event.eventId)).length, 1);
  }
  const many = await bulk([
    { eventType: 'UPDATE', dataPointId: id, applicationId: 'crm', data: { value: 'new@example.org' } },
    { eventType: 'DELETE', dataPointId: id, subjectId, applicationId: 'crm', data: { attribute: EMAIL } },
  ]);
  t.is(many.status, 200, JSON.stringify(many.body));
  t.deepEqual(many.body.map((s: { eventType: string; dataPointId: string }) => [s.eventType, s.dataPointId]), [['UPDATE', id], ['DELETE', id]]);
});

test('a bulk STORE sent again for a point stored earlier under such an id is accepted unchanged, as any resent STORE', async (t) => {
  const { id, subjectId } = await legacyPoint();
  const res = await bulk([{ eventType: 'STORE', dataPointId: id, subjectId, applicationId: 'crm', data: { attribute: EMAIL } }]);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body, [{ eventType: 'STORE', dataPointId: id, subjectId, attribute: EMAIL }]);
});

test.serial('an event recorded earlier under an event id with a control character is answered as before when sent again', async (t) => {
  const clean = unique('evt');
  const event = store({ eventId: clean });
  const first = await post(event);
  t.is(first.status, 200);
  const eventId = `${clean}\u0085`;
  await v.vault.db.updateTable('activity_event_ids').set({ event_id: eventId }).where('event_id', '=', clean).execute();
  const count = await activityCount(v);
  const again = await post({ ...event, eventId });
  t.is(again.status, 200, JSON.stringify(again.body));
  t.deepEqual(again.body, first.body);
  const inBulk = await bulk([{ ...event, eventId }]);
  t.is(inBulk.status, 200);
  t.deepEqual(inBulk.body, [first.body]);
  t.is(await activityCount(v), count, 'recorded once');
});
