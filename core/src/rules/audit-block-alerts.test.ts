/**
 * Alerts come before blocks: an audit event (or a bulk) that a rule refuses still records the
 * alerts raised before the block, as a refused store does.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
const BLOCKED = 'The provided data could not be stored, as a rule disallows it';

async function define(key: string): Promise<string> {
  const res = await v.request('POST', '/attributes', { body: { key } });
  if (res.status >= 300) throw new Error(`define ${key}: ${JSON.stringify(res.body)}`);
  return key;
}

async function rule(body: Record<string, unknown>): Promise<string> {
  const key = uid('rule');
  const res = await v.request('POST', '/rules', { body: { key, ...body } });
  if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  return key;
}

const on = (attribute: string) => ({ type: 'attribute', operator: 'any', attributes: [attribute] });

/** Alerts of a refused operation are recorded after its rollback, so they appear a moment later. */
async function alertsOf(ruleKey: string, expected: number): Promise<any[]> {
  let alerts: any[] = [];
  for (let i = 0; i < 100; i++) {
    alerts = (await v.request('GET', '/alerts', { query: { rule: ruleKey } })).body.data;
    if (alerts.length >= expected) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return alerts;
}

test('a data rule’s alert on a reported value is recorded when an activity rule blocks the event', async (t) => {
  const attr = await define(uid('CARD'));
  const app = uid('app');
  const alertKey = await rule({ constraint: on(attr), action: { type: 'alert', alertLevel: 'WARNING', message: 'card reported' } });
  await rule({ type: 'activity', constraint: { type: 'application', operator: 'any', applications: [app] }, action: { type: 'block' } });
  const subjectId = uid('s');
  const res = await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', subjectId, applicationId: app, data: { attribute: attr, value: '4111' } } });
  t.is(res.status, 403);
  t.is(res.body.message, BLOCKED);
  const alerts = await alertsOf(alertKey, 1);
  t.is(alerts.length, 1);
  t.like(alerts[0], { message: 'card reported', entityId: subjectId, attribute: attr, eventType: 'STORE' });
});

test('alerts the events of a bulk raised before one of them is blocked are recorded', async (t) => {
  const attr = await define(uid('DOC'));
  const blocked = uid('blocked');
  const alertKey = await rule({ type: 'activity', constraint: on(attr), action: { type: 'alert', alertLevel: 'INFO', message: 'doc reported' } });
  await rule({ type: 'activity', constraint: { type: 'application', operator: 'any', applications: [blocked] }, action: { type: 'block' } });
  const res = await v.request('POST', '/auditlogs/bulk', {
    body: [
      { eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr } },
      { eventType: 'STORE', subjectId: uid('s'), applicationId: 'crm', data: { attribute: attr } },
      { eventType: 'STORE', subjectId: uid('s'), applicationId: blocked, data: { attribute: attr } },
    ],
  });
  t.is(res.status, 403);
  t.is(res.body.message, BLOCKED);
  const alerts = await alertsOf(alertKey, 3);
  t.is(alerts.length, 3, 'the blocked event’s own alert, raised before its block, too');
  t.is(new Set(alerts.map((a) => a.id)).size, 3);
});
