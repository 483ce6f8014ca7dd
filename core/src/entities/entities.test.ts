import test from 'ava';
import { isVaultError } from '../errors.js';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';
import { resolveForStore } from './service.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const key of ['company', 'device']) await v.request('POST', '/entitytypes', { body: { key } });
});
test.after.always(async () => v?.close());

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

test('an entity is created as a datasubject by default, with every member', async (t) => {
  const res = await v.request('POST', '/entities', { body: { id: 'person-1' } });
  t.is(res.status, 201);
  t.deepEqual(Object.keys(res.body.data).sort(), ['created', 'id', 'legalHold', 'tags', 'type', 'updated']);
  t.like(res.body.data, { id: 'person-1', type: 'datasubject', tags: [], legalHold: false });
  t.regex(res.body.data.created, ISO_UTC);
  t.regex(res.body.data.updated, ISO_UTC);
  const read = await v.request('GET', '/entities/person-1');
  t.is(read.status, 200);
  t.deepEqual(read.body.data, res.body.data);
});

test('posting an existing entity updates its tags and keeps what is not sent', async (t) => {
  const created = await v.request('POST', '/entities', { body: { id: 'acme', type: 'company', tags: ['customer', 'b2b', 'customer'] } });
  t.is(created.status, 201);
  t.like(created.body.data, { type: 'company', tags: ['b2b', 'customer'] });
  t.is((await v.request('GET', '/tags/b2b')).status, 200, 'tags are created on first use');
  await new Promise((r) => setTimeout(r, 5));
  const updated = await v.request('POST', '/entities', { body: { id: 'acme', tags: ['partner'], created: '2000-01-01T00:00:00.000Z' } });
  t.is(updated.status, 200);
  t.like(updated.body.data, { id: 'acme', type: 'company', tags: ['partner'], created: created.body.data.created });
  t.true(updated.body.data.updated > created.body.data.updated);
  const untouched = await v.request('POST', '/entities', { body: { id: 'acme', type: 'company' } });
  t.deepEqual(untouched.body.data.tags, ['partner']);
});

test('another type than the entity has is 400 naming the real type; an unknown type is 400', async (t) => {
  await v.request('POST', '/entities', { body: { id: 'widget-9', type: 'device' } });
  const mismatch = await v.request('POST', '/entities', { body: { id: 'widget-9', type: 'datasubject', tags: ['x-never'] } });
  t.is(mismatch.status, 400);
  t.is(mismatch.body.message, 'Entity is of type device, which does not match the provided entity type');
  t.deepEqual((await v.request('GET', '/entities/widget-9')).body.data.tags, []);
  t.is((await v.request('GET', '/tags/x-never')).status, 404);

  const unknown = await v.request('POST', '/entities', { body: { id: 'ghost-1', type: 'spaceship' } });
  t.is(unknown.status, 400);
  t.is(unknown.body.message, 'No such entity type');
  t.is((await v.request('GET', '/entities/ghost-1')).status, 404);
  t.is((await v.request('POST', '/entities', { body: { id: 'widget-9', type: 'spaceship' } })).body.message, 'No such entity type');
});

test('only an admin changes a legal hold; echoing the current value is fine', async (t) => {
  const apiKey = await v.createApplication(['*']);
  const refusedNew = await v.request('POST', '/entities', { apiKey, body: { id: 'held-1', legalHold: true } });
  t.is(refusedNew.status, 403);
  t.is(refusedNew.body.message, 'Forbidden');
  t.is((await v.request('GET', '/entities/held-1')).status, 404, 'a refused create creates nothing');

  t.is((await v.request('POST', '/entities', { apiKey, body: { id: 'held-1', legalHold: false } })).status, 201);
  const held = await v.request('POST', '/entities', { body: { id: 'held-1', legalHold: true } });
  t.is(held.status, 200);
  t.true(held.body.data.legalHold);
  const echoed = await v.request('POST', '/entities', { apiKey, body: { ...held.body.data, tags: ['echoed'] } });
  t.is(echoed.status, 200);
  t.like(echoed.body.data, { legalHold: true, tags: ['echoed'] });
  const release = await v.request('POST', '/entities', { apiKey, body: { id: 'held-1', legalHold: false } });
  t.is(release.status, 403);
  t.is(release.body.message, 'Forbidden');
  t.true((await v.request('GET', '/entities/held-1')).body.data.legalHold);
  t.false((await v.request('POST', '/entities', { body: { id: 'held-1', legalHold: false } })).body.data.legalHold);
});

