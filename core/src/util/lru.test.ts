import test from 'ava';
import { LruMap } from './lru.js';

test('holds at most its capacity and lets the least recently used entry go first', (t) => {
  const lru = new LruMap<string, number>(3);
  lru.set('a', 1);
  lru.set('b', 2);
  lru.set('c', 3);
  t.is(lru.get('a'), 1); // a is now the most recent; b the least
  lru.set('d', 4);
  t.is(lru.size, 3);
  t.is(lru.get('b'), undefined);
  t.deepEqual(['a', 'c', 'd'].map((k) => lru.get(k)), [1, 3, 4]);
  lru.set('c', 30); // an update refreshes too
  lru.set('e', 5);
  lru.set('f', 6);
  t.is(lru.get('c'), 30);
  t.is(lru.size, 3);
});

test('deleteWhere removes exactly the entries the predicate selects', (t) => {
  const lru = new LruMap<string, { owner: string }>(10);
  for (const [key, owner] of [['k1', 'x'], ['k2', 'y'], ['k3', 'x'], ['k4', 'z']]) lru.set(key, { owner });
  lru.deleteWhere((value) => value.owner === 'x');
  t.is(lru.size, 2);
  t.is(lru.get('k1'), undefined);
  t.is(lru.get('k3'), undefined);
  t.is(lru.get('k2')?.owner, 'y');
  t.true(lru.delete('k4'));
  t.false(lru.delete('k4'));
  lru.clear();
  t.is(lru.size, 0);
});

test('a capacity that is not a positive integer is refused', (t) => {
  for (const capacity of [0, -1, 1.5, Number.NaN]) t.throws(() => new LruMap(capacity), { message: /positive integer/ });
});
