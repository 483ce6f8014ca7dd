import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { RoutesFileError, compileRoutes, loadRoutesFile } from './routes-file.js';

const example = new URL('./fixtures/routes.example.json', import.meta.url);

test('the example routes file compiles and matches by method and path', (t) => {
  const routes = loadRoutesFile(example.pathname);
  t.is(routes.routes.length, 5);
  t.is(routes.match('POST', '/users')?.route.index, 0);
  t.deepEqual(routes.match('GET', '/users/42')?.params, { id: '42' });
  t.is(routes.match('get', '/users/42')?.route.index, 1);
  t.is(routes.match('PATCH', '/users/42')?.route.index, 2);
  t.is(routes.match('DELETE', '/users/a%20b')?.params.id, 'a b');
  t.is(routes.match('GET', '/users')?.route.index, 4);
  t.is(routes.match('GET', '/users/42/orders'), undefined);
  // No empty id: the trailing slash is ignored, so this is the list.
  t.is(routes.match('GET', '/users/')?.route.index, 4);
  // As Express routes by default: literal segments in any case, a trailing slash ignored.
  t.deepEqual(routes.match('GET', '/Users/42/')?.params, { id: '42' });
  t.is(routes.match('POST', '/USERS/')?.route.index, 0);
  // A parameter that does not decode still matches, marked: its events are counted as lost.
  t.like(routes.match('GET', '/users/bad%E0'), { undecodable: true, params: {} });
  t.is(routes.match('GET', '/users/42')?.undecodable, undefined);
  t.is(routes.match('POST', '/users/42'), undefined);
});

test('routes know which bodies they need', (t) => {
  const [store, read, update, del, list] = loadRoutesFile(example.pathname).routes;
  t.like(store, { needsRequestBody: true, needsResponseBody: true, applicationId: 'crm' });
  t.like(read, { needsRequestBody: false, needsResponseBody: true });
  t.like(update, { needsRequestBody: true, needsResponseBody: false });
  t.like(del, { needsRequestBody: false, needsResponseBody: false });
  // The list is in the answer; item sources read nothing else.
  t.like(list, { needsRequestBody: false, needsResponseBody: true, items: { body: 'response', pointer: '/items' } });
  const upload = compileRoutes({
    applicationId: 'a',
    routes: [{ method: 'POST', path: '/import', eventType: 'STORE', items: { request: '' }, subjectId: { item: '/id' }, attributes: { email: { item: '/email' } } }],
  }).routes[0];
  t.like(upload, { needsRequestBody: true, needsResponseBody: false, items: { body: 'request', pointer: '' } });
});

test('wildcards, any-method routes and first-match order', (t) => {
  const routes = compileRoutes({
    applicationId: 'a',
    routes: [
      { method: '*', path: '/files/*', eventType: 'READ', attributes: { file: { param: '*' } }, subjectId: { query: 'owner' } },
      { method: 'GET', path: '/:name', eventType: 'READ', attributes: { x: { param: 'name' } }, subjectId: { param: 'name' } },
    ],
  });
  t.deepEqual(routes.match('DELETE', '/files/a/b/c')?.params, { '*': 'a/b/c' });
  t.is(routes.match('GET', '/files')?.route.index, 1);
  t.is(routes.match('GET', '/other')?.route.index, 1);
});

