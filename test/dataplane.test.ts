/**
 * The encrypted data plane through HTTP: storing, reading and deleting attribute values,
 * with every status and message of the interface.
 */
import test from 'ava';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { generateKeyPair } from '../core/src/crypto/keys.js';
import { MAX_STRING_LENGTH } from '../core/src/definitions/schema.js';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { define, isError, pointCount, read, setLegalHold, store, uid } from './dataplane-helpers.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const POINT_KEYS = ['attribute', 'createdDate', 'dataPointId', 'entityId', 'modifiedDate', 'regulations', 'reportOnly', 'sensitivity', 'structureRootId', 'subjectId', 'tags', 'value'];
const OFFSET_DATE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/;

test('a stored value comes back decrypted, as the same data point, on every read path', async (t) => {
  const EMAIL = await define(v, { key: uid('EMAIL') });
  const id = uid('subject');
  const stored = await store(v, id, [{ attribute: EMAIL, value: 'ada@example.org', sensitivity: 'PERSONAL' }]);
  t.is(stored.status, 200);
  t.is(stored.body.data.length, 1);
  const point = stored.body.data[0];
  t.deepEqual(Object.keys(point).sort(), POINT_KEYS);
  t.like(point, { entityId: id, subjectId: id, attribute: EMAIL, value: 'ada@example.org', sensitivity: 'PERSONAL', reportOnly: false, structureRootId: null, tags: [], regulations: [] });
  t.regex(point.createdDate, OFFSET_DATE);
  t.is(point.modifiedDate, point.createdDate);

  for (const url of [
    `/entities/${id}/attributes/${EMAIL}`,
    `/entities/${id}/attribute/${EMAIL}`,
    `/datasubjects/${id}/attributes/${EMAIL}`,
    `/datasubjects/${id}/attribute/${EMAIL}`,
    `/entities/${id}/attributes`,
    `/datasubjects/${id}/attributes`,
  ]) {
    const res = await read(v, url);
    t.is(res.status, 200, url);
    t.deepEqual(res.body.data, [point], url);
  }
  const one = await read(v, `/data/${point.dataPointId}`);
  t.is(one.status, 200);
  t.deepEqual(one.body.data, point);
});

test('a new entity is a data subject unless the store names another type', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'company_t' } });
  const NOTE = await define(v, { key: uid('NOTE'), entityTypes: ['datasubject', 'company_t'] });
  const person = uid('person');
  t.is((await store(v, person, [{ attribute: NOTE, value: 'x' }])).status, 200);
  const company = uid('company');
  t.is((await store(v, company, [{ attribute: NOTE, value: 'y' }], { entityType: 'company_t' })).status, 200);
  const rows = await v.vault.db.selectFrom('entities').select(['id', 'type']).where('id', 'in', [person, company]).orderBy('type').execute();
  t.deepEqual(rows.map((r) => [r.id, r.type]), [
    [company, 'company_t'],
    [person, 'datasubject'],
  ]);

  isError(t, await store(v, company, [{ attribute: NOTE, value: 'z' }], { entityType: 'datasubject' }), 400, 'Entity is of type company_t, which does not match the provided entity type');
  isError(t, await store(v, person, [{ attribute: NOTE, value: 'z' }], { entityType: 'company_t' }), 400, 'Entity is of type datasubject, which does not match the provided entity type');
  // The /datasubjects form stores to data subjects only.
  isError(t, await store(v, company, [{ attribute: NOTE, value: 'z' }], { form: 'datasubjects' }), 400, 'Entity is of type company_t, which does not match the provided entity type');
  // Without a type, an existing entity of any type is fine.
  t.is((await store(v, company, [{ attribute: NOTE, value: 'z' }])).status, 200);
  isError(t, await store(v, uid('nobody'), [{ attribute: NOTE, value: 'z' }], { entityType: 'no_such_type' }), 400, 'No such entity type');
});

