/**
 * Audit bulks at the size senders really use: 10,000 events in one request, all recorded in
 * one transaction, the chain intact afterwards, and a resend answered from memory.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { verifyActivityChain } from '../core/src/activity/service.js';
import { activityCount } from '../core/src/audit/fixtures.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const [key, schema] of [
    ['LOAD_EMAIL', 'string'],
    ['LOAD_NAME', { first: 'string', last: 'string' }],
  ] as const) {
    const res = await v.request('POST', '/attributes', { body: { key, schema } });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  }
});
test.after.always(async () => v?.close());

function events(n: number, prefix: string) {
  const out: object[] = [];
  for (let i = 0; i < n; i++) {
    const subjectId = `${prefix}-subject-${i % 500}`;
    const dataPointId = `${prefix}-point-${i}`;
    out.push(
      i % 4 === 3
        ? { eventType: 'READ', dataPointId: `${prefix}-point-${i - 1}`, applicationId: 'crm', applicationUser: `user-${i % 7}`, eventId: `${prefix}-e${i}` }
        : i % 4 === 2
          ? { eventType: 'STORE', subjectId, dataPointId, applicationId: 'crm', data: { attribute: 'LOAD_NAME', value: { first: 'Ada', last: `L${i}` } }, eventId: `${prefix}-e${i}` }
          : { eventType: 'STORE', subjectId, dataPointId, applicationId: 'crm', data: { attribute: 'LOAD_EMAIL', value: `u${i}@example.org` }, eventId: `${prefix}-e${i}` },
    );
  }
  return out;
}

test.serial('a bulk of 10,000 events is accepted in one request and recorded whole', async (t) => {
  const body = events(10_000, 'big');
  t.log(`body: ${(JSON.stringify(body).length / 1024 / 1024).toFixed(1)} MiB`);
  const started = performance.now();
  const res = await v.request('POST', '/auditlogs/bulk', { body });
  const ms = performance.now() - started;
  t.is(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  t.is(res.body.length, 10_000);
  t.log(`10,000 events in ${ms.toFixed(0)} ms: ${Math.round(10_000 / (ms / 1000))} events/s (${v.vault.dialect})`);
  t.is(res.body[2].subPoints.length, 2);
  t.is(res.body[3].eventType, 'READ');
  t.is(res.body[3].attribute, 'LOAD_NAME');

  await v.vault.sealer.sealAll();
  // The events, beside the attribute definitions' CHANGE records.
  const recordedEvents = () => v.vault.db.selectFrom('activity_log').select((eb) => eb.fn.countAll().as('n')).where('event_type', '<>', 'CHANGE').executeTakeFirstOrThrow();
  const logged = await recordedEvents();
  t.is(Number(logged.n), 10_000);
  const points = await v.vault.db.selectFrom('datapoints').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  t.is(Number(points.n), 7_500 + 2 * 2_500, 'roots plus two sub-points per name');
  const chain = await verifyActivityChain(v.vault.db);
  t.true(chain.valid);
  const changes = await v.vault.db.selectFrom('activity_log').select((eb) => eb.fn.countAll().as('n')).where('event_type', '=', 'CHANGE').executeTakeFirstOrThrow();
  t.is(chain.records, 10_000 + Number(changes.n));

  const resent = await v.request('POST', '/auditlogs/bulk', { body });
  t.is(resent.status, 200);
  t.deepEqual(resent.body, res.body, 'a resend is answered as before');
  await v.vault.sealer.sealAll();
  const again = await recordedEvents();
  t.is(Number(again.n), 10_000, 'and recorded nothing');
});

test.serial('a 10,000-event bulk failing at its last event records nothing', async (t) => {
  const body = events(10_000, 'doomed') as any[];
  body[9_999] = { eventType: 'STORE', subjectId: 's', applicationId: 'crm', data: { attribute: 'NO_SUCH' } };
  const before = await activityCount(v);
  const res = await v.request('POST', '/auditlogs/bulk', { body });
  t.is(res.status, 400);
  t.deepEqual([res.body.message, res.body.index], ['No such attribute', 9_999]);
  t.is(await activityCount(v), before);
  const points = await v.vault.db.selectFrom('datapoints').select('id').where('id', 'like', 'doomed-%').limit(1).execute();
  t.is(points.length, 0);
});

test.serial('throughput by bulk size', async (t) => {
  for (const size of [1, 100, 1000]) {
    const rounds = Math.max(3, Math.ceil(500 / size));
    const started = performance.now();
    for (let r = 0; r < rounds; r++) {
      const res = await v.request('POST', '/auditlogs/bulk', { body: events(size, `tp${size}-${r}`) });
      if (res.status !== 200) t.fail(JSON.stringify(res.body));
    }
    const ms = performance.now() - started;
    t.log(`bulk size ${size}: ${Math.round((rounds * size) / (ms / 1000))} events/s over ${rounds} requests`);
  }
  t.true((await verifyActivityChain(v.vault.db)).valid);
});
