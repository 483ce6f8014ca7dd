import test from 'ava';
import { newPointId } from './ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('point ids are UUIDv7, unique, and sort in the order they were made', (t) => {
  // Well past one refill of the random pool, and many ids within one millisecond.
  const ids = Array.from({ length: 5_000 }, () => newPointId());
  for (const id of ids) t.regex(id, UUID_V7);
  t.is(new Set(ids).size, ids.length);
  t.deepEqual([...ids].sort(), ids);
});

test('the random part differs between ids made in one millisecond', (t) => {
  const ids = Array.from({ length: 2_000 }, () => newPointId());
  const randomParts = new Set(ids.map((id) => id.slice(19)));
  t.is(randomParts.size, ids.length);
  const timestamp = Date.now();
  const prefix = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
  t.true(Math.abs(prefix(newPointId()) - timestamp) < 5_000, 'the first 48 bits are the time in ms');
});