test('a repeatable attribute adds values; a nonrepeatable one overwrites, keeping its id and creation date', async (t) => {
  const PHONE = await define(v, { key: uid('PHONE'), repeatable: true });
  const AGE = await define(v, { key: uid('AGE'), schema: 'int' });
  const id = uid('subject');
  await store(v, id, [{ attribute: PHONE, value: '111' }, { attribute: PHONE, value: '222' }]);
  await store(v, id, [{ attribute: PHONE, value: '333' }]);
  const phones = await read(v, `/entities/${id}/attributes/${PHONE}`);
  t.deepEqual(phones.body.data.map((p: any) => p.value), ['111', '222', '333'], 'in the order they were stored');

  const first = (await store(v, id, [{ attribute: AGE, value: 41 }])).body.data[0];
  await new Promise((r) => setTimeout(r, 5));
  const second = (await store(v, id, [{ attribute: AGE, value: '42' }])).body.data[0];
  t.is(second.dataPointId, first.dataPointId);
  t.is(second.createdDate, first.createdDate);
  t.true(second.modifiedDate > first.modifiedDate);
  const ages = await read(v, `/entities/${id}/attributes/${AGE}`);
  t.is(ages.body.data.length, 1);
  t.is(ages.body.data[0].value, '42', 'values come back exactly as stored');
  t.is(await pointCount(v, id), 4);
});

test('two values of a nonrepeatable attribute in one request are 409, and nothing is stored', async (t) => {
  const NAME = await define(v, { key: uid('NAME') });
  const id = uid('subject');
  isError(t, await store(v, id, [{ attribute: NAME, value: 'a' }, { attribute: NAME, value: 'b' }]), 409, 'Received multiple values for nonrepeatable attribute');
  t.is(await pointCount(v, id), 0);
  t.is(await v.vault.db.selectFrom('entities').select('id').where('id', '=', id).executeTakeFirst(), undefined, 'not even the entity');
});

test('strings stop at 1,048,576 characters with 413; file holds more', async (t) => {
  const TEXT = await define(v, { key: uid('TEXT') });
  const BLOB = await define(v, { key: uid('BLOB'), schema: 'file' });
  const id = uid('subject');
  const atLimit = 'a'.repeat(MAX_STRING_LENGTH);
  const stored = await store(v, id, [{ attribute: TEXT, value: atLimit }]);
  t.is(stored.status, 200);
  t.is((await read(v, `/entities/${id}/attributes/${TEXT}`)).body.data[0].value.length, MAX_STRING_LENGTH);
  isError(t, await store(v, id, [{ attribute: TEXT, value: `${atLimit}b` }]), 413, 'Datapoint values may not exceed 1 MB in size');
  const big = 'f'.repeat(3 * MAX_STRING_LENGTH);
  t.is((await store(v, id, [{ attribute: BLOB, value: big }])).status, 200);
  const back = await read(v, `/entities/${id}/attributes/${BLOB}`);
  t.is(back.body.data[0].value, big);
  t.is((await read(v, `/entities/${id}/attributes/${TEXT}`)).body.data[0].value, atLimit, 'the refused overwrite changed nothing');
});

test('values are checked against the schema: 422 on a type mismatch, 400 on an unknown sub-attribute', async (t) => {
  const AGE = await define(v, { key: uid('AGE'), schema: 'int' });
  const NAME = await define(v, { key: uid('NAME'), schema: { first: 'string', address: { city: 'string' } } });
  const id = uid('subject');
  isError(t, await store(v, id, [{ attribute: AGE, value: 'forty' }]), 422, `Expected int for value of attribute ${AGE}`);
  isError(t, await store(v, id, [{ attribute: AGE }]), 422, `Expected int for value of attribute ${AGE}`);
  isError(t, await store(v, id, [{ attribute: NAME, value: 'Ada' }]), 422, `Expected object for value of attribute ${NAME}`);
  isError(t, await store(v, id, [{ attribute: NAME, value: { address: { city: 5 } } }]), 422, `Expected string for value of attribute ${NAME}.address.city`);
  isError(t, await store(v, id, [{ attribute: NAME, value: { middle: 'B' } }]), 400, `Unknown sub-attribute ${NAME}.middle`);
  t.is(await pointCount(v, id), 0);
});

