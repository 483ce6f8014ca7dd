import test from 'ava';
import type { RulesEngine } from '../rules/engine.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';

let v: TestVault;
/** Tag names the stand-in rules engine reports as referenced by a rule. */
const referenced = new Set<string>();

test.before(async () => {
  v = await startTestVault();
  const real = v.vault.rules;
  const engine = Object.create(real) as RulesEngine;
  engine.findReferencingRule = async (trx, kind, name) => (kind === 'tag' && referenced.has(name) ? 'rule-using-it' : real.findReferencingRule(trx, kind, name));
  v.vault.rules = engine;
});
test.after.always(async () => v?.close());

test('a tag is created with 201, and posting it again keeps its creation date', async (t) => {
  const created = await v.request('POST', '/tags', { body: { name: 'vip' } });
  t.is(created.status, 201);
  t.deepEqual(Object.keys(created.body.data).sort(), ['createdDate', 'modifiedDate', 'name']);
  t.is(created.body.data.name, 'vip');
  t.regex(created.body.data.createdDate, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  await new Promise((r) => setTimeout(r, 5));
  const again = await v.request('POST', '/tags', { body: { name: 'vip', createdDate: '1999-01-01T00:00:00Z' } });
  t.is(again.status, 201);
  t.is(again.body.data.createdDate, created.body.data.createdDate);
  t.true(again.body.data.modifiedDate > created.body.data.modifiedDate);
});

test('tags are listed and read one by one; unknown ones are 404 No such tag', async (t) => {
  await v.request('POST', '/tags', { body: { name: 'listed one' } });
  const list = await v.request('GET', '/tags');
  t.is(list.status, 200);
  t.true(list.body.data.some((tag: any) => tag.name === 'listed one'));
  const one = await v.request('GET', `/tags/${encodeURIComponent('listed one')}`);
  t.is(one.status, 200);
  t.is(one.body.data.name, 'listed one');
  for (const method of ['GET', 'DELETE']) {
    const missing = await v.request(method, '/tags/never-made');
    t.is(missing.status, 404);
    t.is(missing.body.message, 'No such tag');
  }
});

test('deleting a tag removes it from definitions, entities and data points in one go', async (t) => {
  await v.request('POST', '/tags', { body: { name: 'doomed' } });
  await v.request('POST', '/tags', { body: { name: 'kept' } });
  await v.vault.db.insertInto('definition_tags').values([{ definition_key: 'DEF_T', tag: 'doomed' }, { definition_key: 'DEF_T', tag: 'kept' }]).execute();
  await v.vault.db.insertInto('entity_tags').values([{ entity_id: 'ent-t', tag: 'doomed' }, { entity_id: 'ent-t', tag: 'kept' }]).execute();
  await v.vault.db.insertInto('datapoint_tags').values([{ datapoint_id: 'dp-t', tag: 'doomed' }, { datapoint_id: 'dp-t', tag: 'kept' }]).execute();

  const del = await v.request('DELETE', '/tags/doomed');
  t.is(del.status, 200);
  t.deepEqual(del.body, { data: 'Successfully Deleted Tag' });
  t.is((await v.request('GET', '/tags/doomed')).status, 404);
  const left = async (table: 'definition_tags' | 'entity_tags' | 'datapoint_tags') =>
    (await v.vault.db.selectFrom(table).select('tag').where('tag', 'in', ['doomed', 'kept']).execute()).map((r) => r.tag);
  t.deepEqual(await left('definition_tags'), ['kept']);
  t.deepEqual(await left('entity_tags'), ['kept']);
  t.deepEqual(await left('datapoint_tags'), ['kept']);
});

test('a tag a rule references is 409 and stays everywhere until the rule lets go', async (t) => {
  await v.request('POST', '/tags', { body: { name: 'ruled' } });
  await v.vault.db.insertInto('entity_tags').values({ entity_id: 'ent-r', tag: 'ruled' }).execute();
  referenced.add('ruled');
  const refused = await v.request('DELETE', '/tags/ruled');
  t.is(refused.status, 409);
  t.is(refused.body.message, 'Cannot delete tag, because it is referenced by rule');
  t.is((await v.request('GET', '/tags/ruled')).status, 200);
  t.is((await v.vault.db.selectFrom('entity_tags').select('tag').where('tag', '=', 'ruled').execute()).length, 1);
  referenced.delete('ruled');
  t.is((await v.request('DELETE', '/tags/ruled')).status, 200);
  t.is((await v.vault.db.selectFrom('entity_tags').select('tag').where('tag', '=', 'ruled').execute()).length, 0);
});

test('only admins create and delete tags; any application reads them', async (t) => {
  await v.request('POST', '/tags', { body: { name: 'admin-made' } });
  const apiKey = await v.createApplication(['*']);
  const post = await v.request('POST', '/tags', { apiKey, body: { name: 'app-made' } });
  t.is(post.status, 403);
  t.is(post.body.message, 'Forbidden');
  t.is((await v.request('POST', '/tags', { apiKey, body: { colour: 'red' } })).status, 403, 'whatever the body');
  const del = await v.request('DELETE', '/tags/admin-made', { apiKey });
  t.is(del.status, 403);
  t.is(del.body.message, 'Forbidden');
  t.is((await v.request('GET', '/tags/app-made')).status, 404);
  t.is((await v.request('GET', '/tags/admin-made', { apiKey })).status, 200);
  t.is((await v.request('GET', '/tags', { apiKey })).status, 200);
});

test('bad tag names are 400 and create nothing', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{}, /^Tag name is required$/],
    [{ name: '' }, /^Tag name must be 1 to 256 characters, without control characters$/],
    [{ name: 'a\u0000b' }, /^Strings may not contain NUL characters$/],
    [{ name: 'a\u0001b' }, /^Tag name must be 1 to 256 characters, without control characters$/],
    [{ name: 'line\nbreak' }, /^Tag name must be 1 to 256 characters, without control characters$/],
    [{ name: 'x'.repeat(257) }, /^Tag name must be 1 to 256 characters, without control characters$/],
    [{ name: 5 }, /must be string/],
    [{ name: 'never-ok', colour: 'red' }, /must NOT have additional properties/],
  ];
  for (const [body, message] of cases) {
    const res = await v.request('POST', '/tags', { body });
    t.is(res.status, 400, JSON.stringify(body).slice(0, 40));
    t.regex(res.body.message, message);
  }
  const names = (await v.request('GET', '/tags')).body.data.map((tag: any) => tag.name);
  t.false(names.includes('never-ok') || names.some((n: string) => n === '' || n.startsWith('a\u0000') || n.startsWith('line')));
});

