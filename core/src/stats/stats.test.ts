import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { nowIso } from '../util/time.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  await v.request('POST', '/attributes', { body: { key: 'EMAIL', indexed: true } });
  await v.request('POST', '/attributes', { body: { key: 'NAME', schema: { first: 'string', last: 'string' } } });
  await v.request('POST', '/rules', {
    body: { key: 'on-email', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL'] }, action: { type: 'alert', alertLevel: 'DANGER', message: 'e-mail stored' } },
  });
  const store = (id: string, data: unknown[]) =>
    v.request('POST', `/datasubjects/${id}/attributes`, { headers: { 'x-encryption-key': v.keys.publicKey }, body: { data } });
  t0 = (await store('s-1', [{ attribute: 'EMAIL', value: 'a@example.org' }, { attribute: 'NAME', value: { first: 'Ada', last: 'Lovelace' } }])).status;
  await store('s-2', [{ attribute: 'EMAIL', value: 'b@example.org' }]);
  await v.request('POST', '/entitytypes', { body: { key: 'company' } });
  await v.request('POST', '/entities', { body: { id: 'acme', type: 'company' } });
  // An alert from two days ago: outside the last 24 hours.
  await v.vault.db
    .insertInto('alerts')
    .values({ id: 'old-alert', rule_key: 'on-email', level: 'INFO', message: 'old', entity_id: null, attribute: null, datapoint_id: null, event_type: 'STORE', created_date: new Date(Date.now() - 48 * 3600_000).toISOString() })
    .execute();
});
let t0 = 0;
test.after.always(async () => v?.close());

test.serial('an admin sees every count, and the alerts of the last 24 hours by level', async (t) => {
  t.is(t0, 200);
  const res = await v.request('GET', '/stats');
  t.is(res.status, 200);
  const data = res.body.data;
  // A structure counts once; entities of other types are not data subjects.
  t.like(data, { subjects: 2, dataPoints: 3, definitions: 2, rules: 1, applications: 1 });
  t.deepEqual(data.alertsLast24Hours, { NORMAL: 0, INFO: 0, WARNING: 0, DANGER: 2, SUCCESS: 0, NEUTRAL: 0 });
  t.true(Math.abs(Date.parse(data.asOf) - Date.parse(nowIso())) < 3_600_000);
});

test.serial('another application sees only what it may see elsewhere', async (t) => {
  const apiKey = await v.createApplication(['NAME']);
  const res = await v.request('GET', '/stats', { apiKey });
  t.is(res.status, 200);
  t.like(res.body.data, { subjects: 2, dataPoints: 1, definitions: 2, rules: 1, applications: null, alertsLast24Hours: null });
  const none = await v.createApplication([]);
  t.like((await v.request('GET', '/stats', { apiKey: none })).body.data, { dataPoints: 0 });
});

test('the counts need an API key and name no value, subject or key', async (t) => {
  const anonymous = await v.request('GET', '/stats', { apiKey: null });
  t.is(anonymous.status, 401);
  t.is(anonymous.body.message, 'Unauthorized');
  const text = JSON.stringify((await v.request('GET', '/stats')).body);
  for (const secret of ['a@example.org', 'Ada', 's-1', v.adminKey]) t.false(text.includes(secret));
});
