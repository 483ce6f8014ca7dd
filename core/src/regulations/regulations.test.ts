import test from 'ava';
import type { RulesEngine } from '../rules/engine.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';
import { BUILTIN_REGULATIONS } from './service.js';

let v: TestVault;
/** Regulation keys the stand-in rules engine reports as referenced by a rule. */
const referenced = new Set<string>();

test.before(async () => {
  v = await startTestVault();
  const real = v.vault.rules;
  const engine = Object.create(real) as RulesEngine;
  engine.findReferencingRule = async (trx, kind, name) =>
    kind === 'regulation' && referenced.has(name) ? 'rule-using-it' : real.findReferencingRule(trx, kind, name);
  v.vault.rules = engine;
});
test.after.always(async () => v?.close());

test('the built-in regulations exist from the start with their real names and addresses', async (t) => {
  const list = await v.request('GET', '/regulations');
  const keys = list.body.data.map((r: any) => r.key);
  for (const key of ['GDPR', 'CCPA', 'HIPAA', 'PCI_DSS', 'COPPA', 'LGPD', 'PIPEDA']) t.true(keys.includes(key), key);
  const gdpr = await v.request('GET', '/regulations/GDPR');
  t.is(gdpr.status, 200);
  t.deepEqual(Object.keys(gdpr.body.data).sort(), ['createdDate', 'key', 'modifiedDate', 'name', 'url']);
  t.like(gdpr.body.data, { key: 'GDPR', name: 'General Data Protection Regulation', url: 'https://eur-lex.europa.eu/eli/reg/2016/679/oj' });
  t.is((await v.request('GET', '/regulations/HIPAA')).body.data.name, 'Health Insurance Portability and Accountability Act');
});

test('a regulation is created, then updated under the same key', async (t) => {
  const created = await v.request('POST', '/regulations', { body: { key: 'SOX', name: 'Sarbanes Oxley', url: 'https://example.org/sox' } });
  t.is(created.status, 201);
  t.deepEqual(created.body, { data: 'Regulation created' });
  const first = (await v.request('GET', '/regulations/SOX')).body.data;
  t.like(first, { key: 'SOX', name: 'Sarbanes Oxley', url: 'https://example.org/sox' });
  const updated = await v.request('POST', '/regulations', { body: { key: 'SOX', name: 'Sarbanes-Oxley Act', url: 'https://example.org/sox2' } });
  t.is(updated.status, 200);
  t.deepEqual(updated.body, { data: 'Regulation updated' });
  const second = (await v.request('GET', '/regulations/SOX')).body.data;
  t.like(second, { name: 'Sarbanes-Oxley Act', url: 'https://example.org/sox2', createdDate: first.createdDate });
});

test('an update changes only what the body names: the key alone keeps the name and address, null clears', async (t) => {
  await v.request('POST', '/regulations', { body: { key: 'KEEP', name: 'Kept', url: 'https://example.org/kept' } });
  t.is((await v.request('POST', '/regulations', { body: { key: 'KEEP' } })).status, 200);
  t.like((await v.request('GET', '/regulations/KEEP')).body.data, { name: 'Kept', url: 'https://example.org/kept' });
  t.is((await v.request('POST', '/regulations', { body: { key: 'KEEP', url: null } })).status, 200);
  t.like((await v.request('GET', '/regulations/KEEP')).body.data, { name: 'Kept', url: null });
  t.is((await v.request('POST', '/regulations', { body: { key: 'PCI_DSS' } })).status, 200);
  t.like((await v.request('GET', '/regulations/PCI_DSS')).body.data, { name: 'Payment Card Industry Data Security Standard' });
  t.is((await v.request('POST', '/regulations', { body: { key: 'ONLY_KEY' } })).status, 201);
  t.like((await v.request('GET', '/regulations/ONLY_KEY')).body.data, { name: null, url: null });
});

test('unknown regulations: 404 No such regulation to read, Regulation not found to delete', async (t) => {
  const read = await v.request('GET', '/regulations/NOPE');
  t.is(read.status, 404);
  t.is(read.body.message, 'No such regulation');
  const del = await v.request('DELETE', '/regulations/NOPE');
  t.is(del.status, 404);
  t.is(del.body.message, 'Regulation not found');
  t.is((await v.request('GET', '/regulations/%00')).status, 400);
});