test('entity ids are non-empty strings of at most 512 characters', async (t) => {
  const cases: Array<[unknown, string | RegExp]> = [
    [{}, 'Entity ID is required'],
    [{ id: '' }, 'Entity ID is required'],
    [{ id: 'x'.repeat(513) }, 'Entity ID must be 1 to 512 characters, without control characters'],
    [{ id: 'nul\u0000id' }, 'Strings may not contain NUL characters'],
    [{ id: 'bell\u0007id' }, 'Entity ID must be 1 to 512 characters, without control characters'],
    [{ id: 'next\u0085line' }, 'Entity ID must be 1 to 512 characters, without control characters'],
    [{ id: 42 }, 'Entity ID must be 1 to 512 characters, without control characters'],
    [{ id: 'ok-id', tags: ['bad\nname'] }, 'Tag name must be 1 to 256 characters, without control characters'],
    [{ id: 'ok-id', colour: 'red' }, /must NOT have additional properties/],
    [{ id: 'ok-id', legalHold: 'yes' }, /must be boolean/],
  ];
  for (const [body, message] of cases) {
    const res = await v.request('POST', '/entities', { body });
    t.is(res.status, 400, JSON.stringify(body).slice(0, 60));
    if (typeof message === 'string') t.is(res.body.message, message);
    else t.regex(res.body.message, message);
  }
  t.is((await v.request('GET', '/entities/ok-id')).status, 404);
  const longest = 'é'.repeat(512);
  t.is((await v.request('POST', '/entities', { body: { id: longest } })).status, 201);
  t.is((await v.request('GET', `/entities/${encodeURIComponent(longest)}`)).body.data.id, longest);
  // Characters, not UTF-16 units: 512 emoji are 512 characters (1,024 units).
  const emoji = '😀'.repeat(512);
  t.is((await v.request('POST', '/entities', { body: { id: emoji } })).status, 201);
  t.is((await v.request('GET', `/entities/${encodeURIComponent(emoji)}`)).body.data.id, emoji);
  const tooMany = await v.request('POST', '/entities', { body: { id: '😀'.repeat(513) } });
  t.is(tooMany.status, 400);
  t.is(tooMany.body.message, 'Entity ID must be 1 to 512 characters, without control characters');
  // Audit events registered subjects without this rule once: such a subject is still found.
  const now = new Date().toISOString();
  await v.vault.db.insertInto('entities').values({ id: 'legacy\u0001id', type: 'datasubject', legal_hold: 0, created_date: now, updated_date: now }).execute();
  t.is((await v.request('GET', '/entities/legacy%01id')).body.data?.id, 'legacy\u0001id');
});

test('unknown entities are 404 Not found', async (t) => {
  for (const path of ['/entities/nobody', '/datasubjects/nobody']) {
    const res = await v.request('GET', path);
    t.is(res.status, 404, path);
    t.is(res.body.message, 'Not found');
  }
  const nul = await v.request('GET', '/entities/%00');
  t.is(nul.status, 400);
  t.is(nul.body.message, 'Strings may not contain NUL characters');
});

