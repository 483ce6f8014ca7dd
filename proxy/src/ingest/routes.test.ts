import test from 'ava';
import { Queue } from 'bullmq';
import type { SidecarHandle } from '../index.js';
import type { EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import { cleanupRedis, freePort, makeEvent, postEvents, sharedRedisUrl, startTestSidecar, uniquePrefix } from '../testing/helpers.js';

/**
 * The ingest API over HTTP. The vault is down throughout so accepted events stay in Redis
 * where the test can read them.
 */
let vault: FakeVault;
let sidecar: SidecarHandle;
let queue: Queue<EventsJobData>;
const prefix = uniquePrefix('ingest');

test.before(async () => {
  vault = new FakeVault();
  await vault.start();
  await vault.stop();
  sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, bodyLimit: 64 * 1024 });
  queue = new Queue<EventsJobData>('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
});

test.after.always(async () => {
  await queue?.close();
  await sidecar?.close();
  await cleanupRedis(prefix);
});

test.serial('a valid array is accepted with eventIds, and enqueued as stamped', async (t) => {
  const events = [makeEvent(1, { eventId: 'caller-chosen' }), { eventType: 'READ', applicationId: 'app', dataPointId: 'dp-1' }];
  const answer = await postEvents(sidecar.url, events);
  t.is(answer.status, 202);
  t.deepEqual(answer.body.rejected, []);
  t.is(answer.body.accepted.length, 2);
  t.like(answer.body.accepted[0], { index: 0, eventId: 'caller-chosen' });
  t.regex(answer.body.accepted[0].dataPointId!, /^[0-9a-f-]{36}$/, 'STOREs get a dataPointId');
  t.is(answer.body.accepted[1].dataPointId, undefined);

  const jobs = await queue.getJobs(['waiting', 'active']);
  const job = jobs.find((j) => j.data.events.some((e) => e.eventId === 'caller-chosen'))!;
  t.deepEqual(job.data.events.map((e) => e.eventId), answer.body.accepted.map((a) => a.eventId));
  t.is(job.data.events[0].dataPointId, answer.body.accepted[0].dataPointId);
  t.truthy(job.data.events[1].timestamp);
});

test.serial('a single event object is accepted', async (t) => {
  const answer = await postEvents(sidecar.url, { eventType: 'DELETE', applicationId: 'app', dataPointId: 'dp' });
  t.is(answer.status, 202);
  t.is(answer.body.accepted[0].index, 0);
});

test.serial('partial acceptance: good events are taken, bad ones named by index and field', async (t) => {
  const answer = await postEvents(sidecar.url, [
    makeEvent(1),
    { eventType: 'READ', applicationId: 'app' },
    makeEvent(2),
    { eventType: 'STORE', applicationId: 'app', data: { attribute: 'x' } },
  ]);
  t.is(answer.status, 202);
  t.deepEqual(answer.body.accepted.map((a) => a.index), [0, 2]);
  t.deepEqual(answer.body.rejected, [
    { index: 1, message: 'event 1: field "dataPointId" is required for READ events' },
    { index: 3, message: 'event 3: field "subjectId" is required for STORE events' },
  ]);
});

test.serial('400 with the same shape when nothing is accepted', async (t) => {
  const answer = await postEvents(sidecar.url, [{ eventType: 'NOPE', applicationId: 'a' }, 42]);
  t.is(answer.status, 400);
  t.deepEqual(answer.body, {
    accepted: [],
    rejected: [
      { index: 0, message: 'event 0: field "eventType" must be one of READ, STORE, DELETE, UPDATE' },
      { index: 1, message: 'event 1: field "(event)" must be a JSON object' },
    ],
  });
  const empty = await postEvents(sidecar.url, []);
  t.is(empty.status, 400);
  t.deepEqual(empty.body.accepted, []);
  t.is(empty.body.message, 'the request contains no events');
});

test.serial('unparseable JSON and oversized bodies keep the answer shape', async (t) => {
  const broken = await fetch(`${sidecar.url}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[{"eventType":' });
  t.is(broken.status, 400);
  t.like(await broken.json(), { accepted: [], rejected: [] });
  const huge = await postEvents(sidecar.url, Array.from({ length: 1000 }, (_, i) => makeEvent(i)));
  t.is(huge.status, 413);
  t.deepEqual(huge.body.accepted, []);
});

test('503, never 202, when Redis is unreachable', async (t) => {
  const down = await startTestSidecar({
    apiKey: 'k', prefix: uniquePrefix('ingest-down'), redisUrl: `redis://127.0.0.1:${await freePort()}`, enqueueTimeoutMs: 100,
  });
  t.teardown(() => down.close());
  const answer = await postEvents(down.url, [makeEvent(1), { eventType: 'READ' }]);
  t.is(answer.status, 503);
  t.deepEqual(answer.body.accepted, []);
  t.is(answer.body.rejected.length, 1, 'invalid events are still reported');
  t.regex(answer.body.message!, /nothing was accepted/);
  // Nothing valid, nothing to enqueue: that is still a 400.
  t.is((await postEvents(down.url, [{ eventType: 'READ' }])).status, 400);
});
