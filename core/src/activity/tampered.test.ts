import test from 'ava';
import { startTestVault } from '../testing/harness.js';
import { defineAttribute, dropActivityGuards, unique } from '../audit/fixtures.js';

/**
 * An insider with SQL access who writes what is not JSON into a record's JSON columns: the
 * chain shows where, and the auditor must still be able to read the log around it (and the
 * record itself) to see what was done.
 */
test('a record whose JSON columns were overwritten with anything still lists, and verification points at it', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const email = unique('EMAIL');
  // Record 1: EMAIL's definition, a CHANGE; records 2 … 5: the stores.
  await defineAttribute(v, email);
  for (let i = 0; i < 4; i++) {
    const res = await v.request('POST', '/auditlogs', {
      body: { eventType: 'STORE', subjectId: `j-${i}`, applicationId: 'crm', eventId: `evt-${i}`, data: { attribute: email, value: 'a@example.org' } },
    });
    t.is(res.status, 200);
  }
  // Record 6: a read that answered two points, one record listed as two entries.
  await v.vault.db.transaction().execute((trx) =>
    v.vault.activity.append(trx, [
      {
        eventType: 'READ',
        subjectId: 'j-0',
        applicationId: 'crm',
        reportOnly: false,
        timestamp: new Date().toISOString(),
        points: [
          { dataPointId: 'p-1', attribute: email },
          { dataPointId: 'p-2', attribute: email },
        ],
      },
    ]),
  );
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true, records: 6 });

  await dropActivityGuards(v);
  const db = v.vault.db;
  for (const [sequence, points, change] of [
    [1, null, '{"target":'],
    [3, '[["a","b"],', null],
    [4, '{"not":"a list"}', null],
  ] as const) {
    await db.updateTable('activity_log').set({ points, change }).where('sequence', '=', sequence).execute();
  }

  const verified = await v.request('GET', '/activity/verify');
  t.is(verified.status, 200);
  t.like(verified.body.data, { valid: false, records: 6, firstBrokenSequence: 1 });

  const all = await v.request('GET', '/activity');
  t.is(all.status, 200);
  t.deepEqual(
    all.body.data.map((e: { sequence: number }) => e.sequence),
    [1, 2, 3, 4, 5, 6, 6],
  );
  t.like(all.body.data.slice(5), [
    { part: 1, dataPointId: 'p-1' },
    { part: 2, dataPointId: 'p-2' },
  ]);
  const newest = await v.request('GET', '/activity', { query: { order: 'newest', subjectId: 'j-1' } });
  t.is(newest.status, 200);
  t.deepEqual(newest.body.data.map((e: { eventId: string }) => e.eventId), ['evt-1']);
  const one = await v.request('GET', '/activity', { query: { fromSequence: '4', toSequence: '4' } });
  t.is(one.status, 200);
  t.like(one.body.data, [{ sequence: 4, eventId: 'evt-2', subjectId: 'j-2' }]);
  const byPoint = await v.request('GET', '/activity', { query: { dataPointId: all.body.data[4].dataPointId } });
  t.is(byPoint.status, 200);
  t.like(byPoint.body.data, [{ sequence: 5, eventId: 'evt-3' }]);
});

/**
 * The column holds JSON, but not a change the vault writes: the auditor must read exactly
 * what is stored there. The answer's serialiser wrote a null `target` as "", the number 7 as
 * "7", a null `fields` as {}, and dropped members the schema does not name.
 */
test('a change overwritten with JSON of other types and members is listed exactly as stored', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  // Records 1 and 2: CHANGE records of the two definitions.
  await defineAttribute(v, unique('EMAIL'));
  await defineAttribute(v, unique('PHONE'));
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true, records: 2 });
  await dropActivityGuards(v);
  const forged = [
    { target: null, id: 7, action: 5, fields: null, rule: false, by: 'insider' },
    { target: 'rule', id: 'r-1', action: 'update', fields: [1, 2] },
  ];
  for (const [i, change] of forged.entries()) {
    await v.vault.db.updateTable('activity_log').set({ change: JSON.stringify(change) }).where('sequence', '=', i + 1).execute();
  }
  const listed = await v.request('GET', '/activity', { query: { eventType: 'CHANGE' } });
  t.is(listed.status, 200);
  t.deepEqual(
    listed.body.data.map((e: { change: unknown }) => e.change),
    forged,
  );
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: false, firstBrokenSequence: 1 });
});
