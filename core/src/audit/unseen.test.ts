/**
 * Report-only registration: READ, UPDATE and DELETE events about points the vault has never
 * seen (data a service held before it reported to the vault), on both endpoints, with the
 * real rules engine.
 */
import test from 'ava';
import { sql } from 'kysely';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { activityCount, defineAttribute, pointCount, recordsOf, unique } from './fixtures.js';

let v: TestVault;
const EMAIL = unique('EMAIL');
const PHONE = unique('PHONE');
const NAME = unique('NAME');
const TAG = unique('tag');

test.before(async () => {
  v = await startTestVault();
  await defineAttribute(v, EMAIL, 'string', { tags: [TAG], regulations: ['GDPR'] });
  await defineAttribute(v, PHONE);
  await defineAttribute(v, NAME, { first: 'string', last: 'string' });
});
test.after.always(async () => v?.close());

const post = (body: unknown, apiKey?: string) => v.request('POST', '/auditlogs', { body, apiKey });
const bulk = (body: unknown, apiKey?: string) => v.request('POST', '/auditlogs/bulk', { body, apiKey });

function event(eventType: string, dataPointId: string, subjectId: string | undefined, attribute: string | undefined, extra: Record<string, unknown> = {}) {
  const { value, ...rest } = extra;
  const data = attribute === undefined && value === undefined ? undefined : { ...(attribute === undefined ? {} : { attribute }), ...(value === undefined ? {} : { value }) };
  return { eventType, dataPointId, applicationId: 'crm', ...(subjectId === undefined ? {} : { subjectId }), ...(data ? { data } : {}), ...rest };
}

const pointRow = (id: string) => v.vault.db.selectFrom('datapoints').selectAll().where('id', '=', id).executeTakeFirst();
const tagsOf = async (id: string) =>
  (await v.vault.db.selectFrom('datapoint_tags').select('tag').where('datapoint_id', '=', id).execute()).map((r) => r.tag).sort();
const regulationsOf = async (id: string) =>
  (await v.vault.db.selectFrom('datapoint_regulations').select('regulation').where('datapoint_id', '=', id).execute()).map((r) => r.regulation).sort();

async function addRule(rule: Record<string, unknown>): Promise<void> {
  const res = await v.request('POST', '/rules', { body: rule });
  if (res.status !== 201) throw new Error(`could not create rule: ${JSON.stringify(res.body)}`);
}

async function alertsOf(ruleKey: string): Promise<any[]> {
  const res = await v.request('GET', '/alerts', { query: { rule: ruleKey } });
  return res.status === 404 ? [] : res.body.data;
}

