/**
 * Writes of one entity racing through different vault processes. Each race is staged: a
 * transaction of the test's own holds the row a request needs, so the requests queue behind
 * it in a known order and run the moment it ends, as they would behind another process's.
 * SQLite runs one write transaction at a time, so those races exist on PostgreSQL only.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
/** A second process on the same database: one process runs its own stores of a subject one after another. */
let other: TestVault;
test.before(async () => {
  v = await startTestVault();
  other = await startTestVault({ env: { VAULT_DB: v.config.db, VAULT_ADMIN_API_KEY: v.adminKey, VAULT_INDEX_KEY: v.config.indexKey!, VAULT_ENCRYPTION_PUBLIC_KEY: v.keys.publicKey } });
  for (const [key, schema] of [
    ['SCORE', 'int'],
    ['NOTE', 'string'],
  ]) {
    const res = await v.request('POST', '/attributes', { body: { key, schema, repeatable: true } });
    if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  }
});
test.after.always(async () => {
  await other?.close();
  await v?.close();
});

const onPostgres = process.env.VAULT_TEST_DB === 'postgres' ? test.serial : test.serial.skip;
const uid = (prefix: string) => `${prefix}-${randomBytes(4).toString('hex')}`;
const store = (subject: string, data: unknown[], through = v) =>
  through.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey }, apiKey: v.adminKey });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Runs `requests` one after another while the test holds `subject`'s row (or, with
 * `insert`, an uncommitted row of that id), then lets them go.
 */
async function queuedBehind<T>(hold: { subject: string; insert?: { type: string } }, requests: (() => Promise<T>)[]): Promise<T[]> {
  const answers: Promise<T>[] = [];
  await v.vault.db
    .transaction()
    .execute(async (trx) => {
      if (hold.insert) {
        const now = new Date().toISOString();
        await trx.insertInto('entities').values({ id: hold.subject, type: hold.insert.type, legal_hold: 0, created_date: now, updated_date: now }).execute();
      } else {
        await trx.selectFrom('entities').select('id').where('id', '=', hold.subject).forUpdate().execute();
      }
      for (const request of requests) {
        answers.push(request());
        await pause(250);
      }
      // Undone, where it inserted: the requests then find the row free, as if the other process had failed.
      if (hold.insert) throw new Error('rolled back');
    })
    .catch((err: Error) => {
      if (err.message !== 'rolled back') throw err;
    });
  return Promise.all(answers);
}

onPostgres('a store queued behind the store that made a rule prohibit storing is refused', async (t) => {
  const rule = uid('no-more-stores');
  t.is(
    (await v.request('POST', '/rules', { body: { key: rule, constraint: { type: 'attribute', operator: 'any', attributes: ['SCORE'] }, action: { type: 'prohibition', prohibitions: ['STORE'] } } })).status,
    201,
  );
  try {
    const subject = uid('subject');
    t.is((await store(subject, [{ attribute: 'NOTE', value: 'exists' }])).status, 200);
    const [first, second] = await queuedBehind({ subject }, [() => store(subject, [{ attribute: 'SCORE', value: 1 }]), () => store(subject, [{ attribute: 'NOTE', value: 'after the prohibition' }], other)]);
    t.is(first.status, 200);
    t.is(second.status, 403);
    t.is(second.body.message, 'Forbidden by rule');
    const notes = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', subject).where('definition_key', '=', 'NOTE').execute();
    t.is(notes.length, 1, 'only the note stored before the prohibition');
  } finally {
    await v.request('DELETE', `/rules/${rule}`);
  }
});

onPostgres('a legal hold queued behind a purge of the subject holds the subject that is left', async (t) => {
  const subject = uid('held');
  t.is((await store(subject, [{ attribute: 'NOTE', value: 'to be purged' }])).status, 200);
  const [purge, hold] = await queuedBehind({ subject }, [
    () => v.request('DELETE', `/datasubjects/${subject}/data`),
    () => v.request('POST', '/datasubjects', { body: { id: subject, legalHold: true } }),
  ]);
  t.is(purge.status, 200);
  t.is(hold.status, 201, 'the purge removed the subject; the hold creates it, held');
  t.is(hold.body.data.legalHold, true);
  const after = await v.request('GET', `/datasubjects/${subject}`);
  t.is(after.status, 200);
  t.is(after.body.data.legalHold, true);
});

test.serial("concurrent replacements of a subject's tags all answer, and one of them is what stays", async (t) => {
  const subject = uid('tagged');
  const sets = Array.from({ length: 8 }, (_, i) => ['base', `t${i}`]);
  const answers = await Promise.all(sets.map((tags) => v.request('POST', '/datasubjects', { body: { id: subject, tags } })));
  t.deepEqual(
    answers.map((a) => a.status).filter((s) => s !== 200 && s !== 201),
    [],
  );
  const after = await v.request('GET', `/datasubjects/${subject}`);
  t.true(
    sets.some((tags) => JSON.stringify([...tags].sort()) === JSON.stringify(after.body.data.tags)),
    `tags ${JSON.stringify(after.body.data.tags)}`,
  );
});

onPostgres('an entity type deleted while an entity of that type is being created is kept', async (t) => {
  const type = uid('venue').replace('-', '_');
  t.is((await v.request('POST', '/entitytypes', { body: { key: type, name: 'Venue' } })).status, 201);
  const id = uid('venue');
  // The create checks the type, then waits to insert an id the test is inserting; the delete comes meanwhile.
  const [create, deleted] = await queuedBehind({ subject: id, insert: { type } }, [
    () => v.request('POST', '/entities', { body: { id, type } }),
    () => v.request('DELETE', `/entitytypes/${type}`),
  ]);
  t.is(create.status, 201);
  t.is(deleted.status, 409);
  t.is(deleted.body.message, 'Cannot delete entity type, as there are entities belonging to it');
  t.is((await v.request('GET', `/entitytypes/${type}`)).status, 200);
});

onPostgres('a regulation deleted while a store naming it waits leaves no point labelled with it', async (t) => {
  const regulation = uid('REG').toUpperCase().replace('-', '_');
  t.is((await v.request('POST', '/regulations', { body: { key: regulation, name: 'Short-lived' } })).status, 201);
  const subject = uid('labelled');
  t.is((await store(subject, [{ attribute: 'NOTE', value: 'exists' }])).status, 200);
  const [stored, deleted] = await queuedBehind({ subject }, [
    () => store(subject, [{ attribute: 'NOTE', value: 'labelled', regulations: [regulation] }]),
    () => v.request('DELETE', `/regulations/${regulation}`),
  ]);
  t.is(deleted.status, 200);
  if (stored.status === 200) t.pass('the store committed first; the delete took the label off');
  else t.is(stored.body.message, 'No such regulation');
  const labels = await v.vault.db.selectFrom('datapoint_regulations').select('datapoint_id').where('regulation', '=', regulation).execute();
  t.deepEqual(labels, []);
});
