/**
 * Admin changes through several vault processes on one database, as an operator scales the
 * vault out: conflicting changes through different processes end in one consistent outcome
 * with the interface's status and message, and a change through one process holds in the
 * others within a second.
 */
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '../core/src/crypto/keys.js';
import { cluster, within, type Backend } from '../core/src/testing/cluster.js';
import { runVaultCli } from '../core/src/testing/process.js';

const BACKENDS: Backend[] = ['postgres', 'sqlite'];

for (const backend of BACKENDS) {
  test(`${backend}: a definition saved through one process while another deletes the entity type or regulation it names: never a definition naming what is gone`, async (t) => {
    const c = await cluster(t, backend, 2);
    for (let round = 0; round < 8; round++) {
      const type = `gadget${round}`;
      t.is((await c.call(0, 'POST', '/entitytypes', { key: type, name: 'Gadget' })).status, 201);
      const [deleted, defined] = await Promise.all([c.call(0, 'DELETE', `/entitytypes/${type}`), c.call(1, 'POST', '/attributes', { key: `SERIAL${round}`, entityTypes: [type] })]);
      const answers = JSON.stringify([deleted, defined]);
      if (deleted.status === 200) {
        // The type went first: the definition naming it is refused, and nothing was created.
        t.is(defined.status, 400, answers);
        t.is(defined.body.message, 'No such entity type');
        t.is((await c.call(1, 'GET', `/attributes/SERIAL${round}`)).status, 404, answers);
      } else {
        t.is(deleted.status, 409, answers);
        t.is(deleted.body.message, 'Cannot delete entity type, as there are attributes referencing it');
        t.is(defined.status, 201, answers);
        t.is((await c.call(0, 'GET', `/entitytypes/${type}`)).status, 200);
      }

      const regulation = `HOUSE${round}`;
      t.true((await c.call(0, 'POST', '/regulations', { key: regulation, name: 'House rules' })).status < 300);
      const [dropped, regulated] = await Promise.all([c.call(0, 'DELETE', `/regulations/${regulation}`), c.call(1, 'POST', '/attributes', { key: `RULED${round}`, regulations: [regulation] })]);
      t.is(dropped.status, 200);
      // Either refused, or saved first and untagged by the delete: never left naming it.
      if (regulated.status === 400) t.is(regulated.body.message, 'No such regulation');
      else t.is(regulated.status, 201, JSON.stringify(regulated));
      const definition = await c.call(1, 'GET', `/attributes/RULED${round}`);
      if (definition.status === 200) t.deepEqual(definition.body.data.regulations, [], `round ${round}: the definition names a deleted regulation`);
      else t.is(regulated.status, 400);
    }
  });
}

