/**
 * Retention once a legal hold (or a prohibition of deletes) is lifted: the points the hold
 * kept past their retention go at the next sweep, whichever kind of retention set them.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  // Only the sweeps a test runs.
  await v.vault.retention.stop();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
const DAY_MS = 86_400_000;

async function ok(res: Promise<{ status: number; body: any }>): Promise<any> {
  const { status, body } = await res;
  if (status >= 300) throw new Error(`${status} ${JSON.stringify(body)}`);
  return body;
}

async function idleAttribute(): Promise<string> {
  const key = uid('IDLE');
  await ok(v.request('POST', '/attributes', { body: { key, schema: 'string' } }));
  await ok(v.request('POST', '/rules', { body: { key: uid('rule'), constraint: { type: 'attribute', operator: 'any', attributes: [key] }, action: { type: 'retention', daysSinceRead: 2, autoDelete: true } } }));
  return key;
}

const store = (entity: string, attribute: string) =>
  ok(v.request('POST', `/datasubjects/${entity}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': v.keys.publicKey } }));
const pointsOf = async (entity: string) => (await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', entity).execute()).length;

/** Makes the subject's points unread for five days, their policy due since three. */
async function age(entity: string): Promise<void> {
  await v.vault.db.updateTable('datapoints').set({ modified_date: new Date(Date.now() - 5 * DAY_MS).toISOString() }).where('entity_id', '=', entity).execute();
  await v.vault.db.updateTable('idle_retention').set({ next_check: new Date(Date.now() - 3 * DAY_MS).toISOString() }).where('entity_id', '=', entity).execute();
}

test.serial('daysSinceRead: points a legal hold kept are deleted by the first sweep after the hold is lifted', async (t) => {
  const attr = await idleAttribute();
  const entity = uid('held');
  await ok(v.request('POST', '/datasubjects', { body: { id: entity, legalHold: true } }));
  await store(entity, attr);
  await age(entity);
  await v.vault.retention.sweep();
  t.is(await pointsOf(entity), 1, 'kept while held');

  await ok(v.request('POST', '/datasubjects', { body: { id: entity, legalHold: false } }));
  await v.vault.retention.sweep(new Date(Date.now() + 60_000));
  t.is(await pointsOf(entity), 0, 'unread for five days, no longer held: deleted');
  await v.vault.sealer.sealAll();
  const deletes = await v.request('GET', '/activity', { query: { subjectId: entity, eventType: 'DELETE' } });
  t.deepEqual(deletes.body.data.map((r: any) => [r.attribute, r.applicationId]), [[attr, 'retention']]);
});

test.serial('daysSinceRead: a hold lifted by a rule lets the next sweep delete what it kept', async (t) => {
  const attr = await idleAttribute();
  const release = uid('RELEASE');
  await ok(v.request('POST', '/attributes', { body: { key: release, schema: 'string' } }));
  await ok(v.request('POST', '/rules', { body: { key: uid('rule'), constraint: { type: 'attribute', operator: 'any', attributes: [release] }, action: { type: 'legalHold', status: false } } }));
  const entity = uid('held');
  await ok(v.request('POST', '/datasubjects', { body: { id: entity, legalHold: true } }));
  await store(entity, attr);
  await age(entity);
  await v.vault.retention.sweep();
  t.is(await pointsOf(entity), 1, 'kept while held');

  await store(entity, release);
  t.false((await v.request('GET', `/datasubjects/${entity}`)).body.data.legalHold);
  await v.vault.retention.sweep(new Date(Date.now() + 60_000));
  t.is(await pointsOf(entity), 1, 'only the released attribute’s fresh point is left');
});