test('literal segments match the %-encoded paths clients send', (t) => {
  const routes = compileRoutes({
    applicationId: 'a',
    routes: [
      { method: 'GET', path: '/usuários/:id', eventType: 'READ', attributes: { x: {} }, subjectId: { param: 'id' } },
      { method: 'GET', path: '/stra%C3%9Fe/:id', eventType: 'READ', attributes: { x: {} }, subjectId: { param: 'id' } },
      { method: 'GET', path: '/files/*', eventType: 'READ', attributes: { x: {} }, subjectId: { param: '*' } },
    ],
  });
  t.deepEqual(routes.match('GET', '/usu%C3%A1rios/1'), { route: routes.routes[0], params: { id: '1' } });
  t.is(routes.match('GET', '/usu%c3%a1rios/1')?.route.index, 0, 'lowercase hex digits');
  t.is(routes.match('GET', '/USU%C3%81RIOS/1')?.route.index, 0, 'in any case, as before');
  t.is(routes.match('GET', '/usuários/1')?.route.index, 0, 'sent unencoded');
  t.is(routes.match('GET', '/%75suarios/1'), undefined, 'another word');
  // An encoded ASCII letter: /%75sers is /users to the upstream.
  t.deepEqual(loadRoutesFile(example.pathname).match('GET', '/%75sers/%34%32')?.params, { id: '42' });
  // A literal written encoded in the file matches either way.
  t.is(routes.match('GET', '/stra%C3%9Fe/9')?.route.index, 1);
  t.is(routes.match('GET', '/straße/9')?.route.index, 1);
  t.deepEqual(routes.match('GET', '/files/a%20b/c%2Fd')?.params, { '*': 'a b/c/d' });
  // Malformed escapes: still matched, marked, as before.
  t.like(routes.match('GET', '/usu%C3%A1rios/bad%E0'), { route: { index: 0 }, undecodable: true, params: {} });
  t.like(routes.match('GET', '/files/ok/bad%E0'), { route: { index: 2 }, undecodable: true, params: {} });
  t.is(routes.match('GET', '/usu%C3rios/1'), undefined);
  const err = t.throws(() => compileRoutes({ applicationId: 'a', routes: [{ method: 'GET', path: '/bad%E0/:id', eventType: 'READ', attributes: { x: {} }, subjectId: { param: 'id' } }] }));
  t.regex(err!.message, /routes\[0\]\.path has a segment whose %-escapes do not decode: "bad%E0"/);
});

test('literal segments match in either Unicode spelling: composed (NFC) or decomposed (NFD)', (t) => {
  const composed = 'usu\u00e1rios';
  const decomposed = 'usua\u0301rios';
  t.not(composed, decomposed);
  const routes = compileRoutes({
    applicationId: 'a',
    routes: [
      { method: 'GET', path: `/${composed}/:id`, eventType: 'READ', attributes: { x: {} }, subjectId: { param: 'id' } },
      // Configured decomposed, and %-encoded so: normalised once, at compile time.
      { method: 'GET', path: '/stra%CC%88sse/:id', eventType: 'READ', attributes: { x: {} }, subjectId: { param: 'id' } },
    ],
  });
  t.deepEqual(routes.match('GET', '/usua%CC%81rios/1'), { route: routes.routes[0], params: { id: '1' } });
  t.is(routes.match('GET', `/${decomposed}/1`)?.route.index, 0, 'sent unencoded');
  t.is(routes.match('GET', '/USUA%CC%81RIOS/1/')?.route.index, 0, 'in any case, trailing slash, as before');
  t.is(routes.match('GET', '/usu%C3%A1rios/1')?.route.index, 0, 'the composed spelling still matches');
  t.is(routes.match('GET', '/str%C3%A4sse/9')?.route.index, 1, 'a decomposed literal matches the composed request');
  t.is(routes.match('GET', '/stra%CC%88sse/9')?.route.index, 1);
  t.is(routes.match('GET', '/usua%CC%80rios/1'), undefined, 'another accent is another word');
  // Parameters are ids: they reach the event as the client spelled them.
  t.is(routes.match('GET', `/${composed}/jos%C3%A9`)?.params.id, 'jos\u00e9');
  t.is(routes.match('GET', `/${composed}/jose%CC%81`)?.params.id, 'jose\u0301');
});

