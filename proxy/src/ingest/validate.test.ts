import test from 'ava';
import { isIsoDateTime, prepareBatch, stampEvent, validateEvent } from './validate.js';

const store = { eventType: 'STORE', applicationId: 'app', subjectId: 's1', data: { attribute: 'email', value: 'a@b.c' } };
const read = { eventType: 'READ', applicationId: 'app', dataPointId: 'dp1' };

function messageFor(event: unknown): string {
  const outcome = prepareBatch([event]);
  return outcome.rejected[0]?.message ?? '(accepted)';
}

test('valid events of every type pass', (t) => {
  t.true(validateEvent(store).ok);
  // 512 characters, as the vault counts them: 1,024 UTF-16 units.
  t.true(validateEvent({ ...store, subjectId: '😀'.repeat(512) }).ok);
  t.true(validateEvent(read).ok);
  t.true(validateEvent({ ...read, applicationUser: '😀'.repeat(1024), dataStoreName: 'd'.repeat(1024) }).ok);
  t.true(validateEvent({ ...read, eventType: 'DELETE' }).ok);
  // Tags of 256 characters as the vault counts them, and an empty one, which the vault drops.
  t.true(validateEvent({ ...read, data: { tags: ['😀'.repeat(256), ''] } }).ok);
  t.true(
    validateEvent({
      ...read,
      eventType: 'UPDATE',
      subjectId: 's',
      timestamp: '2024-05-01T12:00:00.123+02:00',
      applicationUser: 'u',
      dataStoreName: 'db',
      dataStoreServer: 'db1',
      dataStoreEntityName: 'users',
      location: { country: 'DE', subdivision: 'BE', city: 'Berlin' },
      eventId: 'e-1',
      data: { attribute: 'a', value: { nested: [1] }, dataPointId: 'x', regulations: ['GDPR'], tags: ['t'], sensitivity: 'high', reportOnly: true, accessibility: 'internal' },
    }).ok,
  );
});

const newPointId = 'must not contain control characters in an event that may register its point (a STORE, or one with subjectId and data.attribute)';

