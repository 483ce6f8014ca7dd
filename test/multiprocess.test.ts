/**
 * Several stateless vault processes on one database, hammered at once: the guarantees that
 * one process gets from its own transactions must hold across processes too. PostgreSQL is
 * where several processes are meant to run; on one SQLite file they gain no speed (BENCHMARKS.md)
 * but must still be correct, since a rolling restart overlaps two, and the command line
 * writes beside a running vault.
 */
import test from 'ava';
import { cluster, within, type Backend } from '../core/src/testing/cluster.js';
import { runVaultCli, type VaultProcess } from '../core/src/testing/process.js';

const BACKENDS: Backend[] = ['postgres', 'sqlite'];

/** What the answers other than 200 said, for a failure to show which step refused and why. */
const refusals = (answers: { status: number; body: unknown }[]) =>
  JSON.stringify(answers.filter((a) => a.status !== 200).map((a) => [a.status, a.body]).slice(0, 3));

for (const backend of BACKENDS) {
  test(`${backend}, two processes: nonrepeatable values, id reuse, events, reads, chain and licence hold under concurrency`, async (t) => {
    const c = await cluster(t, backend, 2, { VAULT_LICENSE_MAX_CUSTOM_REGULATIONS: '3' });
    const enc = { 'x-encryption-key': c.vaults[0].keys.publicKey };
    const dec = { 'x-decryption-key': c.vaults[0].keys.privateKey };
    t.is((await c.call(0, 'POST', '/attributes', { key: 'EMAIL', schema: 'string', indexed: true })).status, 201);
    t.is((await c.call(1, 'POST', '/attributes', { key: 'VISITS', schema: 'string', repeatable: true })).status, 201);

    // Nonrepeatable: 40 racing overwrites of one subject's EMAIL, some creating the subject.
    const stores = await Promise.all(
      Array.from({ length: 40 }, (_, i) => c.call(i, 'POST', '/entities/racer/attributes', { data: [{ attribute: 'EMAIL', value: `v${i}@example.org` }] }, enc)),
    );
    t.deepEqual([...new Set(stores.map((s) => s.status))], [200], refusals(stores));
    const emails = await c.call(1, 'GET', '/entities/racer/attributes/EMAIL', undefined, dec);
    t.is(emails.body.data.length, 1, 'exactly one value survives');

    // Repeatable: every racing store adds its own value.
    await Promise.all(Array.from({ length: 20 }, (_, i) => c.call(i, 'POST', '/entities/racer/attributes', { data: [{ attribute: 'VISITS', value: `visit ${i}` }] }, enc)));
    t.is((await c.call(0, 'GET', '/entities/racer/attributes/VISITS', undefined, dec)).body.data.length, 20);

    // One data point id, claimed by 10 racing audit STOREs on both processes: one wins.
    const claims = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        c.call(i, 'POST', '/auditlogs', { eventType: 'STORE', dataPointId: 'ext-1', subjectId: `s${i}`, data: { attribute: 'EMAIL' }, applicationId: 'crm' }),
      ),
    );
    t.is(claims.filter((r) => r.status === 200).length, 1);
    t.true(claims.filter((r) => r.status !== 200).every((r) => r.status === 409 && r.body.message === 'Cannot create data point with ID, as there is already a point with that ID'));

    // 600 events with ids, each sent twice, to both processes at once: recorded exactly once.
    const events = Array.from({ length: 600 }, (_, i) => ({ eventId: `evt-${i}`, eventType: 'READ', dataPointId: 'ext-1', applicationId: 'crm' }));
    const batches = Array.from({ length: 12 }, (_, b) => events.slice(b * 50, b * 50 + 50));
    const sent = await Promise.all([...batches, ...batches].map((batch, i) => c.call(i, 'POST', '/auditlogs/bulk', batch)));
    t.deepEqual([...new Set(sent.map((s) => s.status))], [200], refusals(sent));
    let recorded = 0;
    for (let page = 0; ; page++) {
      const res = await c.call(page, 'GET', `/activity?dataPointId=ext-1&eventType=READ&count=1000&page=${page}`);
      recorded += res.body.data.length;
      if (res.body.data.length < 1000) break;
    }
    t.is(recorded, 600, 'no event lost or doubled');

    // Reads and stores on both processes at once: every one answered, every one recorded.
    const visits = (await c.call(0, 'GET', '/entities/racer/attributes/VISITS', undefined, dec)).body.data.map((p: { dataPointId: string }) => p.dataPointId);
    const mixed = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        i % 3 === 2
          ? c.call(i, 'POST', `/entities/mixer-${i % 7}/attributes`, { data: [{ attribute: 'VISITS', value: `mixed ${i}` }] }, enc)
          : c.call(i, 'GET', `/data/${visits[i % visits.length]}`, undefined, dec),
      ),
    );
    t.deepEqual([...new Set(mixed.map((r) => r.status))], [200], refusals(mixed));
    let reads = 0;
    for (const id of visits) reads += (await c.call(0, 'GET', `/activity?dataPointId=${id}&eventType=READ&count=1000`)).body.data.length;
    // Each point was also read twice in a list (the count above and the ids just now).
    t.is(reads, 200 + 2 * visits.length, 'every read answered is recorded once');

    const verify = await c.call(1, 'GET', '/activity/verify');
    t.is(verify.body.data.valid, true, 'the hash chain is intact after concurrent appends from two processes');

    // Licence: 10 racing creates of custom regulations against a limit of 3.
    const regs = await Promise.all(Array.from({ length: 10 }, (_, i) => c.call(i, 'POST', '/regulations', { key: `REG_${i}`, name: `Regulation ${i}` })));
    t.is(regs.filter((r) => r.status === 200 || r.status === 201).length, 3);
    t.true(regs.filter((r) => r.status === 402).every((r) => r.body.message === 'Your current subscription is limited to 3 custom regulations'));
    const builtins = ['GDPR', 'CCPA', 'HIPAA', 'PCI_DSS', 'COPPA', 'LGPD', 'PIPEDA'];
    const all = await c.call(0, 'GET', '/regulations');
    t.is(all.body.data.filter((r: { key: string }) => !builtins.includes(r.key)).length, 3);
  });

  test(`${backend}: caches in one process follow changes made through another`, async (t) => {
    const c = await cluster(t, backend, 2);
    const enc = { 'x-encryption-key': c.vaults[0].keys.publicKey };
    const dec = { 'x-decryption-key': c.vaults[0].keys.privateKey };
    await c.call(0, 'POST', '/attributes', { key: 'NAME', schema: 'string' });

    // Process 1 caches the subject's data key by storing; process 0 purges the subject.
    t.is((await c.call(1, 'POST', '/entities/ada/attributes', { data: [{ attribute: 'NAME', value: 'Ada' }] }, enc)).status, 200);
    t.is((await c.call(1, 'GET', '/entities/ada/attributes/NAME', undefined, dec)).status, 200);
    t.is((await c.call(0, 'DELETE', '/entities/ada/data')).status, 200);
    // Process 1 must not seal new values under the shredded key.
    t.is((await c.call(1, 'POST', '/entities/ada/attributes', { data: [{ attribute: 'NAME', value: 'Ada L.' }] }, enc)).status, 200);
    const read = await c.call(0, 'GET', '/entities/ada/attributes/NAME', undefined, dec);
    t.is(read.status, 200);
    t.is(read.body.data[0].value, 'Ada L.');

    // A definition changed through process 0 is what process 1 validates against within a second
    // (definitions are cached per process); the bound here is generous for a loaded machine.
    await c.call(1, 'POST', '/entities/bob/attributes', { data: [{ attribute: 'NAME', value: 'Bob' }] }, enc);
    t.is((await c.call(0, 'POST', '/attributes', { key: 'AGE', schema: 'int' })).status, 201);
    const typed = await within(3000, () => c.call(1, 'POST', '/entities/bob/attributes', { data: [{ attribute: 'AGE', value: 'old' }] }, enc), (r) => r.status !== 400);
    t.is(typed.status, 422);
    t.is(typed.body.message, 'Expected int for value of attribute AGE');

    // A rule created through process 0 blocks a store on process 1 at once.
    const rule = await c.call(0, 'POST', '/rules', {
      key: 'no_age',
      type: 'data',
      constraint: { type: 'attribute', operator: 'any', attributes: ['AGE'] },
      action: { type: 'block', message: 'Ages are not kept here' },
    });
    t.true(rule.status === 200 || rule.status === 201);
    const blocked = await c.call(1, 'POST', '/entities/bob/attributes', { data: [{ attribute: 'AGE', value: '42' }] }, enc);
    t.is(blocked.status, 403);
    t.is(blocked.body.message, 'Ages are not kept here');
    t.is((await c.call(0, 'DELETE', '/rules/no_age')).status, 200);
    t.is((await c.call(1, 'POST', '/entities/bob/attributes', { data: [{ attribute: 'AGE', value: '42' }] }, enc)).status, 200);

    // An application deleted through one process is locked out of the other at once.
    const created = await c.call(0, 'POST', '/applications', { name: 'temp' });
    const key = created.body.data.apiKey;
    const withKey = (i: number) => fetch(`${c.vaults[i].url}/entitytypes`, { headers: { authorization: `Bearer ${key}` } });
    t.is((await withKey(1)).status, 200);
    await c.call(0, 'DELETE', `/applications/${created.body.data.id}`);
    // Authenticated keys are cached per process for up to a second.
    t.is((await within(3000, () => withKey(1), (r) => r.status === 401)).status, 401);

    // A key rolled through one process stops in the other; the new one works in both, and
    // attributes taken away through one process are refused by the other.
    const app = (await c.call(0, 'POST', '/applications', { name: 'rolled', attributes: ['NAME'] })).body.data;
    const as = (i: number, apiKey: string) =>
      fetch(`${c.vaults[i].url}/entities/carol/attributes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...enc },
        body: JSON.stringify({ data: [{ attribute: 'NAME', value: 'Carol' }] }),
      });
    t.is((await as(1, app.apiKey)).status, 200);
    const rolled = await c.call(0, 'POST', `/applications/${app.id}/key`, {});
    t.is(rolled.status, 200);
    t.is((await within(3000, () => as(1, app.apiKey), (r) => r.status === 401)).status, 401);
    t.is((await as(1, rolled.body.data.apiKey)).status, 200);
    t.is((await c.call(0, 'PATCH', `/applications/${app.id}`, { attributes: ['AGE'] })).status, 200);
    t.is((await within(3000, () => as(1, rolled.body.data.apiKey), (r) => r.status === 403)).status, 403);
  });
  test(`${backend}: one thing deleted through several processes at once is deleted once: one 200, one CHANGE record`, async (t) => {
    const c = await cluster(t, backend, 2);
    t.is((await c.call(0, 'POST', '/attributes', { key: 'AGE', schema: 'int' })).status, 201);
    // Each makes the thing and answers its change id and the path that deletes it.
    const things: Array<[target: string, create: (round: number) => Promise<[id: string, path: string]>]> = [
      ['rule', async (n) => {
        await c.call(0, 'POST', '/rules', { key: `no_age_${n}`, type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['AGE'] }, action: { type: 'block', message: 'No ages' } });
        return [`no_age_${n}`, `/rules/no_age_${n}`];
      }],
      ['tag', async (n) => (await c.call(0, 'POST', '/tags', { name: `vip${n}` }), [`vip${n}`, `/tags/vip${n}`])],
      ['regulation', async (n) => (await c.call(0, 'POST', '/regulations', { key: `HOUSE${n}`, name: 'House rules' }), [`HOUSE${n}`, `/regulations/HOUSE${n}`])],
      ['attribute', async (n) => (await c.call(0, 'POST', '/attributes', { key: `NICK${n}` }), [`NICK${n}`, `/attributes/NICK${n}`])],
      ['entityType', async (n) => (await c.call(0, 'POST', '/entitytypes', { key: `device${n}`, name: 'Device' }), [`device${n}`, `/entitytypes/device${n}`])],
      ['application', async (n) => {
        const { id } = (await c.call(0, 'POST', '/applications', { name: `doomed${n}` })).body.data;
        return [id, `/applications/${id}`];
      }],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [target, create] of things) {
        const [id, path] = await create(round);
        const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => c.call(i, 'DELETE', path)));
        t.is(answers.filter((a) => a.status === 200).length, 1, `${path}: ${JSON.stringify(answers.map((a) => a.status))}`);
        t.true(answers.filter((a) => a.status !== 200).every((a) => a.status === 404), `${path}: the others find nothing to delete`);
        const changes = (await c.call(1, 'GET', '/activity?eventType=CHANGE&count=1000')).body.data;
        t.is(changes.filter((r: any) => r.change?.target === target && r.change?.id === id && r.change?.action === 'delete').length, 1, `${target} ${id}: one delete recorded`);
      }
    }
  });

  test(`${backend}: the same create or change sent through several processes at once is recorded once`, async (t) => {
    const c = await cluster(t, backend, 2);
    const changes = async (target: string, id: string) =>
      (await c.call(1, 'GET', '/activity?eventType=CHANGE&count=1000')).body.data
        .filter((r: any) => r.change?.target === target && r.change?.id === id)
        .map((r: any) => [r.change.action, r.change.fields]);
    const race = async (path: string, body: unknown) => {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => c.call(i, 'POST', path, body)));
      t.deepEqual(answers.filter((a) => a.status >= 300), [], path);
    };
    for (let round = 0; round < 3; round++) {
      await race('/entitytypes', { key: `device${round}`, name: 'Device' });
      await race('/entitytypes', { key: `device${round}`, name: 'Gadget' });
      t.deepEqual(await changes('entityType', `device${round}`), [['create', { name: 'Device', description: null }], ['update', { name: 'Gadget' }]]);
      await race('/regulations', { key: `HOUSE${round}`, name: 'House rules' });
      await race('/regulations', { key: `HOUSE${round}`, name: 'Street rules' });
      t.deepEqual(await changes('regulation', `HOUSE${round}`), [['create', { name: 'House rules', url: null }], ['update', { name: 'Street rules' }]]);
    }
  });

  test(`${backend}: the last two admins each deleted or demoted through another process at once: one goes, the other is refused with 409, never a 500`, async (t) => {
    const c = await cluster(t, backend, 2);
    let admin = { id: (await c.call(0, 'GET', '/applications')).body.data.find((a: { admin: boolean }) => a.admin).id, key: c.vaults[0].adminKey };
    const as = (i: number, key: string, method: string, path: string, body?: unknown) =>
      fetch(`${c.vaults[i].url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    for (let round = 0; round < 8; round++) {
      const created = (await as(0, admin.key, 'POST', '/applications', { name: `admin ${round}`, admin: true })).body.data;
      const other = { id: created.id, key: created.apiKey };
      // Each admin takes the other away; odd rounds demote, even ones delete.
      const [method, body, message] = round % 2 ? ['PATCH', { admin: false }, 'Cannot demote the last admin application'] : ['DELETE', undefined, 'Cannot delete the last admin application'];
      const [first, second] = await Promise.all([as(0, other.key, method, `/applications/${admin.id}`, body), as(1, admin.key, method, `/applications/${other.id}`, body)]);
      const answers = JSON.stringify([first.body, second.body]);
      t.is([first, second].filter((a) => a.status === 200).length, 1, answers);
      // The other is refused: by the check, or at the door when its caller went first.
      const refused = first.status === 200 ? second : first;
      if (refused.status === 409) t.is(refused.body.message, message);
      else t.is(refused.status, round % 2 ? 403 : 401, answers);
      if (first.status === 200) admin = other;
      t.is((await as(round % 2, admin.key, 'GET', '/applications')).status, 200, 'an admin is left');
    }
  });

  test(`${backend}: a tag deleted through one process while subjects and definitions are re-tagged with it through another: no 5xx, and nothing keeps a tag that is gone`, async (t) => {
    const c = await cluster(t, backend, 2);
    const subjects = Array.from({ length: 4 }, (_, k) => `tagged-${k}`);
    const definitions = Array.from({ length: 4 }, (_, k) => `TAGGED_${k}`);
    const tagsOf = async (path: string): Promise<string[]> => (await c.call(0, 'GET', path)).body.data.tags;
    for (let round = 0; round < 8; round++) {
      const tag = `campaign-${round}`;
      for (const id of subjects) t.true((await c.call(0, 'POST', '/datasubjects', { id, tags: [tag, 'common'] })).status < 300);
      for (const key of definitions) t.is((await c.call(0, 'POST', '/attributes', { key, tags: [tag, 'common'] })).status, 201);
      const answers = await Promise.all([
        c.call(0, 'DELETE', `/tags/${tag}`),
        ...subjects.map((id, k) => c.call(k, 'POST', '/datasubjects', { id, tags: [tag, 'common', `round-${round}`] })),
        ...definitions.map((key, k) => c.call(k + 1, 'POST', '/attributes', { key, tags: [tag, 'common', `round-${round}`] })),
      ]);
      t.deepEqual(answers.filter((a) => a.status >= 500).map((a) => a.body), [], `round ${round}`);
      const tagExists = (await c.call(1, 'GET', `/tags/${tag}`)).status === 200;
      for (const path of [...subjects.map((id) => `/datasubjects/${id}`), ...definitions.map((key) => `/attributes/${key}`)]) {
        if ((await tagsOf(path)).includes(tag)) t.true(tagExists, `${path} carries ${tag}, which GET /tags does not know`);
      }
    }
  });
}

test('postgres, three processes: the sealing process killed mid-load, another takes over and every answered record is sealed in one valid chain', async (t) => {
  t.timeout(300_000);
  const c = await cluster(t, 'postgres', 3);
  const enc = { 'x-encryption-key': c.vaults[0].keys.publicKey };
  t.is((await c.call(0, 'POST', '/attributes', { key: 'VISITS', repeatable: true })).status, 201);
  const sealedBy = async (v: VaultProcess): Promise<number> => {
    const text = await (await fetch(`${v.url}/metrics`)).text();
    return Number(/^vault_activity_sealed_total (\d+)/m.exec(text)?.[1] ?? 0);
  };
  const answered: string[] = [];
  let stopping = false;
  const alive = new Set([0, 1, 2]);
  // A load balancer's traffic: each request to a live process, in turn.
  const worker = async (w: number) => {
    for (let n = 0; !stopping; n++) {
      const live = [...alive];
      const i = live[(w + n) % live.length];
      const res = await c.call(i, 'POST', `/entities/visitor-${w}/attributes`, { data: [{ attribute: 'VISITS', value: `visit ${n}` }] }, enc).catch(() => undefined);
      if (res?.status === 200) answered.push(res.body.data[0].dataPointId);
    }
  };
  const workers = Array.from({ length: 6 }, (_, w) => worker(w));
  // The process holding the seal is the one that has sealed the records so far.
  let leader = -1;
  await within(60_000, async () => {
    const counts = await Promise.all(c.vaults.map(sealedBy));
    leader = counts.findIndex((n) => n > 0 && answered.length > 100);
    return leader;
  }, (i) => i >= 0);
  t.true(leader >= 0, 'a process sealed records');
  alive.delete(leader);
  await c.vaults[leader].stop('SIGKILL');
  const survivors = [...alive];
  const before = await Promise.all(survivors.map((i) => sealedBy(c.vaults[i])));
  const answeredAtKill = answered.length;
  await within(60_000, async () => answered.length, (n) => n > answeredAtKill + 100);
  stopping = true;
  await Promise.all(workers);
  const after = await Promise.all(survivors.map((i) => sealedBy(c.vaults[i])));
  t.true(after.some((n, k) => n > before[k]), 'another process took the seal over');

  // Everything answered is sealed, and every survivor, and the command line, agree on the chain.
  const verified = await within(60_000, () => c.call(survivors[0], 'GET', '/activity/verify'), (r) => r.body.data.unsealed === 0);
  t.true(verified.body.data.valid, JSON.stringify(verified.body));
  t.is(verified.body.data.unsealed, 0);
  const other = await c.call(survivors[1], 'GET', '/activity/verify');
  t.deepEqual(other.body.data, verified.body.data);
  const head = (await c.call(survivors[1], 'GET', '/activity/head')).body.data;
  t.is(runVaultCli(['activity', 'head'], c.vaults[survivors[1]].env).trim(), `${head.sequence}:${head.hash}`);
  const stored = new Set<string>();
  for (let from = 1; from <= head.sequence; from += 1000) {
    const page = await c.call(survivors[from % 2], 'GET', `/activity?eventType=STORE&fromSequence=${from}&toSequence=${from + 999}&count=1000`);
    for (const r of page.body.data) {
      t.true(r.sealed);
      stored.add(r.dataPointId);
    }
  }
  t.deepEqual(answered.filter((id) => !stored.has(id)), [], 'every answered store is in the chain');
});
