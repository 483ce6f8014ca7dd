/**
 * The data plane through the SDK against a real vault process whose key pair the SDK
 * generated: stores, reads, deletes, data points, search and its pages, the error answers,
 * and which key goes out on which request.
 */
import test from 'ava';
// The vault's own wording for what the interface leaves open.
import { COUNT_MESSAGE, PAGE_MESSAGE } from '../../core/src/search/service.js';
import { generateKeyPair } from './keys.js';
import type { DataPoint, SearchResult } from './types.js';
import { startRecordingProxy } from './testing/proxy.js';
import { apiError, startSdkVault, unique, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
test.before(async () => {
  // The pair comes from the SDK's own helper: the vault accepting it proves the header format.
  v = await startSdkVault({ keys: await generateKeyPair({ modulusLength: 2048 }) });
});
test.after.always(async () => {
  await v?.dispose();
});

async function definition(prefix: string, extra: Parameters<SdkTestVault['admin']['definitions']['save']>[0] = {}): Promise<string> {
  const key = unique(prefix);
  await v.admin.definitions.save({ key, ...extra });
  return key;
}

const ids = (points: Array<{ dataPointId: string }>) => points.map((p) => p.dataPointId).sort();

test('store then read: a nonrepeatable value is overwritten, a repeatable one added', async (t) => {
  const email = await definition('EMAIL');
  const phone = await definition('PHONE', { repeatable: true });
  const subject = unique('subj');

  const stored = await v.admin.dataSubjects.storeAttributes(subject, [
    { attribute: email, value: 'ada@example.org', sensitivity: 'PERSONAL' },
    { attribute: phone, value: '555-0100' },
  ]);
  t.is(stored.length, 2);
  const first = stored.find((p) => p.attribute === email)!;
  t.like(first, { entityId: subject, subjectId: subject, value: 'ada@example.org', sensitivity: 'PERSONAL', reportOnly: false, structureRootId: null });
  t.truthy(Date.parse(first.createdDate));
  t.regex(first.createdDate, /[+-]\d{2}:\d{2}$/);

  await v.admin.dataSubjects.storeAttributes(subject, { data: [{ attribute: email, value: 'ada@example.com' }, { attribute: phone, value: '555-0199' }] });

  const emails = await v.admin.dataSubjects.getAttribute<string>(subject, email);
  t.deepEqual(emails.map((p) => p.value), ['ada@example.com']);
  const phones = await v.admin.dataSubjects.getAttribute<string>(subject, phone);
  t.deepEqual(phones.map((p) => p.value).sort(), ['555-0100', '555-0199']);
  t.like(await v.admin.dataSubjects.get(subject), { id: subject, type: 'datasubject' });
});

test('structured values: a root point with the whole value and a sub-point per leaf', async (t) => {
  const name = await definition('NAME', { schema: { first: 'string', last: 'string', '[middle]': 'string' } });
  const subject = unique('subj');
  const value = { first: 'Ada', last: 'Lovelace', middle: ['Augusta', 'King'] };
  const stored = await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: name, value }]);
  const root = stored.find((p) => p.attribute === name)!;
  t.deepEqual(root.value, value);
  t.is(root.structureRootId, null);

  const [read] = await v.admin.dataSubjects.getAttribute(subject, name);
  t.deepEqual(read.value, value);
  t.is(read.dataPointId, root.dataPointId);

  const subPoints = await v.admin.search({ query: { entityId: [subject], attributes: [`${name}.first`, `${name}.middle`] } });
  t.true(subPoints.length >= 1);
  t.true(subPoints.every((p) => p.structureRootId === root.dataPointId));
  t.true(subPoints.every((p) => !('value' in p)));
});

test('read all attributes, or only those listed; the entities path form too', async (t) => {
  const a = await definition('A', { entityTypes: ['datasubject'] });
  const b = await definition('B');
  const subject = unique('subj');
  await v.admin.entities.storeAttributes(subject, [{ attribute: a, value: 'one' }, { attribute: b, value: 'two' }]);
  const all = await v.admin.entities.getAttributes(subject);
  t.deepEqual(all.map((p) => p.attribute).sort(), [a, b].sort());
  const some = await v.admin.dataSubjects.getAttributes(subject, { attributes: [b] });
  t.deepEqual(some.map((p) => [p.attribute, p.value]), [[b, 'two']]);
  t.deepEqual((await v.admin.entities.getAttribute(subject, a)).map((p) => p.value), ['one']);
});

