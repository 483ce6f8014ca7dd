/**
 * Reads by id that arrive together. On PostgreSQL they share one statement; whichever
 * database, each read must get exactly its own answer, checked for its own caller, and its
 * own READ record.
 */
import test from 'ava';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { PROHIBITED_MESSAGE } from '../rules/prohibitions.js';
import type { DataPoint } from './model.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;

async function storeOne(entityId: string, attribute: string, value: string): Promise<string> {
  const res = await v.request('POST', `/entities/${entityId}/attributes`, { body: { data: [{ attribute, value }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  if (res.status !== 200) throw new Error(`store: ${JSON.stringify(res.body)}`);
  return res.body.data[0].dataPointId;
}

/** Statements that select points by id, counted while `during` runs (PostgreSQL only). */
async function pointSelects(during: () => Promise<void>): Promise<number> {
  const query = pg.Client.prototype.query;
  let count = 0;
  pg.Client.prototype.query = function (this: pg.Client, config: any, ...rest: any[]) {
    const text = typeof config === 'string' ? config : config?.text;
    if (typeof text === 'string' && /from "datapoints"/.test(text) && /"datapoints"\."id"/.test(text) && !/^insert/i.test(text)) count++;
    return (query as any).call(this, config, ...rest);
  } as typeof query;
  try {
    await during();
  } finally {
    pg.Client.prototype.query = query;
  }
  return count;
}

test.serial('reads by id that arrive together each get their own point, 404, or 403, and one READ record each', async (t) => {
  const visible = uid('NAME');
  const hidden = uid('SECRET');
  const restrict = uid('RESTRICT');
  for (const key of [visible, hidden, restrict]) t.is((await v.request('POST', '/attributes', { body: { key, schema: 'string' } })).status, 201);
  t.is(
    (await v.request('POST', '/rules', { body: { key: uid('rule'), constraint: { type: 'attribute', operator: 'any', attributes: [restrict] }, action: { type: 'prohibition', prohibitions: ['READ'] } } }))
      .status,
    201,
  );
  const apiKey = await v.createApplication([visible, restrict]);

  const subjects = [uid('subject'), uid('subject'), uid('subject')];
  const values = ['Ada', 'Grace', 'Edsger'];
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await storeOne(subjects[i], visible, values[i]));
  const hiddenId = await storeOne(subjects[0], hidden, 'not for this application');
  const restricted = uid('restricted');
  const restrictedId = await storeOne(restricted, visible, 'locked away');
  await storeOne(restricted, restrict, 'yes');

  const asked = [ids[0], ids[1], 'no-such-point', hiddenId, restrictedId, ids[2], ids[0], `x",{}'; drop table datapoints; --`];
  const answers: { status: number; body: any }[] = [];
  const statements = await pointSelects(async () => {
    answers.push(
      ...(await Promise.all(asked.map((id) => v.request('GET', `/data/${encodeURIComponent(id)}`, { apiKey, headers: { 'x-decryption-key': v.keys.privateKey } })))),
    );
  });

  t.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 404, 404, 403, 200, 200, 404],
  );
  t.deepEqual(
    [0, 1, 5, 6].map((i) => [answers[i].body.data.dataPointId, answers[i].body.data.value]),
    [
      [ids[0], 'Ada'],
      [ids[1], 'Grace'],
      [ids[2], 'Edsger'],
      [ids[0], 'Ada'],
    ],
  );
  for (const i of [2, 3, 7]) t.is(answers[i].body.message, 'Data Not Found');
  t.is(answers[4].body.message, PROHIBITED_MESSAGE);
  if (process.env.VAULT_TEST_DB === 'postgres') t.is(statements, 1, 'the reads shared one statement');

  // Answered reads are in the log once each; refused ones are not.
  const readsOf = async (subjectId: string) =>
    (await v.request('GET', '/activity', { query: { subjectId, eventType: 'READ' } })).body.data.map((r: any) => r.dataPointId);
  t.deepEqual(await readsOf(subjects[0]), [ids[0], ids[0]]);
  t.deepEqual(await readsOf(subjects[1]), [ids[1]]);
  t.deepEqual(await readsOf(subjects[2]), [ids[2]]);
  t.deepEqual(await readsOf(restricted), []);
  t.is((await v.request('GET', '/data/' + ids[1], { apiKey, headers: { 'x-decryption-key': v.keys.privateKey } })).body.data.value, 'Grace', 'a later read is not served from the batch');
});

test.serial('a stored value altered in the database answers 500 and logs the point, never the value', async (t) => {
  const attribute = uid('NOTE');
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string' } })).status, 201);
  const subject = uid('subject');
  const secret = `secret-${randomBytes(6).toString('hex')}`;
  const id = await storeOne(subject, attribute, secret);
  const read = () => v.request('GET', `/data/${id}`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is((await read()).body.data.value, secret);

  // One bit of the sealed value flipped, as a disk or a hand in the database might.
  const [row] = await v.vault.db.selectFrom('datapoints').select('ciphertext').where('id', '=', id).execute();
  const altered = Buffer.from(row.ciphertext!);
  altered[altered.length - 1] ^= 1;
  await v.vault.db.updateTable('datapoints').set({ ciphertext: altered }).where('id', '=', id).execute();

  const res = await read();
  t.is(res.status, 500);
  t.is(res.body.message, 'Stored data failed its integrity check');
  const subjectRead = await v.request('GET', `/entities/${subject}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(subjectRead.status, 500);
  t.is(subjectRead.body.message, 'Stored data failed its integrity check');
  t.true(v.logs.some((line) => line.includes('a stored ciphertext failed authentication') && line.includes(id)));
  t.false(v.logs.some((line) => line.includes(secret)));
});

test.serial('a subject read of many points, opened off the event loop, answers every value as stored or 500 when one is altered', async (t) => {
  const attribute = uid('NOTE');
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string', repeatable: true } })).status, 201);
  const subject = uid('subject');
  const secrets = Array.from({ length: 12 }, (_, i) => `secret-${i}-${randomBytes(6).toString('hex')} "quoted" \u2028`);
  const ids: string[] = [];
  for (const secret of secrets) ids.push(await storeOne(subject, attribute, secret));
  const read = () => v.request('GET', `/entities/${subject}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  const before = await read();
  t.is(before.status, 200);
  t.deepEqual(
    before.body.data.map((p: DataPoint) => [p.dataPointId, p.value]),
    ids.map((id, i) => [id, secrets[i]]),
  );

  const [row] = await v.vault.db.selectFrom('datapoints').select('ciphertext').where('id', '=', ids[7]).execute();
  const altered = Buffer.from(row.ciphertext!);
  altered[20] ^= 1;
  await v.vault.db.updateTable('datapoints').set({ ciphertext: altered }).where('id', '=', ids[7]).execute();
  const after = await read();
  t.is(after.status, 500);
  t.is(after.body.message, 'Stored data failed its integrity check');
  t.true(v.logs.some((line) => line.includes('a stored ciphertext failed authentication') && line.includes(ids[7])));
  t.false(v.logs.some((line) => secrets.some((secret) => line.includes(secret.slice(0, 20)))));
});

test.serial('a read of several points is one record, listed as one entry per point in the order answered', async (t) => {
  const [name, email] = [uid('NAME'), uid('EMAIL')];
  t.is((await v.request('POST', '/attributes', { body: { key: name, schema: 'string' } })).status, 201);
  t.is((await v.request('POST', '/attributes', { body: { key: email, schema: 'string', repeatable: true } })).status, 201);
  const subject = uid('subject');
  const stored = await v.request('POST', `/entities/${subject}/attributes`, {
    body: { data: [{ attribute: name, value: 'Ada' }, { attribute: email, value: 'ada@example.org' }, { attribute: email, value: 'ada@work.example' }] },
    headers: { 'x-encryption-key': v.keys.publicKey },
  });
  t.is(stored.status, 200);
  const records = async () => {
    let n = 0;
    for (const table of ['activity_log', 'activity_pending'] as const) {
      const row = await v.vault.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('subject_id', '=', subject).where('event_type', '=', 'READ').executeTakeFirstOrThrow();
      n += Number(row.n);
    }
    return n;
  };

  const read = await v.request('GET', `/entities/${subject}/attributes`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(read.status, 200);
  const answered = read.body.data.map((p: any) => [p.dataPointId, p.attribute]);
  t.is(answered.length, 3);
  t.is(await records(), 1, 'one record for the request');

  await v.vault.sealer.sealAll();
  const listed = (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ' } })).body.data;
  t.deepEqual(listed.map((e: any) => [e.dataPointId, e.attribute]), answered, 'an entry per point, in the order answered');
  t.deepEqual(listed.map((e: any) => e.part), [1, 2, 3]);
  const [first] = listed;
  t.regex(first.eventId, /^[0-9a-f-]{36}\.1$/);
  t.deepEqual(listed.map((e: any) => e.eventId), [1, 2, 3].map((part) => first.eventId.replace(/\.1$/, `.${part}`)));
  for (const entry of listed) t.like(entry, { sequence: first.sequence, hash: first.hash, subjectId: subject, eventType: 'READ', sealed: true, reportOnly: false });

  // The filters and paging see entries, not records.
  const [, second, third] = answered;
  const byPoint = (await v.request('GET', '/activity', { query: { dataPointId: third[0] } })).body.data;
  t.deepEqual(
    byPoint.map((e: any) => [e.eventType, e.dataPointId, e.part]),
    [
      ['STORE', third[0], undefined],
      ['READ', third[0], 3],
    ],
  );
  const byAttribute = (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ', attribute: email } })).body.data;
  t.deepEqual(byAttribute.map((e: any) => e.dataPointId), [second[0], third[0]]);
  const page = (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ', count: '2', page: '1' } })).body.data;
  t.deepEqual(page.map((e: any) => e.dataPointId), [third[0]]);

  // A read of one point stays a record of its own, with no part.
  const one = await v.request('GET', `/entities/${subject}/attributes/${name}`, { headers: { 'x-decryption-key': v.keys.privateKey } });
  t.is(one.status, 200);
  t.is(await records(), 2);
  const last = (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ' } })).body.data.at(-1);
  t.like(last, { dataPointId: answered[0][0], attribute: name, part: undefined });
  t.regex(last.eventId, /^[0-9a-f-]{36}$/);
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true });
});

test.serial('the retention clock of a point reads its last read also from a record that names several points', async (t) => {
  const { ActivityService } = await import('../activity/service.js');
  const attribute = uid('NOTE');
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string', repeatable: true } })).status, 201);
  const subject = uid('subject');
  const stored = await v.request('POST', `/entities/${subject}/attributes`, {
    body: { data: [{ attribute, value: 'one' }, { attribute, value: 'two' }] },
    headers: { 'x-encryption-key': v.keys.publicKey },
  });
  const [a, b] = stored.body.data.map((p: any) => p.dataPointId);
  t.is(await ActivityService.lastRead(v.vault.db, subject, a), undefined);
  t.is((await v.request('GET', `/entities/${subject}/attributes/${attribute}`, { headers: { 'x-decryption-key': v.keys.privateKey } })).status, 200);
  const whenA = await ActivityService.lastRead(v.vault.db, subject, a);
  t.truthy(whenA);
  t.is(await ActivityService.lastRead(v.vault.db, subject, b), whenA);
  t.is(await ActivityService.lastRead(v.vault.db, subject, `${a}x`), undefined, 'only the points it names');
  await v.vault.sealer.sealAll();
  t.is(await ActivityService.lastRead(v.vault.db, subject, b), whenA, 'sealed as well as pending');
});

test('a read’s points of different subjects, or vaulted and report-only, get a record per kind', async (t) => {
  const { readRecords } = await import('./reads.js');
  const point = (dataPointId: string, entityId: string, reportOnly = false) => ({ dataPointId, entityId, attribute: 'A', reportOnly }) as DataPoint;
  const records = readRecords('app', [point('p1', 's1'), point('p2', 's2'), point('p3', 's1'), point('p4', 's1', true)], 'now');
  t.deepEqual(
    records.map((r) => [r.subjectId, r.reportOnly, r.dataPointId ?? r.points?.map((p) => p.dataPointId)]),
    [
      ['s1', false, ['p1', 'p3']],
      ['s2', false, 'p2'],
      ['s1', true, 'p4'],
    ],
  );
  t.true(records.every((r) => r.eventType === 'READ' && r.applicationId === 'app' && r.timestamp === 'now'));
});

test('a value read has no HEAD: nothing is decrypted and no READ is recorded for an answer that shows nothing', async (t) => {
  const attribute = uid('HEADLESS');
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string' } })).status, 201);
  const subject = uid('subject');
  const id = await storeOne(subject, attribute, 'value');
  const reads = async () => (await v.request('GET', '/activity', { query: { subjectId: subject, eventType: 'READ' } })).body.data.length;
  const headers = { 'x-decryption-key': v.keys.privateKey };
  for (const url of [`/data/${id}`, `/entities/${subject}/attributes`, `/entities/${subject}/attributes/${attribute}`, `/datasubjects/${subject}/attributes`]) {
    t.is((await v.request('HEAD', url, { headers })).status, 404, url);
  }
  t.is(await reads(), 0);
  t.is((await v.request('GET', `/data/${id}`, { headers })).status, 200);
  t.is(await reads(), 1);
});