// Each bad field yields a message naming the event index and the field.
const cases: [string, unknown, string][] = [
  ['not an object', 'hello', 'event 0: field "(event)" must be a JSON object'],
  ['array as event', [store], 'event 0: field "(event)" must be a JSON object'],
  ['missing eventType', { ...read, eventType: undefined }, 'event 0: field "eventType" is required'],
  ['unknown eventType', { ...read, eventType: 'WRITE' }, 'event 0: field "eventType" must be one of READ, STORE, DELETE, UPDATE'],
  ['missing applicationId', { ...read, applicationId: undefined }, 'event 0: field "applicationId" is required'],
  ['numeric applicationId', { ...read, applicationId: 7 }, 'event 0: field "applicationId" must be a string'],
  ['empty eventId', { ...read, eventId: '' }, 'event 0: field "eventId" must not be empty'],
  ['long eventId', { ...read, eventId: 'x'.repeat(513) }, 'event 0: field "eventId" must be at most 512 characters'],
  ['READ without dataPointId', { ...read, dataPointId: undefined }, 'event 0: field "dataPointId" is required for READ events'],
  ['DELETE without dataPointId', { ...read, eventType: 'DELETE', dataPointId: undefined }, 'event 0: field "dataPointId" is required for DELETE events'],
  ['STORE without subjectId', { ...store, subjectId: undefined }, 'event 0: field "subjectId" is required for STORE events'],
  ['subjectId of wrong type', { ...read, subjectId: 12 }, 'event 0: field "subjectId" must be a string'],
  ['subjectId with a control character', { ...store, subjectId: 'ctl\u0001x' }, 'event 0: field "subjectId" must not contain control characters'],
  ['subjectId of 513 emoji', { ...store, subjectId: '😀'.repeat(513) }, 'event 0: field "subjectId" must be at most 512 characters'],
  ['STORE without data', { ...store, data: undefined }, 'event 0: field "data.attribute" is required for STORE events'],
  ['STORE without attribute', { ...store, data: { value: 1 } }, 'event 0: field "data.attribute" is required for STORE events'],
  ['data not an object', { ...read, data: 'x' }, 'event 0: field "data" must be an object'],
  ['empty attribute', { ...read, data: { attribute: '' } }, 'event 0: field "data.attribute" must be a non-empty string'],
  ['regulations not an array', { ...read, data: { regulations: 'GDPR' } }, 'event 0: field "data.regulations" must be an array of strings'],
  ['tag not a string', { ...read, data: { tags: ['a', 3] } }, 'event 0: field "data.tags[1]" must be a string'],
  ['tag with a control character', { ...read, data: { tags: ['ok', 'bad\u0005'] } }, 'event 0: field "data.tags[1]" must not contain control characters'],
  ['subjectId with a C1 control character (NEL)', { ...store, subjectId: 'next\u0085line' }, 'event 0: field "subjectId" must not contain control characters'],
  ['tag of 257 emoji', { ...read, data: { tags: ['😀'.repeat(257)] } }, 'event 0: field "data.tags[0]" must be at most 256 characters'],
  ['reportOnly not boolean', { ...read, data: { reportOnly: 'yes' } }, 'event 0: field "data.reportOnly" must be a boolean'],
  ['sensitivity not string', { ...read, data: { sensitivity: 3 } }, 'event 0: field "data.sensitivity" must be a string'],
  ['accessibility not string', { ...read, data: { accessibility: [] } }, 'event 0: field "data.accessibility" must be a string'],
  ['data.dataPointId not string', { ...read, data: { dataPointId: 1 } }, 'event 0: field "data.dataPointId" must be a string'],
  ['applicationUser over 1,024 characters', { ...read, applicationUser: 'u'.repeat(1025) }, 'event 0: field "applicationUser" must be at most 1024 characters'],
  ['dataStoreEntityName over 1,024 characters', { ...read, dataStoreEntityName: '😀'.repeat(1025) }, 'event 0: field "dataStoreEntityName" must be at most 1024 characters'],
  ['STORE naming two points', { ...store, dataPointId: 'p-1', data: { ...store.data, dataPointId: 'p-2' } }, 'event 0: field "data.dataPointId" names a different point than dataPointId'],
  ['unknown data field', { ...read, data: { colour: 'red' } }, 'event 0: field "data.colour" is not a known field'],
  ['bad timestamp', { ...read, timestamp: 'yesterday' }, 'event 0: field "timestamp" must be an ISO 8601 date-time such as 2024-05-01T12:00:00Z, or epoch milliseconds'],
  ['impossible date', { ...read, timestamp: '2023-02-29T00:00:00Z' }, 'event 0: field "timestamp" must be an ISO 8601 date-time such as 2024-05-01T12:00:00Z, or epoch milliseconds'],
  ['fractional epoch', { ...read, timestamp: 1714564800000.5 }, 'event 0: field "timestamp" must be an ISO 8601 date-time such as 2024-05-01T12:00:00Z, or epoch milliseconds'],
  ['epoch past what a date holds', { ...read, timestamp: 9e15 }, 'event 0: field "timestamp" must be an ISO 8601 date-time such as 2024-05-01T12:00:00Z, or epoch milliseconds'],
  ['epoch in the year 10000', { ...read, timestamp: 253402300800000 }, 'event 0: field "timestamp" must fall in the years 0000 to 9999 (UTC), as the vault takes it'],
  ['epoch before the year 0000', { ...read, timestamp: -62167219200001 }, 'event 0: field "timestamp" must fall in the years 0000 to 9999 (UTC), as the vault takes it'],
  ['ISO date past 9999 in UTC', { ...read, timestamp: '9999-12-31T23:30:00-01:00' }, 'event 0: field "timestamp" must fall in the years 0000 to 9999 (UTC), as the vault takes it'],
  ['ISO date before 0000 in UTC', { ...read, timestamp: '0000-01-01T00:30:00+01:00' }, 'event 0: field "timestamp" must fall in the years 0000 to 9999 (UTC), as the vault takes it'],
  ['a timestamp years ahead', { ...read, timestamp: '2999-01-01T00:00:00Z' }, 'event 0: field "timestamp" is more than a day in the future, which the vault refuses'],
  ['applicationUser not string', { ...read, applicationUser: 1 }, 'event 0: field "applicationUser" must be a string'],
  ['dataStoreName not string', { ...read, dataStoreName: {} }, 'event 0: field "dataStoreName" must be a string'],
  ['dataStoreServer not string', { ...read, dataStoreServer: true }, 'event 0: field "dataStoreServer" must be a string'],
  ['dataStoreEntityName not string', { ...read, dataStoreEntityName: 5 }, 'event 0: field "dataStoreEntityName" must be a string'],
  ['location not object', { ...read, location: 'Berlin' }, 'event 0: field "location" must be an object'],
  ['location.city not string', { ...read, location: { city: 1 } }, 'event 0: field "location.city" must be a string'],
  ['unknown location field', { ...read, location: { planet: 'Earth' } }, 'event 0: field "location.planet" is not a known field'],
  ['unknown top-level field', { ...read, userName: 'bob' }, 'event 0: field "userName" is not a known field'],
  // What the vault shows as who did it, where, and under which ids: a control character there
  // could forge or hide text in the activity log, the console and exports. The vault refuses it.
  ['applicationId with an escape sequence', { ...read, applicationId: 'app\u001b[2K' }, 'event 0: field "applicationId" must not contain control characters'],
  ['eventId with a control character', { ...read, eventId: 'e\u0007' }, 'event 0: field "eventId" must not contain control characters'],
  ['applicationUser with a line break', { ...read, applicationUser: 'clerk\nadmin logged in' }, 'event 0: field "applicationUser" must not contain control characters'],
  ['dataStoreName with DEL', { ...read, dataStoreName: 'db\u007f' }, 'event 0: field "dataStoreName" must not contain control characters'],
  ['dataStoreServer with a carriage return', { ...read, dataStoreServer: 'db1\r' }, 'event 0: field "dataStoreServer" must not contain control characters'],
  ['dataStoreEntityName with NEL', { ...read, dataStoreEntityName: 'users\u0085' }, 'event 0: field "dataStoreEntityName" must not contain control characters'],
  ['location.country with a backspace', { ...read, location: { country: 'D\bE' } }, 'event 0: field "location.country" must not contain control characters'],
  ['location.subdivision with a tab', { ...read, location: { subdivision: 'BY\t' } }, 'event 0: field "location.subdivision" must not contain control characters'],
  ['location.city with a C1 control (CSI)', { ...read, location: { city: 'Munich\u009b31m' } }, 'event 0: field "location.city" must not contain control characters'],
  ['location.country over 64 characters', { ...read, location: { country: 'D'.repeat(65) } }, 'event 0: field "location.country" must be at most 64 characters'],
  ['location.subdivision over 64 characters', { ...read, location: { subdivision: '😀'.repeat(65) } }, 'event 0: field "location.subdivision" must be at most 64 characters'],
  ['location.city over 256 characters', { ...read, location: { city: 'c'.repeat(257) } }, 'event 0: field "location.city" must be at most 256 characters'],
  ['STORE dataPointId with a control character', { ...store, dataPointId: 'p\u0001' }, `event 0: field "dataPointId" ${newPointId}`],
  ['STORE data.dataPointId with a control character', { ...store, data: { ...store.data, dataPointId: 'p\n' } }, `event 0: field "data.dataPointId" ${newPointId}`],
  [
    'READ that may register its point under an id with a control character',
    { ...read, dataPointId: 'p\u001b', subjectId: 's1', data: { attribute: 'email' } },
    `event 0: field "dataPointId" ${newPointId}`,
  ],
];

