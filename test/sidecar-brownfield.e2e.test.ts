import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ExternalActivityEvent } from '../proxy/src/index.js';
import {
  OwnRedis, cleanupRedis, getJson, postEvents, spawnSidecar, stopChild, uniquePrefix, waitFor, type SpawnedSidecar,
} from '../proxy/src/testing/helpers.js';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { AnswerDelay, RealVault } from './sidecar-vault.js';

/**
 * A service that held personal data before it reported to the vault: every event is a READ
 * of a point the vault has never seen, with subject and attribute, as the reverse proxy
 * produces them. Through the sidecar, under a sidecar SIGKILL mid-batch, a vault restart and
 * a Redis restart, every accepted event is recorded exactly once and nothing is dead-lettered.
 * Runs on PostgreSQL with VAULT_TEST_DB=postgres.
 */

const USERS = 600;
const ROUNDS = 2;
const PER_REQUEST = 20;

const apiKey = `brownfield-admin-${randomBytes(12).toString('hex')}`;
const EMAIL = `email_${randomBytes(4).toString('hex')}`;
const PHONE = `phone_${randomBytes(4).toString('hex')}`;
const applicationId = `crm-${randomBytes(4).toString('hex')}`;

let vault: RealVault;
let dataDir: string;
let dropDatabase: (() => Promise<void>) | undefined;

test.before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'brownfield-vault-'));
  const env: Record<string, string> = {};
  if (process.env.VAULT_TEST_DB === 'postgres') {
    const database = await createPostgresDatabase();
    env.VAULT_DB = database.url;
    dropDatabase = database.drop;
  }
  vault = new RealVault(dataDir, apiKey, env);
  await vault.start();
  await vault.defineAttribute(EMAIL);
  await vault.defineAttribute(PHONE);
});