test('postgres: admin changes and a key retirement through one process hold in the other within a second', async (t) => {
  const c = await cluster(t, 'postgres', 2);
  const [a, b] = c.vaults;
  const oldPair = a.keys;
  const enc = { 'x-encryption-key': oldPair.publicKey };
  const store = (i: number, subject: string, data: unknown[], headers: Record<string, string> = enc) => c.call(i, 'POST', `/entities/${subject}/attributes`, { data }, headers);
  for (const [key, body] of [
    ['AGE', { schema: 'int' }],
    ['NICK', { tags: ['campaign'] }],
    ['PHONE', { regulations: ['HOUSE'] }],
    ['GONE', {}],
  ] as const) {
    if (key === 'PHONE') t.true((await c.call(0, 'POST', '/regulations', { key: 'HOUSE', name: 'House rules' })).status < 300);
    t.is((await c.call(0, 'POST', '/attributes', { key, ...body })).status, 201);
  }
  // B holds every definition (GONE's too), as any store makes it.
  t.is((await store(1, 'warm', [{ attribute: 'NICK', value: 'x' }, { attribute: 'PHONE', value: '1' }])).status, 200);

  // A rule changed through A decides B's next store: its new message, then no block at all.
  const rule = (message: string, attributes: string[]) => ({ key: 'no_age', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes }, action: { type: 'block', message } });
  t.is((await c.call(0, 'POST', '/rules', rule('Ages are not kept here', ['AGE']))).status, 201);
  t.is((await store(1, 'bob', [{ attribute: 'AGE', value: 42 }])).body.message, 'Ages are not kept here');
  t.is((await c.call(0, 'POST', '/rules', rule('Not here either', ['AGE']))).status, 200);
  const changed = await store(1, 'bob', [{ attribute: 'AGE', value: 42 }]);
  t.is(changed.status, 403);
  t.is(changed.body.message, 'Not here either');
  t.is((await c.call(0, 'POST', '/rules', rule('Nicknames neither', ['NICK']))).status, 200);
  t.is((await store(1, 'bob', [{ attribute: 'AGE', value: 42 }])).status, 200);
  t.is((await c.call(0, 'DELETE', '/rules/no_age')).status, 200);

  // Deleted through A: B neither labels with them, nor takes data for them.
  t.is((await c.call(0, 'DELETE', '/tags/campaign')).status, 200);
  t.is((await c.call(0, 'DELETE', '/regulations/HOUSE')).status, 200);
  t.is((await c.call(0, 'DELETE', '/attributes/GONE')).status, 200);
  const labelled = await store(1, 'carol', [{ attribute: 'NICK', value: 'c' }, { attribute: 'PHONE', value: '2' }]);
  t.is(labelled.status, 200);
  t.deepEqual(labelled.body.data.map((p: { tags: string[]; regulations: string[] }) => [...p.tags, ...p.regulations]), [[], []]);
  t.is((await c.call(1, 'GET', '/tags/campaign')).status, 404);
  const named = await store(1, 'carol', [{ attribute: 'NICK', value: 'd', regulations: ['HOUSE'] }]);
  t.is(named.status, 400);
  t.is(named.body.message, 'No such regulation');
  const gone = await store(1, 'carol', [{ attribute: 'GONE', value: 'z' }]);
  t.is(gone.status, 400);
  t.is(gone.body.message, 'No such attribute');

  // The operator rotates the key beside both running processes.
  const dir = mkdtempSync(join(tmpdir(), 'vault-mp-rotation-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const newPair = generateKeyPair(2048);
  writeFileSync(join(dir, 'new-public.pem'), newPair.publicPem);
  writeFileSync(join(dir, 'old-private.pem'), oldPair.privatePem, { mode: 0o600 });
  t.regex(runVaultCli(['keys', 'register', '--public-key', join(dir, 'new-public.pem')], a.env), /as the active key/);
  t.regex(runVaultCli(['keys', 'rewrap', '--old-private-key', join(dir, 'old-private.pem')], a.env), /Re-wrapped \d+ data keys/);
  const newEnc = { 'x-encryption-key': newPair.publicKey };
  for (const i of [0, 1]) t.is((await store(i, `during-${i}`, [{ attribute: 'NICK', value: 'n' }], newEnc)).status, 200);
  const oldId = runVaultCli(['keys', 'list'], a.env).split('\n').find((l) => l.endsWith('\tretired'))!.split('\t')[0];
  t.regex(runVaultCli(['keys', 'retire', '--key-id', oldId], b.env), /Retired/);
  for (const i of [0, 1]) {
    const refused = await within(3000, () => store(i, `after-${i}`, [{ attribute: 'NICK', value: 'o' }]), (r) => r.status !== 200);
    t.is(refused.status, 400, `process ${i} takes stores under the retired key`);
    t.is(refused.body.message, 'Encoded key provided is invalid');
    const read = await c.call(i, 'GET', `/entities/during-${1 - i}/attributes/NICK`, undefined, { 'x-decryption-key': oldPair.privateKey });
    t.is(read.body.message, 'Encoded key provided is invalid');
    const fresh = await c.call(i, 'GET', `/entities/during-${1 - i}/attributes/NICK`, undefined, { 'x-decryption-key': newPair.privateKey });
    t.is(fresh.body.data[0].value, 'n');
    t.is((await store(i, `after-${i}`, [{ attribute: 'NICK', value: 'p' }], newEnc)).status, 200);
  }
});

test('postgres: the activity log paged through one process while the other writes: no record twice, none lost, the chain valid', async (t) => {
  const c = await cluster(t, 'postgres', 2);
  const enc = { 'x-encryption-key': c.vaults[0].keys.publicKey };
  t.is((await c.call(0, 'POST', '/attributes', { key: 'VISITS', repeatable: true })).status, 201);
  for (let i = 0; i < 120; i++) t.is((await c.call(i, 'POST', `/entities/early-${i % 4}/attributes`, { data: [{ attribute: 'VISITS', value: `v${i}` }] }, enc)).status, 200);
  const answered: string[] = [];
  let stopping = false;
  const writer = async (w: number) => {
    for (let n = 0; !stopping; n++) {
      const res = await c.call(1, 'POST', `/entities/writer-${w}/attributes`, { data: [{ attribute: 'VISITS', value: `visit ${n}` }] }, enc);
      t.is(res.status, 200);
      answered.push(res.body.data[0].dataPointId);
    }
  };
  const writers = [0, 1, 2].map(writer);
  // The records sealed before paging began never move; those after them may still shift.
  const sequencesOf = async (query: string, upTo: number): Promise<number[]> => {
    const seen: number[] = [];
    for (let page = 0; page * 25 < upTo; page++) {
      const res = await c.call(0, 'GET', `/activity?count=25&page=${page}&${query}`);
      t.is(res.status, 200);
      for (const r of res.body.data) if (r.sealed && r.sequence <= upTo) seen.push(r.sequence);
    }
    return seen;
  };
  const head = async (): Promise<number> => (await c.call(0, 'GET', '/activity/head')).body.data.sequence;
  const before = await head();
  const oldest = await sequencesOf('order=oldest', before);
  t.deepEqual(oldest, oldest.map((_, i) => i + 1), 'oldest first: every sealed record once, in order');
  t.is(oldest.length, before);
  const top = await within(30_000, head, (n) => n > before);
  t.true(top > before, 'the other process wrote meanwhile');
  const newest = await sequencesOf(`order=newest&toSequence=${top}`, top);
  t.deepEqual(newest, newest.map((_, i) => top - i), 'newest first below a fixed head: every record once, in order');
  t.is(newest.length, top);
  stopping = true;
  await Promise.all(writers);

  const verified = await c.call(1, 'GET', '/activity/verify');
  t.true(verified.body.data.valid);
  t.is(verified.body.data.unsealed, 0);
  const stored = new Map<string, number>();
  const last = verified.body.data.lastSequence;
  for (let from = 1; from <= last; from += 1000) {
    const page = await c.call(from, 'GET', `/activity?eventType=STORE&fromSequence=${from}&toSequence=${from + 999}&count=1000`);
    for (const r of page.body.data) stored.set(r.dataPointId, (stored.get(r.dataPointId) ?? 0) + 1);
  }
  t.true(answered.length > 0);
  t.deepEqual(answered.filter((id) => stored.get(id) !== 1), [], 'every answered store recorded exactly once');
});