for (const [name, event, message] of cases) {
  test(`rejects ${name}`, (t) => {
    t.is(messageFor(event), message);
  });
}

test('an event about a point it cannot register is taken whatever its id: the vault records it against a point stored under the id earlier', (t) => {
  const legacy = 'p\u0007bell';
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    t.is(messageFor({ ...read, eventType, dataPointId: legacy }), '(accepted)', eventType);
    t.is(messageFor({ ...read, eventType, dataPointId: legacy, data: { attribute: 'email' } }), '(accepted)', `${eventType} without a subject`);
    t.is(messageFor({ ...read, eventType, dataPointId: legacy, subjectId: 's1' }), '(accepted)', `${eventType} without an attribute`);
    // data.dataPointId names a new point only on a STORE; the vault reads it nowhere else.
    t.is(messageFor({ ...read, eventType, data: { dataPointId: legacy } }), '(accepted)', `${eventType} with data.dataPointId`);
  }
  // Values are data, not names: a line break in one is kept.
  t.is(messageFor({ ...store, data: { attribute: 'note', value: 'line one\nline two\u0007' } }), '(accepted)');
  t.is(messageFor({ ...read, location: { country: 'D'.repeat(64), subdivision: '😀'.repeat(64), city: 'c'.repeat(256) } }), '(accepted)');
});