test('deleting a regulation removes it from definitions and data points', async (t) => {
  await v.request('POST', '/regulations', { body: { key: 'GONE', name: 'Gone' } });
  await v.vault.db.insertInto('definition_regulations').values([{ definition_key: 'DEF_R', regulation: 'GONE' }, { definition_key: 'DEF_R', regulation: 'GDPR' }]).execute();
  await v.vault.db.insertInto('datapoint_regulations').values([{ datapoint_id: 'dp-r', regulation: 'GONE' }, { datapoint_id: 'dp-r', regulation: 'GDPR' }]).execute();
  const del = await v.request('DELETE', '/regulations/GONE');
  t.is(del.status, 200);
  t.deepEqual(del.body, { data: 'Regulation deleted' });
  t.is((await v.request('GET', '/regulations/GONE')).status, 404);
  const defs = await v.vault.db.selectFrom('definition_regulations').select('regulation').where('definition_key', '=', 'DEF_R').execute();
  t.deepEqual(defs.map((r) => r.regulation), ['GDPR']);
  const points = await v.vault.db.selectFrom('datapoint_regulations').select('regulation').where('datapoint_id', '=', 'dp-r').execute();
  t.deepEqual(points.map((r) => r.regulation), ['GDPR']);
});

test('a regulation a rule references is 409 and stays', async (t) => {
  await v.request('POST', '/regulations', { body: { key: 'RULED', name: 'Ruled' } });
  await v.vault.db.insertInto('definition_regulations').values({ definition_key: 'DEF_RR', regulation: 'RULED' }).execute();
  referenced.add('RULED');
  const refused = await v.request('DELETE', '/regulations/RULED');
  t.is(refused.status, 409);
  t.is(refused.body.message, 'Cannot delete regulation, because it is referenced by rule');
  t.is((await v.request('GET', '/regulations/RULED')).status, 200);
  t.is((await v.vault.db.selectFrom('definition_regulations').selectAll().where('regulation', '=', 'RULED').execute()).length, 1);
  referenced.delete('RULED');
  t.is((await v.request('DELETE', '/regulations/RULED')).status, 200);
});

test('only admins create and delete regulations; any application reads them', async (t) => {
  const apiKey = await v.createApplication(['*']);
  const post = await v.request('POST', '/regulations', { apiKey, body: { key: 'APPREG' } });
  t.is(post.status, 403);
  t.is(post.body.message, 'Forbidden');
  t.is((await v.request('POST', '/regulations', { apiKey, body: { colour: 'red' } })).status, 403, 'whatever the body');
  const del = await v.request('DELETE', '/regulations/CCPA', { apiKey });
  t.is(del.status, 403);
  t.is((await v.request('GET', '/regulations/APPREG')).status, 404);
  t.is((await v.request('GET', '/regulations/CCPA', { apiKey })).status, 200);
});

test('bad regulation bodies are 400 and create nothing', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ name: 'No key' }, /^Regulation key is required$/],
    [{ key: '' }, /^Regulation key is required$/],
    [{ key: 'has space' }, /^Regulation key must contain only alphanumeric characters, hyphens and underscores$/],
    [{ key: 42 }, /^Regulation key must contain only alphanumeric characters, hyphens and underscores$/],
    [{ key: 'K'.repeat(129) }, /^Regulation key must contain only alphanumeric characters, hyphens and underscores$/],
    [{ key: 'BADNAME', name: 'a\u0000b' }, /^Strings may not contain NUL characters$/],
    [{ key: 'BADNAME', name: 'red\u001b[31m' }, /^Regulation name must be a string of at most 1024 characters, without control characters$/],
    [{ key: 'BADNAME', name: 'csi\u009b2J' }, /^Regulation name must be a string of at most 1024 characters, without control characters$/],
    [{ key: 'BADNAME', name: 'two\r\nlines' }, /^Regulation name must be a string of at most 1024 characters, without control characters$/],
    [{ key: 'BADURL', url: 7 }, /must be string/],
    [{ key: 'EXTRA', colour: 'red' }, /must NOT have additional properties/],
  ];
  for (const [body, message] of cases) {
    const res = await v.request('POST', '/regulations', { body });
    t.is(res.status, 400, JSON.stringify(body).slice(0, 40));
    t.regex(res.body.message, message);
  }
  for (const key of ['BADNAME', 'BADURL', 'EXTRA']) t.is((await v.request('GET', `/regulations/${key}`)).status, 404);
});

