import test from 'ava';
import { Redis } from 'ioredis';
import { connect } from '../queue/connection.js';
import { cleanupRedis, closedPort, sharedRedisUrl, uniquePrefix } from '../testing/helpers.js';
import { Lease } from './lease.js';

test('one holder at a time; renewal, release and takeover', async (t) => {
  const prefix = uniquePrefix('lease');
  const a = new Redis(sharedRedisUrl);
  const b = new Redis(sharedRedisUrl);
  t.teardown(async () => {
    a.disconnect();
    b.disconnect();
    await cleanupRedis(prefix);
  });
  const key = `${prefix}:q:sidecar-lease`;
  const first = new Lease(a, key, 1000);
  const second = new Lease(b, key, 1000);

  t.is(await first.refresh(), 'held');
  t.true(first.held);
  t.is(await second.refresh(), 'taken');
  t.false(second.held);
  t.is(await first.refresh(), 'held', 'the holder renews');
  const ttl = await a.pttl(key);
  t.true(ttl > 0 && ttl <= 1000);

  await second.release();
  t.is(await a.get(key), first.token, 'releasing a lease you do not hold changes nothing');
  await first.release();
  t.false(first.held);
  t.is(await second.refresh(), 'held', 'released lease is free at once');

  // A holder that stops renewing loses the lease when it expires.
  await b.pexpire(key, 1);
  await new Promise((r) => setTimeout(r, 20));
  t.is(await first.refresh(), 'held');
  t.is(await second.refresh(), 'taken');
});

test('an unreachable Redis makes the state unknown, not held', async (t) => {
  const redis = connect(`redis://127.0.0.1:${await closedPort()}`, 'control');
  t.teardown(() => redis.disconnect());
  const lease = new Lease(redis, 'x:lease', 1000);
  t.is(await lease.refresh(), 'unknown');
  t.false(lease.held);
});
