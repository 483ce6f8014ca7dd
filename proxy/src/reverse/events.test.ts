import test from 'ava';
import { buildEvents, type TrafficContext } from './events.js';
import { compileRoutes, loadRoutesFile } from './routes-file.js';

const routes = loadRoutesFile(new URL('./fixtures/routes.example.json', import.meta.url).pathname);

function ctx(partial: Partial<TrafficContext>): TrafficContext {
  return { params: {}, query: new URLSearchParams(), headers: {}, ...partial };
}

test('a STORE route yields one event per attribute, with values and static fields', (t) => {
  const { route, params } = routes.match('POST', '/users')!;
  const built = buildEvents(route, ctx({ params, requestBody: { email: 'a@b.c', phone: '+49 1' }, responseBody: { id: 42 } }));
  t.deepEqual(built.events, [
    {
      eventType: 'STORE', applicationId: 'crm', dataPointId: 'crm/42/email', subjectId: '42',
      dataStoreName: 'crm-db', dataStoreEntityName: 'users',
      data: { regulations: ['GDPR'], reportOnly: true, attribute: 'email', value: 'a@b.c' },
    },
    {
      eventType: 'STORE', applicationId: 'crm', dataPointId: 'crm/42/phone', subjectId: '42',
      dataStoreName: 'crm-db', dataStoreEntityName: 'users',
      data: { regulations: ['GDPR'], reportOnly: true, attribute: 'phone', value: '+49 1' },
    },
  ]);
});

test('an event the vault could never take is lost, with the field and the problem but not the value', (t) => {
  const { route, params } = routes.match('GET', '/users/a%00b')!;
  const built = buildEvents(route, ctx({ params, responseBody: { email: 'a@b.c' } }));
  t.deepEqual(built.events, []);
  t.deepEqual(built.lost, [{ attribute: 'email', reason: 'invalid-event', problem: 'holds a NUL character' }]);
  const long = routes.match('GET', `/users/${'x'.repeat(513)}`)!;
  t.deepEqual(buildEvents(long.route, ctx({ params: long.params, responseBody: { email: 'a@b.c' } })).lost[0], {
    attribute: 'email', reason: 'invalid-event', problem: 'dataPointId must be at most 512 characters',
  });
});

test('an event whose ids or user from the traffic hold a control character is lost, never queued for the vault to refuse', (t) => {
  const problems = (built: ReturnType<typeof buildEvents>) => built.lost.map((l) => `${l.attribute}: ${l.problem}`);
  const { route, params } = routes.match('GET', '/users/a%0Ab')!;
  const inPath = buildEvents(route, ctx({ params, responseBody: { email: 'a@b.c' } }));
  t.deepEqual(inPath.events, []);
  t.deepEqual(problems(inPath), ['email: subjectId must not contain control characters']);
  // A header arrives as latin1: byte 0x85 is NEL, which some log viewers take for a line break.
  const user = routes.match('GET', '/users/7')!;
  const fromHeader = buildEvents(user.route, ctx({ params: user.params, headers: { 'x-user': 'clerk\u0085admin' }, responseBody: { email: 'a@b.c' } }));
  t.deepEqual(fromHeader.events, []);
  t.deepEqual(fromHeader.lost, [{ attribute: 'email', reason: 'invalid-event', problem: 'applicationUser must not contain control characters' }]);
  // A route without a subject: the vault would take such an id only for a point it stored
  // under it earlier, and a dead letter for any other; traffic is not where such ids are made.
  const docs = compileRoutes({
    routes: [{ method: 'GET', path: '/docs/:doc', eventType: 'READ', applicationId: 'docs', attributes: { body: {} }, dataPointId: 'docs/{params.doc}' }],
  });
  const doc = docs.match('GET', '/docs/a%1B%5B2Kb')!;
  const noSubject = buildEvents(doc.route, ctx({ params: doc.params }));
  t.deepEqual(noSubject.events, []);
  t.deepEqual(noSubject.lost, [{ attribute: 'body', reason: 'invalid-event', problem: 'dataPointId must not contain control characters' }]);
  // From a list item's id, summed up per attribute.
  const list = routes.match('GET', '/users')!;
  const items = buildEvents(list.route, ctx({ params: list.params, responseBody: { items: [{ id: 'u\r1', email: 'a@x' }, { id: 'u-2', email: 'b@x' }] } }));
  t.deepEqual(items.events.map((e) => e.dataPointId), ['crm/u-2/email']);
  t.deepEqual(problems(items), ['email: subjectId must not contain control characters']);
});

