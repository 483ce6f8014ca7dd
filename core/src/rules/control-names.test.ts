/**
 * Control characters (C0, DEL, C1) in a rule's key, name and the names its constraints list
 * end up in logs, alerts, the console and exports: a new name holding one is refused, while a
 * rule stored before the check still loads, is evaluated, read, posted back as read and deleted.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  const res = await v.request('POST', '/attributes', { body: { key: 'EMAIL', schema: 'string' } });
  if (res.status >= 300) throw new Error(`could not define EMAIL: ${JSON.stringify(res.body)}`);
});
test.after.always(async () => v?.close());

const alert = { type: 'alert', alertLevel: 'NORMAL', message: 'hello' };
const onEmail = { type: 'attribute', operator: 'any', attributes: ['EMAIL'] };
let counter = 0;
const uniqueKey = (prefix: string) => `${prefix}_${++counter}_${Math.random().toString(36).slice(2, 8)}`;

test('a rule whose key, name or listed names hold a control character is refused, and nothing is stored', async (t) => {
  const cases: Array<[string, (key: string) => Record<string, unknown>, string]> = [
    ['escape in the key', (key) => ({ key: `${key}\u001b[31m`, constraint: onEmail, action: alert }), 'Rule key must be at most 256 characters, without control characters'],
    ['NEL in the key', (key) => ({ key: `${key}\u0085`, constraint: onEmail, action: alert }), 'Rule key must be at most 256 characters, without control characters'],
    ['newline in the name', (key) => ({ key, name: 'two\nlines', constraint: onEmail, action: alert }), 'Rule name must be a string of at most 256 characters, without control characters'],
    [
      'a tag list',
      (key) => ({ key, constraint: { type: 'tag', operator: 'any', tags: ['ok', 'bell\u0007'] }, action: alert }),
      'Constraint tag names must be 1 to 256 characters, without control characters',
    ],
    [
      'an application list, nested',
      (key) => ({ key, type: 'activity', constraint: { type: 'all', constraints: [onEmail, { type: 'application', operator: 'any', applications: ['crm\u009b2J'] }] }, action: alert }),
      'Constraint application names must be 1 to 256 characters, without control characters',
    ],
    [
      'an attribute list',
      (key) => ({ key, constraint: { type: 'attribute', operator: 'any', attributes: ['EM\u0001AIL'] }, action: alert }),
      'Constraint attribute names must be 1 to 256 characters, without control characters',
    ],
    [
      'an entity value attribute',
      (key) => ({ key, constraint: { type: 'user', attribute: 'EMAIL\t', predicate: 'eq', value: 'x' }, action: alert }),
      'Entity value constraint attribute must be 1 to 256 characters, without control characters',
    ],
  ];
  for (const [label, make, message] of cases) {
    const key = uniqueKey('ctl');
    const body = make(key);
    const res = await v.request('POST', '/rules', { body });
    t.is(res.status, 400, label);
    t.is(res.body.message, message, label);
    t.is((await v.request('GET', `/rules/${encodeURIComponent(body.key as string)}`)).status, 404, `${label}: no rule stored`);
  }
  // Lengths keep their check, now with the same words.
  const long = await v.request('POST', '/rules', { body: { key: uniqueKey('long'), constraint: { type: 'tag', operator: 'any', tags: ['t'.repeat(257)] }, action: alert } });
  t.is(long.body.message, 'Constraint tag names must be 1 to 256 characters, without control characters');
});

test('ordinary names, Unicode included, are taken as before', async (t) => {
  const key = uniqueKey('règle');
  const body = { key, name: 'Adresse e-mail – “alerte” 🚨', constraint: { type: 'tag', operator: 'any', tags: ['vip client', 'ü'] }, action: alert };
  const res = await v.request('POST', '/rules', { body });
  t.is(res.status, 201, JSON.stringify(res.body));
  t.deepEqual(res.body, { data: 'Rule created' });
  t.like((await v.request('GET', `/rules/${encodeURIComponent(key)}`)).body.data, body);
});

test('a rule stored with control characters before the check still loads, is evaluated, read and deleted', async (t) => {
  const key = `${uniqueKey('legacy')}\u001b[0m`;
  const name = 'legacy\u0085name';
  const definition = {
    key,
    name,
    type: 'activity',
    constraint: { type: 'all', constraints: [onEmail, { type: 'application', operator: 'any', applications: ['crm\u0007', 'crm'] }] },
    action: { type: 'alert', alertLevel: 'WARNING', message: 'legacy rule matched' },
  };
  const now = new Date().toISOString();
  await v.vault.db.insertInto('rules').values({ key, name, type: 'activity', definition: JSON.stringify(definition), execution_order: 1, created_date: now, modified_date: now }).execute();
  await v.vault.db.updateTable('rules_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();

  const rules = await v.vault.ruleService.ruleSet(v.vault.db);
  t.true(rules.all.some((r) => r.key === key), 'loaded');
  t.false(v.logs.join('').includes('no longer compiles'));

  // Events can no longer name the application 'crm\u0007' (refused at the door), so the rule is
  // shown one of its other listed names.
  const event = { eventType: 'STORE', applicationId: 'crm', subjectId: uniqueKey('subject'), data: { attribute: 'EMAIL' } };
  t.is((await v.request('POST', '/auditlogs', { body: event })).status, 200);
  const alerts = await v.request('GET', '/alerts', { query: { rule: key } });
  t.is(alerts.status, 200);
  t.true(alerts.body.data.some((a: { message: string }) => a.message === 'legacy rule matched'), JSON.stringify(alerts.body).slice(0, 300));

  const read = await v.request('GET', `/rules/${encodeURIComponent(key)}`);
  t.is(read.status, 200);
  t.like(read.body.data, { key, name });
  // Posted back as read (how clients edit a rule), its stored names are kept; a new one is not.
  const again = await v.request('POST', '/rules', { body: { ...read.body.data, action: { ...definition.action, message: 'edited' } } });
  t.is(again.status, 200, JSON.stringify(again.body));
  t.deepEqual(again.body, { data: 'Rule updated' });
  const renamed = await v.request('POST', '/rules', { body: { ...read.body.data, name: 'other\u0007name' } });
  t.is(renamed.status, 400);
  t.is(renamed.body.message, 'Rule name must be a string of at most 256 characters, without control characters');
  t.is((await v.request('GET', `/rules/${encodeURIComponent(key)}`)).body.data.action.message, 'edited');
  t.is((await v.request('DELETE', `/rules/${encodeURIComponent(key)}`)).status, 200);
});
