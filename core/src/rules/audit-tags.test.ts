/**
 * Tag actions on report-only points: an audit batch writes the points it registers only
 * after every rule has run, and a tag a rule takes off must come off the stored point.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type Response, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;

async function define(key: string, schema: unknown = 'string'): Promise<string> {
  const res = await v.request('POST', '/attributes', { body: { key, schema } });
  if (res.status >= 300) throw new Error(`define ${key}: ${JSON.stringify(res.body)}`);
  return key;
}

async function rule(body: Record<string, unknown>): Promise<void> {
  const res = await v.request('POST', '/rules', { body: { key: uid('rule'), ...body } });
  if (res.status >= 300) throw new Error(JSON.stringify(res.body));
}

const on = (attribute: string) => ({ type: 'attribute', operator: 'any', attributes: [attribute] });
const audit = (event: Record<string, unknown>): Promise<Response> => v.request('POST', '/auditlogs', { body: event });
const bulk = (events: Array<Record<string, unknown>>): Promise<Response> => v.request('POST', '/auditlogs/bulk', { body: events });

async function tagsOf(dataPointId: string): Promise<string[]> {
  const rows = await v.vault.db.selectFrom('datapoint_tags').select('tag').where('datapoint_id', '=', dataPointId).orderBy('tag').execute();
  return rows.map((r) => r.tag);
}

test('an activity tag rule on STORE tags the point the event registers', async (t) => {
  const attr = await define(uid('DOC'));
  const tag = uid('stored').toLowerCase();
  await rule({ type: 'activity', constraint: { type: 'all', constraints: [on(attr), { type: 'eventType', eventTypes: ['STORE'] }] }, action: { type: 'tag', tag } });
  const stored = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr } });
  t.is(stored.status, 200, JSON.stringify(stored.body));
  t.deepEqual(await tagsOf(stored.body.dataPointId), [tag]);
});

test('an activity tag rule on READ tags a point registered earlier in the same bulk, and only that point', async (t) => {
  const attr = await define(uid('NAME'), { first: 'string', last: 'string' });
  const tag = uid('read').toLowerCase();
  await rule({ type: 'activity', constraint: { type: 'all', constraints: [on(attr), { type: 'eventType', eventTypes: ['READ'] }] }, action: { type: 'tag', tag } });
  const id = uid('point');
  const res = await bulk([
    { eventType: 'STORE', dataPointId: id, subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr, value: { first: 'Ada', last: 'L' } } },
    { eventType: 'READ', dataPointId: id, applicationId: 'crm' },
  ]);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(await tagsOf(id), [tag]);
  for (const sub of res.body[0].subPoints) t.deepEqual(await tagsOf(sub.dataPointId), [], 'the event is about the root alone');
});

test('an activity untag rule takes the tag off a point registered in the same bulk', async (t) => {
  const attr = await define(uid('DOC'));
  const tag = uid('fresh').toLowerCase();
  await rule({ type: 'activity', constraint: { type: 'all', constraints: [on(attr), { type: 'eventType', eventTypes: ['READ'] }] }, action: { type: 'tag', tag, status: false } });
  const id = uid('point');
  const res = await bulk([
    { eventType: 'STORE', dataPointId: id, subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr, tags: [tag] } },
    { eventType: 'READ', dataPointId: id, applicationId: 'crm' },
  ]);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(await tagsOf(id), []);
});

test('a data untag rule on an audit UPDATE takes the tag off the stored point', async (t) => {
  const attr = await define(uid('DOC'));
  const tag = uid('old').toLowerCase();
  const stored = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr, tags: [tag] } });
  t.deepEqual(await tagsOf(stored.body.dataPointId), [tag]);
  await rule({ constraint: on(attr), action: { type: 'tag', tag, status: false } });
  const updated = await audit({ eventType: 'UPDATE', dataPointId: stored.body.dataPointId, applicationId: 'crm', data: { value: 'x' } });
  t.is(updated.status, 200, JSON.stringify(updated.body));
  t.deepEqual(await tagsOf(stored.body.dataPointId), []);
});

test('in one bulk, an UPDATE sees the tag an earlier UPDATE’s rule put on the stored point', async (t) => {
  const attr = await define(uid('DOC'));
  const first = uid('first').toLowerCase();
  const second = uid('second').toLowerCase();
  // Ordered before the rule that adds its tag: within one event it cannot see that tag.
  await rule({ executionOrder: -1_000_000, constraint: { type: 'tag', operator: 'any', tags: [first] }, action: { type: 'tag', tag: second } });
  await rule({ constraint: { type: 'all', constraints: [on(attr), { type: 'user', attribute: attr, value: 'one' }] }, action: { type: 'tag', tag: first } });
  const stored = await audit({ eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr } });
  const id = stored.body.dataPointId;
  const res = await bulk([
    { eventType: 'UPDATE', dataPointId: id, applicationId: 'crm', data: { value: 'one' } },
    { eventType: 'UPDATE', dataPointId: id, applicationId: 'crm', data: { value: 'two' } },
  ]);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.deepEqual(await tagsOf(id), [first, second].sort());
});

