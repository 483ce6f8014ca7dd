import test from 'ava';
import { CHAINED_COLUMNS, chainHash, chainRecords, GENESIS_HASH } from './chain.js';
import { toRecordRow } from './records.js';

const rows = [
  toRecordRow({ eventType: 'READ', subjectId: 's-1', dataPointId: 'p-1', attribute: 'EMAIL', applicationId: 'app', reportOnly: false, timestamp: '2026-01-01T00:00:00.000Z' }, '2026-01-01T00:00:01.000Z'),
  toRecordRow({ eventType: 'STORE', eventId: 'e-2', subjectId: 's-2', applicationId: 'app', applicationUser: 'ann "the" admin', reportOnly: true, timestamp: '2026-01-01T00:00:02.000Z', summary: { ok: true } }, '2026-01-01T00:00:03.000Z'),
  toRecordRow(
    {
      eventType: 'READ',
      subjectId: 's-3',
      points: [
        { dataPointId: 'p-3', attribute: 'EMAIL' },
        { dataPointId: 'p-4', attribute: 'NAME' },
      ],
      applicationId: 'app',
      reportOnly: false,
      timestamp: '2026-01-01T00:00:04.000Z',
    },
    '2026-01-01T00:00:05.000Z',
  ),
  toRecordRow(
    {
      eventType: 'CHANGE',
      applicationId: 'admin-app',
      reportOnly: false,
      timestamp: '2026-01-01T00:00:06.000Z',
      change: { target: 'application', id: 'app-9', action: 'update', fields: { attributes: ['EMAIL'] } },
    },
    '2026-01-01T00:00:07.000Z',
  ),
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
  t.deepEqual(head, { sequence: 45, hash: previous });
});

test('a record of one point hashes as it did before records could name several, so older logs still verify', (t) => {
  const row = toRecordRow({ eventType: 'READ', eventId: 'e-1', subjectId: 's-1', dataPointId: 'p-1', attribute: 'EMAIL', applicationId: 'app', reportOnly: false, timestamp: '2026-01-01T00:00:00.000Z' }, '2026-01-01T00:00:01.000Z');
  t.is(row.points, null);
  // Computed by the code before the `points` column existed.
  t.is(chainHash(GENESIS_HASH, { sequence: 1, ...row }), 'b5cf3fad48bce17b82c5c655db6963c01b121b7e26910a319cc6318abd24ce6d');
});

test('the points a record names are covered by its hash: another point, or another order, is another hash', (t) => {
  const row = rows[2];
  t.is(row.points, '[["p-3","EMAIL"],["p-4","NAME"]]');
  const original = chainHash(GENESIS_HASH, { sequence: 1, ...row });
  t.not(chainHash(GENESIS_HASH, { sequence: 1, ...row, points: '[["p-4","NAME"],["p-3","EMAIL"]]' }), original);
  t.not(chainHash(GENESIS_HASH, { sequence: 1, ...row, points: '[["p-3","EMAIL"]]' }), original);
});

test('an empty batch leaves the head where it was', (t) => {
  t.deepEqual(chainRecords({ sequence: 7, hash: 'a'.repeat(64) }, []), { values: [], head: { sequence: 7, hash: 'a'.repeat(64) } });
});

test('what an administrative change changed is covered by its hash', (t) => {
  const row = rows[3];
  t.is(row.change, '{"target":"application","id":"app-9","action":"update","fields":{"attributes":["EMAIL"]}}');
  const original = chainHash(GENESIS_HASH, { sequence: 1, ...row });
  t.not(chainHash(GENESIS_HASH, { sequence: 1, ...row, change: '{"target":"application","id":"app-9","action":"update","fields":{"attributes":["*"]}}' }), original);
  // A change without its column is another record, not the same one in an older form.
  t.not(chainHash(GENESIS_HASH, { sequence: 1, ...row, change: null }), original);
});