test('every problem in a routes file is reported with its location', (t) => {
  const err = t.throws(
    () =>
      compileRoutes({
        extra: 1,
        routes: [
          { method: 'GET', path: 'users', eventType: 'LOOK', attributes: {} },
          { method: 'POST', path: '/users', eventType: 'STORE', applicationId: 'a', attributes: { email: { request: 'email' } } },
          { method: 'GET', path: '/u/:id', eventType: 'READ', applicationId: 'a', subjectId: { param: 'uid' }, attributes: { e: { body: '/e' } }, dataPointId: '{nope}', colour: 'red' },
          { method: 'GET', path: '/u/:id', eventType: 'READ', applicationId: 'a', attributes: { e: { param: 'id', query: 'x' } }, data: { value: 1, tags: 'x' } },
          { method: 'GET', path: '/v/:id', eventType: 'READ', applicationId: 'a', subjectId: { param: 'id' }, attributes: { e: {} }, dataPointId: '{subject_id}/{params.*}/{ attribute }' },
        ],
      }),
    { instanceOf: RoutesFileError },
  );
  const text = err!.message;
  for (const fragment of [
    'unknown field "extra"',
    'routes[0].path must be a string starting with "/"',
    'routes[0].eventType must be one of READ, STORE, DELETE, UPDATE',
    'routes[0].applicationId is required',
    'routes[0].attributes must map at least one attribute',
    'routes[1].subjectId is required for STORE routes',
    'routes[1].attributes.email.request must be a JSON pointer',
    'routes[2].colour is not a known field',
    'routes[2].subjectId.param "uid" is not a parameter of routes[2].path',
    'routes[2].attributes.e must have exactly one of param, query, header, request, response',
    'routes[2].dataPointId uses unknown placeholder {nope}',
    'routes[3].attributes.e must have exactly one of',
    'routes[3].data.value is not allowed',
    'routes[3].data.tags must be an array of strings',
    // Each would otherwise stay in every id as written, making one data point of all.
    'routes[4].dataPointId uses unknown placeholder {subject_id}',
    'routes[4].dataPointId uses unknown placeholder {params.*}',
    'routes[4].dataPointId uses unknown placeholder { attribute }',
  ]) {
    t.true(text.includes(fragment), `missing "${fragment}" in:\n${text}`);
  }
});

