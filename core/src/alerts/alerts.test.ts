import test from 'ava';
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { fuzzRoutes } from '../testing/fuzz.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

const uid = (prefix: string) => `${prefix}_${randomBytes(4).toString('hex').toUpperCase()}`;

interface Delivery {
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

/** A webhook receiver on 127.0.0.1: records what it gets and answers `status` (changeable). */
class Receiver {
  readonly received: Delivery[] = [];
  status = 200;
  delayMs = 0;
  private server: Server | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.received.push({ headers: req.headers, body, json: JSON.parse(body) });
        setTimeout(() => res.writeHead(this.status).end(), this.delayMs);
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(): string {
    return `http://127.0.0.1:${this.port}/hooks/vault`;
  }

  of(ruleKey: string): Delivery[] {
    return this.received.filter((d) => d.json.ruleKey === ruleKey);
  }
}

/** Defines an attribute and an alert rule on it; storing the attribute raises one alert. */
async function alertRule(level = 'WARNING'): Promise<{ attribute: string; ruleKey: string }> {
  const attribute = uid('ATTR');
  const ruleKey = uid('rule');
  await v.request('POST', '/attributes', { body: { key: attribute } });
  const res = await v.request('POST', '/rules', {
    body: { key: ruleKey, constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'alert', alertLevel: level, message: `${ruleKey} fired` } },
  });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return { attribute, ruleKey };
}