test('an attributes list without a key is a TypeError, not a read of every attribute (the vault\'s answer to an empty list)', async (t) => {
  const a = await definition('A');
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: a, value: 'one' }]);
  for (const attributes of [[], [''], [' ', '']]) {
    const err = await t.throwsAsync(v.admin.dataSubjects.getAttributes(subject, { attributes }), { instanceOf: TypeError }, JSON.stringify(attributes));
    t.is(err?.message, 'attributes must list at least one attribute key; leave it out to read every attribute');
  }
  t.deepEqual((await v.admin.dataSubjects.getAttributes(subject, { attributes: [a, ''] })).map((p) => p.value), ['one'], 'a blank key beside others is dropped');
});

test('data points by id: read and delete', async (t) => {
  const key = await definition('NOTE', { repeatable: true });
  const subject = unique('subj');
  const [point] = await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'hello', tags: ['t1'], regulations: ['GDPR'] }]);
  const read = await v.admin.data.get(point.dataPointId);
  t.like(read, { dataPointId: point.dataPointId, attribute: key, value: 'hello', entityId: subject });
  t.true(read.tags.includes('t1'));
  t.deepEqual(read.regulations, ['GDPR']);
  t.is(await v.admin.data.delete(point.dataPointId), 'Successfully Deleted Data Point');
  await apiError(t, v.admin.data.get(point.dataPointId), 404, 'Data Not Found');
  await apiError(t, v.admin.data.delete(point.dataPointId), 404, 'Data Not Found');
});

test('delete an attribute, then purge the subject', async (t) => {
  const a = await definition('A');
  const b = await definition('B');
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: a, value: '1' }, { attribute: b, value: '2' }]);
  t.is(await v.admin.dataSubjects.deleteAttribute(subject, a), 'Successfully Deleted Data Point');
  await apiError(t, v.admin.dataSubjects.getAttribute(subject, a), 404, 'Data Not Found');
  await apiError(t, v.admin.dataSubjects.deleteAttribute(subject, a), 404, 'Data Not Found');
  t.is(await v.admin.dataSubjects.purge(subject), 'Successfully Deleted Data Subject');
  await apiError(t, v.admin.dataSubjects.get(subject), 404, 'Not found');
  await apiError(t, v.admin.dataSubjects.purge(subject), 404, 'Data Subject Not Found');

  const type = unique('type');
  await v.admin.entityTypes.save({ key: type });
  const c = await definition('C', { entityTypes: [type] });
  const entity = unique('ent');
  await v.admin.entities.storeAttributes(entity, { entityType: type, data: [{ attribute: c, value: 'x' }] });
  t.is(await v.admin.entities.purge(entity), 'Successfully Deleted Data Subject');
  await apiError(t, v.admin.entities.get(entity), 404, 'Not found');
});

test('the data subject forms refuse entities of other types', async (t) => {
  const type = unique('type');
  await v.admin.entityTypes.save({ key: type });
  const key = await definition('DEVICE', { entityTypes: [type] });
  const entity = unique('ent');
  await v.admin.entities.storeAttributes(entity, { entityType: type, data: [{ attribute: key, value: 'x' }] });
  await apiError(t, v.admin.dataSubjects.getAttributes(entity), 400, 'Entity is not a data subject');
  await apiError(t, v.admin.dataSubjects.deleteAttribute(entity, key), 400, 'Entity is not of type datasubject');
  await apiError(t, v.admin.dataSubjects.purge(entity), 400, 'Entity is not of type datasubject');
  await apiError(
    t,
    v.admin.entities.storeAttributes(entity, { entityType: 'datasubject', data: [{ attribute: key, value: 'y' }] }),
    400,
    `Entity is of type ${type}, which does not match the provided entity type`,
  );
  const email = await definition('EMAIL');
  await apiError(t, v.admin.entities.storeAttributes(entity, [{ attribute: email, value: 'z' }]), 400, 'Attribute is not applicable to entity type');
});