test('structured values: one root with the whole value, one sub-point per leaf and list item', async (t) => {
  const NAME = await define(v, { key: uid('NAME'), schema: { first: 'string', last: 'string', '[middle]': 'string', address: { city: 'string', zip: 'int' } } });
  const id = uid('subject');
  const value = { first: 'John', middle: ['Ronald', 'Reuel'], last: 'Tolkien', address: { city: 'Oxford', zip: 1 } };
  const stored = await store(v, id, [{ attribute: NAME, value }]);
  t.is(stored.status, 200);
  t.is(stored.body.data.length, 1, 'the answer lists the root');
  const root = stored.body.data[0];
  t.deepEqual(root.value, value);
  t.is(root.structureRootId, null);

  const rows = await v.vault.db.selectFrom('datapoints').select(['id', 'attribute', 'structure_root_id']).where('entity_id', '=', id).orderBy('id').execute();
  t.deepEqual(rows.map((r) => r.attribute), [NAME, `${NAME}.first`, `${NAME}.middle`, `${NAME}.middle`, `${NAME}.last`, `${NAME}.address.city`, `${NAME}.address.zip`]);
  t.true(rows.slice(1).every((r) => r.structure_root_id === root.dataPointId));

  const read1 = await read(v, `/entities/${id}/attributes/${NAME}`);
  t.deepEqual(read1.body.data, [root], 'reads return the root with the whole value');
  const city = rows.find((r) => r.attribute === `${NAME}.address.city`)!;
  const leaf = await read(v, `/data/${city.id}`);
  t.like(leaf.body.data, { attribute: `${NAME}.address.city`, value: 'Oxford', structureRootId: root.dataPointId });
  const middles = await read(v, `/entities/${id}/attributes/${NAME}.middle`);
  t.deepEqual(middles.body.data.map((p: any) => p.value), ['Ronald', 'Reuel']);

  // Overwriting replaces the sub-points too.
  await store(v, id, [{ attribute: NAME, value: { first: 'Christopher' } }]);
  const after = await v.vault.db.selectFrom('datapoints').select('attribute').where('entity_id', '=', id).orderBy('id').execute();
  t.deepEqual(after.map((r) => r.attribute), [NAME, `${NAME}.first`]);
  t.deepEqual((await read(v, `/entities/${id}/attributes/${NAME}`)).body.data[0].value, { first: 'Christopher' });
});

test('a subject under legal hold keeps its values: no overwrite, no delete; additions are fine', async (t) => {
  const STATUS = await define(v, { key: uid('STATUS') });
  const LOG = await define(v, { key: uid('LOG'), repeatable: true });
  const OTHER = await define(v, { key: uid('OTHER') });
  const id = uid('subject');
  const first = (await store(v, id, [{ attribute: STATUS, value: 'active' }, { attribute: LOG, value: 'one' }])).body.data;
  await setLegalHold(v, id, true);

  isError(t, await store(v, id, [{ attribute: STATUS, value: 'closed' }]), 403, 'Cannot overwrite attribute for data subject, as the data subject is under a legal hold');
  isError(t, await store(v, id, [{ attribute: LOG, value: 'two' }, { attribute: STATUS, value: 'closed' }]), 403, 'Cannot overwrite attribute for data subject, as the data subject is under a legal hold');
  t.is((await store(v, id, [{ attribute: LOG, value: 'two' }])).status, 200, 'repeatable values are added, not overwritten');
  t.is((await store(v, id, [{ attribute: OTHER, value: 'first value' }])).status, 200, 'a first value overwrites nothing');

  const deleteMessage = 'Cannot delete data for data subject, as the data subject is under a legal hold';
  isError(t, await v.request('DELETE', `/entities/${id}/attributes/${STATUS}`), 403, deleteMessage);
  isError(t, await v.request('DELETE', `/data/${first[0].dataPointId}`), 403, deleteMessage);
  isError(t, await v.request('DELETE', `/datasubjects/${id}/data`), 403, deleteMessage);
  isError(t, await v.request('DELETE', `/entities/${id}/data`), 403, deleteMessage);
  t.is((await read(v, `/entities/${id}/attributes/${STATUS}`)).body.data[0].value, 'active');
  t.is(await pointCount(v, id), 4);

  await setLegalHold(v, id, false);
  t.is((await store(v, id, [{ attribute: STATUS, value: 'closed' }])).status, 200);
});