test('/datasubjects creates, lists and reads data subjects only', async (t) => {
  const created = await v.request('POST', '/datasubjects', { body: { id: 'subject-7', tags: ['newsletter'] } });
  t.is(created.status, 201);
  t.like(created.body.data, { id: 'subject-7', type: 'datasubject', tags: ['newsletter'] });
  t.is((await v.request('POST', '/datasubjects', { body: { id: 'subject-7', type: 'datasubject' } })).status, 200);

  const wrongType = await v.request('POST', '/datasubjects', { body: { id: 'subject-8', type: 'company' } });
  t.is(wrongType.status, 400);
  t.is(wrongType.body.message, 'Entity is not a data subject');
  await v.request('POST', '/entities', { body: { id: 'globex', type: 'company' } });
  const existingCompany = await v.request('POST', '/datasubjects', { body: { id: 'globex' } });
  t.is(existingCompany.status, 400);
  t.is(existingCompany.body.message, 'Entity is of type company, which does not match the provided entity type');

  const subjects = (await v.request('GET', '/datasubjects')).body.data;
  t.true(subjects.some((e: any) => e.id === 'subject-7' && e.tags[0] === 'newsletter'));
  t.true(subjects.every((e: any) => e.type === 'datasubject'));
  const all = (await v.request('GET', '/entities')).body.data.map((e: any) => e.id);
  t.true(all.includes('globex') && all.includes('subject-7'));

  t.is((await v.request('GET', '/datasubjects/subject-7')).body.data.id, 'subject-7');
  const notSubject = await v.request('GET', '/datasubjects/globex');
  t.is(notSubject.status, 400);
  t.is(notSubject.body.message, 'Entity is not a data subject');
});

test('any application may create and read entities', async (t) => {
  const apiKey = await v.createApplication(['EMAIL']);
  t.is((await v.request('POST', '/entities', { apiKey, body: { id: 'by-app', tags: ['from-app'] } })).status, 201);
  t.is((await v.request('GET', '/entities/by-app', { apiKey })).status, 200);
  t.is((await v.request('GET', '/datasubjects', { apiKey })).status, 200);
});

test('lists page by id with page and count; without them everything is listed', async (t) => {
  const own = await startTestVault();
  try {
    await own.request('POST', '/entitytypes', { body: { key: 'company' } });
    const ids = Array.from({ length: 25 }, (_, i) => `e-${String(i).padStart(2, '0')}`);
    for (const [i, id] of ids.entries()) {
      await own.request('POST', '/entities', { body: { id, type: i % 5 === 0 ? 'company' : 'datasubject', tags: [`t${i % 3}`] } });
    }
    const pages = await Promise.all([0, 1, 2, 3].map((page) => own.request('GET', '/entities', { query: { page: String(page), count: '10' } })));
    t.deepEqual(pages.map((p) => p.body.data.length), [10, 10, 5, 0]);
    t.deepEqual(pages.flatMap((p) => p.body.data.map((e: any) => e.id)), ids);
    t.deepEqual(pages[1].body.data[0].tags, ['t1']);
    t.is((await own.request('GET', '/entities')).body.data.length, 25);
    t.is((await own.request('GET', '/entities', { query: { page: '0' } })).body.data.length, 25, 'default page size 100');
    const subjects = await own.request('GET', '/datasubjects', { query: { count: '7', page: '2' } });
    t.deepEqual(subjects.body.data.map((e: any) => e.id), ['e-18', 'e-19', 'e-21', 'e-22', 'e-23', 'e-24']);
    t.deepEqual(subjects.body.data[0].tags, ['t0']);
    const allSubjects = (await own.request('GET', '/datasubjects')).body.data;
    t.is(allSubjects.length, 20);
    t.deepEqual(allSubjects.find((e: any) => e.id === 'e-04').tags, ['t1']);
    const badQueries: Array<Record<string, string>> = [{ count: '0' }, { count: '1001' }, { page: '-1' }, { count: 'ten' }, { page: '1.5' }];
    for (const query of badQueries) {
      const res = await own.request('GET', '/entities', { query });
      t.is(res.status, 400, JSON.stringify(query));
    }
  } finally {
    await own.close();
  }
});

