/**
 * Regex rules seen from outside, on many values in a row: the patterns keep what they learn
 * from one value for the next (regex-dfa), so each value must still get its own answer.
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

const PATTERNS = ['(?i)^secret-\\d+$', '@example\\.(com|org)$', 'été', '(?i)ÉTÉ', '^[^@]+$', '😀', 'x{3}', '^\\s*$|^.$'];
const VALUES = [
  'secret-12',
  'SECRET-7',
  'secret-12 ',
  'top secret-12',
  'ada@example.org',
  'ada@example.org.evil',
  'ada@EXAMPLE.com',
  'en été',
  'EN ÉTÉ',
  'ete',
  '😀',
  'smile 😀!',
  'xx x',
  'axxxb',
  ' ',
  '\u2028',
  'é',
  'line\nbreak',
];

test('a bulk audit of many values under regex rules: each value alerts exactly the rules whose pattern it matches', async (t) => {
  const attr = uid('NOTE');
  t.is((await v.request('POST', '/attributes', { body: { key: attr, schema: 'string' } })).status, 201);
  const keys: string[] = [];
  for (const value of PATTERNS) {
    const key = uid('regex');
    const res = await v.request('POST', '/rules', {
      body: { key, constraint: { type: 'user', attribute: attr, predicate: 'regex', value }, action: { type: 'alert', alertLevel: 'INFO', message: 'matched' } },
    });
    t.is(res.status, 201, JSON.stringify(res.body));
    keys.push(key);
  }
  // Every value several times, in an order that mixes them.
  const values = Array.from({ length: 20 * VALUES.length }, (_, i) => VALUES[(i * 7) % VALUES.length]);
  const app = uid('app');
  const events = values.map((value, i) => ({ eventType: 'STORE', subjectId: uid(`s${i}`), applicationId: app, data: { attribute: attr, value } }));
  const res = await v.request('POST', '/auditlogs/bulk', { body: events });
  t.is(res.status, 200, JSON.stringify(res.body).slice(0, 500));

  for (const [i, pattern] of PATTERNS.entries()) {
    const caseless = pattern.startsWith('(?i)');
    const oracle = new RegExp(caseless ? pattern.slice(4) : pattern, caseless ? 'ui' : 'u');
    const expected = new Set(events.filter((e) => oracle.test(e.data.value)).map((e) => e.subjectId));
    const alerts = await v.request('GET', '/alerts', { query: { rule: keys[i], count: '1000' } });
    t.is(alerts.status, 200);
    const alerted = new Set<string>(alerts.body.data.map((a: { entityId: string }) => a.entityId));
    t.deepEqual([...alerted].sort(), [...expected].sort(), pattern);
    t.true(expected.size > 0, `${pattern} matches some value`);
  }
});