test('applications store, read and delete only the attributes they may access', async (t) => {
  const SSN = await define(v, { key: uid('SSN') });
  const EMAIL = await define(v, { key: uid('EMAIL') });
  const id = uid('subject');
  const stored = (await store(v, id, [{ attribute: SSN, value: '123-45-6789' }, { attribute: EMAIL, value: 'a@b.c' }])).body.data;
  const ssnPoint = stored[0];
  const limited = await v.createApplication([EMAIL]);

  isError(t, await store(v, id, [{ attribute: SSN, value: '000' }], { apiKey: limited }), 403, 'Forbidden access to attribute');
  isError(t, await store(v, id, [{ attribute: EMAIL, value: 'x@y.z' }, { attribute: SSN, value: '000' }], { apiKey: limited }), 403, 'Forbidden access to attribute');
  isError(t, await store(v, id, [{ attribute: 'NOT_DEFINED_ANYWHERE', value: '000' }], { apiKey: limited }), 403, 'Forbidden access to attribute');
  t.is((await store(v, id, [{ attribute: EMAIL, value: 'x@y.z' }], { apiKey: limited })).status, 200);

  isError(t, await read(v, `/entities/${id}/attributes/${SSN}`, { apiKey: limited }), 403, 'Forbidden');
  // By id, a point the caller may not access is answered like one that does not exist: ids cannot be probed.
  const hidden = await read(v, `/data/${ssnPoint.dataPointId}`, { apiKey: limited });
  const unknown = await read(v, `/data/${uid('no-such-point')}`, { apiKey: limited });
  isError(t, hidden, 404, 'Data Not Found');
  t.deepEqual(hidden.body, unknown.body);
  isError(t, await read(v, `/entities/${id}/attributes`, { apiKey: limited, query: { attributes: `${EMAIL},${SSN}` } }), 403, 'Forbidden');
  const all = await read(v, `/entities/${id}/attributes`, { apiKey: limited });
  t.deepEqual(all.body.data.map((p: any) => [p.attribute, p.value]), [[EMAIL, 'x@y.z']], 'silently filtered to what it may access');
  const listed = await read(v, `/entities/${id}/attributes`, { query: { attributes: SSN } });
  t.deepEqual(listed.body.data.map((p: any) => p.attribute), [SSN], 'a list names what to return');

  isError(t, await v.request('DELETE', `/entities/${id}/attributes/${SSN}`, { apiKey: limited }), 403, 'Forbidden');
  isError(t, await v.request('DELETE', `/data/${ssnPoint.dataPointId}`, { apiKey: limited }), 404, 'Data Not Found');
  isError(t, await v.request('DELETE', `/datasubjects/${id}/data`, { apiKey: limited }), 403, 'Forbidden');
  t.is(await pointCount(v, id), 2);
});

test('unknown attributes, unknown regulations and attributes of other entity types are 400', async (t) => {
  const PLAIN = await define(v, { key: uid('PLAIN') });
  const id = uid('subject');
  isError(t, await store(v, id, [{ attribute: uid('UNDEFINED'), value: 'x' }]), 400, 'No such attribute');
  isError(t, await store(v, id, [{ attribute: `${PLAIN}.sub`, value: 'x' }]), 400, 'No such attribute');
  isError(t, await store(v, id, [{ attribute: PLAIN, value: 'x', regulations: ['NO_SUCH_REG'] }]), 400, 'No such regulation');
  isError(t, await store(v, id, [{ attribute: PLAIN, value: 'x', sensitivity: 'SECRET' }]), 400, 'Sensitivity must be one of NORMAL, PERSONAL, SENSITIVE, CONFIDENTIAL');
  isError(t, await store(v, id, [{ attribute: PLAIN, value: 'x', reportOnly: true }]), 400, 'Report-only data is not stored: report it through POST /auditlogs');
  t.is((await store(v, uid('subject'), [{ attribute: PLAIN, value: 'x', reportOnly: false, accessibility: 'Read Only', dataPointId: 'ignored' }])).status, 200, 'ViziVault clients send these members');

  await v.request('POST', '/entitytypes', { body: { key: 'device_t' } });
  const SERIAL = await define(v, { key: uid('SERIAL'), entityTypes: ['device_t'] });
  const device = uid('device');
  isError(t, await store(v, device, [{ attribute: PLAIN, value: 'x' }], { entityType: 'device_t' }), 400, 'Attribute is not applicable to entity type', 'no entity types means data subjects only');
  isError(t, await store(v, id, [{ attribute: SERIAL, value: 'x' }]), 400, 'Attribute is not applicable to entity type');
  t.is((await store(v, device, [{ attribute: SERIAL, value: 'x' }], { entityType: 'device_t' })).status, 200);
  t.is(await pointCount(v, id), 0);
});

test('keys that are missing, unparsable, unregistered or forged are 400 on stores and reads', async (t) => {
  const NAME = await define(v, { key: uid('NAME') });
  const id = uid('subject');
  const point = (await store(v, id, [{ attribute: NAME, value: 'Ada' }])).body.data[0];
  const other = generateKeyPair(2048);
  const forged = forgePrivateKey(v.keys.publicPem);
  const message = 'Encoded key provided is invalid';
  for (const key of [null, '', 'not a key', Buffer.from('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----').toString('base64'), other.publicKey, v.keys.privateKey]) {
    isError(t, await store(v, id, [{ attribute: NAME, value: 'Bob' }], { key }), 400, message, `store with ${String(key).slice(0, 20)}`);
  }
  for (const key of [null, '', 'not a key', other.privateKey, v.keys.publicKey, forged]) {
    for (const url of [`/entities/${id}/attributes/${NAME}`, `/entities/${id}/attributes`, `/data/${point.dataPointId}`]) {
      isError(t, await read(v, url, { key }), 400, message, `${url} with ${String(key).slice(0, 20)}`);
    }
  }
  t.is((await read(v, `/entities/${id}/attributes/${NAME}`)).body.data[0].value, 'Ada');
  for (const line of v.logs) t.false(line.includes(v.keys.privateKey) || line.includes(forged), 'no key material in the logs');
});