test('attributes missing from the traffic produce no event, and a STORE needs its subject', (t) => {
  const { route, params } = routes.match('POST', '/users')!;
  const partial = buildEvents(route, ctx({ params, requestBody: { email: 'a@b.c' }, responseBody: { id: 'u1' } }));
  t.deepEqual(partial.events.map((e) => e.data?.attribute), ['email']);
  t.deepEqual(partial.skipped, [{ attribute: 'phone', reason: 'value not found' }]);
  const noSubject = buildEvents(route, ctx({ params, requestBody: { email: 'a@b.c' } }));
  t.deepEqual(noSubject.events, []);
  t.deepEqual(noSubject.lost[0], { attribute: 'email', reason: 'subject-not-found', problem: 'no subject id in the traffic' });
});

test('READ routes can leave values out and take the user from a header', (t) => {
  const { route, params } = routes.match('GET', '/users/7')!;
  const built = buildEvents(route, ctx({ params, headers: { 'x-user': 'clerk' }, responseBody: { email: 'a@b.c', phone: '+49 1' } }));
  t.is(built.events.length, 2);
  t.deepEqual(built.events[0], { eventType: 'READ', applicationId: 'crm', dataPointId: 'crm/7/email', subjectId: '7', applicationUser: 'clerk', data: { attribute: 'email' } });
  t.is(built.events[1].dataPointId, 'crm/7/phone');
});

test('a null in a response shows nothing: no READ of it, and nothing lost', (t) => {
  const { route, params } = routes.match('GET', '/users/7')!;
  const built = buildEvents(route, ctx({ params, responseBody: { id: '7', email: null, phone: '+49 1' } }));
  t.deepEqual(built.events.map((e) => e.dataPointId), ['crm/7/phone']);
  t.deepEqual(built.skipped, [{ attribute: 'email', reason: 'value is null' }]);
  t.deepEqual(built.lost, []);
});

test('a null in a STORE request stores nothing: no event for it, and nothing lost', (t) => {
  const { route, params } = routes.match('POST', '/users')!;
  const built = buildEvents(route, ctx({ params, requestBody: { email: null, phone: '+49 1' }, responseBody: { id: 'u1' } }));
  t.deepEqual(built.events.map((e) => [e.eventType, e.dataPointId]), [['STORE', 'crm/u1/phone']]);
  t.deepEqual(built.skipped, [{ attribute: 'email', reason: 'value is null' }]);
  t.deepEqual(built.lost, []);
});

test("an UPDATE request setting an attribute to null erases it: reported as the data point's DELETE, without a value", (t) => {
  const { route, params } = routes.match('PATCH', '/users/7')!;
  const built = buildEvents(route, ctx({ params, requestBody: { email: null }, responseBody: { id: '7', email: null } }));
  t.deepEqual(built.events, [{ eventType: 'DELETE', applicationId: 'crm', dataPointId: 'crm/7/email', subjectId: '7', data: { attribute: 'email' } }]);
  t.deepEqual(built.lost, []);
});

test("a null in an UPDATE's response (not one its request sets) shows nothing", (t) => {
  const update = compileRoutes({
    routes: [{ method: 'PATCH', path: '/users/:id', eventType: 'UPDATE', applicationId: 'crm', subjectId: { param: 'id' },
      attributes: { email: { response: '/email' }, phone: { response: '/phone' } } }],
  });
  const { route, params } = update.match('PATCH', '/users/7')!;
  const built = buildEvents(route, ctx({ params, responseBody: { email: null, phone: '+49 1' } }));
  t.deepEqual(built.events.map((e) => [e.eventType, e.dataPointId, e.data?.value]), [['UPDATE', 'crm/7/phone', '+49 1']]);
  t.deepEqual(built.lost, []);
});

test('attributes configured as {} are reported whatever the bodies hold, nulls included', (t) => {
  const reads = compileRoutes({
    routes: [{ method: 'GET', path: '/users/:id', eventType: 'READ', applicationId: 'crm', subjectId: { param: 'id' }, attributes: { email: {} } }],
  });
  const { route, params } = reads.match('GET', '/users/7')!;
  const built = buildEvents(route, ctx({ params, responseBody: { email: null } }));
  t.deepEqual(built.events.map((e) => [e.eventType, e.dataPointId, e.data]), [['READ', 'crm/7/email', { attribute: 'email' }]]);
});