test('resolveForStore creates on first use inside the caller transaction and checks the type', async (t) => {
  const db = v.vault.db;
  const first = await db.transaction().execute((trx) => resolveForStore(trx, 'stored-1', 'company'));
  t.true(first.created);
  t.like(first.entity, { id: 'stored-1', type: 'company', tags: [], legalHold: false });
  const again = await db.transaction().execute((trx) => resolveForStore(trx, 'stored-1'));
  t.false(again.created);
  t.is(again.entity.type, 'company');

  const mismatch = await t.throwsAsync(db.transaction().execute((trx) => resolveForStore(trx, 'stored-1', 'datasubject')));
  t.true(isVaultError(mismatch) && mismatch.status === 400);
  t.is(mismatch?.message, 'Entity is of type company, which does not match the provided entity type');
  const unknown = await t.throwsAsync(db.transaction().execute((trx) => resolveForStore(trx, 'stored-2', 'nope')));
  t.is(unknown?.message, 'No such entity type');

  // The caller's failure later in its transaction takes the new entity with it.
  await t.throwsAsync(
    db.transaction().execute(async (trx) => {
      await resolveForStore(trx, 'stored-3');
      throw new Error('the store failed');
    }),
  );
  t.is((await v.request('GET', '/entities/stored-3')).status, 404);

  const racers = await Promise.all(Array.from({ length: 5 }, () => db.transaction().execute((trx) => resolveForStore(trx, 'stored-4'))));
  t.is(racers.filter((r) => r.created).length, 1);
  t.true(racers.every((r) => r.entity.type === 'datasubject'));
});

test('hostile input never causes a 5xx', async (t) => {
  await fuzzRoutes(t, v, [
    { method: 'POST', url: '/entities' },
    { method: 'POST', url: '/datasubjects' },
    { method: 'GET', url: '/entities/{id}' },
    { method: 'GET', url: '/datasubjects/{id}' },
    { method: 'GET', url: '/entities?page={id}&count={id}' },
  ]);
});

test('a non-admin application may add tags to an entity but not take any away; an admin may', async (t) => {
  const apiKey = await v.createApplication(['EMAIL']);
  t.is((await v.request('POST', '/entities', { body: { id: 'zed', tags: ['monitored'] } })).status, 201);

  for (const tags of [[], ['other'], ['MONITORED']]) {
    const stripped = await v.request('POST', '/entities', { apiKey, body: { id: 'zed', tags } });
    t.is(stripped.status, 403, JSON.stringify(tags));
    t.is(stripped.body.message, 'Only admins may remove tags from an entity');
  }
  const viaSubjects = await v.request('POST', '/datasubjects', { apiKey, body: { id: 'zed', tags: [] } });
  t.is(viaSubjects.status, 403);
  t.deepEqual((await v.request('GET', '/entities/zed')).body.data.tags, ['monitored'], 'the refused requests changed nothing');

  const added = await v.request('POST', '/entities', { apiKey, body: { id: 'zed', tags: ['monitored', 'vip'] } });
  t.is(added.status, 200);
  t.deepEqual(added.body.data.tags, ['monitored', 'vip']);
  t.is((await v.request('POST', '/entities', { apiKey, body: { id: 'zed' } })).status, 200, 'leaving tags out keeps them');
  t.is((await v.request('POST', '/entities', { apiKey, body: (await v.request('GET', '/entities/zed')).body.data })).status, 200, 'echoing the entity is fine');

  const retype = await v.request('POST', '/entities', { apiKey, body: { id: 'zed', type: 'company' } });
  t.is(retype.status, 400);
  t.is(retype.body.message, 'Entity is of type datasubject, which does not match the provided entity type');

  const cleared = await v.request('POST', '/entities', { body: { id: 'zed', tags: [] } });
  t.is(cleared.status, 200);
  t.deepEqual(cleared.body.data.tags, [], 'an admin may remove tags');
});