test.after.always(async () => {
  await vault?.stop();
  await dropDatabase?.();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Each user's email and phone read ROUNDS times: the first read of each point registers it. */
function brownfieldEvents(): ExternalActivityEvent[] {
  const events: ExternalActivityEvent[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (let user = 0; user < USERS; user++) {
      for (const attribute of [EMAIL, PHONE]) {
        const subjectId = `u-${user}`;
        events.push({
          eventType: 'READ',
          eventId: `${applicationId}-${round}-${user}-${attribute}`,
          applicationId,
          applicationUser: 'clerk',
          subjectId,
          dataPointId: `${applicationId}/${subjectId}/${attribute}`,
          data: { attribute },
        });
      }
    }
  }
  return events;
}

test('brownfield READs through the sidecar under sidecar SIGKILL, vault restart and Redis restart: each recorded once, none dead-lettered', async (t) => {
  const events = brownfieldEvents();
  const requests = Array.from({ length: Math.ceil(events.length / PER_REQUEST) }, (_, i) => events.slice(i * PER_REQUEST, (i + 1) * PER_REQUEST));
  const redis = await OwnRedis.started('brownfield-redis');
  // Holding the vault's answer back makes the kill land between "recorded" and "acknowledged".
  const delay = new AnswerDelay(vault.url);
  const delayUrl = await delay.start();
  const prefix = uniquePrefix('brownfield');
  const env = {
    SIDECAR_API_KEY: apiKey, SIDECAR_VAULT_URL: delayUrl, SIDECAR_PORT: '0', SIDECAR_PREFIX: prefix, REDIS_URL: redis.url,
    SIDECAR_BATCH_SIZE: '100', SIDECAR_BATCH_MS: '20', SIDECAR_LOCK_MS: '2000', SIDECAR_RETRY_BASE_MS: '20', SIDECAR_RETRY_MAX_MS: '300',
    SIDECAR_LOG_LEVEL: 'info',
  };
  /** Where the sidecar running now listens, as it reported. */
  let url = '';
  const children: SpawnedSidecar[] = [];
  t.teardown(async () => {
    for (const c of children) await stopChild(c.child);
    await delay.stop();
    await cleanupRedis(prefix, redis.url);
    await redis.dispose();
  });
  const startSidecar = async () => {
    const sidecar = spawnSidecar(env);
    children.push(sidecar);
    url = (await sidecar.listening).url;
    await waitFor(async () => {
      const r = await getJson(`${url}/readyz`);
      return r.status === 200 && r.body.worker === 'delivering';
    }, { timeoutMs: 60_000, message: 'sidecar delivering' });
    return sidecar;
  };
  const recordedCount = async () => (await vault.activity(applicationId)).length;

  const accepted = new Set<string>();
  let unavailable = 0;
  /** Sends one request until Redis has it, resending the same eventIds after a 503, as the README advises. */
  const send = async (batch: ExternalActivityEvent[]) => {
    await waitFor(async () => {
      const answer = await postEvents(url, batch);
      if (answer.status === 503) unavailable++;
      if (answer.status !== 202) return false;
      t.deepEqual(answer.body.rejected, []);
      for (const a of answer.body.accepted) accepted.add(a.eventId);
      return true;
    }, { timeoutMs: 60_000, intervalMs: 100, message: 'ingest to accept a request' });
  };
  let next = 0;
  const sendUpTo = async (end: number) => {
    while (next < end) await send(requests[next++]);
  };
  const killable = () => delay.forwarded >= 2 && delay.inFlight > 0;

  // 1. The sidecar is killed while a batch the vault recorded awaits its answer: checked after
  //    every request, so the kill lands mid-stream however fast or slow the machine is.
  delay.holdMs = 400;
  const first = await startSidecar();
  while (next < requests.length / 2 && !killable()) await send(requests[next++]);
  await waitFor(killable, { timeoutMs: 60_000, message: 'a recorded batch awaiting its answer' });
  first.child.kill('SIGKILL');
  await first.exited;
  delay.holdMs = 0;
  t.log(`sidecar killed after ${next} of ${requests.length} requests`);

  // 2. The vault restarts while a new sidecar takes over and more events arrive.
  await vault.stop();
  await startSidecar();
  await sendUpTo(Math.max(next, Math.floor((requests.length * 2) / 3)));
  await vault.start();
  await waitFor(async () => (await recordedCount()) > 0, { timeoutMs: 60_000, message: 'deliveries after the vault restart' });

  // 3. Redis is killed (only what its AOF fsynced survives) and restarted mid-stream.
  await sendUpTo(Math.max(next, Math.floor((requests.length * 5) / 6)));
  await redis.kill();
  const refused = await postEvents(url, requests[next]);
  t.is(refused.status, 503, 'no 202 while Redis is away');
  await redis.start();
  await sendUpTo(requests.length);

  t.is(accepted.size, events.length, 'every event was accepted in the end');
  const records = await waitFor(async () => {
    const list = await vault.activity(applicationId);
    return list.length >= events.length ? list : undefined;
  }, { timeoutMs: 120_000, intervalMs: 500, message: `${events.length} records` });
  const ids = records.map((r) => r.eventId);
  t.is(ids.length, events.length, 'nothing recorded twice');
  t.deepEqual(new Set(ids), accepted, 'every accepted event recorded');
  t.true(records.every((r) => r.eventType === 'READ' && r.subjectId !== undefined && r.attribute !== undefined));
  const first1 = records.find((r) => r.eventId === events[0].eventId)!;
  t.like(first1, { subjectId: 'u-0', attribute: EMAIL, dataPointId: `${applicationId}/u-0/${EMAIL}`, applicationUser: 'clerk' });

  const dead = await getJson(`${url}/deadletters`);
  t.is(dead.status, 200);
  t.is(dead.body.total, 0, 'nothing dead-lettered');
  t.true([...delay.sent.values()].some((n) => n > 1), 'the unacknowledged batch was sent again and deduplicated by the vault');
  const verify = await vault.call('GET', '/activity/verify');
  t.true(verify.body.data.valid);
  t.log(`${events.length} events, ${unavailable} answers 503 while Redis was away`);
});
