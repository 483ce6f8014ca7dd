import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';
import { nowIso } from '../util/time.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

test('datasubject exists from the start and cannot be deleted', async (t) => {
  const read = await v.request('GET', '/entitytypes/datasubject');
  t.is(read.status, 200);
  t.is(read.body.data.key, 'datasubject');
  const del = await v.request('DELETE', '/entitytypes/datasubject');
  t.is(del.status, 405);
  t.is(del.body.message, 'Cannot delete entity type, as it is managed by the system');
});

test('entity types are created, updated, listed, read and deleted', async (t) => {
  const created = await v.request('POST', '/entitytypes', { body: { key: 'company', name: 'Company', description: 'A legal person' } });
  t.is(created.status, 201);
  t.like(created.body.data, { key: 'company', name: 'Company', description: 'A legal person' });
  const updated = await v.request('POST', '/entitytypes', { body: { key: 'company', name: 'Organisation' } });
  t.is(updated.body.data.name, 'Organisation');
  t.is(updated.body.data.description, 'A legal person', 'a member the update leaves out is kept');
  t.is(updated.body.data.createdDate, created.body.data.createdDate);
  const cleared = await v.request('POST', '/entitytypes', { body: { key: 'company', description: null } });
  t.like(cleared.body.data, { name: 'Organisation', description: null });
  const list = await v.request('GET', '/entitytypes');
  const keys = list.body.data.map((e: any) => e.key);
  t.true(keys.includes('company') && keys.includes('datasubject'));
  const del = await v.request('DELETE', '/entitytypes/company');
  t.deepEqual(del.body, { data: 'Successfully Deleted Entity Type' });
});

test('an entity type read and posted back, as clients edit one, is taken; its dates stay the vault’s own', async (t) => {
  const created = (await v.request('POST', '/entitytypes', { body: { key: 'vehicle', name: 'Vehicle' } })).body.data;
  const read = (await v.request('GET', '/entitytypes/vehicle')).body.data;
  const posted = await v.request('POST', '/entitytypes', { body: { ...read, description: 'Cars and vans', createdDate: '1999-01-01T00:00:00Z' } });
  t.is(posted.status, 201, JSON.stringify(posted.body));
  t.like(posted.body.data, { key: 'vehicle', name: 'Vehicle', description: 'Cars and vans', createdDate: created.createdDate });
  t.is((await v.request('POST', '/entitytypes', { body: { key: 'vehicle', colour: 'red' } })).status, 400, 'other members are still unknown');
});

test('unknown entity types are 404 with the interface messages', async (t) => {
  const read = await v.request('GET', '/entitytypes/nothing');
  t.is(read.status, 404);
  t.is(read.body.message, 'No such entity type');
  const del = await v.request('DELETE', '/entitytypes/nothing');
  t.is(del.status, 404);
  t.is(del.body.message, 'Entity type not found');
});

test('a type in use by entities or attribute definitions cannot be deleted', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'device' } });
  await v.request('POST', '/entitytypes', { body: { key: 'vehicle' } });
  const now = nowIso();
  await v.vault.db.insertInto('entities').values({ id: 'car-1', type: 'device', legal_hold: 0, created_date: now, updated_date: now }).execute();
  await v.vault.db.insertInto('definition_entity_types').values({ definition_key: 'VIN', entity_type: 'vehicle' }).execute();
  const byEntities = await v.request('DELETE', '/entitytypes/device');
  t.is(byEntities.status, 409);
  t.is(byEntities.body.message, 'Cannot delete entity type, as there are entities belonging to it');
  const byDefinitions = await v.request('DELETE', '/entitytypes/vehicle');
  t.is(byDefinitions.status, 409);
  t.is(byDefinitions.body.message, 'Cannot delete entity type, as there are attributes referencing it');
});