test('store errors: unknown attribute or regulation, schema, size, duplicates, sub-attributes', async (t) => {
  const subject = unique('subj');
  const age = await definition('AGE', { schema: 'int' });
  const bio = await definition('BIO');
  const doc = await definition('DOC', { schema: 'file' });
  const name = await definition('NAME', { schema: { first: 'string' } });
  const store = (data: Parameters<SdkTestVault['admin']['dataSubjects']['storeAttributes']>[1]) => v.admin.dataSubjects.storeAttributes(subject, data);

  await apiError(t, store([{ attribute: unique('NOPE'), value: 'x' }]), 400, 'No such attribute');
  await apiError(t, store([{ attribute: bio, value: 'x', regulations: [unique('NOPE')] }]), 400, 'No such regulation');
  await apiError(t, store([{ attribute: age, value: 'forty' }]), 422, `Expected int for value of attribute ${age}`);
  await apiError(t, store([{ attribute: name, value: { first: 'Ada', nick: 'A' } }]), 400, `Unknown sub-attribute ${name}.nick`);
  await apiError(t, store([{ attribute: bio, value: 'a' }, { attribute: bio, value: 'b' }]), 409, 'Received multiple values for nonrepeatable attribute');
  await apiError(t, store([{ attribute: bio, value: 'x'.repeat(1_048_577) }]), 413, 'Datapoint values may not exceed 1 MB in size');

  // All or nothing: the valid value next to the bad one was not stored either.
  await apiError(t, store([{ attribute: bio, value: 'kept?' }, { attribute: age, value: 'x' }]), 422, `Expected int for value of attribute ${age}`);
  await apiError(t, v.admin.dataSubjects.getAttribute(subject, bio), 404, 'Data Not Found');

  t.is((await store([{ attribute: bio, value: 'x'.repeat(1_048_576) }]))[0].attribute, bio);
  const [big] = await store([{ attribute: doc, value: 'y'.repeat(1_048_577) }]);
  t.is((await v.admin.data.get<string>(big.dataPointId)).value?.length, 1_048_577);
});

test('legal hold refuses overwrites and purges', async (t) => {
  const key = await definition('SSN');
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: '1' }]);
  await v.admin.dataSubjects.save({ id: subject, legalHold: true });
  await apiError(
    t,
    v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: '2' }]),
    403,
    'Cannot overwrite attribute for data subject, as the data subject is under a legal hold',
  );
  await apiError(t, v.admin.dataSubjects.purge(subject), 403, 'Cannot delete data for data subject, as the data subject is under a legal hold');
  t.deepEqual((await v.admin.dataSubjects.getAttribute(subject, key)).map((p) => p.value), ['1']);
});

test('access lists: 403 Forbidden access to attribute on store, Forbidden on reads and deletes, Data Not Found by id', async (t) => {
  const open = await definition('OPEN');
  const secret = await definition('SECRET');
  const subject = unique('subj');
  const [point] = await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: open, value: 'o' }, { attribute: secret, value: 's' }]);
  const secretPoint = (await v.admin.dataSubjects.getAttribute(subject, secret))[0];
  const { client } = await v.appClient([open]);

  await apiError(t, client.dataSubjects.storeAttributes(subject, [{ attribute: secret, value: 'x' }]), 403, 'Forbidden access to attribute');
  await apiError(t, client.dataSubjects.getAttribute(subject, secret), 403, 'Forbidden');
  // By id, such a point is answered like an unknown id, so ids cannot be probed.
  await apiError(t, client.data.get(secretPoint.dataPointId), 404, 'Data Not Found');
  await apiError(t, client.data.delete(secretPoint.dataPointId), 404, 'Data Not Found');
  await apiError(t, client.dataSubjects.deleteAttribute(subject, secret), 403, 'Forbidden');
  // Without a list, it silently sees only what it may.
  t.deepEqual((await client.dataSubjects.getAttributes(subject)).map((p) => p.attribute), [open]);
  t.is(point.attribute === open || point.attribute === secret, true);
});

test('keys: a wrong, missing or foreign key is 400 Encoded key provided is invalid', async (t) => {
  const key = await definition('K');
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'v' }]);
  const foreign = await generateKeyPair({ modulusLength: 2048 });
  const message = 'Encoded key provided is invalid';

  await apiError(t, v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'w' }], { encryptionKey: 'garbage' }), 400, message);
  await apiError(t, v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'w' }], { encryptionKey: foreign.publicKey }), 400, message);
  await apiError(t, v.admin.dataSubjects.getAttribute(subject, key, { decryptionKey: foreign.privateKey }), 400, message);
  const [point] = await v.admin.dataSubjects.getAttribute(subject, key);
  await apiError(t, v.admin.data.get(point.dataPointId, { decryptionKey: 'garbage' }), 400, message);

  // A storing service without the private key: stores work, reads are refused by the vault.
  const writer = v.client({ decryptionKey: undefined });
  await writer.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'from writer' }]);
  await apiError(t, writer.dataSubjects.getAttribute(subject, key), 400, message);
  await apiError(t, writer.dataSubjects.getAttributes(subject), 400, message);
});

