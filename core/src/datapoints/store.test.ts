/**
 * Stores that arrive together on PostgreSQL share transactions (`SharedTransactions`). Seen
 * from the API nothing may change: each store is answered with its own points or its own
 * refusal, keeps nothing when refused, and gets its own STORE records.
 */
import test from 'ava';
import { createPostgresDatabase, startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
let drop: () => Promise<void>;
test.before(async () => {
  // PostgreSQL in both passes of the suite: only there do stores share transactions.
  const database = await createPostgresDatabase();
  drop = database.drop;
  v = await startTestVault({ env: { VAULT_DB: database.url } });
  for (const body of [
    { key: 'NOTE', schema: 'string', repeatable: true },
    { key: 'NAME', schema: 'string' },
  ]) {
    if ((await v.request('POST', '/attributes', { body })).status !== 201) throw new Error('could not define attributes');
  }
});
test.after.always(async () => {
  await v?.close();
  await drop?.();
});

const store = (subject: string, data: unknown[]) => v.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
const read = (subject: string) => v.request('GET', `/entities/${subject}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } });
const metric = async (name: string) => {
  const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
};

test.serial('stores of different subjects that arrive together share transactions, each answered with its own points', async (t) => {
  const before = { groups: await metric('vault_shared_transaction_writes_count'), stores: await metric('vault_shared_transaction_writes_sum') };
  const subjects = Array.from({ length: 24 }, (_, i) => `together-${i}`);
  const answers = await Promise.all(subjects.map((s) => store(s, [{ attribute: 'NOTE', value: `note of ${s}` }])));
  t.deepEqual(
    answers.map((a) => a.status),
    subjects.map(() => 200),
  );
  for (const [i, s] of subjects.entries()) {
    t.is(answers[i].body.data[0].entityId, s);
    t.deepEqual((await read(s)).body.data.map((p: any) => p.value), [`note of ${s}`]);
  }
  const groups = (await metric('vault_shared_transaction_writes_count')) - before.groups;
  const stores = (await metric('vault_shared_transaction_writes_sum')) - before.stores;
  t.true(groups >= 1 && stores > groups, `${stores} stores in ${groups} shared transactions`);
  await v.vault.sealer.sealAll();
  const records = (await v.request('GET', '/activity', { query: { eventType: 'STORE', count: '1000' } })).body.data.filter((e: any) => subjects.includes(e.subjectId));
  t.deepEqual(records.map((e: any) => e.subjectId).sort(), [...subjects].sort(), 'a STORE record each');
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true });
});

test.serial('a store refused among others keeps nothing and takes none of the others with it', async (t) => {
  const held = 'held-subject';
  t.is((await store(held, [{ attribute: 'NAME', value: 'Ada' }])).status, 200);
  t.is((await v.request('POST', '/entities', { body: { id: held, legalHold: true } })).status, 200);
  const subjects = Array.from({ length: 8 }, (_, i) => `beside-held-${i}`);
  const [refused, ...others] = await Promise.all([
    // Overwriting a nonrepeatable value under a legal hold: refused after the store has read its entity.
    store(held, [{ attribute: 'NAME', value: 'Grace' }]),
    ...subjects.map((s) => store(s, [{ attribute: 'NOTE', value: s }])),
  ]);
  t.is(refused.status, 403);
  t.deepEqual(
    others.map((a) => a.status),
    subjects.map(() => 200),
  );
  t.deepEqual((await read(held)).body.data.map((p: any) => p.value), ['Ada']);
  for (const s of subjects) t.deepEqual((await read(s)).body.data.map((p: any) => p.value), [s]);
});

test.serial('stores of one subject that arrive together all land, in the order they came', async (t) => {
  const subject = 'one-subject';
  const values = Array.from({ length: 6 }, (_, i) => `value ${i}`);
  const answers = await Promise.all(values.map((value) => store(subject, [{ attribute: 'NAME', value }])));
  t.deepEqual(
    answers.map((a) => a.status),
    values.map(() => 200),
  );
  // A nonrepeatable attribute: each store replaced the one before it, so the last one stands.
  t.deepEqual((await read(subject)).body.data.map((p: any) => p.value), [values.at(-1)]);
  await v.vault.sealer.sealAll();
  const kinds = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data.map((e: any) => e.eventType);
  t.deepEqual(kinds.filter((k: string) => k !== 'READ'), ['STORE', 'UPDATE', 'UPDATE', 'UPDATE', 'UPDATE', 'UPDATE']);
});

test.serial('a store a rule blocks among others raises its alert once', async (t) => {
  t.is((await v.request('POST', '/attributes', { body: { key: 'CARD', schema: 'string' } })).status, 201);
  const alertRule = 'card-attempted';
  for (const body of [
    { key: alertRule, constraint: { type: 'attribute', operator: 'any', attributes: ['CARD'] }, action: { type: 'alert', alertLevel: 'WARNING', message: 'card number attempted' } },
    { key: 'card-blocked', constraint: { type: 'attribute', operator: 'any', attributes: ['CARD'] }, action: { type: 'block' } },
  ]) {
    t.is((await v.request('POST', '/rules', { body })).status, 201);
  }
  const subjects = Array.from({ length: 8 }, (_, i) => `beside-block-${i}`);
  const [blocked, ...others] = await Promise.all([store('card-holder', [{ attribute: 'CARD', value: '4111111111111111' }]), ...subjects.map((s) => store(s, [{ attribute: 'NOTE', value: s }]))]);
  t.is(blocked.status, 403);
  t.deepEqual(
    others.map((a) => a.status),
    subjects.map(() => 200),
  );
  // Recorded on their own once the refused store's transaction is over.
  const alerts = async () => (await v.request('GET', '/alerts', { query: { rule: alertRule } })).body.data;
  const deadline = Date.now() + 10_000;
  while ((await alerts()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 200));
  t.is((await alerts()).length, 1);
});

test.serial('a store run again alone after its shared transaction rolled back is counted once; a blocked one is stored nowhere in the counts', async (t) => {
  // The CARD rules of the test before: a store of CARD is blocked, and rolls its group back.
  const counter = async (line: string) => {
    const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
    return Number(text.split('\n').find((l) => l.startsWith(`${line} `))?.slice(line.length + 1) ?? 0);
  };
  const counters = () => Promise.all(['vault_datapoints_total{operation="store"}', 'vault_rule_evaluations_total{type="data"}'].map(counter));
  // Runs of the stores' work, reruns included: each appends its records once.
  const activity = v.vault.activity;
  let appends = 0;
  v.vault.activity = { ...activity, append: (...args) => (appends++, activity.append(...args)) };
  t.teardown(() => (v.vault.activity = activity));

  const [points, evaluations] = await counters();
  const subjects = Array.from({ length: 8 }, (_, i) => `counted-once-${i}`);
  const [blocked, ...others] = await Promise.all([store('card-holder', [{ attribute: 'CARD', value: '4111111111111111' }]), ...subjects.map((s) => store(s, [{ attribute: 'NOTE', value: s }]))]);
  t.is(blocked.status, 403);
  t.deepEqual(
    others.map((a) => a.status),
    subjects.map(() => 200),
  );
  t.true(appends > subjects.length, `${appends} runs of ${subjects.length} stores: some ran again alone`);
  const [pointsAfter, evaluationsAfter] = await counters();
  t.is(pointsAfter - points, subjects.length, 'each stored point once, the blocked one not at all');
  // The blocked store's evaluation counts too: its refusal stands, and it did not run again.
  t.is(evaluationsAfter - evaluations, subjects.length + 1);
});
