import test from 'ava';
import { hashApiKey } from './service.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

test('an admin creates an application; its generated key is returned once and works', async (t) => {
  const created = await v.request('POST', '/applications', { body: { name: 'billing', attributes: ['EMAIL'] } });
  t.is(created.status, 201);
  const { id, apiKey, attributes, admin } = created.body.data;
  t.deepEqual(attributes, ['EMAIL']);
  t.false(admin);
  t.regex(apiKey, /^vk_/);
  const read = await v.request('GET', `/applications/${id}`);
  t.is(read.body.data.name, 'billing');
  t.is(read.body.data.apiKey, undefined, 'the key is never shown again');
  const list = await v.request('GET', '/applications');
  t.true(list.body.data.some((a: any) => a.id === id));
  t.true(list.body.data.every((a: any) => a.apiKey === undefined));
  t.is((await v.request('GET', '/entitytypes', { apiKey })).status, 200);
});

test('a caller-supplied key is kept, and stored only as a hash', async (t) => {
  const apiKey = 'existing-deployment-key-123456';
  const created = await v.request('POST', '/applications', { body: { name: 'legacy', apiKey } });
  t.is(created.status, 201);
  t.is(created.body.data.apiKey, apiKey);
  const rows = await v.vault.db.selectFrom('applications').selectAll().execute();
  t.false(JSON.stringify(rows).includes(apiKey));
  t.true(rows.some((r) => r.api_key_hash === hashApiKey(apiKey)));
  const again = await v.request('POST', '/applications', { body: { name: 'copycat', apiKey } });
  t.is(again.status, 409);
  t.is(again.body.message, 'API key is already in use');
});

test('a caller-supplied key that no request could carry is refused, and no application is made', async (t) => {
  for (const apiKey of ['  padded-key-0123456789  ', 'line\nbreak-key-0123456789', ' '.repeat(20), 'ключ-ключ-ключ-ключ', 'tab\tkey-0123456789012']) {
    const res = await v.request('POST', '/applications', { body: { name: 'unusable', apiKey } });
    t.is(res.status, 400, JSON.stringify(apiKey));
    t.is(res.body.message, 'API key must be printable ASCII, without spaces');
  }
  const names = (await v.request('GET', '/applications')).body.data.map((a: { name: string }) => a.name);
  t.false(names.includes('unusable'));
});

test('only admins manage applications', async (t) => {
  const apiKey = await v.createApplication(['*']);
  for (const [method, url] of [['GET', '/applications'], ['POST', '/applications'], ['GET', '/applications/x'], ['DELETE', '/applications/x']]) {
    const res = await v.request(method, url, { apiKey, body: method === 'POST' ? { name: 'x' } : undefined });
    t.is(res.status, 403, `${method} ${url}`);
    t.is(res.body.message, 'Forbidden');
  }
});

test('deleting an application revokes its key; unknown ids are 404', async (t) => {
  const created = await v.request('POST', '/applications', { body: { name: 'temp' } });
  const { id, apiKey } = created.body.data;
  const del = await v.request('DELETE', `/applications/${id}`);
  t.deepEqual(del.body, { data: 'Successfully Deleted Application' });
  t.is((await v.request('GET', '/entitytypes', { apiKey })).status, 401);
  const missing = await v.request('DELETE', `/applications/${id}`);
  t.is(missing.status, 404);
  t.is(missing.body.message, 'Application not found');
});

test('the last admin cannot be deleted', async (t) => {
  const list = await v.request('GET', '/applications');
  const admins = list.body.data.filter((a: any) => a.admin);
  t.is(admins.length, 1);
  const res = await v.request('DELETE', `/applications/${admins[0].id}`);
  t.is(res.status, 409);
  t.is(res.body.message, 'Cannot delete the last admin application');
});

test('bad application bodies are 400', async (t) => {
  t.is((await v.request('POST', '/applications', { body: { name: '' } })).status, 400);
  t.is((await v.request('POST', '/applications', { body: { name: 'x', apiKey: 'short' } })).status, 400);
  const badAttr = await v.request('POST', '/applications', { body: { name: 'x', attributes: ['no spaces allowed'] } });
  t.is(badAttr.status, 400);
  t.is(badAttr.body.message, 'Application attributes must be attribute keys or "*"');
});

test('an application name with a control character is refused, and no application is made', async (t) => {
  const names = ['crm\u001b[2J', 'next\u0085line', 'two\nlines', 'del\u007f'];
  for (const name of names) {
    const res = await v.request('POST', '/applications', { body: { name } });
    t.is(res.status, 400, JSON.stringify(name));
    t.is(res.body.message, 'Application name must be at most 256 characters, without control characters');
  }
  const listed = (await v.request('GET', '/applications')).body.data.map((a: { name: string }) => a.name);
  t.false(listed.some((n: string) => names.includes(n)));
  // Whitespace around a name is trimmed as before, a line break at its end included.
  const trimmed = await v.request('POST', '/applications', { body: { name: ' Facturation “B2B” 🧾\n' } });
  t.is(trimmed.status, 201);
  t.is(trimmed.body.data.name, 'Facturation “B2B” 🧾');
});

test('hostile bodies never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/applications' },
    { method: 'GET', url: '/applications/{id}' },
    { method: 'DELETE', url: '/applications/{id}' },
  ]);
});