test('search: by value (blind index), attribute, regulation, sensitivity and country; no values returned', async (t) => {
  const email = await definition('EMAIL', { indexed: true });
  const plain = await definition('PLAIN');
  const reg = unique('REG');
  await v.admin.regulations.save({ key: reg });
  const alice = unique('alice');
  const bob = unique('bob');
  await v.admin.dataSubjects.storeAttributes(alice, { origin: 'DE', data: [{ attribute: email, value: 'Alice@Example.org', regulations: [reg], sensitivity: 'SENSITIVE' }] });
  await v.admin.dataSubjects.storeAttributes(bob, { origin: 'FR', data: [{ attribute: email, value: 'bob@example.org' }, { attribute: plain, value: 'x' }] });

  const byValue = await v.admin.search({ query: { values: [{ attribute: email, value: 'alice@example.org' }] } });
  t.deepEqual(byValue.map((p) => p.entityId), [alice]);
  t.false('value' in byValue[0]);

  const byAttribute = await v.admin.search({ query: { attributes: [email] } });
  t.deepEqual(byAttribute.map((p) => p.entityId).sort(), [alice, bob].sort());

  t.deepEqual((await v.admin.search({ query: { attributes: [email], regulations: [reg] } })).map((p) => p.entityId), [alice]);
  t.deepEqual((await v.admin.search({ query: { attributes: [email], sensitivity: 'SENSITIVE' } })).map((p) => p.entityId), [alice]);
  t.deepEqual((await v.admin.search({ query: { attributes: [email], subjectId: [bob] } })).map((p) => p.entityId), [bob]);
  t.deepEqual((await v.admin.search({ query: { attributes: [email], country: 'FR' } })).map((p) => p.entityId), [bob]);
  const later = new Date(Date.now() + 60_000);
  t.deepEqual(await v.admin.search({ query: { attributes: [email], minCreatedDate: later } }), []);
});

test('search: an empty result is [] (the vault answers 404 Data Not Found); bad paging is 400', async (t) => {
  const email = await definition('EMAIL', { indexed: true });
  t.deepEqual(await v.admin.search({ query: { values: [{ attribute: email, value: 'nobody@example.org' }] } }), []);
  await apiError(t, v.admin.search({ query: { attributes: [email] }, count: 0 }), 400, COUNT_MESSAGE);
  await apiError(t, v.admin.search({ query: { attributes: [email] }, count: 1001 }), 400, COUNT_MESSAGE);
  await apiError(t, v.admin.search({ query: { attributes: [email] }, page: -1 }), 400, PAGE_MESSAGE);
});

test('searchAll walks the pages, and stops cleanly when the last page is exactly full', async (t) => {
  const key = await definition('VISIT', { repeatable: true, indexed: true });
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, Array.from({ length: 20 }, (_, i) => ({ attribute: key, value: `visit ${i}` })));

  const paged: SearchResult[] = [];
  // 20 results, 10 per page: the third request gets the vault's 404, which ends the walk.
  for await (const point of v.admin.searchAll({ attributes: [key] }, { pageSize: 10 })) paged.push(point);
  t.is(paged.length, 20);
  t.is(new Set(paged.map((p) => p.dataPointId)).size, 20);

  const uneven: SearchResult[] = [];
  for await (const point of v.admin.searchAll({ attributes: [key] }, { pageSize: 7 })) uneven.push(point);
  t.deepEqual(ids(uneven), ids(paged));

  const page1 = await v.admin.search({ query: { attributes: [key] }, page: 1, count: 10 });
  t.deepEqual(page1.map((p) => p.dataPointId), paged.slice(10).map((p) => p.dataPointId));

  const none: SearchResult[] = [];
  for await (const point of v.admin.searchAll({ values: [{ attribute: key, value: 'never' }] })) none.push(point);
  t.deepEqual(none, []);
});

test('searchAll: deleting while iterating skips points, as the README says; collecting the ids first deletes them all', async (t) => {
  const key = await definition('STALE', { repeatable: true });
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, Array.from({ length: 6 }, (_, i) => ({ attribute: key, value: `stale ${i}` })));

  for await (const point of v.admin.searchAll({ attributes: [key] }, { pageSize: 2 })) await v.admin.data.delete(point.dataPointId);
  // Each delete moves the later points a place forward, past the next page's offset.
  t.is((await v.admin.search({ query: { attributes: [key] } })).length, 2);

  const stale: string[] = [];
  for await (const point of v.admin.searchAll({ attributes: [key] }, { pageSize: 2 })) stale.push(point.dataPointId);
  for (const id of stale) await v.admin.data.delete(id);
  t.deepEqual(await v.admin.search({ query: { attributes: [key] } }), []);
});

