/** The engine called directly, with contexts built as the data plane and audit endpoints build them. */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import type { Caller } from '../access/caller.js';
import { findEntity, insertEntity } from '../entities/repository.js';
import { isVaultError } from '../errors.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import type { CandidatePoint, DataRuleContext, RuleEntity } from './engine.js';
import { PROHIBITED_MESSAGE } from './prohibitions.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
const caller: Caller = { applicationId: 'app', name: 'app', admin: true, attributes: '*' };

async function defineAndRule(rule: Record<string, unknown>, attribute = uid('ATTR')): Promise<string> {
  await v.request('POST', '/attributes', { body: { key: attribute } });
  const res = await v.request('POST', '/rules', { body: { key: uid('rule'), ...rule, constraint: rule.constraint ?? { type: 'attribute', operator: 'any', attributes: [attribute] } } });
  if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  return attribute;
}

async function entity(): Promise<RuleEntity> {
  const id = uid('e');
  await insertEntity(v.vault.db, { id, type: 'datasubject' });
  return { id, type: 'datasubject', tags: new Set(), legalHold: false };
}

function candidate(attribute: string, value: string, dataPointId?: string): CandidatePoint {
  return { attribute, value, leaves: [{ attribute, value, type: 'string' }], tags: new Set(), regulations: new Set(), sensitivity: 'NORMAL', ...(dataPointId ? { dataPointId } : {}) };
}

function dataContext(e: RuleEntity, points: CandidatePoint[], extra: Partial<DataRuleContext> = {}): DataRuleContext {
  return { trx: v.vault.db, caller, entity: e, points, eventType: 'STORE', reportOnly: false, ...extra };
}

test('an alert names the point when the caller knows its id, and is published only by the after-commit job', async (t) => {
  const attribute = await defineAndRule({ action: { type: 'alert', alertLevel: 'SUCCESS', message: 'seen' } });
  const e = await entity();
  const logsBefore = v.logs.length;
  const effects = await v.vault.rules.evaluateData(dataContext(e, [candidate(attribute, 'v', 'point-1')]));
  const [row] = await v.vault.db.selectFrom('alerts').selectAll().where('entity_id', '=', e.id).execute();
  t.like(row, { datapoint_id: 'point-1', attribute, level: 'SUCCESS', event_type: 'STORE' });
  t.false(v.logs.slice(logsBefore).some((l) => l.includes(row.id)), 'nothing is published before commit');
  t.is(effects.afterCommit.length, 1);
  await effects.afterCommit[0]();
  t.true(v.logs.slice(logsBefore).some((l) => l.includes(row.id)));
});

test('entity effects reach both the database and the caller’s entity object', async (t) => {
  const tag = uid('t').toLowerCase();
  const attribute = await defineAndRule({ action: { type: 'entityTag', tag } });
  await v.request('POST', '/rules', { body: { key: uid('hold'), constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'legalHold' } } });
  const e = await entity();
  // Inside a transaction, as every caller evaluates: the hold's CHANGE record commits with it.
  await v.vault.db.transaction().execute((trx) => v.vault.rules.evaluateData(dataContext(e, [candidate(attribute, 'v')], { trx })));
  t.true(e.tags.has(tag));
  t.true(e.legalHold);
  const stored = await findEntity(v.vault.db, e.id);
  t.deepEqual(stored?.tags, [tag]);
  t.true(stored?.legalHold);
});

test('retention on a candidate: the earliest expiry of several rules, autoDelete if any asks', async (t) => {
  const attribute = await defineAndRule({ action: { type: 'retention', expirationDate: '2040-01-01T00:00:00Z' } });
  await v.request('POST', '/rules', { body: { key: uid('r'), constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'retention', expirationDate: '2035-06-01', autoDelete: true } } });
  const point = candidate(attribute, 'v');
  await v.vault.rules.evaluateData(dataContext(await entity(), [point]));
  t.is(point.expiresAt, '2035-06-01T00:00:00.000Z');
  t.true(point.autoDelete);
});

test('activity rules change the event’s entity: a prohibition is then enforced by checkProhibited', async (t) => {
  const app = uid('app');
  await v.request('POST', '/rules', {
    body: { key: uid('r'), type: 'activity', constraint: { type: 'application', operator: 'any', applications: [app] }, action: { type: 'prohibition', prohibitions: ['UPDATE'] } },
  });
  const e = await entity();
  await v.vault.rules.checkProhibited(v.vault.db, e.id, 'UPDATE');
  await v.vault.rules.evaluateActivity({ trx: v.vault.db, caller, entity: e, event: { eventType: 'READ', applicationId: app, subjectId: e.id, timestamp: new Date().toISOString() } });
  const err = await t.throwsAsync(() => v.vault.rules.checkProhibited(v.vault.db, e.id, 'UPDATE'));
  t.true(isVaultError(err) && err.status === 403);
  t.is(err?.message, PROHIBITED_MESSAGE);
  await t.notThrowsAsync(() => v.vault.rules.checkProhibited(v.vault.db, e.id, 'READ'));
  // Without a known entity there is nothing to change, and nothing fails.
  await t.notThrowsAsync(() =>
    v.vault.rules.evaluateActivity({ trx: v.vault.db, caller, event: { eventType: 'READ', applicationId: app, subjectId: 'nobody', timestamp: new Date().toISOString() } }),
  );
  await t.notThrowsAsync(() => v.vault.rules.checkProhibited(v.vault.db, 'nobody', 'UPDATE'));
});

test('a block thrown inside the caller’s transaction rolls back what earlier rules wrote', async (t) => {
  const tag = uid('t').toLowerCase();
  const attribute = await defineAndRule({ action: { type: 'entityTag', tag } });
  await v.request('POST', '/rules', { body: { key: uid('b'), constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'block' } } });
  const e = await entity();
  await t.throwsAsync(() => v.vault.db.transaction().execute((trx) => v.vault.rules.evaluateData(dataContext(e, [candidate(attribute, 'v')], { trx }))), {
    message: 'The provided data could not be stored, as a rule disallows it',
  });
  t.deepEqual((await findEntity(v.vault.db, e.id))?.tags, []);
});

test('a rule written straight to the database by another process is picked up through the version stamp', async (t) => {
  const attribute = uid('ATTR');
  await v.request('POST', '/attributes', { body: { key: attribute } });
  const point = candidate(attribute, 'v');
  await v.vault.rules.evaluateData(dataContext(await entity(), [point]));
  t.false(point.tags.has('from_sql'));
  const now = new Date().toISOString();
  await v.vault.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('rules')
      .values({
        key: uid('sql'),
        name: null,
        type: 'data',
        definition: JSON.stringify({ constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'tag', tag: 'from_sql' } }),
        execution_order: 1,
        created_date: now,
        modified_date: now,
      })
      .execute();
    await trx.updateTable('rules_version').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();
  });
  const again = candidate(attribute, 'v');
  await v.vault.rules.evaluateData(dataContext(await entity(), [again]));
  t.true(again.tags.has('from_sql'));
});