test('a key header holding anything besides exactly one PEM block is 400 on stores and reads; whitespace around it is fine', async (t) => {
  const NAME = await define(v, { key: uid('NAME') });
  const id = uid('subject');
  const point = (await store(v, id, [{ attribute: NAME, value: 'Ada' }])).body.data[0];
  const other = generateKeyPair(2048);
  const header = (pem: string) => Buffer.from(pem).toString('base64');
  const wrapped = (pem: string, otherPem: string) => [
    `${pem}trailing junk\n`,
    `junk before it\n${pem}`,
    `${pem}-----BEGIN NOTE-----\nnot a key\n-----END NOTE-----\n`,
    `${pem}${otherPem}`,
    `${otherPem}${pem}`,
  ].map(header);
  const message = 'Encoded key provided is invalid';
  for (const key of wrapped(v.keys.publicPem, other.publicPem)) {
    isError(t, await store(v, id, [{ attribute: NAME, value: 'Bob' }], { key }), 400, message, 'store');
  }
  const privateHeaders = wrapped(v.keys.privatePem, other.privatePem);
  for (const key of privateHeaders) {
    for (const url of [`/entities/${id}/attributes/${NAME}`, `/data/${point.dataPointId}`]) {
      const res = await read(v, url, { key });
      isError(t, res, 400, message, url);
      t.false(JSON.stringify(res.body).includes(v.keys.privatePem.split('\n')[1]), 'no key material in the answer');
    }
  }
  t.is(await pointCount(v, id), 1, 'nothing stored with a refused key');
  const spaced = (pem: string) => header(`\n  ${pem}\n\n`);
  t.is((await read(v, `/data/${point.dataPointId}`, { key: spaced(v.keys.privatePem) })).body.data.value, 'Ada');
  t.is((await store(v, id, [{ attribute: NAME, value: 'Bob' }], { key: spaced(v.keys.publicPem) })).status, 200);
  const secret = v.keys.privatePem.split('\n')[1];
  for (const line of v.logs) t.false(privateHeaders.some((key) => line.includes(key.slice(0, 64))) || line.includes(secret), 'no key material in the logs');
});

/**
 * A "private key" made of the registered public modulus and exponent and made-up secrets:
 * OpenSSL parses it and its public half matches the registered key.
 */
function forgePrivateKey(publicPem: string): string {
  const jwk = createPublicKey(publicPem).export({ format: 'jwk' });
  const filler = Buffer.alloc(128, 7).toString('base64url');
  const forged = createPrivateKey({ key: { ...jwk, d: filler, p: filler, q: filler, dp: filler, dq: filler, qi: filler }, format: 'jwk' });
  return Buffer.from(forged.export({ type: 'pkcs8', format: 'pem' }) as string).toString('base64');
}

test('tags and regulations of the definition, the entity and the stored attribute are all applied', async (t) => {
  const EMAIL = await define(v, { key: uid('EMAIL'), tags: ['def-tag'], regulations: ['GDPR'] });
  const id = uid('subject');
  await store(v, id, [{ attribute: EMAIL, value: 'a@b.c' }]);
  await v.vault.db.insertInto('tags').values({ name: 'vip', created_date: new Date().toISOString(), modified_date: new Date().toISOString() }).onConflict((oc) => oc.column('name').doNothing()).execute();
  await v.vault.db.insertInto('entity_tags').values({ entity_id: id, tag: 'vip' }).execute();
  const res = await store(v, id, [{ attribute: EMAIL, value: 'x@y.z', tags: ['point-tag', 'def-tag'], regulations: ['CCPA'] }]);
  t.is(res.status, 200);
  t.deepEqual(res.body.data[0].tags, ['def-tag', 'point-tag', 'vip']);
  t.deepEqual(res.body.data[0].regulations, ['CCPA', 'GDPR']);
  const back = await read(v, `/data/${res.body.data[0].dataPointId}`);
  t.deepEqual(back.body.data.tags, ['def-tag', 'point-tag', 'vip']);
  t.deepEqual(back.body.data.regulations, ['CCPA', 'GDPR']);
  t.truthy(await v.vault.db.selectFrom('tags').select('name').where('name', '=', 'point-tag').executeTakeFirst(), 'tags are created on first use');
});