function store(attribute: string, value: string, entityId = uid('e')) {
  return v.request('POST', `/entities/${entityId}/attributes`, { body: { data: [{ attribute, value }] }, headers: { 'x-encryption-key': v.keys.publicKey } });
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test.serial('an alert is POSTed to the webhook as recorded, signed, without the value', async (t) => {
  const receiver = await new Receiver().start();
  const secret = 'webhook-secret-for-tests';
  v.vault.alerts.webhooks.configure({ urls: [receiver.url()], baseDelayMs: 20, attempts: 3, secret });
  try {
    const { attribute, ruleKey } = await alertRule();
    const value = `private-${randomBytes(4).toString('hex')}`;
    t.is((await store(attribute, value)).status, 200);
    await v.vault.alerts.webhooks.idle();
    const [delivery] = receiver.of(ruleKey);
    t.truthy(delivery);
    const [recorded] = (await v.request('GET', '/alerts', { query: { rule: ruleKey } })).body.data;
    t.deepEqual(delivery.json, recorded);
    t.is(delivery.headers['content-type'], 'application/json');
    t.is(delivery.headers['x-vault-alert-id'], recorded.id);
    t.is(delivery.headers['x-vault-signature'], `sha256=${createHmac('sha256', secret).update(delivery.body).digest('hex')}`);
    t.false(delivery.body.includes(value));
  } finally {
    v.vault.alerts.webhooks.configure({ urls: [], secret: undefined });
    await receiver.stop();
  }
});

test.serial('a receiver that is down gets the alert once it is back on the same port', async (t) => {
  const receiver = await new Receiver().start();
  const port = receiver.port;
  await receiver.stop();
  v.vault.alerts.webhooks.configure({ urls: [receiver.url()], baseDelayMs: 100, maxDelayMs: 200, attempts: 20 });
  try {
    const { attribute, ruleKey } = await alertRule('DANGER');
    const res = await store(attribute, 'x');
    t.is(res.status, 200, 'the store does not wait for, or fail with, the delivery');
    const [recorded] = (await v.request('GET', '/alerts', { query: { rule: ruleKey } })).body.data;
    await until(() => v.logs.some((l) => l.includes(recorded.id) && l.includes('will retry')), 'a failed first attempt');
    await receiver.start(port);
    await v.vault.alerts.webhooks.idle();
    const deliveries = receiver.of(ruleKey);
    t.is(deliveries.length, 1);
    t.is(deliveries[0].json.id, recorded.id);
    t.true(v.logs.some((l) => l.includes(recorded.id) && l.includes('alert delivered')));
  } finally {
    v.vault.alerts.webhooks.configure({ urls: [] });
    await receiver.stop();
  }
});

test.serial('5xx answers are retried with backoff until the attempts run out; a 4xx is not retried', async (t) => {
  const receiver = await new Receiver().start();
  receiver.status = 503;
  v.vault.alerts.webhooks.configure({ urls: [receiver.url()], baseDelayMs: 20, maxDelayMs: 1_000, attempts: 4 });
  try {
    const failing = await alertRule();
    const started = Date.now();
    t.is((await store(failing.attribute, 'x')).status, 200);
    await v.vault.alerts.webhooks.idle();
    t.is(receiver.of(failing.ruleKey).length, 4);
    t.true(Date.now() - started >= 20 + 40 + 80, 'each retry waited twice as long as the one before');
    t.true(v.logs.some((l) => l.includes('giving up')));

    receiver.status = 400;
    const refused = await alertRule();
    await store(refused.attribute, 'x');
    await v.vault.alerts.webhooks.idle();
    t.is(receiver.of(refused.ruleKey).length, 1);
  } finally {
    v.vault.alerts.webhooks.configure({ urls: [] });
    await receiver.stop();
  }
});

test.serial('a slow receiver does not slow the store', async (t) => {
  const receiver = await new Receiver().start();
  receiver.delayMs = 1_500;
  v.vault.alerts.webhooks.configure({ urls: [receiver.url()], attempts: 1 });
  try {
    const { attribute, ruleKey } = await alertRule();
    const started = Date.now();
    t.is((await store(attribute, 'x')).status, 200);
    t.true(Date.now() - started < 1_000, `the store took ${Date.now() - started} ms`);
    await v.vault.alerts.webhooks.idle();
    t.is(receiver.of(ruleKey).length, 1);
  } finally {
    v.vault.alerts.webhooks.configure({ urls: [] });
    await receiver.stop();
  }
});

test('GET /alerts filters by rule, level and time, and pages oldest first', async (t) => {
  const warning = await alertRule('WARNING');
  const info = await alertRule('INFO');
  const from = new Date().toISOString();
  for (let i = 0; i < 3; i++) await store(warning.attribute, `w${i}`);
  await store(info.attribute, 'i');
  const to = new Date().toISOString();

  const byRule = (await v.request('GET', '/alerts', { query: { rule: warning.ruleKey } })).body.data;
  t.is(byRule.length, 3);
  t.true(byRule.every((a: any) => a.ruleKey === warning.ruleKey && a.level === 'WARNING'));
  const sorted = [...byRule].sort((a: any, b: any) => (a.createdDate < b.createdDate ? -1 : a.createdDate > b.createdDate ? 1 : a.id < b.id ? -1 : 1));
  t.deepEqual(byRule, sorted, 'oldest first');

  const levelInfo = (await v.request('GET', '/alerts', { query: { level: 'info', from, to } })).body.data;
  t.true(levelInfo.some((a: any) => a.ruleKey === info.ruleKey));
  t.true(levelInfo.every((a: any) => a.level === 'INFO'));

  const page0 = (await v.request('GET', '/alerts', { query: { rule: warning.ruleKey, count: '2', page: '0' } })).body.data;
  const page1 = (await v.request('GET', '/alerts', { query: { rule: warning.ruleKey, count: '2', page: '1' } })).body.data;
  t.deepEqual([...page0, ...page1], byRule);

  const later = (await v.request('GET', '/alerts', { query: { rule: warning.ruleKey, from: new Date(Date.now() + 60_000).toISOString() } })).body.data;
  t.deepEqual(later, []);
  const earlier = (await v.request('GET', '/alerts', { query: { rule: warning.ruleKey, to: '2000-01-01T00:00:00Z' } })).body.data;
  t.deepEqual(earlier, []);
});

test('alerts one store raised are listed in the order the rules ran', async (t) => {
  const attribute = uid('ATTR');
  await v.request('POST', '/attributes', { body: { key: attribute } });
  // Created in another order than they run, so neither creation nor chance gives the answer.
  const keys = Array.from({ length: 10 }, (_, i) => uid(`ordered${i}`));
  for (const i of [3, 0, 5, 9, 1, 7, 4, 8, 2, 6]) {
    const res = await v.request('POST', '/rules', {
      body: { key: keys[i], executionOrder: 1000 + i, constraint: { type: 'attribute', operator: 'any', attributes: [attribute] }, action: { type: 'alert', alertLevel: 'INFO', message: 'ordered' } },
    });
    t.is(res.status, 201);
  }
  const from = new Date(Date.now() - 1000).toISOString();
  t.is((await store(attribute, 'x')).status, 200);
  const listed = (await v.request('GET', '/alerts', { query: { from, count: '1000' } })).body.data.filter((a: any) => keys.includes(a.ruleKey));
  t.deepEqual(listed.map((a: any) => a.ruleKey), keys);
  for (const key of keys) await v.request('DELETE', `/rules/${key}`);
});

test('GET /alerts is for admins, and refuses bad filters with 400', async (t) => {
  const apiKey = await v.createApplication(['*']);
  const res = await v.request('GET', '/alerts', { apiKey });
  t.is(res.status, 403);
  t.is(res.body.message, 'Forbidden');
  const queries: Array<Record<string, string>> = [{ count: '0' }, { count: '1001' }, { page: '-1' }, { from: 'yesterday' }, { to: '2020-13-45' }, { colour: 'red' }];
  for (const query of queries) {
    const bad = await v.request('GET', '/alerts', { query });
    t.is(bad.status, 400, JSON.stringify(query));
  }
  const fromMessage = await v.request('GET', '/alerts', { query: { from: 'yesterday' } });
  t.is(fromMessage.body.message, 'from must be an ISO 8601 date');
  const levelMessage = await v.request('GET', '/alerts', { query: { level: 'CRITICAL' } });
  t.is(levelMessage.status, 400);
  t.is(levelMessage.body.message, 'level must be one of NORMAL, INFO, WARNING, DANGER, SUCCESS, NEUTRAL');
});

test('hostile queries never cause a 5xx', async (t) => {
  await fuzzRoutes(t, v, [{ method: 'GET', url: '/alerts?rule={id}&level={id}&from={id}' }]);
});
