/**
 * The SDK against a real vault process: operations, applications, entity types, tags,
 * regulations, attribute definitions and entities, with their error answers.
 */
import test from 'ava';
import { VaultApiError } from './errors.js';
import { apiError, startSdkVault, unique, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
test.before(async () => {
  v = await startSdkVault();
});
test.after.always(async () => {
  await v?.dispose();
});

test('health, readiness and metrics', async (t) => {
  t.deepEqual(await v.admin.health(), { status: 'ok' });
  t.deepEqual(await v.admin.ready(), { ready: true, status: 'ready' });
  const metrics = await v.admin.metrics();
  t.is(typeof metrics, 'string');
  t.regex(metrics, /# TYPE \w+/);
});

test('stats: counts for an admin; applications and alerts withheld from other keys', async (t) => {
  const stats = await v.admin.stats();
  t.true(stats.applications! >= 1);
  t.deepEqual(Object.keys(stats.alertsLast24Hours!).sort(), ['DANGER', 'INFO', 'NEUTRAL', 'NORMAL', 'SUCCESS', 'WARNING']);
  const created = await v.admin.applications.create({ name: unique('stats'), attributes: ['*'], admin: false });
  const limited = await v.client({ apiKey: created.apiKey }).stats();
  t.is(limited.applications, null);
  t.is(limited.alertsLast24Hours, null);
  t.is(typeof limited.subjects, 'number');
});

test('an unknown API key is 401 Unauthorized', async (t) => {
  const stranger = v.client({ apiKey: 'not-a-key-of-this-vault' });
  await apiError(t, stranger.tags.list(), 401, 'Unauthorized');
});

test('applications: create, list, get, delete, and what a non-admin may not do', async (t) => {
  const name = unique('app');
  const created = await v.admin.applications.create({ name, attributes: ['EMAIL'], admin: false });
  t.is(created.name, name);
  t.deepEqual(created.attributes, ['EMAIL']);
  t.false(created.admin);
  t.true(created.apiKey.length >= 16);

  t.true((await v.admin.applications.list()).some((a) => a.id === created.id));
  const read = await v.admin.applications.get(created.id);
  t.is(read.name, name);
  t.false('apiKey' in read);

  const restricted = v.client({ apiKey: created.apiKey });
  await apiError(t, restricted.applications.list(), 403, 'Forbidden');

  t.is(await v.admin.applications.delete(created.id), 'Successfully Deleted Application');
  await apiError(t, v.admin.applications.get(created.id), 404, 'Application not found');
  await apiError(t, restricted.tags.list(), 401, 'Unauthorized');
});

test('applications: a caller-supplied API key works, and is refused a second time', async (t) => {
  const apiKey = `sdk-test-${unique('key')}`;
  const created = await v.admin.applications.create({ name: unique('app'), apiKey });
  t.is(created.apiKey, apiKey);
  t.deepEqual(await v.client({ apiKey }).health(), { status: 'ok' });
  await apiError(t, v.admin.applications.create({ name: unique('app'), apiKey }), 409, 'API key is already in use');
});

test('entity types: save, list, get, delete and every error', async (t) => {
  const key = unique('type');
  const saved = await v.admin.entityTypes.save({ key, name: 'Customer', description: 'A paying customer' });
  t.like(saved, { key, name: 'Customer', description: 'A paying customer' });
  // Always answered (the OpenAPI document requires them): typed as strings, not optional.
  const dates: string[] = [saved.createdDate, saved.modifiedDate, ...(await v.admin.entityTypes.list()).map((e) => e.createdDate)];
  t.true(dates.every((date) => Date.parse(date) > 0));
  t.like(await v.admin.entityTypes.save({ key, name: 'Client' }), { key, name: 'Client' });
  t.true((await v.admin.entityTypes.list()).some((e) => e.key === key));
  t.like(await v.admin.entityTypes.get(key), { key, name: 'Client' });
  t.is(await v.admin.entityTypes.delete(key), 'Successfully Deleted Entity Type');

  await apiError(t, v.admin.entityTypes.get(key), 404, 'No such entity type');
  await apiError(t, v.admin.entityTypes.delete(key), 404, 'Entity type not found');
  await apiError(t, v.admin.entityTypes.delete('datasubject'), 405, 'Cannot delete entity type, as it is managed by the system');

  const used = unique('type');
  await v.admin.entityTypes.save({ key: used });
  await v.admin.entities.save({ id: unique('ent'), type: used });
  await apiError(t, v.admin.entityTypes.delete(used), 409, 'Cannot delete entity type, as there are entities belonging to it');

  const referenced = unique('type');
  await v.admin.entityTypes.save({ key: referenced });
  await v.admin.definitions.save({ key: unique('ATTR'), entityTypes: [referenced] });
  await apiError(t, v.admin.entityTypes.delete(referenced), 409, 'Cannot delete entity type, as there are attributes referencing it');
});

test('tags: save, list, get, delete and 404s', async (t) => {
  const name = unique('tag');
  const tag = await v.admin.tags.save(name);
  t.is(tag.name, name);
  t.truthy(Date.parse(tag.createdDate));
  t.true((await v.admin.tags.list()).some((x) => x.name === name));
  t.is((await v.admin.tags.get(name)).name, name);
  t.is(await v.admin.tags.delete(name), 'Successfully Deleted Tag');
  await apiError(t, v.admin.tags.get(name), 404, 'No such tag');
  await apiError(t, v.admin.tags.delete(name), 404, 'No such tag');
});

test('tags: names with path characters round-trip', async (t) => {
  const name = `${unique('tag')} a/b?c#d%`;
  await v.admin.tags.save(name);
  t.is((await v.admin.tags.get(name)).name, name);
  t.is(await v.admin.tags.delete(name), 'Successfully Deleted Tag');
});

test('regulations and entity types: null clears a name, an address or a description', async (t) => {
  const regulation = unique('REG');
  await v.admin.regulations.save({ key: regulation, name: 'Internal policy', url: 'https://example.org/policy' });
  t.is(await v.admin.regulations.save({ key: regulation, url: null }), 'Regulation updated');
  t.like(await v.admin.regulations.get(regulation), { name: 'Internal policy', url: null });
  await v.admin.regulations.save({ key: regulation, name: null });
  t.like(await v.admin.regulations.get(regulation), { name: null, url: null });

  const type = unique('type');
  await v.admin.entityTypes.save({ key: type, name: 'Customer', description: 'A paying customer' });
  t.like(await v.admin.entityTypes.save({ key: type, description: null }), { name: 'Customer', description: null });
  t.like(await v.admin.entityTypes.save({ key: type, name: null }), { name: null, description: null });
});

test('regulations: save (created, then updated), list with built-ins, get, delete and 404s', async (t) => {
  const key = unique('REG');
  t.is(await v.admin.regulations.save({ key, name: 'Internal policy', url: 'https://example.org/policy' }), 'Regulation created');
  t.is(await v.admin.regulations.save({ key, name: 'Internal policy v2' }), 'Regulation updated');
  const all = await v.admin.regulations.list();
  t.true(all.some((r) => r.key === 'GDPR'));
  t.true(all.some((r) => r.key === key));
  t.like(await v.admin.regulations.get(key), { key, name: 'Internal policy v2' });
  t.is(await v.admin.regulations.delete(key), 'Regulation deleted');
  await apiError(t, v.admin.regulations.get(key), 404, 'No such regulation');
  await apiError(t, v.admin.regulations.delete(key), 404, 'Regulation not found');
});

test('attribute definitions: save, list, get, delete and every error', async (t) => {
  const key = unique('ADDRESS');
  const regulation = unique('REG');
  await v.admin.regulations.save({ key: regulation });
  const saved = await v.admin.definitions.save({
    key,
    name: 'Postal address',
    hint: 'Where letters go',
    schema: { street: 'string', city: 'string', '[lines]': 'string' },
    repeatable: true,
    indexed: true,
    tags: ['contact'],
    regulations: [regulation],
  });
  t.like(saved, { key, name: 'Postal address', hint: 'Where letters go', repeatable: true, indexed: true, immutable: false });
  t.deepEqual(saved.schema, { street: 'string', city: 'string', '[lines]': 'string' });
  t.deepEqual(saved.tags, ['contact']);
  t.deepEqual(saved.regulations, [regulation]);
  t.deepEqual(saved.entityTypes, []);

  // null clears the name and the hint (left out, they are kept), as the vault answers them.
  const cleared = await v.admin.definitions.save({ key, name: null, hint: null });
  t.like(cleared, { key, name: null, hint: null, repeatable: true });
  await v.admin.definitions.save({ key, name: 'Postal address' });

  t.true((await v.admin.definitions.list()).some((d) => d.key === key));
  t.like(await v.admin.definitions.get(key), { key, name: 'Postal address', hint: null });
  t.is(await v.admin.definitions.delete(key), 'Successfully Deleted Attribute');
  await apiError(t, v.admin.definitions.get(key), 404, 'No such attribute');
  await apiError(t, v.admin.definitions.delete(key), 404, 'Attribute not found');

  await apiError(t, v.admin.definitions.save({ hint: 'nameless' }), 400, 'Attribute must contain at least one of key or name');
  await apiError(t, v.admin.definitions.save({ key: 'not-valid' }), 400, 'Attribute key must contain only alphanumeric characters and underscores');
  await apiError(t, v.admin.definitions.save({ key: unique('A'), schema: null as never }), 400, 'Schema cannot be null');
  await apiError(t, v.admin.definitions.save({ key: unique('A'), schema: 'vector' as never }), 400, 'Schema has unexpected class');
  await apiError(t, v.admin.definitions.save({ key: unique('A'), schema: { 'bad key': 'string' } }), 400, 'Sub-attribute key contains unusable characters');
  await apiError(t, v.admin.definitions.save({ key: unique('A'), regulations: [unique('NOPE')] }), 400, 'No such regulation');
  await apiError(t, v.admin.definitions.save({ key: unique('A'), entityTypes: [unique('nope')] }), 400, 'No such entity type');

  const { client: plain } = await v.appClient(['*']);
  await apiError(t, plain.definitions.save({ key: unique('A') }), 403, 'Forbidden access to edit attribute definitions');
  await apiError(t, plain.definitions.delete('ANY'), 403, 'Forbidden access to delete attribute definitions');
});

test('attribute definitions: a name alone is the key', async (t) => {
  const name = unique('NICKNAME');
  const saved = await v.admin.definitions.save({ name });
  t.is(saved.key, name);
  t.is(saved.schema, 'string');
});

test('attribute definitions: changes that would strand data are refused', async (t) => {
  const key = unique('PHONE');
  await v.admin.definitions.save({ key, repeatable: true });
  await v.admin.dataSubjects.storeAttributes(unique('subj'), [{ attribute: key, value: '555-0100' }]);
  await apiError(
    t,
    v.admin.definitions.save({ key, repeatable: false }),
    409,
    'Cannot change existing attribute from repeatable to non-repeatable, as it would invalidate existing data',
  );
  await apiError(t, v.admin.definitions.save({ key, schema: 'int' }), 409, 'Cannot edit attribute schema, as it may invalidate existing data');
  await apiError(t, v.admin.definitions.delete(key), 409, 'Cannot delete attribute, because it is in use');
});

test('entities: save (create, then update), list, get, and 404 Not found', async (t) => {
  const id = unique('ent');
  const type = unique('type');
  await v.admin.entityTypes.save({ key: type });
  const created = await v.admin.entities.save({ id, type, tags: ['vip'] });
  t.like(created, { id, type, legalHold: false });
  t.deepEqual(created.tags, ['vip']);
  t.truthy(Date.parse(created.created));
  t.truthy(Date.parse(created.updated));

  const updated = await v.admin.entities.save({ id, tags: ['vip', 'newsletter'], legalHold: true });
  t.deepEqual([...updated.tags].sort(), ['newsletter', 'vip']);
  t.true(updated.legalHold);
  t.is(updated.type, type);

  t.like(await v.admin.entities.get(id), { id, type, legalHold: true });
  t.true((await v.admin.entities.list()).some((e) => e.id === id));
  await apiError(t, v.admin.entities.get(unique('missing')), 404, 'Not found');
});

test('entities: ids with path characters round-trip', async (t) => {
  const id = `${unique('ent')}/x?y=1#z %2F`;
  await v.admin.entities.save({ id });
  t.is((await v.admin.entities.get(id)).id, id);
});

// Serial (ava runs serial tests before the others): offset paging shifts under concurrent inserts.
test.serial('entities: paging, and all() walks every page', async (t) => {
  const type = unique('pagetype');
  await v.admin.entityTypes.save({ key: type });
  for (let i = 0; i < 5; i++) await v.admin.entities.save({ id: `${type}_${i}`, type });
  const page = await v.admin.entities.list({ page: 0, count: 2 });
  t.is(page.length, 2);
  const seen: string[] = [];
  for await (const e of v.admin.entities.all({ pageSize: 2 })) if (e.type === type) seen.push(e.id);
  t.deepEqual(seen, [0, 1, 2, 3, 4].map((i) => `${type}_${i}`));
  const everything = (await v.admin.entities.list()).map((e) => e.id);
  const walked: string[] = [];
  for await (const e of v.admin.entities.all({ pageSize: 3 })) walked.push(e.id);
  t.deepEqual(walked, everything);
});

test('entities: only admins change a legal hold', async (t) => {
  const { client } = await v.appClient(['*']);
  const id = unique('ent');
  await client.entities.save({ id });
  await apiError(t, client.entities.save({ id, legalHold: true }), 403, 'Forbidden');
});

test('data subjects: save, list only data subjects, get, and 400 for another type', async (t) => {
  const id = unique('subj');
  const subject = await v.admin.dataSubjects.save({ id, tags: ['eu'] });
  t.like(subject, { id, type: 'datasubject' });
  t.like(await v.admin.dataSubjects.get(id), { id, type: 'datasubject' });

  const type = unique('type');
  await v.admin.entityTypes.save({ key: type });
  const other = unique('ent');
  await v.admin.entities.save({ id: other, type });
  const subjects = await v.admin.dataSubjects.list();
  t.true(subjects.some((e) => e.id === id));
  t.false(subjects.some((e) => e.id === other));
  t.true(subjects.every((e) => e.type === 'datasubject'));

  await apiError(t, v.admin.dataSubjects.get(other), 400, 'Entity is not a data subject');
  await apiError(t, v.admin.dataSubjects.get(unique('missing')), 404, 'Not found');
  await apiError(t, v.admin.dataSubjects.save({ id: unique('subj'), type }), 400, 'Entity is not a data subject');
});

test('errors carry the method, the path and the whole body', async (t) => {
  const err = await apiError(t, v.admin.tags.get('no-such-tag-here'), 404, 'No such tag');
  t.true(err instanceof VaultApiError);
  t.is(err.method, 'GET');
  t.is(err.path, '/tags/no-such-tag-here');
  t.like(err.body as object, { statusCode: 404, message: 'No such tag' });
  t.is(err.index, undefined);
  t.is(err.attempts, 1);
});