test('a tag name is counted in characters, an emoji as one, as the other names and ids are', async (t) => {
  const name = '\u{1F600}'.repeat(200);
  const created = await v.request('POST', '/tags', { body: { name } });
  t.is(created.status, 201);
  t.is(created.body.data.name, name);
  t.is((await v.request('GET', `/tags/${encodeURIComponent(name)}`)).status, 200);
  const tooLong = await v.request('POST', '/tags', { body: { name: '\u{1F600}'.repeat(257) } });
  t.is(tooLong.status, 400);
  t.is(tooLong.body.message, 'Tag name must be 1 to 256 characters, without control characters');
});

test('names no tag can have are simply not found', async (t) => {
  t.is((await v.request('GET', '/tags/%00')).status, 400, 'NUL is refused before any lookup');
  for (const path of ['/tags/a%0Ab', `/tags/${'y'.repeat(300)}`]) {
    t.is((await v.request('GET', path)).status, 404, path);
    t.is((await v.request('DELETE', path)).status, 404, path);
  }
});

test('hostile input never causes a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/tags' },
    { method: 'GET', url: '/tags/{id}' },
    { method: 'DELETE', url: '/tags/{id}' },
  ]);
});

/**
 * A tag's delete racing the writes that use the tag: a store of a point labelled with it, a
 * store replacing such a point, a subject tagged with it, and an audit bulk that deletes one
 * report-only point labelled with it and registers another. On PostgreSQL they run side by
 * side and could deadlock (the delete was then answered 500) or leave a point labelled with
 * the deleted tag. Each round is raced afresh; every answer must be the outcome of one order.
 */
test.serial('a tag deleted while writes use it: no 5xx, and no label outlives its tag', async (t) => {
  const NOTE = `NOTE_${Date.now().toString(36).toUpperCase()}`;
  const LOG = `${NOTE}_LOG`;
  t.is((await v.request('POST', '/attributes', { body: { key: NOTE, schema: 'string' } })).status, 201);
  t.is((await v.request('POST', '/attributes', { body: { key: LOG, schema: 'string', repeatable: true } })).status, 201);
  const headers = { 'x-encryption-key': v.keys.publicKey };
  const store = (subject: string, attribute: string, tag: string) =>
    v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute, value: 'v', tags: [tag] }] }, headers });
  const failures: string[] = [];
  for (let round = 0; round < 60; round++) {
    const tag = `raced-${round}-${Date.now().toString(36)}`;
    const subject = `tag-race-${round % 4}`;
    const reported = `${tag}-reported`;
    t.is((await v.request('POST', '/tags', { body: { name: tag } })).status, 201);
    t.is((await store(subject, NOTE, tag)).status, 200);
    const seeded = await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', subjectId: subject, applicationId: 'crm', dataPointId: reported, data: { attribute: LOG, tags: [tag] } } });
    t.is(seeded.status, 200);
    const answers = await Promise.all([
      v.request('DELETE', `/tags/${tag}`),
      store(subject, LOG, tag),
      store(subject, NOTE, tag),
      v.request('POST', '/entities', { body: { id: `${tag}-subject`, tags: [tag] } }),
      v.request('POST', '/auditlogs/bulk', {
        body: [
          { eventType: 'DELETE', dataPointId: reported, applicationId: 'crm' },
          { eventType: 'STORE', subjectId: subject, applicationId: 'crm', data: { attribute: LOG, tags: [tag] } },
        ],
      }),
    ]);
    for (const [i, res] of answers.entries()) if (res.status >= 300) failures.push(`round ${round}, request ${i}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  t.deepEqual(failures, []);
  // A write that committed after the delete made the tag anew; one before it lost the label.
  const tags = v.vault.db.selectFrom('tags').select('name');
  t.deepEqual(await v.vault.db.selectFrom('datapoint_tags').select(['datapoint_id', 'tag']).where('tag', 'not in', tags).execute(), []);
  t.deepEqual(await v.vault.db.selectFrom('entity_tags').select(['entity_id', 'tag']).where('tag', 'not in', tags).execute(), []);
});
