/**
 * InsertBatch and insertRows on the test database's dialect (the PostgreSQL pass sends each
 * batch as one statement of data-modifying CTEs; SQLite runs its inserts one after another).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { isUniqueViolation } from './dialect.js';
import { InsertBatch, insertRows } from './insert-rows.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;
const now = new Date().toISOString();
const entity = (id: string) => ({ id, type: 'datasubject', legal_hold: 0 as const, created_date: now, updated_date: now });
const tag = (name: string) => ({ name, created_date: now, modified_date: now });

test('every row of a batch lands, in every table it names', async (t) => {
  const [a, b, name] = [uid('a'), uid('b'), uid('tag')];
  await v.vault.db.transaction().execute(async (trx) => {
    const batch = new InsertBatch(v.vault.dialect);
    batch.add('entities', [entity(a), entity(b)]);
    batch.add('tags', [tag(name)]);
    batch.add('entity_tags', [
      { entity_id: a, tag: name },
      { entity_id: b, tag: name },
    ]);
    batch.add('entity_tags', []);
    await batch.run(trx);
  });
  const rows = await v.vault.db.selectFrom('entity_tags').select(['entity_id', 'tag']).where('tag', '=', name).orderBy('entity_id').execute();
  t.deepEqual(rows, [a, b].sort().map((id) => ({ entity_id: id, tag: name })));
});

test('a duplicate key anywhere in the batch fails it as a unique violation, and the transaction keeps nothing', async (t) => {
  const existing = uid('existing');
  await v.vault.db.insertInto('entities').values(entity(existing)).execute();
  const fresh = uid('fresh');
  const err = await t.throwsAsync(
    v.vault.db.transaction().execute(async (trx) => {
      const batch = new InsertBatch(v.vault.dialect);
      batch.add('entities', [entity(fresh)]);
      batch.add('tags', [tag(uid('tag'))]);
      batch.add('entities', [entity(existing)]);
      await batch.run(trx);
    }),
    { any: true },
  );
  t.true(isUniqueViolation(err));
  t.is(await v.vault.db.selectFrom('entities').select('id').where('id', '=', fresh).executeTakeFirst(), undefined);
});

test('a batch too large for one statement is sent in several, and all of it lands', async (t) => {
  const prefix = uid('many');
  const ids = Array.from({ length: 7000 }, (_, i) => `${prefix}-${i}`);
  await v.vault.db.transaction().execute(async (trx) => {
    const batch = new InsertBatch(v.vault.dialect);
    batch.add('entities', ids.map(entity));
    batch.add('tags', [tag(prefix)]);
    await batch.run(trx);
  });
  const count = await v.vault.db.selectFrom('entities').select((eb) => eb.fn.countAll<number>().as('n')).where('id', 'like', `${prefix}-%`).executeTakeFirstOrThrow();
  t.is(Number(count.n), 7000);
});

test('rows inserted outside a transaction are all or nothing: a duplicate among them leaves none', async (t) => {
  const existing = uid('existing');
  await v.vault.db.insertInto('entities').values(entity(existing)).execute();
  const [before, after] = [uid('before'), uid('after')];
  const err = await t.throwsAsync(insertRows(v.vault.db, v.vault.dialect, 'entities', [entity(before), entity(existing), entity(after)]), { any: true });
  t.true(isUniqueViolation(err));
  const found = await v.vault.db.selectFrom('entities').select('id').where('id', 'in', [before, after]).execute();
  t.deepEqual(found, []);
});

test('a write that fails on its third row keeps none of its rows, and the writes committed with it keep theirs', async (t) => {
  const existing = uid('existing');
  await v.vault.db.insertInto('entities').values(entity(existing)).execute();
  const [failing, kept] = [[uid('failing'), uid('failing')], [uid('kept'), uid('kept')]];
  // Submitted together, so that on SQLite they share one transaction, each in its savepoint.
  const [refused, committed] = await Promise.allSettled([
    v.vault.writes.transaction((trx) => insertRows(trx, v.vault.dialect, 'entities', [entity(failing[0]), entity(failing[1]), entity(existing)])),
    v.vault.writes.transaction((trx) => insertRows(trx, v.vault.dialect, 'entities', kept.map(entity))),
  ]);
  t.is(refused.status, 'rejected');
  t.true(isUniqueViolation((refused as PromiseRejectedResult).reason));
  t.is(committed.status, 'fulfilled');
  const found = await v.vault.db.selectFrom('entities').select('id').where('id', 'in', [...failing, ...kept]).orderBy('id').execute();
  t.deepEqual(
    found.map((r) => r.id),
    [...kept].sort(),
  );
});