test('a regulation named with control characters before the check still loads, is edited by posting it back, and renamed only to a clean name', async (t) => {
  const now = new Date().toISOString();
  await v.vault.db.insertInto('regulations').values({ key: 'LEGACY_REG', name: 'old\u0007name', url: null, builtin: 0, created_date: now, modified_date: now }).execute();
  const read = await v.request('GET', '/regulations/LEGACY_REG');
  t.is(read.status, 200);
  t.is(read.body.data.name, 'old\u0007name');
  const edited = await v.request('POST', '/regulations', { body: { ...read.body.data, url: 'https://example.org/' } });
  t.is(edited.status, 200, JSON.stringify(edited.body));
  const renamed = await v.request('POST', '/regulations', { body: { key: 'LEGACY_REG', name: 'other\u0007name' } });
  t.is(renamed.status, 400);
  t.is(renamed.body.message, 'Regulation name must be a string of at most 1024 characters, without control characters');
  t.like((await v.request('GET', '/regulations/LEGACY_REG')).body.data, { name: 'old\u0007name', url: 'https://example.org/' });
  t.is((await v.request('POST', '/regulations', { body: { key: 'LEGACY_REG', name: 'Règlement “propre”' } })).status, 200);
  t.is((await v.request('GET', '/regulations/LEGACY_REG')).body.data.name, 'Règlement “propre”');
});

test('the licence limits custom regulations, race-free; built-ins and updates do not count', async (t) => {
  const limited = await startTestVault({ env: { VAULT_LICENSE_MAX_CUSTOM_REGULATIONS: '3' } });
  try {
    const attempts = await Promise.all(
      Array.from({ length: 10 }, (_, i) => limited.request('POST', '/regulations', { body: { key: `CUSTOM_${i}`, name: `Custom ${i}` } })),
    );
    t.is(attempts.filter((r) => r.status === 201).length, 3);
    const refused = attempts.filter((r) => r.status === 402);
    t.is(refused.length, 7);
    t.is(refused[0].body.message, 'Your current subscription is limited to 3 custom regulations');
    const list = (await limited.request('GET', '/regulations')).body.data;
    t.is(list.length, BUILTIN_REGULATIONS.length + 3);

    const winner = attempts.findIndex((r) => r.status === 201);
    const update = await limited.request('POST', '/regulations', { body: { key: `CUSTOM_${winner}`, name: 'Renamed' } });
    t.is(update.status, 200);
    const builtin = await limited.request('POST', '/regulations', { body: { key: 'GDPR', name: 'GDPR (EU) 2016/679' } });
    t.is(builtin.status, 200);

    // Deleted and created again, a built-in still does not count: the limit is reached, yet it is created.
    t.is((await limited.request('DELETE', '/regulations/HIPAA')).status, 200);
    const again = await limited.request('POST', '/regulations', { body: { key: 'HIPAA', name: 'HIPAA' } });
    t.is(again.status, 201);
    t.is((await limited.request('POST', '/regulations', { body: { key: 'CUSTOM_MORE' } })).status, 402);

    // A start after the operator renamed a built-in keeps the new name.
    await Promise.all([limited.vault.regulations.seed(), limited.vault.regulations.seed()]);
    t.is((await limited.request('GET', '/regulations/GDPR')).body.data.name, 'GDPR (EU) 2016/679');
  } finally {
    await limited.close();
  }
});

test('hostile input never causes a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/regulations' },
    { method: 'GET', url: '/regulations/{id}' },
    { method: 'DELETE', url: '/regulations/{id}' },
  ]);
});
