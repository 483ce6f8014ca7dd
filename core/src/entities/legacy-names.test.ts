/**
 * Entity ids, tag names and attribute names stored by an earlier release that hold a control
 * character (refused for new ones since): the rows are written here as such a vault holds
 * them. Whatever only refers to them keeps working; a new one is still refused.
 * Runs on PostgreSQL too with VAULT_TEST_DB=postgres.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { defineAttribute, unique } from '../audit/fixtures.js';

let v: TestVault;
const EMAIL = unique('EMAIL');
const ENTITY_MESSAGE = 'Entity ID must be 1 to 512 characters, without control characters';
const TAG_MESSAGE = 'Tag name must be 1 to 256 characters, without control characters';

test.before(async () => {
  v = await startTestVault();
  await defineAttribute(v, EMAIL);
});
test.after.always(async () => v?.close());

const at = (id: string) => encodeURIComponent(id);
const store = (subject: string, data: unknown[]) =>
  v.request('POST', `/entities/${at(subject)}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
const read = (subject: string) => v.request('GET', `/entities/${at(subject)}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } });
const audit = (body: unknown) => v.request('POST', '/auditlogs', { body });
const bulk = (body: unknown) => v.request('POST', '/auditlogs/bulk', { body });

async function legacyEntity(): Promise<string> {
  const id = unique('legacy\u0007bell');
  const now = new Date().toISOString();
  await v.vault.db.insertInto('entities').values({ id, type: 'datasubject', legal_hold: 0, created_date: now, updated_date: now }).execute();
  return id;
}

async function legacyTag(): Promise<string> {
  const name = unique('tag\u001b[31m');
  const now = new Date().toISOString();
  await v.vault.db.insertInto('tags').values({ name, created_date: now, modified_date: now }).execute();
  return name;
}

test('an entity stored under an id with a control character is read, updated, tagged, stored to and deleted', async (t) => {
  const id = await legacyEntity();
  t.is((await v.request('GET', `/entities/${at(id)}`)).status, 200);
  t.is((await v.request('GET', `/datasubjects/${at(id)}`)).status, 200);
  const tagged = await v.request('POST', '/entities', { body: { id, tags: ['vip'] } });
  t.is(tagged.status, 200, JSON.stringify(tagged.body));
  t.like(tagged.body.data, { id, tags: ['vip'] });
  const again = await v.request('POST', '/datasubjects', { body: { id, tags: ['vip'], legalHold: false } });
  t.is(again.status, 200, JSON.stringify(again.body));

  const stored = await store(id, [{ attribute: EMAIL, value: 'a@example.org' }]);
  t.is(stored.status, 200, JSON.stringify(stored.body));
  const values = await read(id);
  t.is(values.status, 200);
  t.deepEqual(values.body.data.map((p: { value: unknown }) => p.value), ['a@example.org']);
  const one = await v.request('GET', `/entities/${at(id)}/attributes/${EMAIL}`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(one.status, 200);

  const search = await v.request('POST', '/search', { body: { query: { subjectId: id } } });
  t.is(search.status, 200, JSON.stringify(search.body));
  t.is(search.body.data.length, 1);
  const activity = await v.request('GET', '/activity', { query: { subjectId: id } });
  t.is(activity.status, 200, JSON.stringify(activity.body));
  t.true(activity.body.data.length >= 1, 'its STORE is found by its subject');

  t.is((await v.request('DELETE', `/entities/${at(id)}/attributes/${EMAIL}`)).status, 200);
  t.is((await store(id, [{ attribute: EMAIL, value: 'b@example.org' }])).status, 200);
  t.is((await v.request('DELETE', `/datasubjects/${at(id)}/data`)).status, 200);
  t.is((await v.request('GET', `/entities/${at(id)}`)).status, 404, 'purged');
});

test('audit events naming such a subject are recorded, single and bulk', async (t) => {
  const id = await legacyEntity();
  const single = await audit({ eventType: 'STORE', subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } });
  t.is(single.status, 200, JSON.stringify(single.body));
  t.is(single.body.subjectId, id);
  const unseen = unique('point');
  const many = await bulk([
    { eventType: 'STORE', subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } },
    { eventType: 'READ', dataPointId: unseen, subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } },
    { eventType: 'READ', dataPointId: single.body.dataPointId, subjectId: id, applicationId: 'crm' },
    { eventType: 'DELETE', dataPointId: single.body.dataPointId, subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } },
  ]);
  t.is(many.status, 200, JSON.stringify(many.body));
  t.deepEqual(many.body.map((s: { subjectId: string }) => s.subjectId), [id, id, id, id]);
});

test('a new id with a control character is still refused everywhere, with the same message', async (t) => {
  const id = unique('new\u0007bell');
  for (const path of ['/entities', '/datasubjects']) {
    const res = await v.request('POST', path, { body: { id } });
    t.is(res.status, 400, path);
    t.is(res.body.message, ENTITY_MESSAGE, path);
  }
  const stored = await store(id, [{ attribute: EMAIL, value: 'a@example.org' }]);
  t.is(stored.status, 400);
  t.is(stored.body.message, ENTITY_MESSAGE);
  for (const event of [
    { eventType: 'STORE', subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } },
    { eventType: 'READ', dataPointId: unique('point'), subjectId: id, applicationId: 'crm', data: { attribute: EMAIL } },
  ]) {
    const single = await audit(event);
    t.is(single.status, 400, event.eventType);
    t.is(single.body.message, ENTITY_MESSAGE);
    const many = await bulk([{ eventType: 'STORE', subjectId: unique('ok'), applicationId: 'crm', data: { attribute: EMAIL } }, event]);
    t.is(many.status, 400);
    t.like(many.body, { message: ENTITY_MESSAGE, index: 1 });
  }
  t.is((await v.request('GET', `/entities/${at(id)}`)).status, 404, 'nothing was created');
});

test('a tag stored under a name with a control character is read, posted back, assigned and deleted', async (t) => {
  const name = await legacyTag();
  t.is((await v.request('GET', `/tags/${at(name)}`)).status, 200);
  const touched = await v.request('POST', '/tags', { body: { name } });
  t.is(touched.status, 201, JSON.stringify(touched.body));

  const entity = await v.request('POST', '/entities', { body: { id: unique('tagged'), tags: [name, 'plain'] } });
  t.is(entity.status, 201, JSON.stringify(entity.body));
  const key = unique('TAGGED');
  const definition = await v.request('POST', '/attributes', { body: { key, schema: 'string', tags: [name] } });
  t.true(definition.status < 300, JSON.stringify(definition.body));
  const stored = await store(unique('subject'), [{ attribute: EMAIL, value: 'x@example.org', tags: [name] }]);
  t.is(stored.status, 200, JSON.stringify(stored.body));
  const event = await audit({ eventType: 'STORE', subjectId: unique('subject'), applicationId: 'crm', data: { attribute: EMAIL, tags: [name] } });
  t.is(event.status, 200, JSON.stringify(event.body));
  const ruleKey = unique('rule');
  const rule = await v.request('POST', '/rules', { body: { key: ruleKey, constraint: { type: 'attribute', operator: 'any', attributes: [key] }, action: { type: 'tag', tag: name } } });
  t.true(rule.status < 300, JSON.stringify(rule.body));
  t.is((await v.request('DELETE', `/rules/${ruleKey}`)).status, 200);
  const watchKey = unique('watch');
  const watch = await v.request('POST', '/rules', { body: { key: watchKey, constraint: { type: 'tag', operator: 'any', tags: [name] }, action: { type: 'alert', message: 'tagged' } } });
  t.true(watch.status < 300, JSON.stringify(watch.body));
  t.is((await v.request('DELETE', `/rules/${watchKey}`)).status, 200);

  t.is((await v.request('DELETE', `/attributes/${key}`)).status, 200);
  const deleted = await v.request('DELETE', `/tags/${at(name)}`);
  t.is(deleted.status, 200, JSON.stringify(deleted.body));
  t.is((await v.request('GET', `/tags/${at(name)}`)).status, 404);
});

test('a new tag name with a control character is still refused everywhere, with the same message', async (t) => {
  const name = unique('new\u0085tag');
  const answers = [
    await v.request('POST', '/tags', { body: { name } }),
    await v.request('POST', '/entities', { body: { id: unique('tagged'), tags: [name] } }),
    await v.request('POST', '/attributes', { body: { key: unique('TAGGED'), schema: 'string', tags: [name] } }),
    await store(unique('subject'), [{ attribute: EMAIL, value: 'x@example.org', tags: [name] }]),
    await audit({ eventType: 'STORE', subjectId: unique('subject'), applicationId: 'crm', data: { attribute: EMAIL, tags: [name] } }),
    await v.request('POST', '/rules', { body: { key: unique('rule'), constraint: { type: 'attribute', operator: 'any', attributes: [EMAIL] }, action: { type: 'tag', tag: name } } }),
  ];
  for (const [i, res] of answers.entries()) {
    t.is(res.status, 400, `${i}`);
    t.is(res.body.message, TAG_MESSAGE, `${i}`);
  }
  const watch = await v.request('POST', '/rules', { body: { key: unique('watch'), constraint: { type: 'tag', operator: 'any', tags: [name] }, action: { type: 'alert' } } });
  t.is(watch.status, 400);
  t.is(watch.body.message, 'Constraint tag names must be 1 to 256 characters, without control characters');
  t.is((await v.request('GET', `/tags/${at(name)}`)).status, 404);
});

test('an attribute name stored with a control character may be posted back unchanged, not changed to another such name', async (t) => {
  const key = unique('NAMED');
  t.true((await v.request('POST', '/attributes', { body: { key, name: 'plain', schema: 'string' } })).status < 300);
  const name = 'Named\u0007bell';
  await v.vault.db.updateTable('attribute_definitions').set({ name }).where('key', '=', key).execute();
  v.vault.catalog.invalidate();
  const back = await v.request('POST', '/attributes', { body: { key, name, schema: 'string', hint: 'changed' } });
  t.true(back.status < 300, JSON.stringify(back.body));
  const other = await v.request('POST', '/attributes', { body: { key, name: 'Named\u0008other', schema: 'string' } });
  t.is(other.status, 400);
  t.is(other.body.message, 'Attribute name must be a string of at most 1024 characters, without control characters');
  const fresh = await v.request('POST', '/attributes', { body: { key: unique('FRESH'), name, schema: 'string' } });
  t.is(fresh.status, 400, 'a new definition may not take it');
});