test('a timestamp is taken up to a day ahead of acceptance, and from 0000 to 9999, as the vault takes it', (t) => {
  const now = new Date('2024-05-01T12:00:00Z');
  const day = 24 * 60 * 60 * 1000;
  const verdict = (timestamp: unknown) => prepareBatch([{ ...read, timestamp }], now).rejected[0]?.message ?? 'accepted';
  t.is(verdict(now.getTime() + day), 'accepted');
  t.is(verdict('2024-05-02T14:00:00+02:00'), 'accepted', 'exactly a day ahead, given with an offset');
  t.is(verdict(now.getTime() + day + 1), 'event 0: field "timestamp" is more than a day in the future, which the vault refuses');
  t.is(verdict('2024-05-02T12:00:00.001Z'), 'event 0: field "timestamp" is more than a day in the future, which the vault refuses');
  t.is(verdict('0000-01-01T00:00:00Z'), 'accepted');
  t.is(verdict(-62167219200000), 'accepted');
  t.is(prepareBatch([{ ...read, timestamp: -62167219200000 }], now).events[0].timestamp, '0000-01-01T00:00:00.000Z');
});

test('a timestamp without an offset is UTC, as the vault reads it, whatever zone the sidecar runs in', (t) => {
  const now = new Date('2024-05-01T12:00:00Z');
  const verdict = (timestamp: unknown) => prepareBatch([{ ...read, timestamp }], now).rejected[0]?.message ?? 'accepted';
  const zone = process.env.TZ;
  try {
    // Twelve hours behind UTC, a local reading would put 2024-05-02T11:00 at 23:00 UTC: refused.
    process.env.TZ = 'Etc/GMT+12';
    t.is(verdict('2024-05-02T11:00:00'), 'accepted');
    t.is(verdict('2024-05-02T12:00:01'), 'event 0: field "timestamp" is more than a day in the future, which the vault refuses');
    process.env.TZ = 'Etc/GMT-12';
    // Twelve hours ahead of UTC, a local reading would fall in the year -1: refused.
    t.is(verdict('0000-01-01T06:00:00'), 'accepted');
  } finally {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
  }
});

test('messages carry the index of the event in the request', (t) => {
  const outcome = prepareBatch([read, { ...read, applicationId: 1 }, store, { eventType: 'STORE', applicationId: 'a' }]);
  t.deepEqual(outcome.rejected, [
    { index: 1, message: 'event 1: field "applicationId" must be a string' },
    { index: 3, message: 'event 3: field "subjectId" is required for STORE events' },
  ]);
  t.deepEqual(outcome.accepted.map((a) => a.index), [0, 2]);
  t.is(outcome.events.length, 2);
});

test('a single object is a one-event request', (t) => {
  const outcome = prepareBatch(read);
  t.is(outcome.accepted.length, 1);
  t.is(outcome.accepted[0].index, 0);
});

test('stamping keeps a caller eventId and timestamp, and gives STOREs a dataPointId', (t) => {
  const now = new Date('2024-01-02T03:04:05.000Z');
  const kept = stampEvent({ ...read, eventType: 'READ', eventId: 'mine', timestamp: '2024-01-01T00:00:00Z' }, now);
  t.is(kept.eventId, 'mine');
  t.is(kept.timestamp, '2024-01-01T00:00:00Z');
  const fresh = stampEvent({ eventType: 'STORE', applicationId: 'a', subjectId: 's', data: { attribute: 'x' } }, now);
  t.regex(fresh.eventId, /^[0-9a-f-]{36}$/);
  t.is(fresh.timestamp, now.toISOString());
  t.regex(fresh.dataPointId!, /^[0-9a-f-]{36}$/);
  const fromData = stampEvent({ eventType: 'STORE', applicationId: 'a', subjectId: 's', data: { attribute: 'x', dataPointId: 'dp-data' } }, now);
  t.is(fromData.dataPointId, 'dp-data');
  t.is(stampEvent({ eventType: 'READ', applicationId: 'a', dataPointId: 'dp' }, now).dataPointId, 'dp');
  // Epoch milliseconds, as the vault takes them, are stamped as ISO 8601.
  t.is(validateEvent({ ...read, timestamp: 1714564800000 }).ok, true);
  t.is(stampEvent({ ...read, eventType: 'READ', timestamp: 1714564800000 }, now).timestamp, '2024-05-01T12:00:00.000Z');
});

