import test, { type ExecutionContext } from 'ava';
import { Queue } from 'bullmq';
import type { SidecarHandle } from '../index.js';
import { FakeVault } from '../testing/fake-vault.js';
import {
  cleanupRedis, getJson, makeEvent, metricValue, postEvents, postMany, queueLeftByCrashedWorker, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor,
} from '../testing/helpers.js';

/** Delivery guarantees of an embedded sidecar against the fake vault and the shared Redis. */

async function queueCounts(prefix: string) {
  const queue = new Queue('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
  try {
    return await queue.getJobCounts('waiting', 'active', 'failed', 'completed');
  } finally {
    await queue.close();
  }
}

test('vault down for a while: nothing lost, everything arrives in acceptance order once it is back', async (t) => {
  const prefix = uniquePrefix('vault-down');
  const vault = new FakeVault();
  await vault.start();
  const sidecars: SidecarHandle[] = [];
  t.teardown(async () => {
    for (const s of sidecars) await s.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 100 });
  sidecars.push(sidecar);

  // First refused connections, then 503s: both are outages the sidecar must ride out.
  await vault.stop();
  const ids = await postMany(sidecar.url, 10, 50);
  await waitFor(async () => (await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) >= 3, { message: 'retries while the vault is down' });
  await vault.start();
  vault.mode = 'failing';
  ids.push(...(await postMany(sidecar.url, 10, 50, 500)));
  await waitFor(() => vault.requests >= 3, { message: 'requests answered 503' });
  t.is(vault.records.length, 0, 'nothing recorded while failing');

  vault.mode = 'up';
  await waitFor(() => vault.records.length >= ids.length, { message: 'all events recorded' });
  t.deepEqual(vault.recordedIds(), ids, 'every accepted event, once, in acceptance order');
  await waitFor(async () => {
    const counts = await queueCounts(prefix);
    return counts.waiting === 0 && counts.active === 0;
  }, { message: 'queue drained' });
  t.like(await queueCounts(prefix), { failed: 0, completed: 0 });
  t.is(await metricValue(sidecar.url, 'sidecar_events_delivered_total'), ids.length);
});

test('a poison event in a batch of 1000: 999 delivered, 1 dead-lettered with the reason, listed, replayed', async (t) => {
  const prefix = uniquePrefix('poison');
  const vault = new FakeVault({ poison: (e) => (e.data?.attribute === 'forbidden' ? 'attribute "forbidden" is not defined' : undefined) });
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 1000, batchMs: 200 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  const events = Array.from({ length: 1000 }, (_, i) =>
    i === 617 ? makeEvent(i, { eventId: 'poison-617', data: { attribute: 'forbidden', value: 'x' } }) : makeEvent(i),
  );
  const answer = await postEvents(sidecar.url, events);
  t.is(answer.status, 202);
  t.is(answer.body.accepted.length, 1000);
  const ids = answer.body.accepted.map((a) => a.eventId);

  await waitFor(() => vault.records.length >= 999, { message: '999 events recorded' });
  const list = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/deadletters`);
    return r.body.total === 1 ? r.body : undefined;
  }, { message: 'dead letter listed' });
  t.deepEqual(vault.recordedIds(), ids.filter((id) => id !== 'poison-617'));
  t.is(vault.bulkSizes[0], 617, 'the events before the poison went as one bulk');
  t.is(list.items.length, 1);
  const [entry] = list.items;
  t.is(entry.eventId, 'poison-617');
  t.is(entry.event.data.attribute, 'forbidden');
  t.like(entry.reason, {
    kind: 'rejected',
    statusCode: 400,
    answer: { statusCode: 400, error: 'Bad Request', message: 'event 617: attribute "forbidden" is not defined', index: 617 },
  });
  t.deepEqual((await getJson(`${sidecar.url}/deadletters/${entry.id}`)).body, entry);
  t.deepEqual((await getJson(`${sidecar.url}/deadletters/poison-617`)).body, entry, 'also found by eventId');
  t.is(await metricValue(sidecar.url, 'sidecar_events_dead_lettered_total'), 1);
  t.is(await metricValue(sidecar.url, 'sidecar_dead_letters'), 1);

  // The vault is fixed (the attribute now exists): replaying delivers it with its eventId.
  vault.poison = undefined;
  const replay = await getJson(`${sidecar.url}/deadletters/replay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ids: [entry.id] }),
  });
  t.is(replay.status, 200);
  t.deepEqual(replay.body, { replayed: [{ id: entry.id, eventId: 'poison-617' }], notFound: [] });
  await waitFor(() => vault.records.length === 1000, { message: 'replayed event recorded' });
  t.is(vault.recordedIds()[999], 'poison-617');
  t.is(vault.duplicateDeliveries, 0);
  t.deepEqual((await getJson(`${sidecar.url}/deadletters`)).body.items, []);
});

