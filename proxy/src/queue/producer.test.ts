import test, { type ExecutionContext } from 'ava';
import { Queue } from 'bullmq';
import { prepareBatch } from '../ingest/validate.js';
import { cleanupRedis, closedPort, sharedRedisUrl, uniquePrefix } from '../testing/helpers.js';
import { connect } from './connection.js';
import { EventProducer, QueueUnavailableError, type EventsJobData, type ProducerOptions } from './producer.js';

/** A producer on the shared Redis under a prefix of its own, and a queue reading what it enqueued. */
async function producerAndReader(t: ExecutionContext, name: string, options: Omit<ProducerOptions, 'queue' | 'prefix'>) {
  const prefix = uniquePrefix(name);
  const redis = connect(sharedRedisUrl, 'producer');
  const producer = new EventProducer(redis, { queue: 'q', prefix, ...options });
  const reader = new Queue<EventsJobData>('q', { connection: { url: sharedRedisUrl }, prefix });
  t.teardown(async () => {
    await reader.close();
    await producer.close();
    redis.disconnect();
    await cleanupRedis(prefix);
  });
  t.true(await producer.waitUntilConnected(5000));
  return { producer, reader };
}

test('a request becomes one job holding its events in order', async (t) => {
  const { producer, reader } = await producerAndReader(t, 'producer', { enqueueTimeoutMs: 2000 });
  const { events } = prepareBatch(Array.from({ length: 5 }, (_, i) => ({ eventType: 'READ', applicationId: 'a', dataPointId: `d${i}` })));
  await producer.enqueue(events.slice(0, 3));
  await producer.enqueue(events.slice(3));
  const jobs = await reader.getJobs(['waiting'], 0, -1, true);
  t.deepEqual(jobs.map((j) => j.data.events), [events.slice(0, 3), events.slice(3)]);
  t.true(Number(jobs[1].id) > Number(jobs[0].id), 'job ids grow in acceptance order');
  t.like(await producer.counts(), { waiting: 2, active: 0 });
  t.true(await producer.ping());
});

test('concurrent requests are group-committed into few jobs, in call order, capped in size', async (t) => {
  const { producer, reader } = await producerAndReader(t, 'producer-group', { enqueueTimeoutMs: 5000, maxJobEvents: 10 });
  const requests = Array.from({ length: 30 }, (_, r) =>
    prepareBatch(Array.from({ length: r === 7 ? 25 : 3 }, (_, i) => ({ eventType: 'READ', applicationId: 'a', dataPointId: `d${r}-${i}` }))).events,
  );
  await Promise.all(requests.map((events) => producer.enqueue(events)));
  const jobs = await reader.getJobs(['waiting'], 0, -1, true);
  t.true(jobs.length < 30, `${jobs.length} jobs for 30 requests`);
  t.deepEqual(jobs.flatMap((j) => j.data.events), requests.flat(), 'every event once, in call order');
  // A request is never split; merged jobs stay within the cap.
  for (const job of jobs) t.true(job.data.events.length <= 10 || job.data.events.length === 25);
});

test('with Redis unreachable enqueue fails at once and nothing is queued later', async (t) => {
  const prefix = uniquePrefix('producer-down');
  const redis = connect(`redis://127.0.0.1:${await closedPort()}`, 'producer');
  const producer = new EventProducer(redis, { queue: 'q', prefix, enqueueTimeoutMs: 500 });
  t.teardown(async () => {
    await producer.close();
    redis.disconnect();
  });
  const { events } = prepareBatch({ eventType: 'READ', applicationId: 'a', dataPointId: 'd' });
  const started = Date.now();
  await t.throwsAsync(producer.enqueue(events), { instanceOf: QueueUnavailableError });
  t.true(Date.now() - started < 500, 'no waiting for a reconnect');
  t.false(await producer.ping());
  t.false(producer.connected);
  // waitUntilConnected gives up after its timeout instead of hanging.
  t.false(await producer.waitUntilConnected(100));
});
