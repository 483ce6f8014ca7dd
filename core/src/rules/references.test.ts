/**
 * A rule saved while the attribute, tag, regulation or entity type it names is being deleted, as happens
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

const cases = [
  {
    kind: 'attribute',
    create: (key: string) => v.request('POST', '/attributes', { body: { key, schema: 'string' } }),
    path: (key: string) => `/attributes/${key}`,
    constraint: (key: string) => ({ type: 'attribute', operator: 'any', attributes: [key] }),
  },
  {
    kind: 'tag',
    create: (key: string) => v.request('POST', '/tags', { body: { name: key } }),
    path: (key: string) => `/tags/${key}`,
    constraint: (key: string) => ({ type: 'tag', operator: 'any', tags: [key] }),
  },
  {
    kind: 'regulation',
    create: (key: string) => v.request('POST', '/regulations', { body: { key, name: 'Raced' } }),
    path: (key: string) => `/regulations/${key}`,
    constraint: (key: string) => ({ type: 'regulation', operator: 'any', regulations: [key] }),
  },
  {
    kind: 'entity type',
    create: (key: string) => v.request('POST', '/entitytypes', { body: { key } }),
    path: (key: string) => `/entitytypes/${key}`,
    constraint: (key: string) => ({ type: 'entityType', entityTypes: [key] }),
  },
];

for (const { kind, create, path, constraint } of cases) {
  test.serial(`${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} deleted while a rule naming it is saved stays, and the delete is refused`, async (t) => {
    const key = kind === 'tag' ? uid('raced').toLowerCase() : uid('RACED');
    t.true(created((await create(key)).status));
    const res = await deleteDuringRuleSave(path(key), { key: uid('rule'), type: 'data', constraint: constraint(key), action: { type: 'alert', alertLevel: 'NORMAL', message: 'raced' } });
    t.is(res.status, 409);
    t.is(res.body.message, `Cannot delete ${kind}, because it is referenced by rule`);
    t.is((await v.request('GET', path(key))).status, 200);
  });
}
