import test from 'ava';
import { Queue } from 'bullmq';
import type { EventsJobData } from './queue/producer.js';
import { FakeVault } from './testing/fake-vault.js';
import { cleanupRedis, getJson, makeEvent, sharedRedisUrl, startTestSidecar, uniquePrefix, waitFor } from './testing/helpers.js';

/** A sidecar safe to expose: the ingest token, dead letters without values, values dropped at ingest. */

const token = 'ingest-token-0123456789abcdef';

function post(url: string, body: unknown, authorization?: string) {
  return getJson(`${url}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify(body),
  });
}

test('with SIDECAR_INGEST_TOKEN, events and dead letters need the bearer token; probes do not', async (t) => {
  const prefix = uniquePrefix('auth');
  const vault = new FakeVault({ poison: (e) => (e.subjectId === 'bad' ? 'bad subject' : undefined) });
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, ingestToken: token });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });

  for (const authorization of [undefined, 'Bearer wrong-token-0123456789abcdef', `Basic ${token}`, token, `Bearer ${token}x`]) {
    const refused = await post(sidecar.url, makeEvent(1, { eventId: 'unauthorized' }), authorization);
    t.is(refused.status, 401, String(authorization));
    t.deepEqual(refused.body, { accepted: [], rejected: [], statusCode: 401, error: 'Unauthorized', message: 'Unauthorized' });
  }
  // Even a body that could never pass is refused for the missing token first.
  t.is((await getJson(`${sidecar.url}/events`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })).status, 401);

  const accepted = await post(sidecar.url, [makeEvent(1), makeEvent(2, { subjectId: 'bad', eventId: 'dead-1' })], `Bearer ${token}`);
  t.is(accepted.status, 202);
  await waitFor(() => vault.records.length === 1, { message: 'the good event delivered' });
  t.false(vault.recordedIds().includes('unauthorized'));

  const auth = { authorization: `Bearer ${token}` };
  const listed = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/deadletters`, { headers: auth });
    return r.body.total === 1 ? r.body : undefined;
  }, { message: 'the bad event dead-lettered' });
  for (const [method, path] of [
    ['GET', '/deadletters'], ['GET', '/deadletters?values=true'], ['GET', `/deadletters/${listed.items[0].id}`],
    ['DELETE', `/deadletters/${listed.items[0].id}`], ['POST', '/deadletters/replay'], ['GET', '/no-such-path'],
  ]) {
    const refused = await getJson(`${sidecar.url}${path}`, { method });
    t.is(refused.status, 401, `${method} ${path}`);
    t.deepEqual(refused.body, { statusCode: 401, error: 'Unauthorized', message: 'Unauthorized' });
  }
  t.is((await getJson(`${sidecar.url}/deadletters`, { headers: auth })).body.total, 1, 'refused calls changed nothing');

  for (const path of ['/healthz', '/readyz', '/metrics']) t.is((await fetch(`${sidecar.url}${path}`)).status, 200, path);
});

test('dead letters are listed without values unless ?values=true', async (t) => {
  const prefix = uniquePrefix('dl-values');
  const vault = new FakeVault({ poison: (e) => (e.subjectId === 'bad' ? 'bad subject' : undefined) });
  await vault.start();
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  await post(sidecar.url, makeEvent(7, { subjectId: 'bad', eventId: 'dl-secret' }));
  const hidden = await waitFor(async () => {
    const r = await getJson(`${sidecar.url}/deadletters`);
    return r.body.total === 1 ? r.body : undefined;
  }, { message: 'dead letter listed' });
  const [entry] = hidden.items;
  t.is(entry.eventId, 'dl-secret');
  t.deepEqual(entry.event.data, { attribute: 'email' });
  t.false(JSON.stringify(hidden).includes('user7@example.test'));
  t.false(JSON.stringify((await getJson(`${sidecar.url}/deadletters/${entry.id}`)).body).includes('user7@example.test'));

  const shown = (await getJson(`${sidecar.url}/deadletters?values=true`)).body;
  t.deepEqual(shown.items[0].event.data, { attribute: 'email', value: 'user7@example.test' });
  t.is((await getJson(`${sidecar.url}/deadletters/dl-secret?values=true`)).body.event.data.value, 'user7@example.test');
  t.is((await getJson(`${sidecar.url}/deadletters?values=yes`)).status, 400);

  // Replay still sends the event as accepted, value included, whatever the listing showed.
  vault.poison = undefined;
  t.is((await getJson(`${sidecar.url}/deadletters/replay`, { method: 'POST' })).status, 200);
  await waitFor(() => vault.records.length === 1, { message: 'replayed' });
  t.is(vault.records[0].data?.value, 'user7@example.test');
});

test('SIDECAR_DROP_VALUES strips values before they reach Redis; the rest of the event is kept', async (t) => {
  const prefix = uniquePrefix('drop-values');
  const vault = new FakeVault();
  await vault.start();
  await vault.stop(); // down, so the accepted events stay in Redis for the test to read
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, dropValues: true });
  const queue = new Queue<EventsJobData>('vault-audit', { connection: { url: sharedRedisUrl }, prefix });
  t.teardown(async () => {
    await queue.close();
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
  });
  const answer = await post(sidecar.url, [
    makeEvent(1, { eventId: 'drop-1', data: { attribute: 'email', value: 'secret-1@example.test', tags: ['t'] } }),
    { eventType: 'READ', applicationId: 'crm', dataPointId: 'dp', eventId: 'drop-2' },
  ]);
  t.is(answer.status, 202);
  const jobs = await queue.getJobs(['waiting', 'active']);
  const events = jobs.flatMap((j) => j.data.events);
  t.deepEqual(events.map((e) => e.eventId), ['drop-1', 'drop-2']);
  t.deepEqual(events[0].data, { attribute: 'email', tags: ['t'] });
  t.is(events[1].data, undefined);
  t.like(events[0], { eventType: 'STORE', subjectId: 'subject-1', applicationId: 'test-app' });
  const raw = await queue.client.then((c) => c.hgetall(`${prefix}:vault-audit:${jobs[0].id}`));
  t.false(JSON.stringify(raw).includes('secret-1@example.test'), 'the value is nowhere in Redis');

  await vault.start();
  await waitFor(() => vault.records.length === 2, { message: 'delivered' });
  t.is(vault.records[0].data?.value, undefined);
});