test('one bad value stores nothing of the request', async (t) => {
  const A = await define(v, { key: uid('A'), repeatable: true });
  const B = await define(v, { key: uid('B'), schema: 'int' });
  const id = uid('subject');
  await store(v, id, [{ attribute: A, value: 'kept' }]);
  isError(t, await store(v, id, [{ attribute: A, value: 'new' }, { attribute: B, value: 'not a number' }]), 422, `Expected int for value of attribute ${B}`);
  isError(t, await store(v, id, [{ attribute: A, value: 'new' }, { attribute: A, value: 'x', regulations: ['NOPE'] }]), 400, 'No such regulation');
  const values = await read(v, `/entities/${id}/attributes/${A}`);
  t.deepEqual(values.body.data.map((p: any) => p.value), ['kept']);
  t.is(await pointCount(v, id), 1);
});

test('reads of what does not exist are 404 Data Not Found; the datasubjects forms refuse other types', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'org_t' } });
  const NAME = await define(v, { key: uid('NAME'), entityTypes: ['datasubject', 'org_t'] });
  const id = uid('subject');
  await store(v, id, [{ attribute: NAME, value: 'Ada' }]);
  const other = uid('other');
  isError(t, await read(v, `/entities/${other}/attributes/${NAME}`), 404, 'Data Not Found');
  isError(t, await read(v, `/entities/${other}/attributes`), 404, 'Data Not Found');
  isError(t, await read(v, `/entities/${id}/attributes/${uid('NONE')}`), 404, 'Data Not Found');
  isError(t, await read(v, `/entities/${id}/attributes`, { query: { attributes: uid('NONE') } }), 404, 'Data Not Found');
  isError(t, await read(v, '/data/00000000-0000-7000-8000-000000000000'), 404, 'Data Not Found');
  isError(t, await v.request('DELETE', '/data/00000000-0000-7000-8000-000000000000'), 404, 'Data Not Found');
  isError(t, await v.request('DELETE', `/entities/${id}/attributes/${uid('NONE')}`), 404, 'Data Not Found');
  isError(t, await v.request('DELETE', `/entities/${other}/attributes/${NAME}`), 404, 'Data Not Found');
  isError(t, await v.request('DELETE', `/datasubjects/${other}/data`), 404, 'Data Subject Not Found');
  isError(t, await v.request('DELETE', `/entities/${other}/data`), 404, 'Data Subject Not Found');

  const org = uid('org');
  await store(v, org, [{ attribute: NAME, value: 'Acme' }], { entityType: 'org_t' });
  isError(t, await read(v, `/datasubjects/${org}/attributes`), 400, 'Entity is not a data subject');
  isError(t, await read(v, `/datasubjects/${org}/attributes/${NAME}`), 400, 'Entity is not a data subject');
  isError(t, await read(v, `/datasubjects/${org}/attribute/${NAME}`), 400, 'Entity is not a data subject');
  isError(t, await v.request('DELETE', `/datasubjects/${org}/attributes/${NAME}`), 400, 'Entity is not of type datasubject');
  isError(t, await v.request('DELETE', `/datasubjects/${org}/data`), 400, 'Entity is not of type datasubject');
  t.is((await read(v, `/entities/${org}/attributes/${NAME}`)).status, 200, 'the entities form reads any type');
});

