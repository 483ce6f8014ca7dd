/**
 * Report-only audit logs, the activity log and the reporter, through the SDK against a real
 * vault process (and, for the sidecar mode, a real sidecar on the local Redis).
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { inspect, promisify } from 'node:util';
import test from 'ava';
import { VaultApiError, VaultNetworkError } from './errors.js';
import type { StampedEvent } from './reporter.js';
import type { ActivityRecord, ExternalActivityEvent } from './types.js';
import { startRecordingProxy } from './testing/proxy.js';
import { apiError, startSdkVault, unique, type SdkTestVault } from './testing/vault.js';
import { cleanupRedis, closedPort, sharedRedisUrl, startSpawnedSidecar, stopChild, uniquePrefix } from '../../proxy/src/testing/helpers.js';

let v: SdkTestVault;
let EMAIL: string;
let AGE: string;
let NAME: string;
test.before(async () => {
  v = await startSdkVault();
  EMAIL = unique('EMAIL');
  AGE = unique('AGE');
  NAME = unique('NAME');
  await v.admin.definitions.save({ key: EMAIL });
  await v.admin.definitions.save({ key: AGE, schema: 'int' });
  await v.admin.definitions.save({ key: NAME, schema: { first: 'string', last: 'string' } });
});
test.after.always(async () => {
  await v?.dispose();
});

async function records(subjectId: string): Promise<ActivityRecord[]> {
  const out: ActivityRecord[] = [];
  for await (const r of v.admin.activity.all({ subjectId })) out.push(r);
  return out;
}

async function until<T>(check: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('single events: STORE with a generated id, structured sub-points, then READ, UPDATE, DELETE', async (t) => {
  const subject = unique('subj');
  const stored = await v.admin.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL, value: 'a@example.org' }, applicationId: 'crm' });
  t.like(stored, { eventType: 'STORE', subjectId: subject, attribute: EMAIL });
  t.truthy(stored.dataPointId);

  const structured = await v.admin.audit.log({
    eventType: 'STORE',
    subjectId: subject,
    data: { attribute: NAME, value: { first: 'Ada', last: 'Lovelace' } },
    applicationId: 'crm',
  });
  t.deepEqual(structured.subPoints?.map((p) => p.attribute).sort(), [`${NAME}.first`, `${NAME}.last`]);
  t.true(structured.subPoints!.every((p) => typeof p.dataPointId === 'string'));

  const read = await v.admin.audit.log({ eventType: 'READ', dataPointId: stored.dataPointId, applicationId: 'crm', applicationUser: 'clerk' });
  t.like(read, { eventType: 'READ', dataPointId: stored.dataPointId, subjectId: subject, attribute: EMAIL });
  t.like(await v.admin.audit.log({ eventType: 'UPDATE', dataPointId: stored.dataPointId, data: { value: 'b@example.org' }, applicationId: 'crm' }), { eventType: 'UPDATE' });
  t.like(await v.admin.audit.log({ eventType: 'DELETE', dataPointId: stored.dataPointId, applicationId: 'crm', timestamp: new Date() }), { eventType: 'DELETE' });

  const log = await records(subject);
  t.deepEqual(log.map((r) => r.eventType), ['STORE', 'STORE', 'READ', 'UPDATE', 'DELETE']);
  t.true(log.every((r) => r.reportOnly && r.applicationId === 'crm'));
  t.false(JSON.stringify(log).includes('a@example.org'), 'values are never kept');
});

test('single events: every error answer', async (t) => {
  const subject = unique('subj');
  const base = { applicationId: 'crm' };
  const { dataPointId } = await v.admin.audit.log({ ...base, eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } });
  const log = (event: unknown) => v.admin.audit.log(event as ExternalActivityEvent);

  await apiError(t, log({ ...base, dataPointId }), 400, 'Event type is required');
  await apiError(t, log({ ...base, eventType: 'COPY', dataPointId }), 400, 'Unrecognized event type');
  await apiError(t, log({ ...base, eventType: 'READ' }), 400, 'Data point ID is required for events other than creation');
  await apiError(t, log({ eventType: 'READ', dataPointId }), 400, 'Application ID is required');
  const tomorrow = new Date(Date.now() + 25 * 3600 * 1000);
  await apiError(t, log({ ...base, eventType: 'READ', dataPointId, timestamp: tomorrow }), 400, 'Timestamp out of range');
  await apiError(t, log({ ...base, eventType: 'STORE', subjectId: subject, data: { attribute: unique('NOPE') } }), 400, 'No such attribute');
  await apiError(t, log({ ...base, eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 'old' } }), 422, `Expected int for value of attribute ${AGE}`);
  await apiError(t, log({ ...base, eventType: 'STORE', subjectId: subject, data: { attribute: NAME, value: { nick: 'A' } } }), 422, `Unknown sub-attribute ${NAME}.nick`);
  await apiError(
    t,
    log({ ...base, eventType: 'STORE', dataPointId, subjectId: subject, data: { attribute: EMAIL } }),
    409,
    'Cannot create data point with ID, as there is already a point with that ID',
  );
  await apiError(
    t,
    log({ ...base, eventType: 'UPDATE', dataPointId, data: { attribute: AGE } }),
    409,
    'Attribute given for datapoint ID does not match attribute of existing point with that ID',
  );
  await apiError(
    t,
    log({ ...base, eventType: 'UPDATE', dataPointId, subjectId: unique('other') }),
    409,
    'Data subject ID given for datapoint ID does not match attribute of existing point with that ID',
  );
  t.deepEqual((await records(subject)).map((r) => r.eventType), ['STORE']);
});

test('bulk: summaries in order; the first failure has its index and nothing is recorded', async (t) => {
  const subject = unique('subj');
  const good: ExternalActivityEvent[] = [
    { eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: 'crm', dataPointId: unique('dp') },
    { eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 41 }, applicationId: 'crm' },
  ];
  const bad = (event: unknown) => v.admin.audit.logBulk([...good, event as ExternalActivityEvent]);

  let err = await apiError(t, bad({ eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 'x' }, applicationId: 'crm' }), 400, `Expected int for value of attribute ${AGE}`);
  t.is(err.index, 2);
  err = await apiError(t, bad({ eventType: 'STORE', subjectId: subject, data: { attribute: NAME, value: { nick: 'x' } }, applicationId: 'crm' }), 400, `Unknown sub-attribute ${NAME}.nick`);
  t.is(err.index, 2);
  err = await apiError(t, bad({ eventType: 'READ', applicationId: 'crm' }), 400, 'Data point ID is required for events other than creation');
  t.is(err.index, 2);
  t.deepEqual(await records(subject), [], 'an atomic bulk recorded nothing');

  const summaries = await v.admin.audit.logBulk(good);
  t.deepEqual(summaries.map((s) => s.attribute), [EMAIL, AGE]);
  t.is(summaries[0].dataPointId, good[0].dataPointId!);
  // The same STORE again (same id, subject, attribute) is harmless; another subject is not.
  await v.admin.audit.logBulk([good[0]]);
  err = await apiError(t, v.admin.audit.logBulk([{ ...good[0], subjectId: unique('other') } as ExternalActivityEvent]), 409, 'Data point ID is in use');
  t.is(err.index, 0);
});

test('eventId: a repeated event is answered again and recorded once', async (t) => {
  const subject = unique('subj');
  const event: ExternalActivityEvent = { eventId: unique('ev'), eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: 'crm' };
  const first = await v.admin.audit.log(event);
  const again = await v.admin.audit.log(event);
  t.is(again.dataPointId, first.dataPointId);
  await v.admin.audit.logBulk([event]);
  t.is((await records(subject)).length, 1);
});

test('retries: a bulk with eventIds is resent after a lost answer and recorded once; without eventIds it is not resent', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url, retry: { retries: 3, minDelayMs: 10, maxDelayMs: 20 } });
  const subject = unique('subj');
  // The first attempt reaches the vault, which records it; its answer is lost on the way back.
  proxy.fate = (_req, n) => (n === 1 ? 'drop-answer' : 'forward');
  const events: ExternalActivityEvent[] = [0, 1, 2].map((i) => ({ eventId: `${subject}-${i}`, eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: 'crm' }));
  const summaries = await c.audit.logBulk(events);
  t.is(summaries.length, 3);
  t.is(proxy.requests.length, 2);
  t.deepEqual((await records(subject)).map((r) => r.eventId), events.map((e) => e.eventId));

  proxy.requests.length = 0;
  proxy.fate = () => 'drop-answer';
  const bare: ExternalActivityEvent[] = [{ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: 'crm' }];
  const err = await t.throwsAsync(c.audit.logBulk(bare), { instanceOf: VaultNetworkError });
  t.is(err?.attempts, 1);
  t.is(proxy.requests.length, 1);
  t.is((await records(subject)).length, 4, 'the vault did record it: only the caller can know whether to resend');
});

test('activity: filters, paging and verification; admins only', async (t) => {
  const subject = unique('subj');
  const app = unique('app');
  const { dataPointId } = await v.admin.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: app, applicationUser: 'u1' });
  for (let i = 0; i < 4; i++) await v.admin.audit.log({ eventType: 'READ', dataPointId, applicationId: app, applicationUser: i % 2 ? 'u1' : 'u2' });

  t.is((await v.admin.activity.list({ subjectId: subject })).length, 5);
  t.is((await v.admin.activity.list({ applicationId: app, eventType: 'READ' })).length, 4);
  t.is((await v.admin.activity.list({ applicationId: app, applicationUser: 'u2' })).length, 2);
  t.is((await v.admin.activity.list({ dataPointId, eventType: 'STORE' })).length, 1);
  t.is((await v.admin.activity.list({ attribute: EMAIL, applicationId: app })).length, 5);
  t.deepEqual(await v.admin.activity.list({ subjectId: subject, from: new Date(Date.now() + 3600_000) }), []);
  t.is((await v.admin.activity.list({ subjectId: subject, to: new Date(Date.now() + 3600_000) })).length, 5);

  const page = await v.admin.activity.list({ subjectId: subject, page: 1, count: 2 });
  const walked: ActivityRecord[] = [];
  for await (const r of v.admin.activity.all({ subjectId: subject, count: 2 })) walked.push(r);
  t.deepEqual(walked.slice(2, 4), page);
  t.is(walked.length, 5);
  t.true(walked.every((r, i) => i === 0 || r.sequence! > walked[i - 1].sequence!), 'oldest first');
  const newest: ActivityRecord[] = [];
  for await (const r of v.admin.activity.all({ subjectId: subject, count: 2, order: 'newest' })) newest.push(r);
  t.deepEqual(newest, [...walked].reverse(), 'newest first is the reverse');
  t.true(walked.every((r) => r.sealed && /^[0-9a-f]{64}$/.test(r.hash!)));

  const verification = await v.admin.activity.verify();
  t.true(verification.valid);
  t.true(verification.records >= 5);

  const { client } = await v.appClient(['*']);
  await apiError(t, client.activity.list(), 403, 'Forbidden');
  await apiError(t, client.activity.verify(), 403, 'Forbidden');
});

test('activity.all() ends, listing each record once, when the loop body reads the data it walks', async (t) => {
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: EMAIL, value: 'walk@example.org' }]);
  for (let i = 0; i < 3; i++) await v.admin.dataSubjects.getAttribute(subject, EMAIL);
  const logged = async () => {
    await v.admin.activity.head();
    return (await v.admin.activity.list({ subjectId: subject, count: 1000 })).map((r) => r.eventId);
  };

  for (const order of ['oldest', 'newest'] as const) {
    const before = await logged();
    const walked: string[] = [];
    for await (const record of v.admin.activity.all({ subjectId: subject, count: 2, order })) {
      // Each read appends a READ of this subject to the log being walked.
      await v.admin.dataSubjects.getAttribute(subject, EMAIL);
      walked.push(record.eventId);
      if (walked.length > 50) break;
    }
    t.deepEqual(walked, order === 'oldest' ? before : [...before].reverse(), order);
    t.is((await logged()).length, before.length * 2, 'every read of the loop was recorded');
  }
});

test('activity: head() and verify(head), as the object or as SEQUENCE:HASH; admins only', async (t) => {
  const subject = unique('subj');
  const { dataPointId } = await v.admin.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationId: 'crm' });
  await v.admin.audit.log({ eventType: 'READ', dataPointId, applicationId: 'crm' });

  const head = await v.admin.activity.head();
  t.deepEqual(Object.keys(head).sort(), ['hash', 'sequence']);
  t.true(Number.isInteger(head.sequence) && head.sequence >= 2);
  t.regex(head.hash, /^[0-9a-f]{64}$/);
  const sealed = await records(subject);
  t.true(sealed.every((r) => r.sealed && r.sequence! <= head.sequence), 'the head is taken after sealing what was pending');

  // Other tests log meanwhile: the chain may have grown past the head, which still matches.
  const asObject = await v.admin.activity.verify(head);
  t.like(asObject, { valid: true, headMatches: true });
  t.is(typeof asObject.unsealed, 'number');
  t.true(asObject.records >= head.sequence);
  t.true(asObject.lastSequence! >= head.sequence);
  t.regex(asObject.lastHash!, /^[0-9a-f]{64}$/);
  t.like(await v.admin.activity.verify(`${head.sequence}:${head.hash}`), { valid: true, headMatches: true });
  t.like(await v.admin.activity.verify({ sequence: 0, hash: '0'.repeat(64) }), { valid: true, headMatches: true }, 'the empty head is a prefix of every log');

  const zeros = '0'.repeat(64);
  t.like(await v.admin.activity.verify({ sequence: head.sequence, hash: zeros }), { valid: false, headMatches: false });
  t.like(await v.admin.activity.verify(`${head.sequence}:${zeros}`), { valid: false, headMatches: false });
  t.like(await v.admin.activity.verify({ sequence: 999_999_999_999_999, hash: head.hash }), { valid: false, headMatches: false }, 'a head past the end: records were cut off');

  const plain = await v.admin.activity.verify();
  t.true(plain.valid);
  t.false('headMatches' in plain, 'no head, no headMatches');
  t.is(typeof plain.unsealed, 'number');

  const err = await t.throwsAsync(v.admin.activity.verify(`${head.sequence}-${head.hash}`), { instanceOf: VaultApiError });
  t.is(err?.status, 400);

  // Both forms send the same request.
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url });
  await c.activity.verify(head);
  await c.activity.verify(`${head.sequence}:${head.hash}`);
  await c.activity.head();
  t.deepEqual(proxy.requests.map((r) => `${r.method} ${r.path}`), [
    `GET /activity/verify?head=${head.sequence}%3A${head.hash}`,
    `GET /activity/verify?head=${head.sequence}%3A${head.hash}`,
    'GET /activity/head',
  ]);

  const { client } = await v.appClient(['*']);
  await apiError(t, client.activity.head(), 403, 'Forbidden');
  await apiError(t, client.activity.verify(head), 403, 'Forbidden');
});

test('reporter (direct): batches by size, by time, and flushes on close; ids are stamped on report', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url });
  const subject = unique('subj');
  const reporter = c.reporter({ batchSize: 3, flushIntervalMs: 60_000, defaults: { applicationId: 'shop' } });

  const stamped: StampedEvent[] = [];
  for (let i = 0; i < 7; i++) stamped.push(reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL, value: `v${i}` } }));
  t.true(stamped.every((e) => e.applicationId === 'shop' && e.eventId && e.dataPointId && !Number.isNaN(Date.parse(e.timestamp))));
  t.is(new Set(stamped.map((e) => e.eventId)).size, 7);

  const bulks = () => proxy.requests.filter((r) => r.path === '/auditlogs/bulk').map((r) => JSON.parse(r.body) as StampedEvent[]);
  await until(async () => bulks().length === 2);
  t.deepEqual(bulks().map((b) => b.length), [3, 3], 'two full batches left at once; the seventh waits');
  t.is(reporter.stats.queued, 1);

  await reporter.close();
  t.deepEqual(bulks().map((b) => b.length), [3, 3, 1]);
  t.deepEqual(bulks().flat().map((e) => e.eventId), stamped.map((e) => e.eventId), 'in order');
  t.like(reporter.stats, { reported: 7, delivered: 7, failed: 0, queued: 0 });
  const log = await records(subject);
  t.deepEqual(log.map((r) => r.dataPointId), stamped.map((e) => e.dataPointId), 'the ids stamped client-side are the recorded ones');
  t.throws(() => reporter.report({ eventType: 'READ', dataPointId: 'x' }), { message: 'The reporter is closed' });

  const timed = c.reporter({ batchSize: 100, flushIntervalMs: 30, defaults: { applicationId: 'shop' } });
  timed.report({ eventType: 'READ', dataPointId: stamped[0].dataPointId!, subjectId: subject });
  timed.report({ eventType: 'READ', dataPointId: stamped[1].dataPointId!, subjectId: subject });
  await until(async () => bulks().length === 4);
  t.is(bulks()[3].length, 2, 'a partial batch leaves after flushIntervalMs');
  await timed.close();
});

test('reporter: defaults fill only what an event leaves out; an unreadable timestamp is left to the vault to refuse', async (t) => {
  const subject = unique('subj');
  const refused: Array<{ error: Error; events: StampedEvent[] }> = [];
  const reporter = v.admin.reporter({ defaults: { applicationId: 'shop', applicationUser: 'default-user' }, onError: (error, events) => refused.push({ error, events }) });
  const explicit = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, applicationUser: 'explicit' });
  t.like(explicit, { applicationId: 'shop', applicationUser: 'explicit' });
  const epoch = reporter.report({ eventType: 'READ', dataPointId: explicit.dataPointId!, timestamp: Date.UTC(2024, 0, 2) });
  t.is(epoch.timestamp, '2024-01-02T00:00:00.000Z');
  const unreadable = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL }, timestamp: 'last tuesday' });
  t.is(unreadable.timestamp, 'last tuesday');
  await reporter.close();
  t.is(refused.length, 1);
  t.deepEqual(refused[0].events, [unreadable]);
  t.regex(refused[0].error.message, /Timestamp/);
  t.deepEqual((await records(subject)).map((r) => [r.eventId, r.applicationUser]), [
    [explicit.eventId, 'explicit'],
    [epoch.eventId, 'default-user'],
  ]);
});

test('reporter: a STORE keeps the caller\'s data.dataPointId, the id the vault registers the point under', async (t) => {
  const subject = unique('subj');
  const pointId = `crm/${subject}/email`;
  const reporter = v.admin.reporter({ defaults: { applicationId: 'crm' } });
  const stored = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL, dataPointId: pointId } });
  t.is(stored.dataPointId, pointId);
  const read = reporter.report({ eventType: 'READ', dataPointId: stored.dataPointId! });
  await reporter.close();
  t.like(reporter.stats, { delivered: 2, failed: 0 });
  t.deepEqual((await records(subject)).map((r) => [r.eventId, r.dataPointId]), [
    [stored.eventId, pointId],
    [read.eventId, pointId],
  ]);
});

test('reporter (direct): a refused event is set aside with the vault reason, the rest delivered', async (t) => {
  const subject = unique('subj');
  const refused: Array<{ error: VaultApiError | VaultNetworkError; events: StampedEvent[] }> = [];
  const reporter = v.admin.reporter({ batchSize: 10, flushIntervalMs: 60_000, defaults: { applicationId: 'shop' }, onError: (error, events) => refused.push({ error, events }) });
  const ok1 = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } });
  const poison = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 'not a number' } });
  const ok2 = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 7 } });
  await reporter.close();

  t.is(refused.length, 1);
  t.true(refused[0].error instanceof VaultApiError);
  t.is(refused[0].error.message, `Expected int for value of attribute ${AGE}`);
  t.deepEqual(refused[0].events, [poison]);
  t.deepEqual((await records(subject)).map((r) => r.eventId), [ok1.eventId, ok2.eventId]);
  t.like(reporter.stats, { reported: 3, delivered: 2, failed: 1 });
});

test('reporter (direct): retries after lost answers without recording anything twice', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url });
  const subject = unique('subj');
  // Every other answer is lost after the vault recorded the batch; one attempt is refused outright.
  proxy.fate = (_req, n) => (n % 2 === 1 ? 'drop-answer' : n === 4 ? 'reset' : 'forward');
  const reporter = c.reporter({ batchSize: 2, flushIntervalMs: 10, minDelayMs: 5, maxDelayMs: 20, defaults: { applicationId: 'shop' } });
  const sent = Array.from({ length: 6 }, (_, i) => reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL, value: `${i}` } }));
  await reporter.close();
  t.like(reporter.stats, { reported: 6, delivered: 6, failed: 0 });
  t.true(proxy.requests.length > 3, 'some batches were sent more than once');
  t.deepEqual((await records(subject)).map((r) => r.eventId), sent.map((e) => e.eventId));
});

test('reporter (direct): a vault that stays away fails the batch after maxAttempts, counting the reporter\'s attempts', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  proxy.fate = () => 'reset';
  const c = v.client({ url: proxy.url });
  const failures: Array<{ error: unknown; events: StampedEvent[] }> = [];
  const reporter = c.reporter({ maxAttempts: 3, minDelayMs: 5, maxDelayMs: 10, defaults: { applicationId: 'shop' }, onError: (error, events) => failures.push({ error, events }) });
  const e = reporter.report({ eventType: 'READ', dataPointId: 'gone' });
  await reporter.close();
  t.is(proxy.requests.length, 3);
  t.is(failures.length, 1);
  const error = failures[0].error as VaultNetworkError;
  t.true(error instanceof VaultNetworkError);
  t.is(error.attempts, 3);
  t.is(error.message, `POST /auditlogs/bulk failed without an answer from the vault (${error.code}, 3 attempts)`);
  t.deepEqual(failures[0].events, [e]);
});

test('reporter (direct): the retry budget is a time; a batch is given up once retryForMs has passed', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  proxy.fate = () => 'reset';
  const c = v.client({ url: proxy.url });
  const failures: Array<{ error: unknown; events: StampedEvent[] }> = [];
  const reporter = c.reporter({ retryForMs: 1000, minDelayMs: 5, maxDelayMs: 10, defaults: { applicationId: 'shop' }, onError: (error, events) => failures.push({ error, events }) });
  const e = reporter.report({ eventType: 'READ', dataPointId: 'gone' });
  await reporter.close();
  t.is(failures.length, 1);
  t.deepEqual(failures[0].events, [e]);
  const error = failures[0].error as VaultNetworkError;
  t.is(error.attempts, proxy.requests.length);
  const n = proxy.requests.length;
  t.is(error.message, `POST /auditlogs/bulk failed without an answer from the vault (${error.code}, ${n} attempt${n === 1 ? '' : 's'})`);
});

test('reporter (direct): an outage longer than ten attempts loses nothing', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  proxy.fate = (_req, n) => (n <= 15 ? 'reset' : 'forward');
  const c = v.client({ url: proxy.url });
  const subject = unique('subj');
  const failures: unknown[] = [];
  const reporter = c.reporter({ minDelayMs: 5, maxDelayMs: 10, defaults: { applicationId: 'shop' }, onError: (error) => failures.push(error) });
  const e = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } });
  await reporter.close();
  t.deepEqual(failures, []);
  t.is(proxy.requests.length, 16);
  t.deepEqual((await records(subject)).map((r) => r.eventId), [e.eventId]);
});

test('reporter: close() gives up after closeTimeoutMs and hands every undelivered event to onError', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  proxy.fate = () => 'reset';
  const c = v.client({ url: proxy.url });
  const failures: Array<{ error: VaultApiError | VaultNetworkError; events: StampedEvent[] }> = [];
  const reporter = c.reporter({ batchSize: 2, closeTimeoutMs: 300, minDelayMs: 5, maxDelayMs: 10, defaults: { applicationId: 'shop' }, onError: (error, events) => failures.push({ error, events }) });
  const sent = Array.from({ length: 5 }, (_, i) => reporter.report({ eventType: 'READ', dataPointId: `p${i}` }));
  await reporter.close();

  t.is(failures.length, 1);
  t.deepEqual(failures[0].events, sent);
  const error = failures[0].error as VaultNetworkError;
  t.true(error instanceof VaultNetworkError);
  t.is(error.code, 'REPORTER_CLOSE_TIMEOUT');
  t.regex(
    error.message,
    /^5 activity event\(s\) not delivered within close\(\)'s 300 ms(; last failure: POST \/auditlogs\/bulk failed without an answer from the vault \((ECONNRESET|UND_ERR_SOCKET), \d+ attempts?\))?$/,
  );
  t.like(reporter.stats, { reported: 5, delivered: 0, failed: 5, queued: 0 });
});

test('reporter: waits as long as Retry-After asks before sending the batch again', async (t) => {
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(Date.now());
      if (arrivals.length === 1) {
        res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
        res.end(JSON.stringify({ statusCode: 503, error: 'Service Unavailable', message: 'The database is not reachable' }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('[{"eventType":"READ"}]');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const c = v.client({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  const failures: unknown[] = [];
  const reporter = c.reporter({ minDelayMs: 1, maxDelayMs: 1, defaults: { applicationId: 'shop' }, onError: (error) => failures.push(error) });
  reporter.report({ eventType: 'READ', dataPointId: 'p' });
  await reporter.close();
  t.deepEqual(failures, []);
  t.like(reporter.stats, { delivered: 1, failed: 0 });
  t.is(arrivals.length, 2);
  t.true(arrivals[1] - arrivals[0] >= 990, `resent after ${arrivals[1] - arrivals[0]} ms`);
});

test('reporter (sidecar): events go through a real sidecar into the vault, with the stamped ids', async (t) => {
  const prefix = uniquePrefix('sdk');
  t.teardown(() => cleanupRedis(prefix));
  // Port 0, and the address from its `sidecar listening` line: a port picked beforehand could
  // be taken by another test's server, which would answer in its place.
  const sidecar = await startSpawnedSidecar({
    SIDECAR_API_KEY: v.proc.adminKey,
    SIDECAR_VAULT_URL: v.proc.url,
    SIDECAR_PORT: '0',
    SIDECAR_PREFIX: prefix,
    REDIS_URL: sharedRedisUrl,
    SIDECAR_BATCH_SIZE: '50',
    SIDECAR_BATCH_MS: '20',
    SIDECAR_LOG_LEVEL: 'info',
  });
  t.teardown(() => stopChild(sidecar.child));
  const { url } = sidecar;
  await until(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.ok, 30_000);

  const proxy = await startRecordingProxy(url);
  t.teardown(() => proxy.close());
  const subject = unique('subj');
  const refused: Array<{ error: unknown; events: StampedEvent[] }> = [];
  const reporter = v.admin.reporter({ sidecar: proxy.url, batchSize: 5, flushIntervalMs: 20, defaults: { applicationId: 'shop' }, onError: (error, events) => refused.push({ error, events }) });
  const sent = Array.from({ length: 12 }, (_, i) => reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL, value: `${i}` } }));
  // A field the sidecar refuses: it is reported back, the others are taken.
  const typo = reporter.report({ eventType: 'READ', dataPointId: sent[0].dataPointId!, subjectId: subject, colour: 'red' } as never);
  await reporter.close();

  t.true(proxy.requests.every((r) => r.method === 'POST' && r.path === '/events'));
  t.true(proxy.requests.every((r) => r.headers.authorization === undefined), 'the sidecar is not given the API key');
  t.is(refused.length, 1);
  t.deepEqual(refused[0].events, [typo]);
  t.regex((refused[0].error as Error).message, /colour/);
  t.like(reporter.stats, { reported: 13, delivered: 12, failed: 1 });

  const log = await until(async () => {
    const r = await records(subject);
    return r.length === 12 && r;
  });
  t.deepEqual(log.map((r) => r.eventId).sort(), sent.map((e) => e.eventId).sort());
  t.deepEqual(log.map((r) => r.dataPointId).sort(), sent.map((e) => e.dataPointId).sort());
});

test('reporter (sidecar): to a sidecar that requires SIDECAR_INGEST_TOKEN, with sidecarToken', async (t) => {
  const prefix = uniquePrefix('sdk-token');
  t.teardown(() => cleanupRedis(prefix));
  const token = 'ingest-token-' + 'x'.repeat(20);
  const sidecar = await startSpawnedSidecar({
    SIDECAR_API_KEY: v.proc.adminKey,
    SIDECAR_VAULT_URL: v.proc.url,
    SIDECAR_PORT: '0',
    SIDECAR_PREFIX: prefix,
    SIDECAR_INGEST_TOKEN: token,
    REDIS_URL: sharedRedisUrl,
    SIDECAR_BATCH_MS: '20',
    SIDECAR_LOG_LEVEL: 'info',
  });
  t.teardown(() => stopChild(sidecar.child));
  const { url } = sidecar;
  await until(async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.ok, 30_000);

  const refused: unknown[] = [];
  const subject = unique('subj');
  const reporter = v.admin.reporter({ sidecar: url, sidecarToken: token, flushIntervalMs: 20, defaults: { applicationId: 'shop' }, onError: (error) => refused.push(error) });
  t.false(inspect(reporter, { depth: 10 }).includes(token), 'the token is not shown when the reporter is logged');
  const sent = [reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } })];
  sent.push(reporter.report({ eventType: 'READ', dataPointId: sent[0].dataPointId!, subjectId: subject }));
  await reporter.close();
  t.deepEqual(refused, []);
  t.like(reporter.stats, { delivered: 2, failed: 0 });
  const log = await until(async () => {
    const r = await records(subject);
    return r.length === 2 && r;
  });
  t.deepEqual(log.map((r) => r.eventId), sent.map((e) => e.eventId));
});

test('reporter: closing the client flushes and closes its reporters', async (t) => {
  const c = v.client();
  const subject = unique('subj');
  const reporter = c.reporter({ flushIntervalMs: 60_000, defaults: { applicationId: 'shop' } });
  const event = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } });
  await c.close();
  t.deepEqual((await records(subject)).map((r) => r.eventId), [event.eventId]);
  t.throws(() => reporter.report({ eventType: 'READ', dataPointId: 'x', applicationId: 'a' }), { message: 'The reporter is closed' });
});

test('reporter: a second close() (or the client\'s) waits for the first to deliver, rather than closing the connections under it', async (t) => {
  const c = v.client();
  const subject = unique('subj');
  const failed: StampedEvent[] = [];
  const reporter = c.reporter({ batchSize: 5, flushIntervalMs: 60_000, defaults: { applicationId: 'shop' }, onError: (_error, events) => failed.push(...events) });
  const stamped = Array.from({ length: 23 }, () => reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: EMAIL } }));
  // A shutdown path that closes the reporter, then the client, without waiting in between.
  const first = reporter.close();
  await reporter.close();
  t.like(reporter.stats, { delivered: 23, queued: 0 }, 'the second close() resolved only once everything was delivered');
  await c.close();
  await first;
  t.deepEqual(failed, []);
  t.is((await records(subject)).length, stamped.length);
});

test('reporter: a batch retried in the background does not keep the process alive; an awaited flush() does', async (t) => {
  const sdk = fileURLToPath(new URL('./index.ts', import.meta.url));
  const gone = `http://127.0.0.1:${await closedPort()}`;
  const run = async (limits: string, ending: string) => {
    const script = `
      const { VaultClient } = await import(${JSON.stringify(sdk)});
      const vault = new VaultClient({ url: ${JSON.stringify(gone)}, apiKey: 'k'.repeat(20), retry: false });
      const reporter = vault.reporter({ flushIntervalMs: 10, minDelayMs: 200, maxDelayMs: 200, ${limits}, defaults: { applicationId: 'shop' }, onError: (e, events) => console.log('given up', events.length) });
      reporter.report({ eventType: 'STORE', subjectId: 's', data: { attribute: 'A' } });
      ${ending}`;
    const started = Date.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['--import=tsx', '--input-type=module', '-e', script], { timeout: 20_000 });
    return { stdout, ms: Date.now() - started };
  };
  // The script's work outlasts the first send, so the batch is being retried when it ends.
  const ended = await run('retryForMs: 60_000', `await new Promise((resolve) => setTimeout(resolve, 300)); console.log('done');`);
  t.is(ended.stdout, 'done\n');
  t.true(ended.ms < 15_000, `the process ended ${ended.ms} ms after it started, not at the end of retryForMs`);
  // A top-level await that nothing keeps alive ends the process with code 13, and execFile rejects.
  const flushed = await run('maxAttempts: 4', `await reporter.flush(); console.log('flushed');`);
  t.is(flushed.stdout, 'given up 1\nflushed\n');
});

test('reporter: an async onError that rejects (a dead-letter store that is down) is contained as a throwing one is', async (t) => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', record);
  t.teardown(() => process.off('unhandledRejection', record));
  const subject = unique('subj');
  const handed: StampedEvent[] = [];
  const reporter = v.admin.reporter({
    batchSize: 10,
    flushIntervalMs: 60_000,
    defaults: { applicationId: 'shop' },
    onError: async (_error, events) => {
      handed.push(...events);
      throw new Error('the dead-letter store is down');
    },
  });
  const poison = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 'not a number' } });
  const ok = reporter.report({ eventType: 'STORE', subjectId: subject, data: { attribute: AGE, value: 7 } });
  await reporter.close();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.deepEqual(handed, [poison]);
  t.deepEqual(unhandled, []);
  t.deepEqual((await records(subject)).map((r) => r.eventId), [ok.eventId]);
});
