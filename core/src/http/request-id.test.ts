import test from 'ava';
import { startTestVault } from '../testing/harness.js';

/** The `request completed` line of the request that carried `id`, if any. */
function lineOf(logs: string[], id: string): Record<string, unknown> | undefined {
  return logs
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.reqId === id && l.msg === 'request completed');
}

test('every answer carries X-Request-Id, the reqId of its log line', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const answers = [
    await v.request('GET', '/entitytypes'),
    await v.request('GET', '/entitytypes', { apiKey: 'not-a-key-of-anyone-000000' }),
    await v.request('GET', '/no/such/route'),
    await v.request('POST', '/entitytypes', { payload: '{"broken', headers: { 'content-type': 'application/json' } }),
    await v.request('GET', '/healthz', { apiKey: null }),
    // Refused before routing: a path that is not percent-encoded UTF-8.
    await v.request('GET', '/data/%ff%fe'),
  ];
  t.deepEqual(answers.map((a) => a.status), [200, 401, 404, 400, 200, 400]);
  const ids = answers.map((a) => String(a.headers['x-request-id'] ?? ''));
  for (const [i, id] of ids.entries()) {
    t.regex(id, /^[0-9a-f-]{36}$/, `answer ${i}`);
    const line = lineOf(v.logs, id);
    t.truthy(line, `log line of answer ${i}`);
    t.is(line?.statusCode, answers[i].status);
  }
  t.is(new Set(ids).size, ids.length, 'each request its own id');
  const metrics = String((await v.request('GET', '/metrics', { apiKey: null })).body);
  t.regex(metrics, /^vault_http_requests_total\{method="GET",route="unmatched",status="400"\} 1$/m, 'the request refused before routing is counted');
});

test("a proxy's X-Request-Id is kept when it is a plain token, replaced otherwise", async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const kept = await v.request('GET', '/entitytypes', { headers: { 'x-request-id': 'nginx-4f2a9c01' } });
  t.is(kept.headers['x-request-id'], 'nginx-4f2a9c01');
  t.truthy(lineOf(v.logs, 'nginx-4f2a9c01'));
  for (const hostile of ['a b', 'x'.repeat(200), '{"level":60}', 'line\u00e9']) {
    const res = await v.request('GET', '/entitytypes', { headers: { 'x-request-id': hostile } });
    t.regex(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  }
});