test('deletes: one attribute, one point, a structure through its sub-point, and a whole subject', async (t) => {
  const TAGS = await define(v, { key: uid('TAGS'), repeatable: true });
  const ADDR = await define(v, { key: uid('ADDR'), schema: { city: 'string', zip: 'string' } });
  const KEEP = await define(v, { key: uid('KEEP') });
  const id = uid('subject');
  const stored = (await store(v, id, [{ attribute: TAGS, value: 'a' }, { attribute: TAGS, value: 'b' }, { attribute: ADDR, value: { city: 'Oslo', zip: '0150' } }, { attribute: KEEP, value: 'k' }])).body.data;

  t.deepEqual((await v.request('DELETE', `/data/${stored[0].dataPointId}`)).body, { data: 'Successfully Deleted Data Point' });
  t.deepEqual((await read(v, `/entities/${id}/attributes/${TAGS}`)).body.data.map((p: any) => p.value), ['b']);
  t.deepEqual((await v.request('DELETE', `/datasubjects/${id}/attributes/${TAGS}`)).body, { data: 'Successfully Deleted Data Point' });
  isError(t, await read(v, `/entities/${id}/attributes/${TAGS}`), 404, 'Data Not Found');

  const zip = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', id).where('attribute', '=', `${ADDR}.zip`).executeTakeFirstOrThrow();
  t.is((await v.request('DELETE', `/data/${zip.id}`)).status, 200);
  isError(t, await read(v, `/entities/${id}/attributes/${ADDR}`), 404, 'Data Not Found', 'deleting part of a structure deletes all of it');
  t.is(await pointCount(v, id), 1);

  t.deepEqual((await v.request('DELETE', `/entities/${id}/data`)).body, { data: 'Successfully Deleted Data Subject' });
  t.is(await pointCount(v, id), 0);
  t.is(await v.vault.db.selectFrom('entities').select('id').where('id', '=', id).executeTakeFirst(), undefined, 'the entity is gone');
  t.deepEqual(await v.vault.db.selectFrom('subject_keys').select('id').where('entity_id', '=', id).execute(), [], 'and so are its data keys');
  isError(t, await v.request('DELETE', `/datasubjects/${id}/data`), 404, 'Data Subject Not Found');
  const labels = await v.vault.db.selectFrom('datapoint_tags').select('datapoint_id').where('datapoint_id', 'in', stored.map((p: any) => p.dataPointId)).execute();
  t.deepEqual(labels, []);
  // The id can be used again: a new subject with new keys.
  t.is((await store(v, id, [{ attribute: KEEP, value: 'again' }])).status, 200);
  t.is((await read(v, `/entities/${id}/attributes/${KEEP}`)).body.data[0].value, 'again');
});

test.serial('reading many points costs one RSA decryption per data key, not one per point', async (t) => {
  const ITEM = await define(v, { key: uid('ITEM'), repeatable: true });
  const id = uid('subject');
  await store(v, id, Array.from({ length: 50 }, (_, i) => ({ attribute: ITEM, value: `item ${i}` })));
  const keys = v.vault.datapoints.dataKeys;
  keys.clear();
  const before = keys.unwraps;
  const res = await read(v, `/entities/${id}/attributes/${ITEM}`);
  t.is(res.body.data.length, 50);
  t.is(keys.unwraps - before, 1);
  await read(v, `/entities/${id}/attributes`);
  await read(v, `/data/${res.body.data[7].dataPointId}`);
  t.is(keys.unwraps - before, 1, 'later reads use the cached key');
  // A key reused from memory for a store only while its wrapped copy exists.
  await store(v, id, [{ attribute: ITEM, value: 'more' }]);
  const generations = await v.vault.db.selectFrom('subject_keys').select('id').where('entity_id', '=', id).execute();
  t.is(generations.length, 1, 'the store reused the unwrapped key');
});

test('locations come from origin, and are kept for search', async (t) => {
  const CITY = await define(v, { key: uid('CITY') });
  const id = uid('subject');
  const res = await store(v, id, [{ attribute: CITY, value: 'x' }], { origin: 'us-ca' });
  t.is(res.status, 200);
  const row = await v.vault.db.selectFrom('datapoints').select(['country', 'subdivision']).where('entity_id', '=', id).executeTakeFirstOrThrow();
  t.deepEqual(row, { country: 'US', subdivision: 'US-CA' });
  const local = uid('subject');
  await store(v, local, [{ attribute: CITY, value: 'y' }]);
  const none = await v.vault.db.selectFrom('datapoints').select(['country', 'subdivision', 'city']).where('entity_id', '=', local).executeTakeFirstOrThrow();
  t.deepEqual(none, { country: null, subdivision: null, city: null }, 'a loopback client has no location');
});

test('sensitivity defaults to NORMAL and keeps each level', async (t) => {
  const S = await define(v, { key: uid('S'), repeatable: true });
  const id = uid('subject');
  const res = await store(v, id, [{ attribute: S, value: 'a' }, ...['NORMAL', 'PERSONAL', 'SENSITIVE', 'CONFIDENTIAL'].map((sensitivity) => ({ attribute: S, value: sensitivity, sensitivity }))]);
  t.deepEqual(res.body.data.map((p: any) => p.sensitivity), ['NORMAL', 'NORMAL', 'PERSONAL', 'SENSITIVE', 'CONFIDENTIAL']);
});

