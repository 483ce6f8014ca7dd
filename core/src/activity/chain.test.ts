import test from 'ava';
import { CHAINED_COLUMNS, chainHash, chainRecords, GENESIS_HASH } from './chain.js';
import { toRecordRow } from './records.js';

const rows = [
  toRecordRow({ eventType: 'READ', subjectId: 's-1', dataPointId: 'p-1', attribute: 'EMAIL', applicationId: 'app', reportOnly: false, timestamp: '2026-01-01T00:00:00.000Z' }, '2026-01-01T00:00:01.000Z'),
  toRecordRow({ eventType: 'STORE', eventId: 'e-2', subjectId: 's-2', applicationId: 'app', applicationUser: 'ann "the" admin', reportOnly: true, timestamp: '2026-01-01T00:00:02.000Z', summary: { ok: true } }, '2026-01-01T00:00:03.000Z'),
];

test('chaining a batch gives each row the hash verification recomputes, and the values in column order', (t) => {
  const { values, head } = chainRecords({ sequence: 41, hash: GENESIS_HASH }, rows);
  t.is(values.length, rows.length * CHAINED_COLUMNS.length);
  let previous = GENESIS_HASH;
  rows.forEach((row, i) => {
    const inserted = Object.fromEntries(CHAINED_COLUMNS.map((c, j) => [c, values[i * CHAINED_COLUMNS.length + j]]));
    const { hash, ...fields } = inserted as any;
    t.deepEqual(fields, { sequence: 42 + i, ...row });
    t.is(hash, chainHash(previous, fields));
    previous = hash;
  });
  t.deepEqual(head, { sequence: 43, hash: previous });
});

test('an empty batch leaves the head where it was', (t) => {
  t.deepEqual(chainRecords({ sequence: 7, hash: 'a'.repeat(64) }, []), { values: [], head: { sequence: 7, hash: 'a'.repeat(64) } });
});
