import { connect } from 'node:net';
import test from 'ava';
import { Queue } from 'bullmq';
import type { SidecarHandle } from '../index.js';
import type { EventsJobData } from '../queue/producer.js';
import { FakeVault } from '../testing/fake-vault.js';
import { cleanupRedis, closedPort, getJson, makeEvent, postEvents, sharedRedisUrl, startTestSidecar, uniquePrefix } from '../testing/helpers.js';

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

test.serial('a timestamp the vault would refuse (year 10000, or days ahead) is refused here, not queued to become a dead letter', async (t) => {
  const answer = await postEvents(sidecar.url, [
    { eventType: 'READ', applicationId: 'app', dataPointId: 'dp-y10k', timestamp: 253402300800000 },
    { eventType: 'READ', applicationId: 'app', dataPointId: 'dp-ahead', timestamp: new Date(Date.now() + 2 * 24 * 60 * 60 * 1000).toISOString() },
  ]);
  t.is(answer.status, 400);
  t.deepEqual(answer.body, {
    accepted: [],
    rejected: [
      { index: 0, message: 'event 0: field "timestamp" must fall in the years 0000 to 9999 (UTC), as the vault takes it' },
      { index: 1, message: 'event 1: field "timestamp" is more than a day in the future, which the vault refuses' },
    ],
  });
  const jobs = await queue.getJobs(['waiting', 'active']);
  t.false(jobs.some((j) => j.data.events.some((e) => e.dataPointId === 'dp-y10k' || e.dataPointId === 'dp-ahead')), 'nothing queued');
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
  // No body at all, with or without a JSON content type: no events either, not a bad "event 0".
  for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
    const res = await fetch(`${sidecar.url}/events`, { method: 'POST', headers });
    t.is(res.status, 400);
    t.deepEqual(await res.json(), { accepted: [], rejected: [], message: 'the request contains no events' });
  }
});

