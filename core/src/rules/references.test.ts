/**
 * A rule saved while the attribute, tag or regulation it names is being deleted, as happens
 * when the two requests reach different vault processes: one of them must lose. The rule's
 * save is played by a transaction held open at the point where it has checked its references
 * and written the rule, but not committed.
 */
import test from 'ava';
import { sql } from 'kysely';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { parseRule } from './compile.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;
const created = (status: number) => status === 200 || status === 201;

/** Deletes `path` while a rule naming what it deletes is written but not yet committed. */
async function deleteDuringRuleSave(path: string, rule: Record<string, unknown>) {
  const { rule: compiled, definition } = parseRule(rule);
  let answer: Promise<{ status: number; body: any }> | undefined;
  await v.vault.db.transaction().execute(async (trx) => {
    await trx.updateTable('rules_version').set({ version: sql`version + 1` }).where('id', '=', 1).execute();
    const now = new Date().toISOString();
    await trx
      .insertInto('rules')
      .values({ key: compiled.key, name: null, type: compiled.type, definition: JSON.stringify(definition), execution_order: 1, created_date: now, modified_date: now })
      .execute();
    answer = v.request('DELETE', path);
    await new Promise((r) => setTimeout(r, 300));
  });
  return answer!;
}

test.serial('an attribute deleted while a rule naming it is saved stays, and the delete is refused', async (t) => {
  const key = uid('RACED');
  t.true(created((await v.request('POST', '/attributes', { body: { key, schema: 'string' } })).status));
  const res = await deleteDuringRuleSave(`/attributes/${key}`, {
    key: uid('rule'),
    type: 'data',
    constraint: { type: 'attribute', operator: 'any', attributes: [key] },
    action: { type: 'alert', alertLevel: 'NORMAL', message: 'raced' },
  });
  t.is(res.status, 409);
  t.is(res.body.message, 'Cannot delete attribute, because it is referenced by rule');
  t.is((await v.request('GET', `/attributes/${key}`)).status, 200);
});

test.serial('a tag deleted while a rule naming it is saved stays, and the delete is refused', async (t) => {
  const name = uid('raced').toLowerCase();
  t.true(created((await v.request('POST', '/tags', { body: { name } })).status));
  const res = await deleteDuringRuleSave(`/tags/${name}`, {
    key: uid('rule'),
    type: 'data',
    constraint: { type: 'tag', operator: 'any', tags: [name] },
    action: { type: 'alert', alertLevel: 'NORMAL', message: 'raced' },
  });
  t.is(res.status, 409);
  t.is(res.body.message, 'Cannot delete tag, because it is referenced by rule');
  t.is((await v.request('GET', `/tags/${name}`)).status, 200);
});

test.serial('a regulation deleted while a rule naming it is saved stays, and the delete is refused', async (t) => {
  const key = uid('RACED');
  t.true(created((await v.request('POST', '/regulations', { body: { key, name: 'Raced' } })).status));
  const res = await deleteDuringRuleSave(`/regulations/${key}`, {
    key: uid('rule'),
    type: 'data',
    constraint: { type: 'regulation', operator: 'any', regulations: [key] },
    action: { type: 'alert', alertLevel: 'NORMAL', message: 'raced' },
  });
  t.is(res.status, 409);
  t.is(res.body.message, 'Cannot delete regulation, because it is referenced by rule');
  t.is((await v.request('GET', `/regulations/${key}`)).status, 200);
});
