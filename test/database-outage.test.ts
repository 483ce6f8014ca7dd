/**
 * PostgreSQL going away under a serving vault: restarted (connections refused), or cut off
 * by a partition (nothing answers, nothing is closed). Requests fail fast with a 503 a client
 * can retry, none hangs, the vault recovers by itself, and nothing answered is lost. A vault
 * cut off mid-transaction must not hold its locks against the other processes, and the
 * sidecar's events come through an outage recorded exactly once.
 */
import test from 'ava';
import { randomBytes, randomUUID } from 'node:crypto';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { spawnVault, type VaultProcess } from '../core/src/testing/process.js';
import { startRelay } from '../core/src/testing/relay.js';
import { cleanupRedis, metricValue, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../proxy/src/testing/helpers.js';

const UNREACHABLE = { statusCode: 503, error: 'Service Unavailable', message: 'The vault cannot reach its database, retry the request later' };
/** No request may take this long: the vaults below give a statement at most 1 s. */
const HANG_MS = 20_000;

interface Answer {
  status: number;
  body: any;
  retryAfter: string | null;
}

async function call(v: VaultProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${v.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${v.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(HANG_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, retryAfter: res.headers.get('retry-after') };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every record sealed, and the chain verifies. */
async function sealedAndValid(v: VaultProcess): Promise<void> {
  await waitFor(
    async () => {
      const { body } = await call(v, 'GET', '/activity/verify');
      return body.data.valid === true && body.data.unsealed === 0;
    },
    { timeoutMs: 15_000, message: 'every record sealed, the chain valid' },
  );
}

/** `env(i, relayed)`: vault i's settings; `relayed` is the database's URL through the relay. */
async function setUp(t: any, count: number, env: (i: number, relayed: string) => Record<string, string>) {
  const db = await createPostgresDatabase();
  const relay = await startRelay(5432);
  const shared = { VAULT_INDEX_KEY: randomBytes(32).toString('base64'), VAULT_ADMIN_API_KEY: `admin_${randomBytes(16).toString('hex')}`, VAULT_RATE_LIMIT_MAX: '0' };
  const vaults: VaultProcess[] = [];
  t.teardown(async () => {
    await Promise.all(vaults.map((v) => v.dispose()));
    await relay.close();
    await db.drop();
  });
  for (let i = 0; i < count; i++) vaults.push(await spawnVault({ env: { ...shared, VAULT_DB: db.url, ...env(i, relay.through(db.url)), ...(i > 0 ? { VAULT_ENCRYPTION_PUBLIC_KEY: vaults[0].keys.publicKey } : {}) } }));
  const v = vaults[0];
  t.is((await call(v, 'POST', '/attributes', { key: 'VISITS', schema: 'string', repeatable: true })).status, 201);
  return { relay, vaults };
}

/**
 * Stores of new values on subjects `loader-<worker>` and, given `readsOf`, two reads of that
 * point between stores, from `workers` loops until `stop()` (or the test's end). A request that got no answer
 * counts as status -1.
 */
function load(t: { teardown(fn: () => unknown): void }, v: VaultProcess, workers: number, readsOf?: string) {
  const reads: Answer[] = [];
  const stores: Array<Answer & { value: string }> = [];
  let stopped = false;
  // A test that ends early (a failed assertion that throws, a wait that gives up) must not leave
  // the loops calling a vault that is gone: they would keep the test worker alive for ever.
  t.teardown(() => {
    stopped = true;
  });
  const loops = Array.from({ length: workers }, async (_, w) => {
    const noAnswer = (err: unknown): Answer => ({ status: -1, body: String(err), retryAfter: null });
    for (let i = 0; !stopped; i++) {
      let answer: Answer;
      if (readsOf === undefined || i % 3 === 0) {
        const value = `visit ${randomUUID()}`;
        answer = await call(v, 'POST', `/entities/loader-${w}/attributes`, { data: [{ attribute: 'VISITS', value }] }, { 'x-encryption-key': v.keys.publicKey }).catch(noAnswer);
        stores.push({ ...answer, value });
      } else {
        answer = await call(v, 'GET', `/data/${readsOf}`, undefined, { 'x-decryption-key': v.keys.privateKey }).catch(noAnswer);
        reads.push(answer);
      }
      if (answer.status !== 200) await sleep(20);
    }
  });
  return {
    reads,
    stores,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

async function readsRecorded(v: VaultProcess, pointId: string): Promise<number> {
  let recorded = 0;
  for (let page = 0; ; page++) {
    const { body } = await call(v, 'GET', `/activity?dataPointId=${pointId}&eventType=READ&count=1000&page=${page}`);
    recorded += body.data.length;
    if (body.data.length < 1000) return recorded;
  }
}

/** Every store answered is kept; nothing is kept that was not sent (`also`: values stored elsewhere). */
async function checkStoresKept(t: any, v: VaultProcess, stores: Array<Answer & { value: string }>, subjects: number, also: string[] = []): Promise<void> {
  const kept = new Set<string>();
  for (let w = 0; w < subjects; w++) for (const value of await valuesOf(v, `loader-${w}`)) kept.add(value);
  const lost = stores.filter((s) => s.status === 200 && !kept.has(s.value));
  t.deepEqual(lost, [], 'every store answered is kept');
  const sent = new Set([...stores.map((s) => s.value), ...also]);
  t.deepEqual([...kept].filter((value) => !sent.has(value)), [], 'nothing kept that was not sent');
  for (const value of also) t.true(kept.has(value));
}

async function valuesOf(v: VaultProcess, subject: string): Promise<string[]> {
  const res = await call(v, 'GET', `/entities/${subject}/attributes/VISITS`, undefined, { 'x-decryption-key': v.keys.privateKey });
  return res.status === 404 ? [] : res.body.data.map((p: { value: string }) => p.value);
}

test('PostgreSQL refusing connections: 503 to retry, readiness fails, and the vault recovers by itself with nothing answered lost', async (t) => {
  const { relay, vaults } = await setUp(t, 1, (_, relayed) => ({ VAULT_DB: relayed, VAULT_DB_STATEMENT_TIMEOUT_MS: '1000', VAULT_DB_CONNECT_TIMEOUT_MS: '1000' }));
  const [v] = vaults;
  const stored = await call(v, 'POST', '/entities/reader/attributes', { data: [{ attribute: 'VISITS', value: 'the one read' }] }, { 'x-encryption-key': v.keys.publicKey });
  const pointId = stored.body.data[0].dataPointId;

  const running = load(t, v, 6, pointId);
  await sleep(1000);
  relay.refuse();
  await sleep(1500);
  t.deepEqual((await call(v, 'GET', '/readyz')).body, { status: 'unavailable', reason: 'database unreachable' });
  relay.heal();
  await waitFor(async () => (await call(v, 'GET', '/readyz')).status === 200, { timeoutMs: 15_000, message: 'ready again' });
  await sleep(1000);
  await running.stop();

  const all = [...running.reads, ...running.stores];
  const failed = all.filter((a) => a.status !== 200);
  t.true(failed.length > 0, 'the outage was felt');
  for (const a of failed) {
    t.is(a.status, 503);
    t.deepEqual(a.body, UNREACHABLE);
    t.is(a.retryAfter, '5');
  }
  t.true(running.reads.slice(-3).every((a) => a.status === 200) && running.stores.slice(-1)[0].status === 200, 'answering again');

  // Every read answered is recorded, once; a read that failed may have committed its record
  // just as the connection went (the commit's answer lost), never twice.
  const recorded = await readsRecorded(v, pointId);
  const answered = running.reads.filter((a) => a.status === 200).length;
  t.true(recorded >= answered && recorded <= running.reads.length, `${recorded} records for ${answered} reads answered of ${running.reads.length}`);

  await checkStoresKept(t, v, running.stores, 6);

  await sealedAndValid(v);

  // One warning per failed request, without a stack; no value or key in the log.
  const lines = v.output().split('\n').filter((l) => l.includes('the database is unreachable'));
  t.true(lines.length > 0);
  t.true(lines.map((l) => JSON.parse(l)).every((line) => line.level === 40 && !line.err.stack));
  t.false(v.output().includes('visit '));
  t.false(v.output().includes(v.keys.privateKey.slice(40, 80)));
});

test('a partition: requests fail within the statement timeout instead of hanging, and a vault cut off mid-transaction does not hold its locks against another', async (t) => {
  // The first vault reaches the database through the relay; the second directly, waiting up to 15 s for a lock.
  const { relay, vaults } = await setUp(t, 2, (i, relayed): Record<string, string> =>
    i === 0 ? { VAULT_DB: relayed, VAULT_DB_STATEMENT_TIMEOUT_MS: '1000', VAULT_DB_CONNECT_TIMEOUT_MS: '1000' } : { VAULT_DB_STATEMENT_TIMEOUT_MS: '15000' },
  );
  const [cut, other] = vaults;
  // Stores only, so that some are inside a transaction, holding their subject's lock, when
  // the partition falls.
  const running = load(t, cut, 12);
  await sleep(1000);
  relay.partition();
  // The other vault stores on the same subjects: it gets each lock once the server ends the
  // cut-off sessions (idle in their transactions past the first vault's timeout).
  const started = Date.now();
  const theirs = await Promise.all(
    Array.from({ length: 12 }, (_, w) =>
      call(other, 'POST', `/entities/loader-${w}/attributes`, { data: [{ attribute: 'VISITS', value: `from the other ${w}` }] }, { 'x-encryption-key': other.keys.publicKey }).then(
        (a) => a.status,
        () => -1,
      ),
    ),
  );
  t.deepEqual(
    theirs,
    theirs.map(() => 200),
    `the other vault's stores, answered after ${Date.now() - started} ms`,
  );

  const ready = await call(cut, 'GET', '/readyz');
  t.deepEqual([ready.status, ready.body], [503, { status: 'unavailable', reason: 'database unreachable' }]);
  await sleep(1500);
  // Short enough for TCP to ride out: the connections carry on, with what was held back.
  relay.resume();
  await waitFor(async () => (await call(cut, 'GET', '/readyz')).status === 200, { timeoutMs: 15_000, message: 'the cut-off vault ready again' });
  await running.stop();

  const failed = [...running.reads, ...running.stores].filter((a) => a.status !== 200);
  t.true(failed.length > 0, 'the partition was felt');
  for (const a of failed) t.deepEqual([a.status, a.body], [503, UNREACHABLE]);

  await checkStoresKept(t, other, running.stores, 12, Array.from({ length: 12 }, (_, w) => `from the other ${w}`));
  await sealedAndValid(other);
});

test("the sidecar's events come through PostgreSQL refusing, then partitioned: each recorded once, in the order accepted", async (t) => {
  const { relay, vaults } = await setUp(t, 1, (_, relayed) => ({ VAULT_DB: relayed, VAULT_DB_STATEMENT_TIMEOUT_MS: '1000', VAULT_DB_CONNECT_TIMEOUT_MS: '1000' }));
  const [v] = vaults;
  const prefix = uniquePrefix('db-outage');
  const sidecar = await startTestSidecar({ apiKey: v.adminKey, vaultUrl: v.url, prefix, batchSize: 50, batchMs: 20 });
  t.teardown(async () => {
    await sidecar.close();
    await cleanupRedis(prefix);
  });
  const applicationId = `outage-${randomUUID()}`;
  const accepted: string[] = [];
  const ingest = async (from: number, count: number) => {
    for (let i = from; i < from + count; i += 10) {
      const events = Array.from({ length: 10 }, (_, k) => ({ eventType: 'STORE', applicationId, subjectId: `subject-${i + k}`, data: { attribute: 'VISITS' } }));
      const answer = await postEvents(sidecar.url, events);
      t.is(answer.status, 202);
      accepted.push(...answer.body.accepted.map((a) => a.eventId));
      // 200 events take about 1.5 s: longer than the vault's timeouts, so the outage is felt.
      await sleep(75);
    }
  };
  await ingest(0, 200);
  relay.refuse();
  await ingest(200, 200);
  relay.heal();
  await ingest(400, 100);
  relay.partition();
  await ingest(500, 200);
  relay.heal();
  await ingest(700, 100);

  const log = await waitFor(
    async () => {
      const ids: string[] = [];
      for (let page = 0; ; page++) {
        const { body } = await call(v, 'GET', `/activity?applicationId=${applicationId}&count=1000&page=${page}`);
        ids.push(...body.data.map((r: { eventId: string }) => r.eventId));
        if (body.data.length < 1000) break;
      }
      return ids.length >= accepted.length ? ids : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500, message: `${accepted.length} records` },
  );
  t.true((await metricValue(sidecar.url, 'sidecar_delivery_retries_total')) > 0, 'deliveries failed during the outage and were retried');
  t.is(log.length, 800);
  t.deepEqual(log, accepted, 'each accepted event recorded once, in the order accepted');
  await sealedAndValid(v);
});