test('a type a rule refers to cannot be deleted until the rule lets go; the other refusals come first', async (t) => {
  const key = `ruled-${randomBytes(4).toString('hex')}`;
  const rule = `on-${key}`;
  t.is((await v.request('POST', '/entitytypes', { body: { key } })).status, 201);
  const body = { key: rule, type: 'data', constraint: { type: 'any', constraints: [{ type: 'entityType', entityTypes: [key] }] }, action: { type: 'alert', alertLevel: 'NORMAL', message: 'ruled' } };
  t.is((await v.request('POST', '/rules', { body })).status, 201);
  const refused = await v.request('DELETE', `/entitytypes/${key}`);
  t.is(refused.status, 409);
  t.is(refused.body.message, 'Cannot delete entity type, because it is referenced by rule');
  t.is((await v.request('GET', `/entitytypes/${key}`)).status, 200);
  // The rule still reads, and can be saved again as it is (its type is still there to name).
  t.is((await v.request('GET', `/rules/${rule}`)).status, 200);
  t.is((await v.request('POST', '/rules', { body })).status, 200);

  // Entities of the type are the first reason given, as before.
  const now = nowIso();
  await v.vault.db.insertInto('entities').values({ id: `${key}-1`, type: key, legal_hold: 0, created_date: now, updated_date: now }).execute();
  t.is((await v.request('DELETE', `/entitytypes/${key}`)).body.message, 'Cannot delete entity type, as there are entities belonging to it');
  await v.vault.db.deleteFrom('entities').where('id', '=', `${key}-1`).execute();

  t.is((await v.request('DELETE', `/rules/${rule}`)).status, 200);
  const deleted = await v.request('DELETE', `/entitytypes/${key}`);
  t.is(deleted.status, 200);
  t.deepEqual(deleted.body, { data: 'Successfully Deleted Entity Type' });
});

test('only admins change entity types; anyone may read them', async (t) => {
  const apiKey = await v.createApplication(['*']);
  const post = await v.request('POST', '/entitytypes', { apiKey, body: { key: 'x' } });
  t.is(post.status, 403);
  t.is(post.body.message, 'Forbidden');
  t.is((await v.request('DELETE', '/entitytypes/x', { apiKey })).status, 403);
  t.is((await v.request('GET', '/entitytypes', { apiKey })).status, 200);
});

test('entity type keys are checked', async (t) => {
  const res = await v.request('POST', '/entitytypes', { body: { key: 'has space' } });
  t.is(res.status, 400);
  t.is(res.body.message, 'Entity type key must contain only alphanumeric characters, hyphens and underscores');
});

test('an entity type name with a control character is refused; a description may hold lines', async (t) => {
  const message = 'Entity type name must be a string of at most 1024 characters, without control characters';
  for (const name of ['red\u001b[31m', 'next\u0085line', 'two\nlines', 'tab\there']) {
    const res = await v.request('POST', '/entitytypes', { body: { key: 'ctl-type', name } });
    t.is(res.status, 400, JSON.stringify(name));
    t.is(res.body.message, message);
  }
  t.is((await v.request('GET', '/entitytypes/ctl-type')).status, 404, 'nothing created');
  const created = await v.request('POST', '/entitytypes', { body: { key: 'ctl-type', name: 'Société “Ltd” 🏢', description: 'Line one\n\tline two' } });
  t.is(created.status, 201);
  t.like(created.body.data, { name: 'Société “Ltd” 🏢', description: 'Line one\n\tline two' });
  const renamed = await v.request('POST', '/entitytypes', { body: { key: 'ctl-type', name: 'bell\u0007' } });
  t.is(renamed.status, 400);
  t.is(renamed.body.message, message);
  t.is((await v.request('GET', '/entitytypes/ctl-type')).body.data.name, 'Société “Ltd” 🏢', 'unchanged');
});

test('an entity type named with control characters before the check still loads, and is edited by posting it back', async (t) => {
  const now = nowIso();
  await v.vault.db.insertInto('entity_types').values({ key: 'legacy-type', name: 'old\u001bname', description: null, system: 0, created_date: now, modified_date: now }).execute();
  const read = await v.request('GET', '/entitytypes/legacy-type');
  t.is(read.status, 200);
  t.is(read.body.data.name, 'old\u001bname');
  const edited = await v.request('POST', '/entitytypes', { body: { ...read.body.data, description: 'edited' } });
  t.is(edited.status, 201, JSON.stringify(edited.body));
  t.like(edited.body.data, { name: 'old\u001bname', description: 'edited' });
  const fixed = await v.request('POST', '/entitytypes', { body: { key: 'legacy-type', name: 'new name' } });
  t.is(fixed.body.data.name, 'new name');
});

test('hostile bodies never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/entitytypes' },
    { method: 'GET', url: '/entitytypes/{id}' },
    { method: 'DELETE', url: '/entitytypes/{id}' },
  ]);
});
