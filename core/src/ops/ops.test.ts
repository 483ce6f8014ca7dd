import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { createPostgresDatabase, startTestVault } from '../testing/harness.js';

test('healthz answers without a key; readyz reports the database and migrations', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const health = await v.request('GET', '/healthz', { apiKey: null });
  t.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
  const ready = await v.request('GET', '/readyz', { apiKey: null });
  t.deepEqual([ready.status, ready.body], [200, { status: 'ready' }]);
});

test('readyz fails once a newer release has migrated the database, so an old process left running is taken out', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  t.is((await v.request('GET', '/readyz', { apiKey: null })).status, 200);
  // What a newer release's start does to the database beneath this one.
  await sql`insert into kysely_migration (name, timestamp) values ('9999_from_a_newer_release', ${new Date().toISOString()})`.execute(v.vault.db);
  const stale = await v.request('GET', '/readyz', { apiKey: null });
  t.deepEqual([stale.status, stale.body], [503, { status: 'unavailable', reason: 'database migrated by a newer release' }]);
});

test('readyz fails when the database goes away', async (t) => {
  const database = await createPostgresDatabase();
  const v = await startTestVault({ env: { VAULT_DB: database.url } });
  t.teardown(async () => {
    await v.close().catch(() => {});
    await database.drop();
  });
  // As a load balancer does: a probe that times out while a loaded machine opens its first
  // connection is retried, so wait for ready before taking the database away.
  const until = Date.now() + 30_000;
  let ready = await v.request('GET', '/readyz', { apiKey: null });
  while (ready.status !== 200 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 200));
    ready = await v.request('GET', '/readyz', { apiKey: null });
  }
  t.is(ready.status, 200);
  await database.drop();
  const gone = await v.request('GET', '/readyz', { apiKey: null });
  t.is(gone.status, 503);
  t.deepEqual(gone.body, { status: 'unavailable', reason: 'database unreachable' });
  t.is((await v.request('GET', '/healthz', { apiKey: null })).status, 200, 'the process itself is still up');
});