test("what a route copies into every event is held to the vault's rules at start, not lost event by event", (t) => {
  const route = (extra: Record<string, unknown>) => ({ method: 'GET', path: '/u/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: {} }, ...extra });
  const err = t.throws(
    () =>
      compileRoutes({
        applicationId: 'crm\u001b[2J',
        routes: [
          route({}),
          route({ applicationId: 'crm', dataStoreName: 'users\ndb' }),
          route({ applicationId: 'crm', location: { country: 'D'.repeat(65) } }),
          route({ applicationId: 'crm', data: { tags: ['ok', 'bad\u0085'] } }),
          route({ applicationId: 'crm', dataStoreServer: 'db-1', dataStoreEntityName: 'users' }),
        ],
      }),
    { instanceOf: RoutesFileError },
  );
  const text = err!.message;
  for (const fragment of [
    'routes[0].applicationId must not contain control characters',
    'routes[1].dataStoreName must not contain control characters',
    'routes[2].location.country must be at most 64 characters',
    'routes[3].data.tags[1] must not contain control characters',
  ]) {
    t.true(text.includes(fragment), `missing "${fragment}" in:\n${text}`);
  }
  t.false(text.includes('routes[4]'), text);
});

test('every mistake in list routes is reported with its location', (t) => {
  const list = { method: 'GET', path: '/users/:id', eventType: 'READ', applicationId: 'a' };
  const err = t.throws(
    () =>
      compileRoutes({
        routes: [
          // item sources and {item…} placeholders without items
          { ...list, subjectId: { item: '/id' }, attributes: { email: { item: '/email' } }, applicationUser: { item: '/by' }, dataPointId: '{item/uuid}/{attribute}' },
          // items that is no source of a body, or whose pointer is not RFC 6901
          { ...list, items: { param: 'id' }, subjectId: { item: '/id' }, attributes: { email: {} } },
          { ...list, items: { response: 'items' }, subjectId: { item: '/id' }, attributes: { email: {} } },
          { ...list, items: { response: '/a~2b' }, subjectId: { item: '/id' }, attributes: { email: {} } },
          { ...list, items: '/items', subjectId: { item: '/id' }, attributes: { email: {} } },
          { ...list, items: { response: '/items', request: '/items' }, subjectId: { item: '/id' }, attributes: { email: {} } },
          // item pointers that are not RFC 6901, in sources and in the template
          { ...list, items: { response: '/items' }, subjectId: { item: 'id' }, attributes: { email: { item: '/e~' } }, dataPointId: '{item/x~3}/{attribute}' },
          { ...list, items: { response: '/items' }, subjectId: { item: 7 }, attributes: { email: {} } },
          // every item would report the same data points
          { ...list, items: { response: '/items' }, subjectId: { param: 'id' }, attributes: { email: { item: '/email' } } },
          { ...list, items: { response: '/items' }, subjectId: { item: '/id' }, attributes: { email: {} }, dataPointId: 'a/{attribute}' },
        ],
      }),
    { instanceOf: RoutesFileError },
  );
  const text = err!.message;
  for (const fragment of [
    'routes[0].subjectId.item needs routes[0].items (where the list is)',
    'routes[0].attributes.email.item needs routes[0].items',
    'routes[0].applicationUser.item needs routes[0].items',
    'routes[0].dataPointId uses {item/uuid}, which needs routes[0].items',
    'routes[1].items must have exactly one of request, response',
    'routes[2].items.response must be a JSON pointer such as "/items" ("" for a top-level array)',
    'routes[3].items.response must be a JSON pointer',
    'routes[4].items must be an object with one of request, response',
    'routes[5].items must have exactly one of request, response',
    'routes[6].subjectId.item must be a JSON pointer into the item such as "/id" ("" for the item itself)',
    'routes[6].attributes.email.item must be a JSON pointer',
    'routes[6].dataPointId placeholder {item/x~3} must be {item} followed by a JSON pointer',
    'routes[7].subjectId.item must be a string',
    'routes[8].items: every item would get the same data points',
    'routes[9].items: every item would get the same data points',
  ]) {
    t.true(text.includes(fragment), `missing "${fragment}" in:\n${text}`);
  }
  t.false(text.includes('routes[0].items:'), 'no second complaint about a route without items');
  // Each mistake once.
  t.is(text.split('\n').length - 1, 15, text);
});

test('list routes compile: a list of subjects, or items of one subject told apart in the dataPointId', (t) => {
  const routes = compileRoutes({
    applicationId: 'a',
    routes: [
      { method: 'GET', path: '/export', eventType: 'READ', items: { response: '' }, subjectId: { item: '' }, attributes: { email: {} } },
      { method: 'GET', path: '/users/:id/addresses', eventType: 'READ', items: { response: '/data/addresses' }, subjectId: { param: 'id' },
        attributes: { address: { item: '/text' } }, dataPointId: '{applicationId}/{subjectId}/{attribute}/{item/id}' },
    ],
  });
  t.like(routes.routes[0], { items: { body: 'response', pointer: '', tokens: [] }, subjectId: { kind: 'item', pointer: '', tokens: [] } });
  t.like(routes.routes[1], { items: { tokens: ['data', 'addresses'] }, itemPlaceholders: { 'item/id': ['id'] } });
});

test('unreadable and non-JSON files fail with the file name', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'routes-'));
  try {
    const file = join(dir, 'routes.json');
    t.throws(() => loadRoutesFile(file), { message: /invalid routes file .*routes\.json:[\s\S]*cannot read/ });
    writeFileSync(file, '{ nope');
    t.throws(() => loadRoutesFile(file), { message: /not valid JSON/ });
    writeFileSync(file, '{"routes": []}');
    t.throws(() => loadRoutesFile(file), { message: /routes must be a non-empty array/ });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the README shows this very routes file', (t) => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const fixture = readFileSync(example, 'utf8').trim();
  t.true(readme.includes('```json\n' + fixture + '\n```'), 'README routes example differs from fixtures/routes.example.json');
});