test('ids the sidecar makes are UUIDv7 and follow each other, so the vault appends them to its indexes', (t) => {
  const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const stamped = Array.from({ length: 2_000 }, () => stampEvent({ eventType: 'STORE', applicationId: 'a', subjectId: 's', data: { attribute: 'x' } }));
  const eventIds = stamped.map((e) => e.eventId);
  for (const id of eventIds) t.regex(id, UUID_V7);
  t.deepEqual([...eventIds].sort(), eventIds);
  t.is(new Set(eventIds).size, eventIds.length);
  const pointIds = stamped.map((e) => e.dataPointId!);
  for (const id of pointIds) t.regex(id, UUID_V7);
  t.deepEqual([...pointIds].sort(), pointIds);
});

test('eventIds are unique and STORE answers include the dataPointId', (t) => {
  const outcome = prepareBatch(Array.from({ length: 100 }, () => store));
  t.is(new Set(outcome.accepted.map((a) => a.eventId)).size, 100);
  t.true(outcome.accepted.every((a) => typeof a.dataPointId === 'string'));
  t.is(prepareBatch(read).accepted[0].dataPointId, undefined);
});

test('ISO date-times, the forms the vault takes and no others', (t) => {
  const forms = [
    '2024-05-01T12:00:00Z', '2024-05-01T12:00Z', '2024-02-29T23:59:59.999999+14:00', '2024-05-01t12:00:00z',
    // What Python's isoformat() and Java's LocalDateTime write, a date alone, a space for the T:
    // the vault records each, so an application moving to the sidecar must not see them refused.
    '2024-05-01T12:00:00.123456', '2024-05-01T12:00:00', '2024-05-01', '2024-05-01 12:00:00Z', '2024-05-01T24:00:00Z',
  ];
  for (const ok of forms) t.true(isIsoDateTime(ok), ok);
  for (const ok of forms) t.is(messageFor({ ...read, timestamp: ok }), '(accepted)', ok);
  for (const bad of ['2024-13-01T00:00:00Z', '2024-04-31T00:00:00Z', '2024-05-01T12', '2024-05-01T12:00:00+25:00', '2016-12-31T23:59:60Z', '20240501T120000Z', '1714564800000', '2024-05-01 noon', `2024-05-01T12:00:00.${'0'.repeat(60)}Z`]) {
    t.false(isIsoDateTime(bad), bad);
  }
});

test('null counts as absent, as at the vault: a client that sends its unset members as null is not refused', (t) => {
  const now = new Date('2024-01-02T03:04:05.000Z');
  const unset = {
    eventType: 'READ', applicationId: 'app', dataPointId: 'dp1', subjectId: null, eventId: null, timestamp: null,
    applicationUser: null, dataStoreName: null, dataStoreServer: null, dataStoreEntityName: null,
    location: { country: null, subdivision: null, city: null },
    data: { attribute: 'email', value: null, dataPointId: null, regulations: null, tags: null, sensitivity: null, reportOnly: null, accessibility: null },
  };
  const outcome = prepareBatch([unset, { ...read, data: null, location: null }, { ...read, timestamp: '' }], now);
  t.deepEqual(outcome.rejected, []);
  const [first, second, third] = outcome.events;
  // Queued without them; a value of null is a value, and stays.
  t.deepEqual(first, {
    eventType: 'READ', applicationId: 'app', dataPointId: 'dp1', location: {}, data: { attribute: 'email', value: null },
    eventId: first!.eventId, timestamp: now.toISOString(),
  });
  t.deepEqual(second, { ...read, eventId: second!.eventId, timestamp: now.toISOString() });
  t.is(third!.timestamp, now.toISOString(), 'an empty timestamp is the acceptance time, as the vault reads it');

  // What is required stays required.
  t.is(messageFor({ ...store, subjectId: null }), 'event 0: field "subjectId" is required for STORE events');
  t.is(messageFor({ ...read, applicationId: null }), 'event 0: field "applicationId" is required');
  t.is(messageFor({ ...read, eventType: null }), 'event 0: field "eventType" is required');
  t.is(messageFor({ ...store, data: null }), 'event 0: field "data.attribute" is required for STORE events');
});