test('metrics count operations by route template and kind, never by id, key or value', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const secretId = 'customer-4711-ada@example.org';
  const secretValue = 'ada.lovelace@analytical.example';
  await v.request('POST', '/attributes', { body: { key: 'EMAIL', schema: 'string', indexed: true } });
  await v.request('POST', '/rules', {
    body: { key: 'watch_email', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL'] }, action: { type: 'alert', alertLevel: 'WARNING', message: 'email stored' } },
  });
  const stored = await v.request('POST', `/entities/${encodeURIComponent(secretId)}/attributes`, {
    body: { data: [{ attribute: 'EMAIL', value: secretValue }] },
    headers: { 'x-encryption-key': v.keys.publicKey },
  });
  t.is(stored.status, 200);
  const pointId = stored.body.data[0].dataPointId;
  // As after a restart: the data key the store made is no longer in memory.
  v.vault.datapoints.dataKeys.clear();
  for (let i = 0; i < 2; i++) {
    t.is((await v.request('GET', `/data/${pointId}`, { headers: { 'x-decryption-key': v.keys.privateKey } })).status, 200);
  }
  t.is((await v.request('POST', '/search', { body: { query: { values: [{ attribute: 'EMAIL', value: secretValue }] } } })).status, 200);
  t.is((await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', subjectId: 'report-only-subject', data: { attribute: 'EMAIL' }, applicationId: 'crm' } })).status, 200);
  await v.request('GET', `/entitytypes/${encodeURIComponent(secretId)}`);

  const res = await v.request('GET', '/metrics', { apiKey: null });
  t.is(res.status, 200);
  const text = String(res.body);
  t.regex(text, /vault_http_requests_total\{method="GET",route="\/entitytypes\/:typeKey",status="404"\} 1/);
  t.regex(text, /vault_datapoints_total\{operation="store"\} 1/);
  t.regex(text, /vault_datapoints_total\{operation="read"\} 2/);
  t.regex(text, /vault_searches_total 1/);
  t.regex(text, /vault_audit_events_total 1/);
  t.regex(text, /vault_alerts_total\{level="WARNING"\} 1/);
  t.regex(text, /vault_rule_evaluations_total\{type="data"\} 1/);
  // The first read unwrapped the data key; the second found it in memory.
  t.regex(text, /vault_data_key_cache_hit_ratio 0\.5/);
  // Counters too, so a rate over the last minutes shows misses the ratio since start would hide.
  t.regex(text, /^vault_data_key_cache_lookups_total\{result="hit"\} 1$/m);
  t.regex(text, /^vault_data_key_cache_lookups_total\{result="miss"\} 1$/m);
  for (const secret of [secretId, secretValue, pointId, v.adminKey, v.keys.privateKey.slice(0, 40), v.keys.publicKey.slice(0, 40)]) {
    t.false(text.includes(secret), secret);
  }
});

test('metrics count committed work only: a store that rolled back, or that a rule blocked, stored no point', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string' } });
  await v.request('POST', '/attributes', { body: { key: 'CARD', schema: 'string' } });
  t.is((await v.request('POST', '/rules', { body: { key: 'no_cards', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['CARD'] }, action: { type: 'block' } } })).status, 201);
  // Fails a store's last statement, after its rules ran and its records were appended.
  if (v.vault.dialect === 'postgres') {
    await sql`create function refuse_doomed() returns trigger language plpgsql as $$ begin if new.entity_id = 'doomed' then raise exception 'refused by the test'; end if; return new; end $$`.execute(v.vault.db);
    await sql`create trigger refuse_doomed before insert on datapoints for each row execute function refuse_doomed()`.execute(v.vault.db);
  } else {
    await sql`create trigger refuse_doomed before insert on datapoints when new.entity_id = 'doomed' begin select raise(abort, 'refused by the test'); end`.execute(v.vault.db);
  }
  const store = (subject: string, attribute: string) =>
    v.request('POST', `/entities/${subject}/attributes`, { body: { data: [{ attribute, value: 'x' }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
  t.is((await store('doomed', 'NOTE')).status, 500);
  t.is((await store('card-holder', 'CARD')).status, 403);
  t.is((await store('kept', 'NOTE')).status, 200);
  t.is((await v.request('GET', '/entities/doomed/attributes', { headers: { 'x-decryption-key': v.keys.privateKey } })).status, 404, 'the failed store kept nothing');

  const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
  t.regex(text, /^vault_datapoints_total\{operation="store"\} 1$/m);
  // The kept store's evaluation, and the block's: a refusal stands. Not the rolled-back one's.
  t.regex(text, /^vault_rule_evaluations_total\{type="data"\} 2$/m);
});

test("metrics count an application's audit event once, and deleting its report-only point as a delete", async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  await v.request('POST', '/attributes', { body: { key: 'EMAIL', schema: 'string' } });
  const pointId = 'reported-point-1';
  const reported = await v.request('POST', '/auditlogs', { body: { eventType: 'STORE', dataPointId: pointId, subjectId: 'reported-subject', data: { attribute: 'EMAIL' }, applicationId: 'crm' } });
  t.is(reported.status, 200);
  t.is((await v.request('DELETE', `/data/${pointId}`)).status, 200);

  const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
  t.regex(text, /^vault_audit_events_total 1$/m);
  t.regex(text, /^vault_datapoints_total\{operation="delete"\} 1$/m);
});

test('on SQLite, metrics show the checkpoint thread copying the log into the file', async (t) => {
  // SQLite in both passes: the checkpoint thread exists only there.
  const dir = mkdtempSync(join(tmpdir(), 'vault-checkpoints-'));
  const v = await startTestVault({ env: { VAULT_DB: `sqlite:${join(dir, 'vault.db')}` } });
  t.teardown(async () => {
    await v.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const scrape = async () => String((await v.request('GET', '/metrics', { apiKey: null })).body);
  // The log's pages show as copied from one checkpoint until the writer starts the log over,
  // which any write may do: a write now and then keeps pages coming until one scrape sees both.
  const deadline = Date.now() + 30_000;
  let text = '';
  for (let i = 0; Date.now() < deadline; i++) {
    if (i % 20 === 0) t.is((await v.request('POST', '/attributes', { body: { key: `NOTE_${i}`, schema: 'string' } })).status, 201);
    text = await scrape();
    if (/vault_sqlite_checkpoints_total [1-9]/.test(text) && /vault_sqlite_wal_pages\{state="copied"\} [1-9]/.test(text)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.regex(text, /vault_sqlite_checkpoints_total [1-9]/);
  t.regex(text, /vault_sqlite_wal_pages\{state="copied"\} [1-9]/);
});

test('on PostgreSQL, metrics carry no SQLite series', async (t) => {
  const database = await createPostgresDatabase();
  const v = await startTestVault({ env: { VAULT_DB: database.url } });
  t.teardown(async () => {
    await v.close();
    await database.drop();
  });
  const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
  t.regex(text, /^vault_activity_sealed_total /m);
  t.notRegex(text, /vault_sqlite_/);
});

test('every answer carries security headers and is not cacheable', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const answers = [
    await v.request('GET', '/entitytypes'),
    await v.request('GET', '/entitytypes', { apiKey: 'not-a-key-of-anyone' }),
    await v.request('GET', '/no/such/route'),
    await v.request('POST', '/entities', { payload: '{"broken', headers: { 'content-type': 'application/json' } }),
  ];
  t.deepEqual(answers.map((res) => res.status), [200, 401, 404, 400]);
  for (const res of answers) {
    t.is(res.headers['x-content-type-options'], 'nosniff');
    t.regex(String(res.headers['strict-transport-security']), /max-age=/);
    t.is(res.headers['cache-control'], 'no-store');
    t.is(res.headers['x-frame-options'], 'SAMEORIGIN');
    t.is(res.headers['referrer-policy'], 'no-referrer');
  }
});

test('an application over its rate limit gets 429 with Retry-After; others are unaffected', async (t) => {
  const v = await startTestVault({ env: { VAULT_RATE_LIMIT_MAX: '3', VAULT_RATE_LIMIT_WINDOW_MS: '60000' } });
  t.teardown(() => v.close());
  const other = await v.createApplication(['*']);
  const statuses = [];
  for (let i = 0; i < 4; i++) statuses.push((await v.request('GET', '/entitytypes')).status);
  t.deepEqual(statuses.slice(0, 2), [200, 200]);
  const limited = await v.request('GET', '/entitytypes');
  t.is(limited.status, 429);
  t.regex(limited.body.message, /^Rate limit exceeded, retry in \d+ seconds$/);
  t.truthy(limited.headers['retry-after']);
  t.is((await v.request('GET', '/entitytypes', { apiKey: other })).status, 200);
  t.is((await v.request('GET', '/healthz', { apiKey: null })).status, 200, 'health checks are never limited');
});

test('repeated failed authentication from one address is answered 429', async (t) => {
  const v = await startTestVault({ env: { VAULT_AUTH_FAILURE_LIMIT: '3' } });
  t.teardown(() => v.close());
  for (let i = 0; i < 3; i++) t.is((await v.request('GET', '/entitytypes', { apiKey: `guess-${i}-0000000000000` })).status, 401);
  const blocked = await v.request('GET', '/entitytypes', { apiKey: 'guess-4-0000000000000' });
  t.is(blocked.status, 429);
  t.is(blocked.body.message, 'Too many failed authentication attempts');
  t.truthy(blocked.headers['retry-after']);
});

test('the vault serves HTTPS when given a certificate and key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vault-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const v = await startTestVault({ env: { VAULT_TLS_CERT: cert, VAULT_TLS_KEY: key } });
  t.teardown(() => v.close());
  await v.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = v.app.server.address() as { port: number };
  const { readFileSync } = await import('node:fs');
  const dispatcher = new Agent({ connect: { ca: readFileSync(cert) } });
  const res = await request(`https://127.0.0.1:${port}/entitytypes`, { headers: { authorization: `Bearer ${v.adminKey}` }, dispatcher });
  t.is(res.statusCode, 200);
  t.is(((await res.body.json()) as any).data[0].key, 'datasubject');
  await dispatcher.close();
});

test('on PostgreSQL, metrics show how long the oldest activity record has waited for its seal, even while no seal happens', async (t) => {
  const database = await createPostgresDatabase();
  const v = await startTestVault({ env: { VAULT_DB: database.url } });
  t.teardown(async () => {
    await v.close();
    await database.drop();
  });
  const age = async () => {
    const text = String((await v.request('GET', '/metrics', { apiKey: null })).body);
    const found = /^vault_activity_unsealed_oldest_age_seconds (\S+)$/m.exec(text);
    return found ? Number(found[1]) : undefined;
  };
  await v.vault.sealer.sealAll();
  // A sealer that stopped chaining (stuck, or its lock held elsewhere): the lag histogram gets no samples then.
  await v.vault.sealer.stop();
  t.is(await age(), 0, 'nothing waits');
  t.is((await v.request('POST', '/attributes', { body: { key: 'NOTE', schema: 'string' } })).status, 201);
  let waited = (await age()) ?? 0;
  const deadline = Date.now() + 30_000;
  while (waited < 1.5 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    waited = (await age()) ?? 0;
  }
  t.true(waited >= 1.5);
});

test('hostile paths, methods and ids add no series: labels hold route templates and bounded values only', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  const scrape = async () => String((await v.request('GET', '/metrics', { apiKey: null })).body);
  // Node's own metrics are left out: their labels are Node's (a GC kind's series appear with
  // its first collection, which may fall in the middle of the requests), never the input's.
  const seriesOf = (text: string) =>
    text
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('vault_nodejs_'))
      .map((l) => l.slice(0, l.lastIndexOf(' ')));
  const series = (text: string) => seriesOf(text).length;
  const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];
  const fire = async (round: number) => {
    const ids: string[] = [];
    for (let i = 0; i < 500; i++) {
      const id = `${round}-${i}-${Math.random().toString(36).slice(2)}`;
      ids.push(id);
      const method = methods[i % methods.length];
      const path = [`/data/${id}`, `/no/such/route/${id}`, `/entities/${id}/attributes`, `/applications/${id}`, `/rules/${id}`][i % 5];
      await v.request(method, path, { apiKey: i % 3 === 0 ? `key-${id}-0000000000` : undefined });
    }
    return ids;
  };
  await fire(0);
  // The first scrape is itself a request: counted from the second on.
  await scrape();
  const beforeText = await scrape();
  const before = series(beforeText);
  const ids = await fire(1);
  const text = await scrape();
  const known = new Set(seriesOf(beforeText));
  t.is(series(text), before, `another 500 random paths added no series; new: ${seriesOf(text).filter((l) => !known.has(l)).slice(0, 12).join(', ')}`);
  t.false(ids.some((id) => text.includes(id)), 'no path id in a label');
  const routes = new Set([...text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]));
  for (const route of routes) t.regex(route, /^(unmatched|\/[\w/:.*-]*)$/);
  t.true(routes.has('unmatched'));
});

test('readyz fails while a migration this release needs is not applied, and healthz stays up', async (t) => {
  const v = await startTestVault();
  t.teardown(() => v.close());
  t.is((await v.request('GET', '/readyz', { apiKey: null })).status, 200);
  // As a database restored from before the last migration, under a running vault.
  const last = await sql<{ name: string }>`select name from kysely_migration order by name desc limit 1`.execute(v.vault.db);
  await sql`delete from kysely_migration where name = ${last.rows[0].name}`.execute(v.vault.db);
  const pending = await v.request('GET', '/readyz', { apiKey: null });
  t.is(pending.status, 503);
  t.deepEqual(pending.body, { status: 'unavailable', reason: 'migrations pending' });
  t.is((await v.request('GET', '/healthz', { apiKey: null })).status, 200);
});