test('null stands for an absent optional member of a store, as in an audit event', async (t) => {
  const A = await define(v, { key: uid('A'), tags: ['kept'] });
  const id = uid('subject');
  const item = { attribute: A, value: 'x', dataPointId: null, regulations: null, tags: null, sensitivity: null, reportOnly: null, accessibility: null };
  const body = { data: [item], entityType: null, namespace: null, origin: null };
  const res = await v.request('POST', `/entities/${id}/attributes`, { body, headers: { 'x-encryption-key': v.keys.publicKey } });
  t.is(res.status, 200, JSON.stringify(res.body));
  t.like(res.body.data[0], { entityId: id, attribute: A, value: 'x', sensitivity: 'NORMAL', tags: ['kept'], regulations: [], reportOnly: false });
  t.is((await v.request('GET', `/entities/${id}`)).body.data.type, 'datasubject');
});

test('malformed store bodies are 400 and store nothing', async (t) => {
  const A = await define(v, { key: uid('A') });
  const id = uid('subject');
  for (const body of [{}, { data: 'x' }, { data: [{}] }, { data: [{ attribute: 5, value: 'x' }] }, { data: [{ attribute: A, value: 'x', extra: 1 }] }, { data: [], bogus: true }]) {
    const res = await v.request('POST', `/entities/${id}/attributes`, { body, headers: { 'x-encryption-key': v.keys.publicKey } });
    t.is(res.status, 400, JSON.stringify(body));
  }
  t.is(await pointCount(v, id), 0);
});

test('concurrent stores of one nonrepeatable attribute to a new subject leave one entity and one value', async (t) => {
  const STATE = await define(v, { key: uid('STATE'), schema: { code: 'string' } });
  const LOG = await define(v, { key: uid('LOG'), repeatable: true });
  const id = uid('subject');
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) => store(v, id, [{ attribute: STATE, value: { code: `c${i}` } }, { attribute: LOG, value: `l${i}` }])),
  );
  t.deepEqual(results.map((r) => r.status), Array(12).fill(200));
  const roots = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', id).where('attribute', '=', STATE).execute();
  t.is(roots.length, 1);
  const leaves = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', id).where('attribute', '=', `${STATE}.code`).execute();
  t.is(leaves.length, 1, 'the replaced structures left no sub-points behind');
  t.is((await read(v, `/entities/${id}/attributes/${LOG}`)).body.data.length, 12);
  t.is((await v.vault.db.selectFrom('entities').select('id').where('id', '=', id).execute()).length, 1);
});

test('every store, overwrite, read and delete is in the activity log, one record per data point', async (t) => {
  const NAME = await define(v, { key: uid('NAME'), schema: { first: 'string' } });
  const NOTE = await define(v, { key: uid('NOTE'), repeatable: true });
  const id = uid('subject');
  const app = await v.createApplication(['*']);
  const [name, note] = (await store(v, id, [{ attribute: NAME, value: { first: 'Ada' } }, { attribute: NOTE, value: 'n' }], { apiKey: app, origin: 'FR' })).body.data;
  await store(v, id, [{ attribute: NAME, value: { first: 'Augusta' } }], { apiKey: app });
  await read(v, `/entities/${id}/attributes`, { apiKey: app });
  await v.request('DELETE', `/data/${note.dataPointId}`, { apiKey: app });
  await v.request('DELETE', `/entities/${id}/data`, { apiKey: app });

  const res = await v.request('GET', '/activity', { query: { subjectId: id } });
  t.is(res.status, 200);
  const records = res.body.data.map((r: any) => [r.eventType, r.dataPointId, r.attribute, r.reportOnly]);
  t.deepEqual(records, [
    ['STORE', name.dataPointId, NAME, false],
    ['STORE', note.dataPointId, NOTE, false],
    ['UPDATE', name.dataPointId, NAME, false],
    ['READ', name.dataPointId, NAME, false],
    ['READ', note.dataPointId, NOTE, false],
    ['DELETE', note.dataPointId, NOTE, false],
    ['DELETE', name.dataPointId, NAME, false],
    // The purge's own record, after the DELETEs of its values.
    ['CHANGE', undefined, undefined, false],
  ]);
  const appId = (await v.request('GET', '/applications')).body.data.find((a: any) => a.admin === false && res.body.data[0].applicationId === a.id)?.id;
  t.truthy(appId, 'recorded under the calling application');
  t.true(res.body.data.every((r: any) => r.applicationId === appId));
  t.false(JSON.stringify(res.body).includes('Ada'), 'never a value');
});
