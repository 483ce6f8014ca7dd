/**
 * Whose X-Forwarded-For the vault believes. A client must not be able to choose its own
 * address: that would evade the failed-login lockout and fool geolocation rules.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { loadConfig, ConfigError } from '../config.js';
import { startTestVault, type TestVault } from '../testing/harness.js';

const PROXY = '10.9.9.9';
const GB_ADDRESS = '81.2.69.142';

let v: TestVault;
test.before(async () => {
  v = await startTestVault({ env: { VAULT_TRUST_PROXY: PROXY, VAULT_AUTH_FAILURE_LIMIT: '5' } });
  const res = await v.request('POST', '/attributes', { body: { key: 'CITY', schema: 'string', indexed: true } });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
});
test.after.always(async () => v?.close());

/** A request as it arrives over a socket from `from`, with whatever X-Forwarded-For it carries. */
async function inject(from: string, url: string, headers: Record<string, string>, body?: unknown) {
  const res = await v.app.inject({
    method: body === undefined ? 'GET' : 'POST',
    url,
    remoteAddress: from,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json() };
}

test('VAULT_TRUST_PROXY takes false, true, a hop count, or addresses and CIDRs; anything else stops the start', (t) => {
  t.is(loadConfig({}).trustProxy, false);
  t.is(loadConfig({ VAULT_TRUST_PROXY: 'false' }).trustProxy, false);
  t.is(loadConfig({ VAULT_TRUST_PROXY: 'true' }).trustProxy, true);
  t.is(loadConfig({ VAULT_TRUST_PROXY: '1' }).trustProxy, 1);
  t.deepEqual(loadConfig({ VAULT_TRUST_PROXY: '10.0.0.1, 172.28.0.0/24,::1,loopback' }).trustProxy, ['10.0.0.1', '172.28.0.0/24', '::1', 'loopback']);
  for (const bad of ['yes-please', '10.0.0.1/33', '10.0.0.300', '0', '10.0.0.1/8/2', 'nginx']) {
    t.throws(() => loadConfig({ VAULT_TRUST_PROXY: bad }), { instanceOf: ConfigError, message: /VAULT_TRUST_PROXY/ }, bad);
  }
});

test('a client that spoofs X-Forwarded-For is still locked out after too many failed logins', async (t) => {
  const client = '198.51.100.20';
  // Straight to the vault: the header is not the proxy's, so it is ignored.
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await inject(client, '/entities', { 'x-forwarded-for': `10.0.${i}.1, 127.0.0.1`, authorization: `Bearer bad${i}` });
    statuses.push(res.status);
  }
  t.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
  const locked = await inject(client, '/entities', { 'x-forwarded-for': '10.0.99.1', authorization: `Bearer ${v.adminKey}` });
  t.is(locked.status, 429);
  t.is(locked.body.message, 'Too many failed authentication attempts');
});

test('through the proxy, the address the proxy saw is the one locked out, whatever the client prepended', async (t) => {
  const client = '198.51.100.30';
  const statuses: number[] = [];
  for (let i = 0; i < 7; i++) {
    // nginx with `$proxy_add_x_forwarded_for` would append the real address after the client's own claims.
    const res = await inject(PROXY, '/entities', { 'x-forwarded-for': `10.0.${i}.1, 127.0.0.1, ${client}`, authorization: `Bearer bad${i}` });
    statuses.push(res.status);
  }
  t.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
  // Another client behind the same proxy is not affected.
  const other = await inject(PROXY, '/entities', { 'x-forwarded-for': '198.51.100.31', authorization: `Bearer ${v.adminKey}` });
  t.is(other.status, 200);
});

test('behind one proxy named by a hop count (VAULT_TRUST_PROXY=1), a guesser locks out only itself', async (t) => {
  const hops = await startTestVault({ env: { VAULT_TRUST_PROXY: '1', VAULT_AUTH_FAILURE_LIMIT: '3' } });
  try {
    const from = (client: string, key: string) =>
      hops.app.inject({ url: '/entities', remoteAddress: PROXY, headers: { 'x-forwarded-for': client, authorization: `Bearer ${key}` } });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await from('198.51.100.50', `bad${i}`)).statusCode);
    t.deepEqual(statuses, [401, 401, 401, 429, 429]);
    const other = await from('198.51.100.51', hops.adminKey);
    t.is(other.statusCode, 200, 'another client behind the same proxy still signs in');
  } finally {
    await hops.close();
  }
});

/** How many of the entity's points search places in GB. */
async function pointsInGb(entityId: string): Promise<number> {
  const res = await v.request('POST', '/search', { body: { query: { entityId, country: 'GB' } } });
  return res.status === 200 ? res.body.data.length : 0;
}

test('a store cannot claim a location with X-Forwarded-For; the proxy’s header is believed', async (t) => {
  const store = (from: string, entityId: string, forwarded: string) =>
    inject(from, `/datasubjects/${entityId}/attributes`, { 'x-forwarded-for': forwarded, authorization: `Bearer ${v.adminKey}`, 'x-encryption-key': v.keys.publicKey }, { data: [{ attribute: 'CITY', value: 'London' }] });

  t.is((await store('198.51.100.40', 'spoofed-geo', GB_ADDRESS)).status, 200);
  t.is(await pointsInGb('spoofed-geo'), 0, 'the spoofed address placed nothing in GB');

  t.is((await store(PROXY, 'proxied-geo', GB_ADDRESS)).status, 200);
  t.is(await pointsInGb('proxied-geo'), 1, 'the proxy’s view of the client is used');
});

test('VAULT_TRUST_PROXY=true works but warns at start', async (t) => {
  const trusting = await startTestVault({ env: { VAULT_TRUST_PROXY: 'true' } });
  try {
    t.true(trusting.logs.some((line) => line.includes('"level":40') && line.includes('VAULT_TRUST_PROXY=true')));
  } finally {
    await trusting.close();
  }
  t.false(v.logs.some((line) => line.includes('VAULT_TRUST_PROXY=true')), 'no warning for a list of proxies');
});

test('the shipped docker-compose trusts only nginx, and nginx overwrites X-Forwarded-For', (t) => {
  const root = new URL('../../../', import.meta.url);
  const compose = readFileSync(new URL('docker-compose.yml', root), 'utf8');
  const nginx = readFileSync(new URL('deploy/nginx.conf', root), 'utf8');
  const trusted = /VAULT_TRUST_PROXY: "([^"]*)"/.exec(compose)?.[1];
  const nginxAddress = /ipv4_address: (\S+)/.exec(compose)?.[1];
  t.truthy(nginxAddress);
  t.is(trusted, nginxAddress, 'the vaults believe X-Forwarded-For from nginx alone');
  t.deepEqual(loadConfig({ VAULT_TRUST_PROXY: trusted }).trustProxy, [nginxAddress]);
  t.regex(nginx, /proxy_set_header X-Forwarded-For \$remote_addr;/);
  t.notRegex(nginx, /\$proxy_add_x_forwarded_for/);
});
