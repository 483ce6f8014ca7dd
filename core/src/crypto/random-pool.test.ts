import test from 'ava';
import { randomInto } from './random-pool.js';

test('pooled random bytes are never handed out twice, across refills of the pool', (t) => {
  // 5,000 nonces of 12 bytes: the 16 KiB pool is refilled three times on the way.
  const seen = new Set<string>();
  for (let i = 0; i < 5_000; i++) {
    const nonce = Buffer.alloc(12);
    randomInto(nonce, 0, 12);
    seen.add(nonce.toString('hex'));
  }
  t.is(seen.size, 5_000);
});

test('bytes land where asked and nowhere else', (t) => {
  const target = Buffer.alloc(32, 0xee);
  randomInto(target, 8, 16);
  t.deepEqual([...target.subarray(0, 8)], Array(8).fill(0xee));
  t.deepEqual([...target.subarray(24)], Array(8).fill(0xee));
  t.notDeepEqual([...target.subarray(8, 24)], Array(16).fill(0xee));
  t.throws(() => randomInto(Buffer.alloc(20_000), 0, 20_000), { instanceOf: RangeError });
});
