import test from 'ava';
import type { StampedEvent } from '../ingest/event.js';
import { Batcher, eventBytes } from './batcher.js';

function events(prefix: string, n: number): StampedEvent[] {
  return Array.from({ length: n }, (_, i) => ({ eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: `${prefix}${i}`, timestamp: 't' }));
}

test('batches follow job order and split large jobs across batches', (t) => {
  const b = new Batcher<string>();
  b.add('1', 'job1', 'tok', events('a', 3), 100);
  b.add('2', 'job2', 'tok', events('b', 5), 200);
  b.add('3', 'job3', 'tok', events('c', 1), 300);
  t.is(b.unsent, 9);
  t.is(b.oldestUnsentSince, 100);

  const first = b.take(4);
  t.deepEqual(first.events.map((e) => e.eventId), ['a0', 'a1', 'a2', 'b0']);
  t.is(b.unsent, 5);
  // Job 2 is partly taken, so its arrival time still bounds the next batch.
  t.is(b.oldestUnsentSince, 200);

  const second = b.take(4);
  t.deepEqual(second.events.map((e) => e.eventId), ['b1', 'b2', 'b3', 'b4']);
  const third = b.take(4);
  t.deepEqual(third.events.map((e) => e.eventId), ['c0']);
  t.is(b.unsent, 0);
  t.is(b.oldestUnsentSince, undefined);

  // A job is complete only when its last slice is settled, whatever the settle order.
  t.deepEqual(b.settle(first).map((h) => h.id), ['1']);
  t.deepEqual(b.settle(third).map((h) => h.id), ['3']);
  t.deepEqual(b.settle(second).map((h) => h.id), ['2']);
});

test('adding a held job again refreshes its token instead of duplicating events', (t) => {
  const b = new Batcher<string>();
  b.add('1', 'job', 'old', events('a', 2));
  const again = b.add('1', 'job', 'new', events('a', 2));
  t.is(again.token, 'new');
  t.is(b.unsent, 2);
  t.is(b.size, 1);
});

test('release and clear forget jobs and their unsent events', (t) => {
  const b = new Batcher<string>();
  b.add('1', 'j', 't', events('a', 2));
  b.add('2', 'j', 't', events('b', 2));
  b.take(1);
  b.release('2');
  t.is(b.unsent, 1);
  t.false(b.has('2'));
  b.clear();
  t.is(b.unsent, 0);
  t.is(b.size, 0);
  t.deepEqual(b.take(10).events, []);
});

test('a batch holds at most maxBytes of bulk body, in order; an event larger than that goes alone', (t) => {
  const b = new Batcher<string>();
  const big = { ...events('x', 1)[0], data: { attribute: 'doc', value: 'v'.repeat(1000) } };
  const small = events('s', 4);
  b.add('1', 'job1', 'tok', [small[0], small[1]]);
  b.add('2', 'job2', 'tok', [big, small[2], small[3]]);
  const bytes = eventBytes(small[0]);
  t.is(b.unsentBytes, 4 * bytes + eventBytes(big));
  // The body is a JSON array: the events, their commas and the brackets, which this counts.
  t.is(eventBytes(small[0]) + eventBytes(small[1]) + 1, Buffer.byteLength(JSON.stringify([small[0], small[1]])));

  t.deepEqual(b.take(10, 2 * bytes + 1).events.map((e) => e.eventId), ['s0', 's1']);
  t.deepEqual(b.take(10, 2 * bytes + 1).events.map((e) => e.eventId), ['x0']);
  t.is(b.unsentBytes, 2 * bytes);
  t.deepEqual(b.take(10, 2 * bytes + 1).events.map((e) => e.eventId), ['s2', 's3']);
  t.is(b.unsent, 0);
  t.is(b.unsentBytes, 0);
});
