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
  const built = buildEvents(route, ctx({ params, headers: { 'x-user': 'clerk' }, responseBody: { email: 'a@b.c', phone: null } }));
  t.is(built.events.length, 2);
  t.deepEqual(built.events[0], { eventType: 'READ', applicationId: 'crm', dataPointId: 'crm/7/email', subjectId: '7', applicationUser: 'clerk', data: { attribute: 'email' } });
  t.is(built.events[1].dataPointId, 'crm/7/phone');
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