/** A sidecar whose vault refuses the events of subjects named `bad…`; gone with the test. */
async function refusingBadSubjects(t: ExecutionContext, name: string) {
  const prefix = uniquePrefix(name);
  const vault = new FakeVault({ poison: (e) => (e.subjectId?.startsWith('bad') ? 'bad subject' : undefined) });
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 50 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  return { vault, sidecar };
}

test('replay of everything, discard, and the API refusing bad input', async (t) => {
  const { vault, sidecar } = await refusingBadSubjects(t, 'replay-all');
  const events = [makeEvent(0), makeEvent(1, { subjectId: 'bad-1' }), makeEvent(2, { subjectId: 'bad-2' }), makeEvent(3, { subjectId: 'bad-3' })];
  const { body } = await postEvents(sidecar.url, events);
  await waitFor(async () => (await getJson(`${sidecar.url}/deadletters`)).body.total === 3, { message: 'three dead letters' });
  const listed = (await getJson(`${sidecar.url}/deadletters?limit=2`)).body;
  t.is(listed.total, 3);
  t.deepEqual(listed.items.map((i: { eventId: string }) => i.eventId), body.accepted.slice(1, 3).map((a) => a.eventId));

  t.is((await fetch(`${sidecar.url}/deadletters/${listed.items[0].id}`, { method: 'DELETE' })).status, 204);
  t.is((await fetch(`${sidecar.url}/deadletters/${listed.items[0].id}`, { method: 'DELETE' })).status, 404);
  t.is((await getJson(`${sidecar.url}/deadletters/nope`)).status, 404);
  t.is((await getJson(`${sidecar.url}/deadletters?limit=5000`)).status, 400);
  t.is((await getJson(`${sidecar.url}/deadletters/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ids": "x"}' })).status, 400);

  vault.poison = undefined;
  const replay = await getJson(`${sidecar.url}/deadletters/replay`, { method: 'POST' });
  t.is(replay.body.replayed.length, 2);
  await waitFor(() => vault.records.length === 3, { message: 'replayed events recorded' });
  t.deepEqual(vault.recordedIds(), [body.accepted[0], body.accepted[2], body.accepted[3]].map((a) => a.eventId));
});

test('a dead letter is found and discarded by an eventId of any allowed length, in any script', async (t) => {
  const { sidecar } = await refusingBadSubjects(t, 'long-event-id');
  // 512 characters, the most an eventId may have; percent-encoded in a path, 3072.
  const longest = 'é'.repeat(512);
  const { body } = await postEvents(sidecar.url, [makeEvent(0, { subjectId: 'bad-1', eventId: longest })]);
  t.deepEqual(body.accepted.map((a) => a.eventId), [longest]);
  await waitFor(async () => (await getJson(`${sidecar.url}/deadletters`)).body.total === 1, { message: 'one dead letter' });

  const path = `${sidecar.url}/deadletters/${encodeURIComponent(longest)}`;
  const found = await getJson(path);
  t.is(found.status, 200);
  t.is(found.body.eventId, longest);
  t.is((await fetch(path, { method: 'DELETE' })).status, 204);
  t.is((await getJson(path)).status, 404);
  const tooLong = await getJson(`${sidecar.url}/deadletters/${'x'.repeat(5000)}`);
  t.deepEqual(tooLong, { status: 404, body: { statusCode: 404, error: 'Not Found', message: 'no such dead letter' } }, 'longer than any eventId: simply not there');
});

test('replay refuses a mistyped body instead of replaying every dead letter; {} still replays all', async (t) => {
  const { vault, sidecar } = await refusingBadSubjects(t, 'replay-body');
  await postEvents(sidecar.url, [makeEvent(0, { subjectId: 'bad-1' }), makeEvent(1, { subjectId: 'bad-2' })]);
  const listed = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/deadletters`);
    return r.body.total === 2 ? r.body : undefined;
  }, { message: 'two dead letters' });
  vault.poison = undefined;

  const replay = (body: string) =>
    getJson(`${sidecar.url}/deadletters/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const shape = 'the body must be {"ids": [...]} to replay those dead letters, or empty or {} to replay all';
  const refusals: [string, string][] = [
    [JSON.stringify({ id: [listed.items[0].id] }), `unknown member "id": ${shape}`],
    [JSON.stringify({ ids: [listed.items[0].id], all: true }), `unknown member "all": ${shape}`],
    ['[]', shape],
    [JSON.stringify([listed.items[0].id]), shape],
    ['null', shape],
    ['"all"', shape],
    ['1', shape],
  ];
  for (const [body, message] of refusals) {
    const answer = await replay(body);
    t.is(answer.status, 400, body);
    t.deepEqual(answer.body, { statusCode: 400, error: 'Bad Request', message }, body);
  }
  t.is((await getJson(`${sidecar.url}/deadletters`)).body.total, 2, 'nothing replayed by a refused body');

  const all = await replay('{}');
  t.is(all.status, 200);
  t.deepEqual(all.body.replayed.map((r: { eventId: string }) => r.eventId), listed.items.map((i: { eventId: string }) => i.eventId));
  await waitFor(() => vault.records.length === 2, { message: 'replayed events recorded' });
});

test('jobs left active by a crashed worker are claimed and delivered first, oldest first', async (t) => {
  const { vault, queue, all, startSidecar } = await queueLeftByCrashedWorker(t, 'orphans', { jobs: 6, eventsPerJob: 3, taken: 3 });
  t.is((await queue.getActiveCount()), 3);

  await startSidecar({ batchSize: 4, lockMs: 60_000 });
  await waitFor(() => vault.records.length === all.length, { message: 'all events recorded' });
  t.deepEqual(vault.recordedIds(), all);
  await waitFor(async () => (await queue.getActiveCount()) === 0 && (await queue.getWaitingCount()) === 0, { message: 'queue drained' });
});

test('two sidecars on one queue: one delivers, the other stands by and takes over', async (t) => {
  const prefix = uniquePrefix('lease-takeover');
  const vault = new FakeVault();
  await vault.start();
  const first = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 20 });
  await waitFor(() => first.deliveryState === 'delivering', { message: 'first delivering' });
  const second = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 20 });
  t.teardown(async () => {
    await first.close();
    await second.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  await waitFor(() => second.deliveryState === 'standby', { message: 'second standing by' });
  t.is((await getJson(`${second.url}/readyz`)).status, 200, 'a standby is ready: it ingests');

  const ids = await postMany(first.url, 3, 10);
  ids.push(...(await postMany(second.url, 3, 10, 30)));
  await waitFor(() => vault.records.length === ids.length, { message: 'delivered by the first' });
  t.is(second.deliveryState, 'standby');

  await first.close();
  await waitFor(() => second.deliveryState === 'delivering', { message: 'second takes over' });
  ids.push(...(await postMany(second.url, 2, 10, 60)));
  await waitFor(() => vault.records.length === ids.length, { message: 'delivered by the second' });
  t.deepEqual(vault.recordedIds(), ids);
  t.is(vault.duplicateDeliveries, 0);
});

test('graceful close finishes the batch in flight and leaves the rest for the next start', async (t) => {
  const prefix = uniquePrefix('graceful');
  const vault = new FakeVault();
  await vault.start();
  vault.answerDelayMs = 300;
  let sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 50 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const ids = await postMany(sidecar.url, 10, 50);
  await waitFor(() => vault.inFlight > 0, { message: 'a batch in flight' });
  await sidecar.close();
  t.is(sidecar.deliveryState, 'stopped');
  t.is(vault.inFlight, 0, 'the batch in flight was answered before close returned');
  const recordedAtClose = vault.records.length;
  t.true(recordedAtClose > 0 && recordedAtClose < ids.length);

  vault.answerDelayMs = 0;
  sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, batchSize: 50 });
  await waitFor(() => vault.records.length === ids.length, { message: 'rest delivered after restart' });
  t.deepEqual(vault.recordedIds(), ids);
  t.is(vault.duplicateDeliveries, 0, 'acknowledged batches were completed, not resent');
});