async function postRaw(body: string, contentType = 'application/json') {
  const res = await fetch(`${sidecar.url}/events`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function queuedEventIds(): Promise<string[]> {
  const jobs = await queue.getJobs(['waiting', 'active']);
  return jobs.flatMap((j) => j.data.events.map((e) => e.eventId));
}

test.serial('unparseable JSON and oversized bodies keep the answer shape, with the vault\'s messages', async (t) => {
  const broken = await postRaw('[{"eventType":');
  t.is(broken.status, 400);
  t.deepEqual(broken.body, { accepted: [], rejected: [], statusCode: 400, error: 'Bad Request', message: 'Body is not valid JSON' });
  const huge = await postEvents(sidecar.url, Array.from({ length: 1000 }, (_, i) => makeEvent(i)));
  t.is(huge.status, 413);
  t.like(huge.body, { accepted: [], rejected: [], statusCode: 413, error: 'Payload Too Large', message: 'Request body is too large' });
});

/**
 * Sends `size` bytes of body, paced as a client on a real network sends them (the answer can come
 * long before the last byte), with a Content-Length or chunked; resolves with what came back and
 * how much of the body had been sent when the answer began.
 */
function sendOversized(size: number, framing: 'content-length' | 'chunked'): Promise<{ text: string; writeError?: string; sentAtAnswer?: number }> {
  const { port, hostname } = new URL(sidecar.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    let writeError: string | undefined;
    let sent = 0;
    let sentAtAnswer: number | undefined;
    const finish = () => {
      clearInterval(timer);
      socket.destroy();
      resolve({ text, writeError, sentAtAnswer });
    };
    socket.on('data', (d) => {
      sentAtAnswer ??= sent;
      text += d;
      if (sent >= size && text.endsWith('}')) finish();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (writeError ??= err.code));
    socket.on('close', finish);
    const length = framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
    socket.write(`POST /events HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\n${length}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const timer = setInterval(() => {
      if (sent >= size || socket.destroyed) return;
      if (framing === 'chunked') socket.write(`${chunk.length.toString(16)}\r\n`);
      socket.write(chunk);
      sent += chunk.length;
      if (framing === 'chunked') socket.write(sent >= size ? '\r\n0\r\n\r\n' : '\r\n');
      if (sent >= size && text.endsWith('}')) finish();
    }, 2);
  });
}

for (const framing of ['content-length', 'chunked'] as const) {
  test.serial(`a client still sending a body over the limit (${framing}) gets its 413, not a broken connection`, async (t) => {
    const size = 2 * 1024 * 1024; // 32 times the limit: far more than socket buffers hold
    const answer = await sendOversized(size, framing);
    t.is(answer.writeError, undefined, 'every byte of the body could be sent');
    // Answered earlier, the connection closes under a client still sending, which then often
    // sees its own write fail instead of the answer.
    t.is(answer.sentAtAnswer, size, 'answered once the whole body was sent');
    t.regex(answer.text, /^HTTP\/1\.1 413 /);
    t.true(answer.text.endsWith('{"accepted":[],"rejected":[],"statusCode":413,"error":"Payload Too Large","message":"Request body is too large"}'));
  });
}

/** Sends the headers of a POST /events that asks first (`Expect: 100-continue`), and `body` only if told to go on. */
function askFirst(length: number, body?: string): Promise<string> {
  const { port, hostname } = new URL(sidecar.url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (d) => {
      answer += d;
      if (answer === 'HTTP/1.1 100 Continue\r\n\r\n' && body !== undefined) socket.write(body);
      else if (/\r\n\r\n\{.*\}$/s.test(answer)) socket.end();
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
    socket.write(`POST /events HTTP/1.1\r\nHost: sidecar\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`);
  });
}

test.serial('a client that asks before sending a body over the limit (Expect: 100-continue) is told 413 at once; one within it is let through', async (t) => {
  // The headers only: had the sidecar said 100 Continue, it would wait for a body that never comes.
  const refused = await askFirst(2 * 1024 * 1024);
  t.regex(refused, /^HTTP\/1\.1 413 /);
  t.notRegex(refused, /100 Continue/);
  t.regex(refused, /\r\nconnection: close\r\n/i);
  t.true(refused.endsWith('{"accepted":[],"rejected":[],"statusCode":413,"error":"Payload Too Large","message":"Request body is too large"}'));

  const body = JSON.stringify(makeEvent(1, { eventId: 'asked-first' }));
  const accepted = await askFirst(Buffer.byteLength(body), body);
  t.regex(accepted, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 202 /);
  t.true((await queuedEventIds()).includes('asked-first'));
});

test.serial('JSON with a charset is JSON; a NUL in the path is refused like one in the body', async (t) => {
  const charset = await postRaw(JSON.stringify(makeEvent(1, { eventId: 'charset-1' })), 'application/json; charset=utf-8');
  t.is(charset.status, 202);
  const path = await getJson(`${sidecar.url}/deadletters/a%00b`);
  t.is(path.status, 400);
  t.deepEqual(path.body, { statusCode: 400, error: 'Bad Request', message: 'Strings may not contain NUL characters' });
});

test.serial('a JSON body in a charset other than UTF-8 is 415 naming the one it takes, as the vault answers it; UTF-8, however spelled, is taken', async (t) => {
  for (const charset of ['latin1', 'ISO-8859-1', 'utf-16', '"windows-1252"']) {
    const answer = await postRaw(JSON.stringify(makeEvent(1, { eventId: `charset-${charset}` })), `application/json; charset=${charset}`);
    t.is(answer.status, 415, charset);
    t.deepEqual(answer.body, {
      accepted: [], rejected: [], statusCode: 415, error: 'Unsupported Media Type', message: 'Content type charset must be utf-8',
    });
  }
  const spellings = ['application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'Application/JSON; Charset=US-ASCII'];
  for (const [i, contentType] of spellings.entries()) {
    t.is((await postRaw(JSON.stringify(makeEvent(1, { eventId: `charset-ok-${i}` })), contentType)).status, 202, contentType);
  }
  const queued = (await queuedEventIds()).filter((id) => id.startsWith('charset-') && id !== 'charset-1');
  t.deepEqual(queued.sort(), ['charset-ok-0', 'charset-ok-1', 'charset-ok-2'], 'only the UTF-8 bodies were enqueued');
});

test.serial('a body that is not JSON is 415, whatever it holds', async (t) => {
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
    const answer = await postRaw(JSON.stringify(makeEvent(1, { eventId: `plain-${contentType}` })), contentType);
    t.is(answer.status, 415, contentType);
    t.deepEqual(answer.body, {
      accepted: [], rejected: [], statusCode: 415, error: 'Unsupported Media Type', message: 'Content type must be application/json',
    });
  }
  t.false((await queuedEventIds()).some((id) => id.startsWith('plain-')), 'nothing enqueued');
});

test.serial('prototype-poisoning keys get the vault\'s message and change nothing', async (t) => {
  for (const body of [
    '{"__proto__":{"admin":true},"eventType":"READ","applicationId":"a","dataPointId":"d","eventId":"proto-1"}',
    '[{"eventType":"READ","applicationId":"a","dataPointId":"d","eventId":"proto-2","data":{"value":{"constructor":{"prototype":{"x":1}}}}}]',
  ]) {
    const answer = await postRaw(body);
    t.is(answer.status, 400);
    t.deepEqual(answer.body, { accepted: [], rejected: [], statusCode: 400, error: 'Bad Request', message: 'Body contains a forbidden property name' });
  }
  t.false((await queuedEventIds()).some((id) => id.startsWith('proto-')), 'nothing enqueued');
});

test.serial('a NUL character anywhere is refused at ingest, not dead-lettered later', async (t) => {
  const cases = [
    makeEvent(1, { eventId: 'nul-1', applicationId: 'a\u0000b' }),
    makeEvent(2, { eventId: 'nul-2', data: { attribute: 'email', value: { 'k\u0000': 'v' } } }),
    [makeEvent(3, { eventId: 'nul-3' }), makeEvent(4, { eventId: 'nul-4', data: { attribute: 'email', value: 'a\u0000@example.test' } })],
  ];
  for (const body of cases) {
    const answer = await postRaw(JSON.stringify(body));
    t.is(answer.status, 400);
    t.deepEqual(answer.body, { accepted: [], rejected: [], statusCode: 400, error: 'Bad Request', message: 'Strings may not contain NUL characters' });
  }
  t.false((await queuedEventIds()).some((id) => id.startsWith('nul-')), 'nothing enqueued');
});

test.serial('an unpaired surrogate or bytes that are not UTF-8 are refused at ingest, as the vault would refuse them', async (t) => {
  // JSON.stringify escapes a lone surrogate (\\ud800), as any client's serialiser would.
  for (const body of [
    makeEvent(1, { eventId: 'sur-1', subjectId: 's\ud800' }),
    [makeEvent(2, { eventId: 'sur-2' }), makeEvent(3, { eventId: 'sur-3', data: { attribute: 'email', value: { ['\udc00k']: 'v' } } })],
  ]) {
    const answer = await postRaw(JSON.stringify(body));
    t.is(answer.status, 400);
    t.deepEqual(answer.body, { accepted: [], rejected: [], statusCode: 400, error: 'Bad Request', message: 'Strings may not contain unpaired surrogates' });
  }
  const paired = await postRaw(JSON.stringify(makeEvent(4, { eventId: 'sur-ok', subjectId: 'emoji-\ud83d\ude00' })));
  t.is(paired.status, 202, 'a surrogate pair is one character, and welcome');

  const latin1 = Buffer.concat([Buffer.from('{"eventType":"READ","applicationId":"a","dataPointId":"caf'), Buffer.from([0xe9]), Buffer.from('","eventId":"sur-latin1"}')]);
  const res = await fetch(`${sidecar.url}/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: latin1 });
  t.is(res.status, 400);
  t.like(await res.json(), { message: 'Body is not valid UTF-8' });
  const queued = await queuedEventIds();
  t.deepEqual(queued.filter((id) => id.startsWith('sur-')), ['sur-ok'], 'only the valid event was enqueued');
});

test.serial('a too-deep value is a 400 naming the field, not "Redis unavailable"', async (t) => {
  for (const depth of [65, 5_000, 30_000]) {
    const value = '['.repeat(depth) + ']'.repeat(depth);
    const body = `[{"eventType":"STORE","applicationId":"a","subjectId":"s","eventId":"deep-${depth}","data":{"attribute":"x","value":${value}}},` +
      `{"eventType":"READ","applicationId":"a","dataPointId":"d","eventId":"shallow-${depth}"}]`;
    const answer = await postRaw(body);
    t.is(answer.status, 202, `depth ${depth}: the other event is still taken`);
    t.deepEqual(answer.body.rejected, [{ index: 0, message: 'event 0: field "data.value" is nested too deeply (more than 64 levels)' }]);
  }
  const deepest = '{"a":'.repeat(64) + '1' + '}'.repeat(64);
  const fits = await postRaw(`{"eventType":"STORE","applicationId":"a","subjectId":"s","eventId":"deep-64","data":{"attribute":"x","value":${deepest}}}`);
  t.is(fits.status, 202, '64 levels are accepted');
  const queued = await queuedEventIds();
  t.false(queued.some((id) => id.startsWith('deep-') && id !== 'deep-64'));
  t.true(queued.includes('deep-64'));
  t.true(queued.includes('shallow-30000'));
});

test('503, never 202, when Redis is unreachable', async (t) => {
  const down = await startTestSidecar({
    apiKey: 'k', prefix: uniquePrefix('ingest-down'), redisUrl: `redis://127.0.0.1:${await closedPort()}`, enqueueTimeoutMs: 100,
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