test('attributes without a source are reported without a value', (t) => {
  const { route, params } = routes.match('DELETE', '/users/7')!;
  const built = buildEvents(route, ctx({ params }));
  t.deepEqual(built.events.map((e) => [e.eventType, e.dataPointId, e.data]), [
    ['DELETE', 'crm/7/email', { attribute: 'email' }],
    ['DELETE', 'crm/7/phone', { attribute: 'phone' }],
  ]);
});

test('custom dataPointId templates and query sources', (t) => {
  const custom = compileRoutes({
    routes: [{ method: 'GET', path: '/t/:tenant/doc', eventType: 'READ', applicationId: 'docs', subjectId: { query: 'owner' },
      attributes: { body: {} }, dataPointId: '{params.tenant}:{subjectId}:{attribute}' }],
  });
  const { route, params } = custom.match('GET', '/t/acme/doc')!;
  const built = buildEvents(route, ctx({ params, query: new URLSearchParams('owner=o1') }));
  t.is(built.events[0].dataPointId, 'acme:o1:body');
  t.is(built.events[0].subjectId, 'o1');
});

test("a template's {params.*} is the rest of the path, so each file under a wildcard is its own data point", (t) => {
  const files = compileRoutes({
    routes: [{ method: 'GET', path: '/files/:owner/*', eventType: 'READ', applicationId: 'drive', subjectId: { param: 'owner' },
      attributes: { document: {} }, dataPointId: '{applicationId}/{params.owner}/{params.*}' }],
  });
  const ids = ['/files/u1/taxes/2024.pdf', '/files/u1/cv.pdf'].map((path) => {
    const { route, params } = files.match('GET', path)!;
    return buildEvents(route, ctx({ params })).events[0].dataPointId;
  });
  t.deepEqual(ids, ['drive/u1/taxes/2024.pdf', 'drive/u1/cv.pdf']);
});

test('a list route yields one event per item per attribute the item shows', (t) => {
  const { route, params } = routes.match('GET', '/users')!;
  const responseBody = {
    items: [
      { id: 'u-1', email: 'a@x', phone: '+1' },
      { id: 'u-2', email: 'b@x' },
      { id: 3, email: 'c@x', phone: null },
    ],
    next: 'cursor-2',
  };
  const built = buildEvents(route, ctx({ params, headers: { 'x-user': 'clerk' }, responseBody }));
  t.deepEqual(built.events.map((e) => [e.eventType, e.subjectId, e.dataPointId, e.applicationUser, e.data]), [
    ['READ', 'u-1', 'crm/u-1/email', 'clerk', { attribute: 'email' }],
    ['READ', 'u-1', 'crm/u-1/phone', 'clerk', { attribute: 'phone' }],
    ['READ', 'u-2', 'crm/u-2/email', 'clerk', { attribute: 'email' }],
    // null shows nothing, as on single routes, and neither does an absent field.
    ['READ', '3', 'crm/3/email', 'clerk', { attribute: 'email' }],
  ]);
  t.deepEqual(built.skipped, [
    { attribute: 'phone', reason: 'value not found', item: 1, count: 1 },
    { attribute: 'phone', reason: 'value is null', item: 2, count: 1 },
  ]);
  t.deepEqual(built.lost, []);
  t.is(built.overLimit, 0);
});

test('a top-level array, with values and an id from the item in the dataPointId', (t) => {
  const routes2 = compileRoutes({
    applicationId: 'shop',
    routes: [{ method: 'GET', path: '/customers/:id/addresses', eventType: 'READ', items: { response: '' }, subjectId: { param: 'id' },
      attributes: { address: { item: '/text' }, note: {} }, dataPointId: '{applicationId}/{subjectId}/{attribute}/{item/id}' }],
  });
  const { route, params } = routes2.match('GET', '/customers/c-9/addresses')!;
  const built = buildEvents(route, ctx({ params, responseBody: [{ id: 'a1', text: 'Main St 1' }, { id: 2, text: null }] }));
  t.deepEqual(built.events.map((e) => [e.subjectId, e.dataPointId, e.data]), [
    ['c-9', 'shop/c-9/address/a1', { attribute: 'address', value: 'Main St 1' }],
    ['c-9', 'shop/c-9/note/a1', { attribute: 'note' }],
    ['c-9', 'shop/c-9/note/2', { attribute: 'note' }],
  ]);
});