test('a READ of an unseen point with subject and attribute registers it as a report-only STORE would, and is recorded', async (t) => {
  const subject = unique('brownfield');
  const id = `crm/${subject}/email`;
  const res = await post(event('READ', id, subject, EMAIL, { eventId: unique('e'), applicationUser: 'alice' }));
  t.is(res.status, 200);
  t.deepEqual(res.body, { eventType: 'READ', dataPointId: id, subjectId: subject, attribute: EMAIL });

  const point = await pointRow(id);
  t.truthy(point, 'the point is registered');
  t.like(point, { entity_id: subject, attribute: EMAIL, definition_key: EMAIL, sensitivity: 'NORMAL', structure_root_id: null, ciphertext: null, blind_index: null });
  t.is(Number(point!.report_only), 1);
  t.deepEqual(await tagsOf(id), [TAG], 'the definition’s tags reach the point');
  t.deepEqual(await regulationsOf(id), ['GDPR'], 'and its regulations');
  const entity = await v.vault.db.selectFrom('entities').selectAll().where('id', '=', subject).executeTakeFirst();
  t.is(entity?.type, 'datasubject', 'the subject is created');

  const history = await v.request('GET', '/activity', { query: { dataPointId: id } });
  t.deepEqual(
    history.body.data.map((r: any) => [r.eventType, r.subjectId, r.attribute, r.applicationUser, r.reportOnly]),
    [['READ', subject, EMAIL, 'alice', true]],
  );

  // Later events find it without naming subject or attribute.
  const again = await post(event('READ', id, undefined, undefined));
  t.is(again.status, 200);
  t.deepEqual(again.body, { eventType: 'READ', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.is((await v.request('GET', '/activity', { query: { dataPointId: id } })).body.data.length, 2);
});

test('registration takes the event’s tags, regulations and sensitivity, and an existing subject’s tags', async (t) => {
  const subject = unique('brownfield');
  t.is((await v.request('POST', '/entities', { body: { id: subject, type: 'datasubject', tags: ['b2b'] } })).status, 201);
  const id = unique('point');
  const res = await post(event('UPDATE', id, subject, PHONE, { data: { attribute: PHONE, tags: ['imported'], regulations: ['CCPA'], sensitivity: 'personal' } }));
  t.is(res.status, 200);
  t.is((await pointRow(id))?.sensitivity, 'PERSONAL');
  t.deepEqual(await tagsOf(id), ['b2b', 'imported']);
  t.deepEqual(await regulationsOf(id), ['CCPA']);
});

test.serial('a DELETE of an unseen point is recorded, creates the subject and leaves no point behind', async (t) => {
  const subject = unique('brownfield');
  const id = unique('point');
  const points = await pointCount(v);
  const res = await post(event('DELETE', id, subject, EMAIL));
  t.is(res.status, 200);
  t.deepEqual(res.body, { eventType: 'DELETE', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.is(await pointRow(id), undefined);
  t.is(await pointCount(v), points);
  t.truthy(await v.vault.db.selectFrom('entities').select('id').where('id', '=', subject).executeTakeFirst());
  const history = await v.request('GET', '/activity', { query: { dataPointId: id } });
  t.deepEqual(history.body.data.map((r: any) => [r.eventType, r.subjectId, r.attribute]), [['DELETE', subject, EMAIL]]);
  // Nothing to find afterwards: an event without subject and attribute is still 404.
  const read = await post(event('READ', id, undefined, undefined));
  t.is(read.status, 404);
  t.is(read.body.message, 'Data Not Found');
});

test.serial('without a subject or an attribute the answer stays 404 Data Not Found, and nothing changes', async (t) => {
  const subject = unique('brownfield');
  const [points, records] = [await pointCount(v), await activityCount(v)];
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    for (const [s, a] of [[subject, undefined], [undefined, EMAIL], [undefined, undefined]] as const) {
      const res = await post(event(eventType, unique('point'), s, a));
      t.is(res.status, 404, `${eventType} subject=${s} attribute=${a}`);
      t.is(res.body.message, 'Data Not Found');
    }
  }
  const res = await bulk([event('READ', unique('point'), subject, EMAIL), event('READ', unique('point'), subject, undefined)]);
  t.is(res.status, 404);
  t.deepEqual(res.body, { statusCode: 404, error: 'Not Found', message: 'Data Not Found', index: 1 });
  t.is(await pointCount(v), points);
  t.is(await activityCount(v), records);
  t.is(await v.vault.db.selectFrom('entities').select('id').where('id', '=', subject).executeTakeFirst(), undefined);
});

test.serial('the id of a vaulted point keeps its 404, even with subject and attribute', async (t) => {
  const subject = unique('vaulted');
  const stored = await v.request('POST', `/datasubjects/${subject}/attributes`, {
    body: { data: [{ attribute: PHONE, value: '+44 20 7946 0000' }] },
    headers: { 'x-encryption-key': v.keys.publicKey },
  });
  t.is(stored.status, 200, JSON.stringify(stored.body));
  const id = stored.body.data[0].dataPointId;
  const records = await activityCount(v);
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    const res = await post(event(eventType, id, subject, PHONE));
    t.is(res.status, 404);
    t.is(res.body.message, 'Data Not Found');
  }
  t.is(Number((await pointRow(id))?.report_only), 0, 'the vaulted point is untouched');
  t.is(await activityCount(v), records);
});

test.serial('an unknown attribute is 400 No such attribute, a bad sensitivity or regulation 400, as for STORE', async (t) => {
  const subject = unique('brownfield');
  const cases: Array<[unknown, string]> = [
    [event('READ', unique('point'), subject, unique('UNDEFINED')), 'No such attribute'],
    [event('READ', unique('point'), subject, EMAIL, { data: { attribute: EMAIL, regulations: [unique('REG')] } }), 'No such regulation'],
    [event('READ', unique('point'), subject, EMAIL, { data: { attribute: EMAIL, sensitivity: 'SECRET' } }), 'Sensitivity must be one of NORMAL, PERSONAL, SENSITIVE, CONFIDENTIAL'],
  ];
  const points = await pointCount(v);
  for (const [body, message] of cases) {
    const res = await post(body);
    t.is(res.status, 400);
    t.is(res.body.message, message);
  }
  t.is(await pointCount(v), points);
});

test.serial('access checks apply to the named attribute: 403 Forbidden access to attribute, as for STORE', async (t) => {
  const phoneOnly = await v.createApplication([PHONE]);
  const subject = unique('brownfield');
  const [points, records] = [await pointCount(v), await activityCount(v)];
  for (const eventType of ['READ', 'UPDATE', 'DELETE']) {
    const res = await post(event(eventType, unique('point'), subject, EMAIL), phoneOnly);
    t.is(res.status, 403);
    t.is(res.body.message, 'Forbidden access to attribute');
  }
  const inBulk = await bulk([event('READ', unique('point'), subject, PHONE), event('READ', unique('point'), subject, EMAIL)], phoneOnly);
  t.deepEqual(inBulk.body, { statusCode: 403, error: 'Forbidden', message: 'Forbidden access to attribute', index: 1 });
  t.is(await pointCount(v), points);
  t.is(await activityCount(v), records);
  const allowed = await post(event('READ', unique('point'), subject, PHONE), phoneOnly);
  t.is(allowed.status, 200);
});

test.serial('rules see the registered point’s attribute, tags and regulations, and an UPDATE’s value', async (t) => {
  const alertKey = unique('seen');
  const blockKey = unique('block');
  const activityKey = unique('activity');
  const tagged = {
    type: 'all',
    constraints: [
      { type: 'attribute', operator: 'any', attributes: [EMAIL] },
      { type: 'tag', operator: 'any', tags: [TAG] },
      { type: 'regulation', operator: 'any', regulations: ['GDPR'] },
    ],
  };
  await addRule({ key: alertKey, type: 'data', constraint: tagged, action: { type: 'alert', alertLevel: 'INFO', message: 'tagged email updated' } });
  await addRule({
    key: blockKey,
    type: 'data',
    constraint: { type: 'all', constraints: [tagged, { type: 'user', attribute: EMAIL, predicate: 'eq', value: 'BLOCK ME' }] },
    action: { type: 'block' },
  });
  await addRule({
    key: activityKey,
    type: 'activity',
    constraint: { type: 'all', constraints: [{ type: 'attribute', operator: 'any', attributes: [EMAIL] }, { type: 'eventType', eventTypes: ['READ'] }] },
    action: { type: 'alert', alertLevel: 'NORMAL', message: 'email read' },
  });
  try {
    const subject = unique('brownfield');
    const updated = unique('point');
    const secret = `value-${unique('secret')}`;
    const res = await post(event('UPDATE', updated, subject, EMAIL, { value: secret }));
    t.is(res.status, 200);
    const [alert] = await alertsOf(alertKey);
    t.like(alert, { dataPointId: updated, attribute: EMAIL, eventType: 'UPDATE', entityId: subject });
    t.is((await pointRow(updated))?.id, updated);

    const blocked = unique('point');
    const records = await activityCount(v);
    const refused = await post(event('UPDATE', blocked, subject, EMAIL, { value: 'BLOCK ME' }));
    t.is(refused.status, 403);
    t.is(refused.body.message, 'The provided data could not be stored, as a rule disallows it');
    t.is(await pointRow(blocked), undefined, 'a refused event registers nothing');
    t.is(await activityCount(v), records);

    const read = unique('point');
    t.is((await post(event('READ', read, subject, EMAIL))).status, 200);
    t.true((await alertsOf(activityKey)).some((a) => a.dataPointId === read && a.attribute === EMAIL));

    for (const table of ['datapoints', 'activity_log', 'activity_pending', 'alerts'] as const) {
      const rows = await v.vault.db.selectFrom(table).selectAll().execute();
      t.false(JSON.stringify(rows).includes(secret), `${table} does not hold the value`);
    }
    t.false(v.logs.join('').includes(secret), 'nor do the logs');
  } finally {
    for (const key of [alertKey, blockKey, activityKey]) await v.request('DELETE', `/rules/${key}`);
  }
});

test('a structured attribute is registered without sub-points; an UPDATE’s value is checked against its schema', async (t) => {
  const subject = unique('brownfield');
  const id = unique('point');
  const wrong = await post(event('UPDATE', id, subject, NAME, { value: 'Ada' }));
  t.is(wrong.status, 422);
  t.is(wrong.body.message, `Expected object for value of attribute ${NAME}`);
  t.is(await pointRow(id), undefined);
  const res = await post(event('UPDATE', id, subject, NAME, { value: { first: 'Ada', last: 'Lovelace' } }));
  t.is(res.status, 200);
  t.deepEqual(res.body, { eventType: 'UPDATE', dataPointId: id, subjectId: subject, attribute: NAME });
  t.is((await v.vault.db.selectFrom('datapoints').select('id').where('structure_root_id', '=', id).execute()).length, 0);
});

test('several events about one unseen point in one bulk register it once, and every event is recorded', async (t) => {
  const subject = unique('brownfield');
  const email = `crm/${subject}/email`;
  const phone = `crm/${subject}/phone`;
  const gone = `crm/${subject}/gone`;
  const res = await bulk([
    event('READ', email, subject, EMAIL),
    event('READ', phone, subject, PHONE),
    event('READ', email, subject, EMAIL),
    event('UPDATE', email, undefined, undefined, { data: { value: 'new@example.org' } }),
    event('READ', phone, undefined, undefined),
    event('READ', gone, subject, EMAIL),
    event('DELETE', gone, subject, EMAIL),
  ]);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(
    res.body.map((s: any) => [s.eventType, s.dataPointId, s.subjectId, s.attribute]),
    [
      ['READ', email, subject, EMAIL],
      ['READ', phone, subject, PHONE],
      ['READ', email, subject, EMAIL],
      ['UPDATE', email, subject, EMAIL],
      ['READ', phone, subject, PHONE],
      ['READ', gone, subject, EMAIL],
      ['DELETE', gone, subject, EMAIL],
    ],
  );
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', subject).orderBy('id').execute();
  t.deepEqual(points.map((p) => p.id), [email, phone].sort());
  const history = await v.request('GET', '/activity', { query: { subjectId: subject } });
  t.is(history.body.data.length, 7);
});

test('event ids dedupe registering events: a resent bulk is answered as before and recorded once', async (t) => {
  const subject = unique('brownfield');
  const eventIds = [unique('e'), unique('e')];
  const events = [EMAIL, PHONE].map((attribute, i) => event('READ', `crm/${subject}/${attribute}`, subject, attribute, { eventId: eventIds[i] }));
  const first = await bulk(events);
  t.is(first.status, 200);
  const again = await bulk(events);
  t.deepEqual(again.body, first.body);
  for (const id of eventIds) t.is((await recordsOf(v, id)).length, 1);
});

test('concurrent bulks from two vault processes about the same unseen points register each once and record every event once', async (t) => {
  // A second vault on the same database: what a second replica would do.
  const other = await startTestVault({ env: { VAULT_DB: v.config.db, VAULT_ADMIN_API_KEY: v.adminKey, VAULT_INDEX_KEY: v.config.indexKey! } });
  t.teardown(() => other.close());
  const subject = unique('brownfield');
  const ids = Array.from({ length: 20 }, (_, i) => `crm/${subject}/${i}`);
  const bulkFor = (n: number) => ids.map((id) => event('READ', id, subject, EMAIL, { eventId: `${id}#${n}` }));
  const sends = Array.from({ length: 8 }, (_, n) =>
    (n % 2 === 0 ? v : other).request('POST', '/auditlogs/bulk', { body: bulkFor(n % 4), apiKey: v.adminKey }),
  );
  const answers = await Promise.all(sends);
  t.deepEqual(answers.map((a) => a.status), Array(8).fill(200), JSON.stringify(answers.map((a) => a.body).filter((b) => !Array.isArray(b))));
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', subject).execute();
  t.is(points.length, ids.length, 'each point registered once');
  // A listing that overlaps the other process's sealing can miss records being moved.
  await v.vault.sealer.sealAll();
  await other.vault.sealer.sealAll();
  const history = await v.request('GET', '/activity', { query: { subjectId: subject, count: '1000' } });
  t.is(history.body.data.length, ids.length * 4, 'each of the four distinct bulks recorded once');
  t.is(new Set(history.body.data.map((r: any) => r.eventId)).size, ids.length * 4);
});

// Only PostgreSQL runs two writing transactions at once; SQLite has one writer at a time, and
// the two-process test above covers it. Defined only where it can run, so no pass skips it.
const onPostgres = process.env.VAULT_TEST_DB === 'postgres' ? test.serial : () => {};

onPostgres('a registration racing another process’s uncommitted registration of the same id waits for it, then finds its point', async (t) => {
  const other = await startTestVault({ env: { VAULT_DB: v.config.db, VAULT_ADMIN_API_KEY: v.adminKey, VAULT_INDEX_KEY: v.config.indexKey! } });
  t.teardown(() => other.close());
  const subject = unique('racer');
  const id = unique('point');
  const now = new Date().toISOString();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let inserted = false;
  // The other process has registered the point but not committed yet.
  const holder = other.vault.db.transaction().execute(async (trx) => {
    await trx.insertInto('entities').values({ id: subject, type: 'datasubject', legal_hold: 0, created_date: now, updated_date: now }).execute();
    await trx
      .insertInto('datapoints')
      .values({
        id, entity_id: subject, attribute: EMAIL, definition_key: EMAIL, structure_root_id: null, report_only: 1, sensitivity: 'NORMAL',
        subject_key_id: null, ciphertext: null, blind_index: null, country: null, subdivision: null, city: null, expires_at: null,
        auto_delete: 0, created_date: now, modified_date: now,
      })
      .execute();
    inserted = true;
    await released;
  });
  const waitUntil = async (check: () => Promise<boolean> | boolean, what: string) => {
    for (const deadline = Date.now() + 30_000; !(await check()); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    }
  };
  await waitUntil(() => inserted, 'the other registration');
  const answer = v.request('POST', '/auditlogs', { body: event('READ', id, subject, EMAIL, { eventId: unique('e') }) });
  await waitUntil(async () => {
    const { rows } = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(v.vault.db);
    return Number(rows[0].n) > 0;
  }, 'the audit request to wait on the other registration');
  release();
  await holder;
  const res = await answer;
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(res.body, { eventType: 'READ', dataPointId: id, subjectId: subject, attribute: EMAIL });
  t.is((await v.vault.db.selectFrom('datapoints').select('id').where('id', '=', id).execute()).length, 1);
  const history = await v.request('GET', '/activity', { query: { dataPointId: id } });
  t.deepEqual(history.body.data.map((r: any) => r.eventType), ['READ']);
});
