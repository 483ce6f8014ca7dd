import test from 'ava';
import { Queue } from 'bullmq';
import type { StampedEvent } from '../ingest/event.js';
import { connect } from '../queue/connection.js';
import { EventProducer, type EventsJobData } from '../queue/producer.js';
import { cleanupRedis, sharedRedisUrl, uniquePrefix } from '../testing/helpers.js';
import { DeadLetterQueue, deadLetterId } from './dead-letters.js';
import type { DeadLetterReason } from './deliverer.js';

const reason: DeadLetterReason = { kind: 'rejected', statusCode: 400, answer: { statusCode: 400, error: 'Bad Request', message: 'event 0: no', index: 0 }, detail: '400 Bad Request event 0: no', attempts: 1 };

function event(id: string): StampedEvent {
  return { eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: id, timestamp: '2024-01-01T00:00:00Z' };
}

async function setup(t: any) {
  const prefix = uniquePrefix('dlq');
  const producerRedis = connect(sharedRedisUrl, 'producer');
  const workerRedis = connect(sharedRedisUrl, 'worker');
  const producer = new EventProducer(producerRedis, { queue: 'q', prefix, enqueueTimeoutMs: 2000 });
  const dlq = new DeadLetterQueue(workerRedis, { queue: 'q', prefix }, producer);
  const main = new Queue<EventsJobData>('q', { connection: { url: sharedRedisUrl }, prefix });
  await producer.waitUntilConnected(5000);
  t.teardown(async () => {
    await main.close();
    await dlq.close();
    await producer.close();
    producerRedis.disconnect();
    workerRedis.disconnect();
    await cleanupRedis(prefix);
  });
  return { dlq, main };
}

test('dead-lettering is idempotent per eventId and listed oldest first', async (t) => {
  const { dlq } = await setup(t);
  await dlq.add([{ event: event('a'), reason }]);
  await dlq.add([{ event: event('b:with:colons'), reason }, { event: event('c'), reason }]);
  await dlq.add([{ event: event('a'), reason }]);
  const { total, items } = await dlq.list();
  t.is(total, 3);
  t.deepEqual(items.map((i) => i.eventId), ['a', 'b:with:colons', 'c']);
  t.is(items[1].id, deadLetterId('b:with:colons'));
  t.deepEqual(items[0].reason, reason);
  t.deepEqual(items[0].event, event('a'));
  t.regex(items[0].deadLetteredAt, /^\d{4}-/);
  t.deepEqual((await dlq.list(1, 1)).items.map((i) => i.eventId), ['b:with:colons']);
  t.is((await dlq.get('c'))?.eventId, 'c', 'found by eventId');
  t.is((await dlq.get(deadLetterId('c')))?.eventId, 'c', 'found by id');
  t.is(await dlq.get('zzz'), undefined);
});

test('replay by id puts the event back in the delivery queue with its eventId', async (t) => {
  const { dlq, main } = await setup(t);
  await dlq.add(['a', 'b', 'c'].map((id) => ({ event: event(id), reason })));
  const result = await dlq.replay(['b', 'missing', deadLetterId('c')]);
  t.deepEqual(result.replayed.map((r) => r.eventId), ['b', 'c']);
  t.deepEqual(result.notFound, ['missing']);
  t.deepEqual((await dlq.list()).items.map((i) => i.eventId), ['a']);
  const jobs = await main.getWaiting();
  t.is(jobs.length, 1);
  t.deepEqual(jobs[0].data.events, [event('b'), event('c')]);
});

test('replay without ids replays everything in order; remove discards', async (t) => {
  const { dlq, main } = await setup(t);
  await dlq.add(['a', 'b', 'c', 'd'].map((id) => ({ event: event(id), reason })));
  t.true(await dlq.remove('d'));
  t.false(await dlq.remove('d'));
  const result = await dlq.replay();
  t.deepEqual(result.replayed.map((r) => r.eventId), ['a', 'b', 'c']);
  t.is(await dlq.count(), 0);
  const [job] = await main.getWaiting();
  t.deepEqual(job.data.events.map((e) => e.eventId), ['a', 'b', 'c']);
});