test('an empty, null or absent list shows nothing; anything else where the list should be is said so', (t) => {
  const { route, params } = routes.match('GET', '/users')!;
  for (const responseBody of [{ items: [] }, { items: null }, { next: null }, undefined]) {
    const built = buildEvents(route, ctx({ params, responseBody }));
    t.deepEqual([built.events, built.lost, built.notAList], [[], [], undefined], JSON.stringify(responseBody));
  }
  t.is(buildEvents(route, ctx({ params, responseBody: { items: { id: 'u-1', email: 'a@x' } } })).notAList, 'object');
  t.is(buildEvents(route, ctx({ params, responseBody: { items: 'u-1' } })).notAList, 'string');
});

test("items whose events cannot be built are lost, summed up per attribute and problem, never the value", (t) => {
  const { route, params } = routes.match('GET', '/users')!;
  const items = [
    { email: 'no-id-1@x' }, { id: 'u-1', email: 'a@x' }, { id: '', email: 'no-id-2@x' }, { id: 'x'.repeat(513), email: 'long@x', phone: '1' }, 'not an object',
  ];
  const built = buildEvents(route, ctx({ params, responseBody: { items } }));
  t.deepEqual(built.events.map((e) => e.dataPointId), ['crm/u-1/email']);
  t.deepEqual(built.lost, [
    { attribute: 'email', reason: 'subject-not-found', problem: 'no subject id in the traffic', item: 0, count: 2 },
    { attribute: 'email', reason: 'invalid-event', problem: 'dataPointId must be at most 512 characters', item: 3, count: 1 },
    { attribute: 'phone', reason: 'invalid-event', problem: 'dataPointId must be at most 512 characters', item: 3, count: 1 },
  ]);
  t.false(JSON.stringify(built.lost).includes('@x'));
  // An id for the dataPointId that the item lacks: no data point can be named.
  const routes2 = compileRoutes({
    routes: [{ method: 'GET', path: '/u/:id/notes', eventType: 'READ', applicationId: 'a', items: { response: '/notes' }, subjectId: { param: 'id' },
      attributes: { note: { item: '/text' } }, dataPointId: 'a/{subjectId}/{item/id}' }],
  });
  const notes = routes2.match('GET', '/u/s-1/notes')!;
  const built2 = buildEvents(notes.route, ctx({ params: notes.params, responseBody: { notes: [{ id: 'n1', text: 't' }, { id: { no: 1 }, text: 't' }, { text: 't' }] } }));
  t.deepEqual(built2.events.map((e) => e.dataPointId), ['a/s-1/n1']);
  t.deepEqual(built2.lost, [{ attribute: 'note', reason: 'invalid-event', problem: 'dataPointId needs {item/id}, which the item does not have', item: 1, count: 2 }]);
});

test('events over the bound per request are not built, only counted', (t) => {
  const { route, params } = routes.match('GET', '/users')!;
  const items = Array.from({ length: 5 }, (_, i) => ({ id: `u-${i}`, email: `${i}@x`, ...(i === 3 ? {} : { phone: `${i}` }) }));
  const built = buildEvents(route, ctx({ params, responseBody: { items } }), 3);
  t.deepEqual(built.events.map((e) => e.dataPointId), ['crm/u-0/email', 'crm/u-0/phone', 'crm/u-1/email']);
  // u-1's phone, u-2's two, u-3's email (it shows no phone), u-4's two.
  t.is(built.overLimit, 6);
  t.is(buildEvents(route, ctx({ params, responseBody: { items } }), 9).overLimit, 0);
  // Single routes are bound too: more attributes than the bound are as much a flood.
  const store = routes.match('POST', '/users')!;
  const one = buildEvents(store.route, ctx({ params: store.params, requestBody: { email: 'a@b.c', phone: '1' }, responseBody: { id: 'u' } }), 1);
  t.deepEqual([one.events.length, one.overLimit], [1, 1]);
});

test('a list in the request body: items of an import', (t) => {
  const routes2 = compileRoutes({
    routes: [{ method: 'POST', path: '/import', eventType: 'STORE', applicationId: 'crm', items: { request: '/users' }, subjectId: { item: '/id' },
      attributes: { email: { item: '/contact/email' } }, dataStoreName: 'crm-db' }],
  });
  const { route, params } = routes2.match('POST', '/import')!;
  const built = buildEvents(route, ctx({ params, requestBody: { users: [{ id: 'i-1', contact: { email: 'i1@x' } }, { id: 'i-2', contact: {} }] } }));
  t.deepEqual(built.events, [
    { eventType: 'STORE', applicationId: 'crm', dataPointId: 'crm/i-1/email', subjectId: 'i-1', dataStoreName: 'crm-db', data: { attribute: 'email', value: 'i1@x' } },
  ]);
});
