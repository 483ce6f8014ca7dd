/**
 * Changing an application in place and rolling its key: the id, and so what the activity log
 * says the application did, stays the same. A vault of its own: these tests add admins.
 */
import test from 'ava';
import { hashApiKey } from './service.js';
import { createLogger } from '../logger.js';
import { Vault } from '../vault.js';
import { defineAttribute, unique } from '../audit/fixtures.js';
import { fuzzRoutes } from '../testing/fuzz.js';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
const EMAIL = unique('EMAIL');
const PHONE = unique('PHONE');

test.before(async () => {
  v = await startTestVault();
  await defineAttribute(v, EMAIL);
  await defineAttribute(v, PHONE);
});
test.after.always(async () => v?.close());

async function createApplication(body: Record<string, unknown>): Promise<{ id: string; apiKey: string; modifiedDate: string }> {
  const res = await v.request('POST', '/applications', { body: { name: unique('app'), ...body } });
  if (res.status !== 201) throw new Error(`could not create an application: ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** A report-only READ of one attribute, as an application's key reports it. */
const report = (apiKey: string, attribute: string, eventId = unique('event')) =>
  v.request('POST', '/auditlogs', { apiKey, body: { eventType: 'READ', eventId, dataPointId: unique('point'), subjectId: unique('subject'), applicationId: 'crm', data: { attribute } } });

const signsIn = async (apiKey: string) => (await v.request('GET', '/entitytypes', { apiKey })).status === 200;

test('an application gains and loses attributes in place: same id, same key', async (t) => {
  const { id, apiKey, modifiedDate } = await createApplication({ attributes: [EMAIL] });
  const refused = await report(apiKey, PHONE);
  t.is(refused.status, 403);
  t.is(refused.body.message, 'Forbidden access to attribute');

  const widened = await v.request('PATCH', `/applications/${id}`, { body: { attributes: [EMAIL, PHONE], name: 'billing v2' } });
  t.is(widened.status, 200);
  t.like(widened.body.data, { id, name: 'billing v2', attributes: [EMAIL, PHONE], admin: false });
  t.true(widened.body.data.modifiedDate > modifiedDate);
  t.is(widened.body.data.apiKey, undefined, 'a change never shows a key');
  t.is((await report(apiKey, PHONE)).status, 200, 'the change takes effect at once');

  const narrowed = await v.request('PATCH', `/applications/${id}`, { body: { attributes: [PHONE] } });
  t.deepEqual(narrowed.body.data.attributes, [PHONE]);
  t.is((await report(apiKey, EMAIL)).status, 403);
  t.like((await v.request('GET', `/applications/${id}`)).body.data, { name: 'billing v2', attributes: [PHONE] });
});

// Serial: it takes the original admin key's rights away for a moment, which the others use.
test.serial('admin rights are granted and taken back; the last admin keeps them', async (t) => {
  const { id, apiKey } = await createApplication({ attributes: ['*'] });
  t.is((await v.request('GET', '/applications', { apiKey })).status, 403);
  t.is((await v.request('PATCH', `/applications/${id}`, { body: { admin: true } })).status, 200);
  t.is((await v.request('GET', '/applications', { apiKey })).status, 200, 'now an admin');

  // The new admin demotes the original one, then cannot demote itself: it is the last.
  const admins = (await v.request('GET', '/applications', { apiKey })).body.data.filter((a: { admin: boolean }) => a.admin);
  const original = admins.find((a: { id: string }) => a.id !== id);
  t.is((await v.request('PATCH', `/applications/${original.id}`, { apiKey, body: { admin: false } })).status, 200);
  const last = await v.request('PATCH', `/applications/${id}`, { apiKey, body: { admin: false } });
  t.is(last.status, 409);
  t.is(last.body.message, 'Cannot demote the last admin application');
  const lastDelete = await v.request('DELETE', `/applications/${id}`, { apiKey });
  t.is(lastDelete.status, 409);
  t.is(lastDelete.body.message, 'Cannot delete the last admin application');
  t.is((await v.request('GET', '/applications', { apiKey })).status, 200, 'still an admin');

  t.is((await v.request('PATCH', `/applications/${original.id}`, { apiKey, body: { admin: true } })).status, 200);
  t.is((await v.request('GET', '/applications')).status, 200, 'the original admin key is an admin again');
});

test('bad changes are refused and change nothing', async (t) => {
  const { id, apiKey } = await createApplication({ attributes: [EMAIL] });
  const before = (await v.request('GET', `/applications/${id}`)).body.data;
  const cases: Array<[unknown, string | RegExp]> = [
    [{}, /must NOT have fewer than 1 properties/],
    [{ name: '   ' }, 'Application name is required'],
    [{ name: 'bell\u0007' }, 'Application name must be at most 256 characters, without control characters'],
    [{ attributes: ['no spaces allowed'] }, 'Application attributes must be attribute keys or "*"'],
    [{ apiKey: 'a-key-changed-by-patch-0123' }, /must NOT have additional properties/],
    [{ admin: 'yes' }, /must be boolean/],
  ];
  for (const [body, message] of cases) {
    const res = await v.request('PATCH', `/applications/${id}`, { body });
    t.is(res.status, 400, JSON.stringify(body));
    if (typeof message === 'string') t.is(res.body.message, message);
    else t.regex(res.body.message, message);
  }
  t.deepEqual((await v.request('GET', `/applications/${id}`)).body.data, before);

  const missing = await v.request('PATCH', '/applications/no-such-application', { body: { name: 'x' } });
  t.is(missing.status, 404);
  t.is(missing.body.message, 'Application not found');
  const notAdmin = await v.request('PATCH', `/applications/${id}`, { apiKey, body: { attributes: ['*'] } });
  t.is(notAdmin.status, 403);
  t.is(notAdmin.body.message, 'Forbidden');
  const rollByNonAdmin = await v.request('POST', `/applications/${id}/key`, { apiKey, body: {} });
  t.is(rollByNonAdmin.status, 403);
  t.true(await signsIn(apiKey), 'its key still works');
});

test('an application named with control characters before the check keeps its name through changes of its other members', async (t) => {
  const { id } = await createApplication({ attributes: [EMAIL] });
  await v.vault.db.updateTable('applications').set({ name: 'old\u001bname' }).where('id', '=', id).execute();
  // As the console sends a change: the name with it.
  const changed = await v.request('PATCH', `/applications/${id}`, { body: { name: 'old\u001bname', attributes: [EMAIL, PHONE] } });
  t.is(changed.status, 200, JSON.stringify(changed.body));
  t.like(changed.body.data, { name: 'old\u001bname', attributes: [EMAIL, PHONE] });
  const renamed = await v.request('PATCH', `/applications/${id}`, { body: { name: 'new\u001bname' } });
  t.is(renamed.status, 400);
  t.is(renamed.body.message, 'Application name must be at most 256 characters, without control characters');
  t.is((await v.request('GET', `/applications/${id}`)).body.data.name, 'old\u001bname');
});

test('a rolled key replaces the old one at once; what the application does stays under its id', async (t) => {
  const { id, apiKey: oldKey } = await createApplication({ attributes: [EMAIL] });
  t.is((await report(oldKey, EMAIL)).status, 200);

  const rolled = await v.request('POST', `/applications/${id}/key`);
  t.is(rolled.status, 200, JSON.stringify(rolled.body));
  const newKey = rolled.body.data.apiKey;
  t.regex(newKey, /^vk_/);
  t.like(rolled.body.data, { id, attributes: [EMAIL] });
  t.is(rolled.body.data.previousKeyValidUntil, undefined);
  t.false(await signsIn(oldKey), 'the old key stops at once');
  t.true(await signsIn(newKey));
  t.is((await report(newKey, EMAIL)).status, 200);
  t.is((await v.request('GET', `/applications/${id}`)).body.data.apiKey, undefined, 'the key is shown once');

  const activity = await v.request('GET', '/activity', { query: { count: '1000' } });
  const mine = activity.body.data.filter((r: { recordedBy: string }) => r.recordedBy === id);
  t.is(mine.length, 2, 'both reports are the same application');
});

test('a rolled key may leave the old one valid for a while; a second roll ends it', async (t) => {
  const { id, apiKey: first } = await createApplication({});
  const rolled = await v.request('POST', `/applications/${id}/key`, { body: { keepPreviousForSeconds: 3600 } });
  const second = rolled.body.data.apiKey;
  const until = Date.parse(rolled.body.data.previousKeyValidUntil);
  t.true(Math.abs(until - (Date.now() + 3600_000)) < 60_000, 'valid for about an hour');
  t.true(await signsIn(first), 'the previous key still works');
  t.true(await signsIn(second));
  t.is((await v.request('GET', `/applications/${id}`)).body.data.previousKeyValidUntil, rolled.body.data.previousKeyValidUntil);

  const chosen = 'a-deployment-chosen-key-0123456789';
  const again = await v.request('POST', `/applications/${id}/key`, { body: { apiKey: chosen, keepPreviousForSeconds: 60 } });
  t.is(again.body.data.apiKey, chosen);
  t.false(await signsIn(first), 'the key before the previous one ends at once');
  t.true(await signsIn(second), 'the one just replaced is kept for its own while');
  t.true(await signsIn(chosen));

  // Its while has passed (set in the database rather than waited for).
  await v.vault.db.updateTable('applications').set({ previous_key_expires: new Date(Date.now() - 1000).toISOString() }).where('id', '=', id).execute();
  await v.request('PATCH', `/applications/${id}`, { body: { name: 'expired previous key' } }); // drops cached keys, as a second elapsing would
  t.false(await signsIn(second), 'an expired previous key no longer signs in');
  t.is((await v.request('GET', `/applications/${id}`)).body.data.previousKeyValidUntil, undefined);

  const rows = await v.vault.db.selectFrom('applications').selectAll().execute();
  for (const key of [first, second, chosen]) t.false(JSON.stringify(rows).includes(key), 'keys are stored only as hashes');
  t.true(rows.some((r) => r.api_key_hash === hashApiKey(chosen) && r.previous_key_hash === hashApiKey(second)));
});

test('a key roll is refused when the key is in use or the request is malformed, and changes nothing', async (t) => {
  const other = await createApplication({});
  const { id, apiKey } = await createApplication({});
  const kept = await v.request('POST', `/applications/${id}/key`, { body: { keepPreviousForSeconds: 600 } });
  const current = kept.body.data.apiKey;
  const cases: Array<[unknown, number, string | RegExp]> = [
    [{ apiKey: other.apiKey }, 409, 'API key is already in use'],
    [{ apiKey }, 409, 'API key is already in use'],
    [{ apiKey: current }, 409, 'API key is already in use'],
    [{ apiKey: 'short' }, 400, /must NOT have fewer than 16 characters/],
    [{ apiKey: 'spaces are not allowed here' }, 400, 'API key must be printable ASCII, without spaces'],
    [{ keepPreviousForSeconds: -1 }, 400, /must be >= 0/],
    [{ keepPreviousForSeconds: 1.5 }, 400, /must be integer/],
    [{ keepPreviousForSeconds: 2592001 }, 400, /must be <= 2592000/],
    [{ expires: 10 }, 400, /must NOT have additional properties/],
  ];
  for (const [body, status, message] of cases) {
    const res = await v.request('POST', `/applications/${id}/key`, { body });
    t.is(res.status, status, JSON.stringify(body));
    if (typeof message === 'string') t.is(res.body.message, message);
    else t.regex(res.body.message, message);
  }
  t.true(await signsIn(apiKey));
  t.true(await signsIn(current));
  t.true(await signsIn(other.apiKey));
  const missing = await v.request('POST', '/applications/no-such-application/key');
  t.is(missing.status, 404);
  t.is(missing.body.message, 'Application not found');
  const taken = await v.request('POST', '/applications', { body: { name: 'copycat', apiKey } });
  t.is(taken.status, 409, "a key a roll kept valid is not another application's");
});

test('a key taken out of service, by a roll or a delete, is never a key again: it may be the one that leaked', async (t) => {
  const rolledKey = `${unique('rolled')}-key-0123456789`;
  const { id } = await createApplication({ apiKey: rolledKey });
  t.is((await v.request('POST', `/applications/${id}/key`)).status, 200);
  const deletedKey = `${unique('deleted')}-key-0123456789`;
  const deleted = await createApplication({ apiKey: deletedKey });
  t.is((await v.request('DELETE', `/applications/${deleted.id}`)).status, 200);

  for (const key of [rolledKey, deletedKey]) {
    const created = await v.request('POST', '/applications', { body: { name: unique('copycat'), apiKey: key } });
    t.is(created.status, 409);
    t.is(created.body.message, 'API key is already in use');
    const rolledOnto = await v.request('POST', `/applications/${id}/key`, { body: { apiKey: key } });
    t.is(rolledOnto.status, 409);
    t.is(rolledOnto.body.message, 'API key is already in use');
    t.false(await signsIn(key));
  }
  const retired = await v.vault.db.selectFrom('retired_api_keys').selectAll().execute();
  t.false(JSON.stringify(retired).includes(rolledKey) || JSON.stringify(retired).includes(deletedKey), 'kept only as hashes');
  t.true(retired.some((r) => r.key_hash === hashApiKey(rolledKey) && r.application_id === id));
});

test('VAULT_ADMIN_API_KEY left at a key the admin rolled stops the next start, rather than making that key an admin again', async (t) => {
  const own = await startTestVault();
  t.teardown(() => own.close());
  const me = await own.request('GET', '/applications/me');
  t.is((await own.request('POST', `/applications/${me.body.data.id}/key`)).status, 200);
  await t.throwsAsync(Vault.open({ config: own.config, logger: createLogger('silent'), announce: () => {} }), {
    message: 'VAULT_ADMIN_API_KEY is a key taken out of service (its application rolled its key or was deleted): set it to the admin key in use, or unset it',
  });
  const admins = await own.vault.db.selectFrom('applications').select('id').where('admin', '=', 1).execute();
  t.is(admins.length, 1, 'no admin was made with the old key');
});

test('hostile bodies never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'PATCH', url: '/applications/{id}' },
    { method: 'POST', url: '/applications/{id}/key' },
  ]);
});

test('any key may ask which application it is, and sees only itself', async (t) => {
  const { id, apiKey } = await createApplication({ attributes: [EMAIL] });
  const me = await v.request('GET', '/applications/me', { apiKey });
  t.is(me.status, 200);
  t.like(me.body.data, { id, attributes: [EMAIL], admin: false });
  t.is(me.body.data.apiKey, undefined);
  const admin = await v.request('GET', '/applications/me');
  t.like(admin.body.data, { admin: true, attributes: ['*'] });
  t.is((await v.request('GET', `/applications/${admin.body.data.id}`, { apiKey })).status, 403, 'other applications stay an admin matter');
  const anonymous = await v.request('GET', '/applications/me', { apiKey: null });
  t.is(anonymous.status, 401);
  t.is(anonymous.body.message, 'Unauthorized');
});