test('searchAll passes on errors other than an empty page', async (t) => {
  const walk = async () => {
    for await (const _ of v.admin.searchAll({ attributes: ['X'] }, { pageSize: 5000 })) t.fail();
  };
  await apiError(t, walk(), 400, COUNT_MESSAGE);
});

test('on the wire: the private key goes out on value reads only, the public key on stores only', async (t) => {
  const proxy = await startRecordingProxy(v.proc.url);
  t.teardown(() => proxy.close());
  const c = v.client({ url: proxy.url });
  const key = await definition('WIRE', { repeatable: true, indexed: true });
  const subject = unique('subj');

  // Every call that takes or returns data, and a sample of the registry.
  const [point] = await c.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 'w1' }]);
  await c.entities.storeAttributes(subject, { data: [{ attribute: key, value: 'w2' }] });
  await c.dataSubjects.getAttribute(subject, key);
  await c.entities.getAttribute(subject, key);
  await c.dataSubjects.getAttributes(subject);
  await c.entities.getAttributes(subject, { attributes: [key] });
  await c.data.get(point.dataPointId);
  await c.search({ query: { values: [{ attribute: key, value: 'w1' }] } });
  for await (const _ of c.searchAll({ attributes: [key] }, { pageSize: 1 }));
  await c.dataSubjects.get(subject);
  await c.entities.list({ count: 1 });
  await c.dataSubjects.save({ id: subject });
  await c.definitions.get(key);
  await c.tags.list();
  await c.regulations.list();
  await c.entityTypes.list();
  await c.applications.list();
  const reported = await c.audit.log({ eventType: 'STORE', subjectId: subject, data: { attribute: key, value: 'w3' }, applicationId: 'wire-test' });
  await c.audit.logBulk([{ eventType: 'READ', dataPointId: reported.dataPointId, applicationId: 'wire-test' }]);
  await c.activity.list({ count: 1 });
  const reporter = c.reporter({ defaults: { applicationId: 'wire-test' } });
  reporter.report({ eventType: 'READ', dataPointId: reported.dataPointId });
  await reporter.close();
  await c.data.delete(point.dataPointId);
  await c.dataSubjects.deleteAttribute(subject, key);
  await c.dataSubjects.purge(subject);
  await c.health();

  const valueRead = /^\/(entities|datasubjects)\/[^/]+\/attributes(\/[^/?]+)?(\?.*)?$|^\/data\/[^/]+$/;
  const store = /^\/(entities|datasubjects)\/[^/]+\/attributes$/;
  const privateKeyHeaders = proxy.requests.filter((r) => r.headers['x-decryption-key'] !== undefined);
  const publicKeyHeaders = proxy.requests.filter((r) => r.headers['x-encryption-key'] !== undefined);
  t.true(proxy.requests.length >= 26);
  t.is(proxy.requests.filter((r) => r.path === '/auditlogs/bulk').length, 2);
  t.is(privateKeyHeaders.length, 5);
  for (const r of privateKeyHeaders) {
    t.is(r.method, 'GET', `${r.method} ${r.path}`);
    t.regex(r.path, valueRead);
    t.is(r.headers['x-decryption-key'], v.keys.privateKey);
  }
  t.deepEqual(publicKeyHeaders.map((r) => `${r.method} ${r.path.replace(subject, 'S')}`), ['POST /datasubjects/S/attributes', 'POST /entities/S/attributes']);
  for (const r of publicKeyHeaders) t.regex(r.path, store);

  // The private key appears nowhere else: not in another header, path or body.
  const pem = Buffer.from(v.keys.privateKey, 'base64').toString('utf8');
  for (const r of proxy.requests.filter((x) => !privateKeyHeaders.includes(x))) {
    const text = JSON.stringify(r);
    t.false(text.includes(v.keys.privateKey), `${r.method} ${r.path}`);
    t.false(text.includes(pem.split('\n')[1]), `${r.method} ${r.path}`);
  }
  t.true(proxy.requests.every((r) => r.headers.authorization === `Bearer ${v.proc.adminKey}`));
});

test('results are typed data points', async (t) => {
  const key = await definition('TYPED', { schema: 'int' });
  const subject = unique('subj');
  await v.admin.dataSubjects.storeAttributes(subject, [{ attribute: key, value: 42 }]);
  const points: DataPoint<number>[] = await v.admin.dataSubjects.getAttribute<number>(subject, key);
  t.is(points[0].value, 42);
});
