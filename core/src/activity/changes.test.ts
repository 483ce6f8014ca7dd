/**
 * Administrative changes in the activity log: an application's access and key, a legal hold
 * (by an admin or by a rule) and the rules themselves are recorded as `CHANGE` records, in
 * the transaction of the change, chained with the data events, and never with a key. A vault
 * of its own: these tests add admins and rules.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { defineAttribute, dropActivityGuards, unique } from '../audit/fixtures.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

async function changes(query: Record<string, string> = {}): Promise<any[]> {
  await v.vault.sealer.sealAll();
  const res = await v.request('GET', '/activity', { query: { eventType: 'CHANGE', count: '1000', ...query } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.data;
}

const about = (list: any[], id: string) => list.filter((e) => e.change?.id === id);
const adminId = async () => (await v.request('GET', '/applications/me')).body.data.id as string;

test('creating, changing, re-keying and deleting an application is recorded, naming the admin who did it and never a key', async (t) => {
  const admin = await adminId();
  const created = await v.request('POST', '/applications', { body: { name: 'billing', attributes: ['EMAIL'] } });
  t.is(created.status, 201);
  const { id, apiKey } = created.body.data;
  t.is((await v.request('PATCH', `/applications/${id}`, { body: { attributes: ['EMAIL', 'PHONE'], admin: false } })).status, 200);
  // Sent again as it is: nothing changes, nothing is recorded.
  t.is((await v.request('PATCH', `/applications/${id}`, { body: { attributes: ['EMAIL', 'PHONE', 'EMAIL'] } })).status, 200);
  const rolled = await v.request('POST', `/applications/${id}/key`, { body: { keepPreviousForSeconds: 3600 } });
  t.is(rolled.status, 200);
  t.is((await v.request('DELETE', `/applications/${id}`)).status, 200);

  const recorded = about(await changes(), id);
  t.deepEqual(
    recorded.map((e) => e.change),
    [
      { target: 'application', id, action: 'create', fields: { name: 'billing', attributes: ['EMAIL'], admin: false } },
      // What changed: it was no admin before either.
      { target: 'application', id, action: 'update', fields: { attributes: ['EMAIL', 'PHONE'] } },
      { target: 'application', id, action: 'rollKey', fields: { keepPreviousForSeconds: 3600, previousKeyValidUntil: rolled.body.data.previousKeyValidUntil } },
      { target: 'application', id, action: 'delete', fields: { name: 'billing' } },
    ],
  );
  for (const entry of recorded) {
    t.like(entry, { eventType: 'CHANGE', applicationId: admin, recordedBy: admin, reportOnly: false, sealed: true });
    t.regex(entry.hash, /^[0-9a-f]{64}$/);
  }
  // Neither key is anywhere in the log, in the answer or in its columns.
  const everything = JSON.stringify(await changes()) + JSON.stringify(await v.vault.db.selectFrom('activity_log').selectAll().execute());
  t.false(everything.includes(apiKey));
  t.false(everything.includes(rolled.body.data.apiKey));
  t.like((await v.request('GET', '/activity/verify')).body.data, { valid: true });
});

test('a refused change records nothing: the record commits with the change or not at all', async (t) => {
  const admin = await adminId();
  const touched = async () => (await changes()).filter((e) => e.change.id === admin || e.change.id === 'no-such-application').length;
  const before = await touched();
  const demote = await v.request('PATCH', `/applications/${admin}`, { body: { admin: false } });
  t.is(demote.status, 409);
  t.is(demote.body.message, 'Cannot demote the last admin application');
  t.is((await v.request('DELETE', `/applications/${admin}`)).body.message, 'Cannot delete the last admin application');
  t.is((await v.request('PATCH', '/applications/no-such-application', { body: { name: 'x' } })).status, 404);
  t.is(await touched(), before);
});

test('a legal hold an admin puts on and lifts is in the subject’s history; sending the hold it already has records nothing', async (t) => {
  const subject = unique('subject');
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, legalHold: true } })).status, 201);
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, legalHold: true } })).status, 200);
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, legalHold: false } })).status, 200);
  const history = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.deepEqual(
    history.map((e: any) => [e.eventType, e.subjectId, e.change]),
    [
      ['CHANGE', subject, { target: 'entity', id: subject, action: 'create', fields: { legalHold: true } }],
      ['CHANGE', subject, { target: 'entity', id: subject, action: 'update', fields: { legalHold: false } }],
    ],
  );
});

test('who changed a subject’s tags is in its history, the tags as they became; tags sent as they are record nothing', async (t) => {
  const subject = unique('subject');
  const app = await v.request('POST', '/applications', { body: { name: 'crm', attributes: [] } });
  const asApp = { apiKey: app.body.data.apiKey as string };
  t.is((await v.request('POST', '/datasubjects', { ...asApp, body: { id: subject, tags: ['vip'] } })).status, 201);
  // Echoed back as read, in another order: no change.
  t.is((await v.request('POST', '/datasubjects', { ...asApp, body: { id: subject, tags: ['vip', 'vip'] } })).status, 200);
  t.is((await v.request('POST', '/datasubjects', { ...asApp, body: { id: subject, tags: ['vip', 'monitored'] } })).status, 200);
  const shed = await v.request('POST', '/datasubjects', { ...asApp, body: { id: subject, tags: ['vip'] } });
  t.is(shed.status, 403);
  t.is(shed.body.message, 'Only admins may remove tags from an entity');
  t.is((await v.request('POST', '/datasubjects', { body: { id: subject, tags: [], legalHold: true } })).status, 200);
  const history = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  const admin = await adminId();
  t.deepEqual(
    history.map((e: any) => [e.applicationId, e.change]),
    [
      [app.body.data.id, { target: 'entity', id: subject, action: 'create', fields: { tags: ['vip'] } }],
      [app.body.data.id, { target: 'entity', id: subject, action: 'update', fields: { tags: ['monitored', 'vip'] } }],
      [admin, { target: 'entity', id: subject, action: 'update', fields: { legalHold: true, tags: [] } }],
    ],
  );
});

test('a legal hold a rule puts on is recorded with the rule and the application whose store set it, once', async (t) => {
  const trigger = unique('LITIGATION');
  // Repeatable: under the hold, a second value of a nonrepeatable attribute would be an overwrite.
  await defineAttribute(v, trigger, 'string', { repeatable: true });
  const app = await v.request('POST', '/applications', { body: { name: 'intake', attributes: [trigger] } });
  const ruleKey = unique('hold');
  const saved = await v.request('POST', '/rules', { body: { key: ruleKey, constraint: { type: 'attribute', operator: 'any', attributes: [trigger] }, action: { type: 'legalHold' } } });
  t.is(saved.status, 201);
  const subject = unique('subject');
  const store = () =>
    v.request('POST', `/entities/${subject}/attributes`, {
      apiKey: app.body.data.apiKey,
      headers: { 'x-encryption-key': v.keys.publicKey },
      body: { data: [{ attribute: trigger, value: 'case 42' }] },
    });
  t.is((await store()).status, 200);
  t.is((await store()).status, 200);
  const history = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.deepEqual(
    history.filter((e: any) => e.eventType === 'CHANGE').map((e: any) => [e.applicationId, e.change]),
    [[app.body.data.id, { target: 'entity', id: subject, action: 'update', fields: { legalHold: true }, rule: ruleKey }]],
  );
  // The rule's own creation is recorded too, with what it does.
  t.like(about(await changes(), ruleKey)[0]?.change, { target: 'rule', id: ruleKey, action: 'create', fields: { type: 'data', definition: { action: { type: 'legalHold' } } } });
});

test('saving a rule again and deleting it are recorded; saving it exactly as it is records nothing', async (t) => {
  const attribute = unique('EMAIL');
  await defineAttribute(v, attribute);
  const key = unique('alert');
  const body = { key, name: 'watch e-mail', constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'alert', alertLevel: 'INFO', message: 'seen' } };
  t.is((await v.request('POST', '/rules', { body })).status, 201);
  t.is((await v.request('POST', '/rules', { body })).status, 200);
  const again = { ...body, action: { ...body.action, message: 'seen again' } };
  t.is((await v.request('POST', '/rules', { body: again })).status, 200);
  t.is((await v.request('POST', '/rules', { body: again })).status, 200);
  t.is((await v.request('DELETE', `/rules/${key}`)).status, 200);
  const recorded = about(await changes(), key).map((e) => e.change);
  t.deepEqual(
    recorded.map((c) => [c.action, c.fields?.name, c.fields?.definition?.action?.message]),
    [
      ['create', 'watch e-mail', 'seen'],
      ['update', 'watch e-mail', 'seen again'],
      ['delete', 'watch e-mail', undefined],
    ],
  );
});

test('a change is covered by the chain: editing what a CHANGE record says fails verification at that record', async (t) => {
  const tampered = await startTestVault();
  t.teardown(() => tampered.close());
  const created = await tampered.request('POST', '/applications', { body: { name: 'reader', attributes: ['EMAIL'] } });
  await tampered.request('POST', '/applications', { body: { name: 'other' } });
  t.like((await tampered.request('GET', '/activity/verify')).body.data, { valid: true, records: 2 });
  await dropActivityGuards(tampered);
  // What a tamperer would want the log to say: the application could read everything.
  const widened = JSON.stringify({ target: 'application', id: created.body.data.id, action: 'create', fields: { name: 'reader', attributes: ['*'], admin: false } });
  await tampered.vault.db.updateTable('activity_log').set({ change: widened }).where('sequence', '=', 1).execute();
  t.like((await tampered.request('GET', '/activity/verify')).body.data, { valid: false, firstBrokenSequence: 1 });
});

test('CHANGE is a filter of its own, and only admins read the log', async (t) => {
  await v.request('POST', '/datasubjects', { body: { id: unique('subject'), legalHold: true } });
  const listed = await changes();
  t.true(listed.length > 0);
  t.true(listed.every((e) => e.eventType === 'CHANGE' && e.change !== undefined));
  const reads = await v.request('GET', '/activity', { query: { eventType: 'READ' } });
  t.true(reads.body.data.every((e: any) => e.change === undefined));
  const bad = await v.request('GET', '/activity', { query: { eventType: 'CHANGES' } });
  t.is(bad.status, 400);
  // Only the vault writes CHANGE records: an application cannot report one.
  const reported = await v.request('POST', '/auditlogs', { body: { eventType: 'CHANGE', subjectId: unique('subject'), applicationId: 'crm', data: { attribute: 'EMAIL' } } });
  t.is(reported.status, 400);
  t.is(reported.body.message, 'Unrecognized event type');
  const app = await v.request('POST', '/applications', { body: { name: 'nosy' } });
  const refused = await v.request('GET', '/activity', { apiKey: app.body.data.apiKey, query: { eventType: 'CHANGE' } });
  t.is(refused.status, 403);
  t.is(refused.body.message, 'Forbidden');
});

test('a purge ends the subject’s history with its erasure, even of a subject that held no value; a refused one records nothing', async (t) => {
  const attribute = unique('NOTE');
  await defineAttribute(v, attribute, 'string', { repeatable: true });
  const subject = unique('subject');
  const stored = await v.request('POST', `/datasubjects/${subject}/attributes`, {
    headers: { 'x-encryption-key': v.keys.publicKey },
    body: { data: [{ attribute, value: 'one' }, { attribute, value: 'two' }] },
  });
  t.is(stored.status, 200);
  t.is((await v.request('DELETE', `/datasubjects/${subject}/data`)).status, 200);
  const history = (await v.request('GET', '/activity', { query: { subjectId: subject } })).body.data;
  t.deepEqual(history.map((e: any) => e.eventType), ['STORE', 'STORE', 'DELETE', 'DELETE', 'CHANGE']);
  t.deepEqual(history[4].change, { target: 'entity', id: subject, action: 'delete', fields: { type: 'datasubject', values: 2 } });

  const empty = unique('subject');
  t.is((await v.request('POST', '/datasubjects', { body: { id: empty } })).status, 201);
  t.is((await v.request('DELETE', `/datasubjects/${empty}/data`)).status, 200);
  const emptyHistory = (await v.request('GET', '/activity', { query: { subjectId: empty } })).body.data;
  t.deepEqual(emptyHistory.map((e: any) => e.change), [{ target: 'entity', id: empty, action: 'delete', fields: { type: 'datasubject', values: 0 } }]);

  const held = unique('subject');
  t.is((await v.request('POST', '/datasubjects', { body: { id: held, legalHold: true } })).status, 201);
  const refused = await v.request('DELETE', `/datasubjects/${held}/data`);
  t.is(refused.status, 403);
  t.is(refused.body.message, 'Cannot delete data for data subject, as the data subject is under a legal hold');
  const heldHistory = (await v.request('GET', '/activity', { query: { subjectId: held } })).body.data;
  t.deepEqual(heldHistory.map((e: any) => e.change.action), ['create'], 'only the hold');
});

test('the registry’s changes are recorded with what they set; posting a definition, type, tag or regulation as it is records nothing', async (t) => {
  const attribute = unique('SALARY');
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string' } })).status, 201);
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string' } })).status, 201);
  t.is((await v.request('POST', '/attributes', { body: { key: attribute, schema: 'string', indexed: true, regulations: ['GDPR'] } })).status, 201);
  t.is((await v.request('DELETE', `/attributes/${attribute}`)).status, 200);
  t.deepEqual(
    about(await changes(), attribute).map((e) => [e.change.target, e.change.action, e.change.fields]),
    [
      ['attribute', 'create', { name: null, hint: null, schema: 'string', repeatable: false, indexed: false, immutable: false, tags: [], regulations: [], entityTypes: [] }],
      ['attribute', 'update', { indexed: true, regulations: ['GDPR'] }],
      ['attribute', 'delete', undefined],
    ],
  );
  // With the attribute's history: what was done with its values, and to it.
  const history = (await v.request('GET', '/activity', { query: { attribute } })).body.data;
  t.deepEqual(history.map((e: any) => [e.eventType, e.change?.action]), [['CHANGE', 'create'], ['CHANGE', 'update'], ['CHANGE', 'delete']]);

  const type = unique('supplier').toLowerCase();
  await v.request('POST', '/entitytypes', { body: { key: type, name: 'Supplier' } });
  await v.request('POST', '/entitytypes', { body: { key: type } });
  await v.request('POST', '/entitytypes', { body: { key: type, description: 'Sells to us' } });
  t.is((await v.request('DELETE', `/entitytypes/${type}`)).status, 200);
  t.deepEqual(
    about(await changes(), type).map((e) => [e.change.target, e.change.action, e.change.fields]),
    [
      ['entityType', 'create', { name: 'Supplier', description: null }],
      ['entityType', 'update', { description: 'Sells to us' }],
      ['entityType', 'delete', undefined],
    ],
  );

  const tag = unique('vip').toLowerCase();
  await v.request('POST', '/tags', { body: { name: tag } });
  await v.request('POST', '/tags', { body: { name: tag } });
  t.is((await v.request('DELETE', `/tags/${tag}`)).status, 200);
  t.deepEqual(about(await changes(), tag).map((e) => [e.change.target, e.change.action]), [['tag', 'create'], ['tag', 'delete']]);

  const regulation = unique('LGPD');
  await v.request('POST', '/regulations', { body: { key: regulation, name: 'Lei Geral' } });
  await v.request('POST', '/regulations', { body: { key: regulation, name: 'Lei Geral' } });
  await v.request('POST', '/regulations', { body: { key: regulation, url: 'https://example.org/lgpd' } });
  t.is((await v.request('DELETE', `/regulations/${regulation}`)).status, 200);
  t.deepEqual(
    about(await changes(), regulation).map((e) => [e.change.target, e.change.action, e.change.fields]),
    [
      ['regulation', 'create', { name: 'Lei Geral', url: null }],
      ['regulation', 'update', { url: 'https://example.org/lgpd' }],
      ['regulation', 'delete', undefined],
    ],
  );
});
