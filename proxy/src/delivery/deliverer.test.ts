import test from 'ava';
import { pino } from 'pino';
import type { StampedEvent } from '../ingest/event.js';
import { SidecarMetrics } from '../metrics.js';
import { FakeVault } from '../testing/fake-vault.js';
import { AbortedError } from './backoff.js';
import { Deliverer, type DeadLetterEntry, type DeadLetterSink } from './deliverer.js';
import { VaultClient, type SendResult, type VaultSender } from './vault-client.js';

const log = pino({ level: 'silent' });

function events(n: number, tag = 'e'): StampedEvent[] {
  return Array.from({ length: n }, (_, i) => ({ eventType: 'READ', applicationId: 'a', dataPointId: 'd', eventId: `${tag}${i}`, timestamp: '2024-01-01T00:00:00Z' }));
}

class MemorySink implements DeadLetterSink {
  entries: DeadLetterEntry[] = [];
  failures = 0;
  async add(entries: DeadLetterEntry[]) {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('redis away');
    }
    this.entries.push(...entries);
  }
}

const fast = { maxRetries: undefined, retryBaseMs: 1, retryMaxMs: 5 };

async function withFakeVault(run: (vault: FakeVault, client: VaultClient) => Promise<void>) {
  const vault = new FakeVault();
  await vault.start();
  const client = new VaultClient({ vaultUrl: vault.url, apiKey: vault.apiKey, timeoutMs: 5000 });
  try {
    await run(vault, client);
  } finally {
    await client.close();
    await vault.stop();
  }
}

test('a poison event is cut out using the index: the rest is delivered in order', async (t) => {
  await withFakeVault(async (vault, client) => {
    vault.poison = (e) => (e.eventId === 'e500' ? 'attribute unknown' : undefined);
    const sink = new MemorySink();
    const metrics = new SidecarMetrics();
    const batch = events(1000);
    const outcome = await new Deliverer(client, sink, fast, metrics, log).deliver(batch, new AbortController().signal);
    t.deepEqual(outcome, { delivered: 999, deadLettered: 1, requests: 3 });
    t.deepEqual(vault.recordedIds(), batch.filter((e) => e.eventId !== 'e500').map((e) => e.eventId));
    t.is(sink.entries.length, 1);
    t.is(sink.entries[0].event.eventId, 'e500');
    t.like(sink.entries[0].reason, { kind: 'rejected', statusCode: 400, answer: { statusCode: 400, error: 'Bad Request', message: 'event 500: attribute unknown', index: 500 } });
    t.regex(await metrics.registry.metrics(), /sidecar_events_dead_lettered_total\{reason="rejected"\} 1/);
  });
});

test('several poison events, including first and last', async (t) => {
  await withFakeVault(async (vault, client) => {
    const bad = new Set(['e0', 'e7', 'e8', 'e19']);
    vault.poison = (e) => (bad.has(e.eventId) ? 'no' : undefined);
    const sink = new MemorySink();
    const outcome = await new Deliverer(client, sink, fast, new SidecarMetrics(), log).deliver(events(20), new AbortController().signal);
    t.is(outcome.delivered, 16);
    t.deepEqual(sink.entries.map((e) => e.event.eventId), ['e0', 'e7', 'e8', 'e19']);
    t.deepEqual(vault.recordedIds(), events(20).map((e) => e.eventId).filter((id) => !bad.has(id)));
  });
});

/** Atomic like the vault, but refuses without saying where: the deliverer has to bisect. */
class NoIndexVault implements VaultSender {
  recorded: string[] = [];
  constructor(private readonly bad: Set<string>, private readonly maxSize = Infinity) {}
  async send(batch: StampedEvent[]): Promise<SendResult> {
    if (batch.length > this.maxSize) return { kind: 'too-large', status: 413, body: { statusCode: 413 } };
    if (batch.some((e) => this.bad.has(e.eventId))) return { kind: 'rejected', status: 400, body: { message: 'bad batch' }, index: undefined };
    this.recorded.push(...batch.map((e) => e.eventId));
    return { kind: 'ok', status: 200, summaries: [] };
  }
}

test('without an index the batch is bisected down to the poison event', async (t) => {
  const vault = new NoIndexVault(new Set(['e37']));
  const sink = new MemorySink();
  const outcome = await new Deliverer(vault, sink, fast, new SidecarMetrics(), log).deliver(events(100), new AbortController().signal);
  t.is(outcome.delivered, 99);
  t.deepEqual(sink.entries.map((e) => e.event.eventId), ['e37']);
  t.deepEqual(vault.recorded, events(100).map((e) => e.eventId).filter((id) => id !== 'e37'));
  t.true(outcome.requests < 20);
});

test('413 splits the batch until the vault takes the pieces', async (t) => {
  const vault = new NoIndexVault(new Set(), 30);
  const outcome = await new Deliverer(vault, new MemorySink(), fast, new SidecarMetrics(), log).deliver(events(100), new AbortController().signal);
  t.is(outcome.delivered, 100);
  t.deepEqual(vault.recorded, events(100).map((e) => e.eventId));
});

test('5xx is retried until the vault answers, then nothing is lost', async (t) => {
  await withFakeVault(async (vault, client) => {
    vault.mode = 'failing';
    const metrics = new SidecarMetrics();
    const delivering = new Deliverer(client, new MemorySink(), fast, metrics, log).deliver(events(10), new AbortController().signal);
    while (vault.requests < 5) await new Promise((r) => setTimeout(r, 5));
    vault.mode = 'up';
    const outcome = await delivering;
    t.is(outcome.delivered, 10);
    t.true(outcome.requests >= 6);
    t.is(vault.records.length, 10);
    t.regex(await metrics.registry.metrics(), /sidecar_delivery_retries_total\{reason="http 503"\} [5-9]/);
  });
});

test('with maxRetries the batch is dead-lettered once retries are exhausted', async (t) => {
  await withFakeVault(async (vault, client) => {
    vault.mode = 'failing';
    const sink = new MemorySink();
    const outcome = await new Deliverer(client, sink, { ...fast, maxRetries: 2 }, new SidecarMetrics(), log).deliver(events(4), new AbortController().signal);
    t.deepEqual(outcome, { delivered: 0, deadLettered: 4, requests: 3 });
    t.like(sink.entries[0].reason, { kind: 'retries-exhausted', statusCode: 503, attempts: 3 });
  });
});

test('dead letters are retried until stored', async (t) => {
  await withFakeVault(async (vault, client) => {
    vault.poison = (e) => (e.eventId === 'e1' ? 'no' : undefined);
    const sink = new MemorySink();
    sink.failures = 3;
    const outcome = await new Deliverer(client, sink, fast, new SidecarMetrics(), log).deliver(events(3), new AbortController().signal);
    t.is(outcome.deadLettered, 1);
    t.is(sink.entries.length, 1);
  });
});

test('aborting gives up on a vault that does not come back', async (t) => {
  await withFakeVault(async (vault, client) => {
    vault.mode = 'failing';
    const controller = new AbortController();
    const delivering = new Deliverer(client, new MemorySink(), fast, new SidecarMetrics(), log).deliver(events(2), controller.signal);
    while (vault.requests < 2) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await t.throwsAsync(delivering, { instanceOf: AbortedError });
  });
});
