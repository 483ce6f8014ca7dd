import test from 'ava';
import { randomBytes } from 'node:crypto';
import { blindIndex } from './blindindex.js';

const key = randomBytes(32);

test('equal values of one attribute match, whatever their spelling', (t) => {
  t.is(blindIndex(key, 'EMAIL', 'Ada@Example.org '), blindIndex(key, 'EMAIL', 'ada@example.org'));
  t.is(blindIndex(key, 'AGE', 42), blindIndex(key, 'AGE', '42'));
  t.not(blindIndex(key, 'EMAIL', 'ada@example.org'), blindIndex(key, 'EMAIL', 'bob@example.org'));
});

test('equal values of different attributes give different entries', (t) => {
  t.not(blindIndex(key, 'FIRST_NAME', 'Ada'), blindIndex(key, 'LAST_NAME', 'Ada'));
  t.not(blindIndex(key, 'NAME.first', 'Ada'), blindIndex(key, 'NAME.last', 'Ada'));
  // The separator keeps the attribute/value boundary: "A" + "B.x" differs from "A.B" + "x".
  t.not(blindIndex(key, 'A', 'B'), blindIndex(key, 'AB', ''));
});

test('the entry depends on the secret and does not contain the value', (t) => {
  const other = randomBytes(32);
  t.not(blindIndex(key, 'EMAIL', 'ada@example.org'), blindIndex(other, 'EMAIL', 'ada@example.org'));
  const entry = blindIndex(key, 'EMAIL', 'ada@example.org');
  t.false(entry.includes('ada'));
  t.regex(entry, /^[A-Za-z0-9_-]{43}$/);
});
