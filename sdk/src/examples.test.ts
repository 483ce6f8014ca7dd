/**
 * The README's examples, run against a real vault. Each region between `example:start` and
 * `example:end` is copied verbatim into sdk/README.md; readme.test.ts fails when they differ.
 * They run in order (serially), as a reader would run them.
 */
// example:start imports
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VaultAbortError, VaultApiError, VaultClient, VaultNetworkError, generateKeyPair, loadKeyFiles, loadKeysFromEnv, saveKeyPair, type SearchResult } from '@sensitive-data-vault/sdk';
// example:end
import { rmSync } from 'node:fs';
import test from 'ava';
import { startSdkVault, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
let vault: VaultClient;
test.before(async () => {
  v = await startSdkVault();
  // What a deployment puts in the application's environment.
  process.env.VAULT_URL = v.proc.url;
  process.env.VAULT_API_KEY = v.proc.adminKey;
  process.env.VAULT_ENCRYPTION_KEY = v.keys.publicKey;
  process.env.VAULT_DECRYPTION_KEY = v.keys.privateKey;
  delete process.env.VAULT_SIDECAR_URL;
});
test.after.always(async () => {
  await vault?.close();
  await v?.dispose();
});

test.serial('connect', async (t) => {
  // example:start connect
  const vault = new VaultClient({
    url: process.env.VAULT_URL ?? 'http://127.0.0.1:8083',
    apiKey: process.env.VAULT_API_KEY!,
    // { encryptionKey, decryptionKey } from VAULT_ENCRYPTION_KEY[_FILE] and VAULT_DECRYPTION_KEY[_FILE]
    ...(await loadKeysFromEnv()),
    connections: 10, // keep-alive connections to the vault
    headersTimeout: 10_000,
    bodyTimeout: 30_000,
    keepAlive: { timeout: 10_000 },
    retry: { retries: 3 }, // when no answer arrived: idempotent requests, and any request never sent
  });

  const health = await vault.health(); // { status: 'ok' }
  const readiness = await vault.ready(); // { ready: true, status: 'ready' }
  // example:end
  t.deepEqual(health, { status: 'ok' });
  t.deepEqual(readiness, { ready: true, status: 'ready' });
  await vault.close();
});

test.serial('keys', async (t) => {
  // example:start keys
  // A new pair, already in the header format (base64 of PEM). The vault is started with
  // VAULT_ENCRYPTION_PUBLIC_KEY=<pair.publicKey>; the private key stays with the readers.
  const pair = await generateKeyPair();
  const dir = mkdtempSync(join(tmpdir(), 'vault-keys-'));
  await saveKeyPair(pair, { publicKeyFile: join(dir, 'vault.pub.pem'), privateKeyFile: join(dir, 'vault.key.pem') });

  // A service that only stores data gets the public key and nothing else.
  const writerKeys = await loadKeyFiles({ publicKeyFile: join(dir, 'vault.pub.pem') });
  const writer = new VaultClient({ url: process.env.VAULT_URL!, apiKey: process.env.VAULT_API_KEY!, ...writerKeys });
  // example:end
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.deepEqual(writerKeys, { encryptionKey: pair.publicKey });
  t.deepEqual(await writer.health(), { status: 'ok' });
  await writer.close();
  vault = v.client();
});

test.serial('definitions', async (t) => {
  // example:start definitions
  await vault.definitions.save({ key: 'EMAIL', indexed: true, tags: ['contact'], regulations: ['GDPR'] });
  await vault.definitions.save({
    key: 'ADDRESS',
    schema: { street: 'string', city: 'string', '[phones]': 'string' }, // `[name]`: a list
    repeatable: true,
  });
  await vault.definitions.save({ name: 'NICKNAME' }); // key = name, schema `string`

  const emailDefinition = await vault.definitions.get('EMAIL'); // { key: 'EMAIL', indexed: true, schema: 'string', ... }
  const definitions = await vault.definitions.list();
  const deleted = await vault.definitions.delete('NICKNAME'); // 'Successfully Deleted Attribute'
  // example:end
  t.like(emailDefinition, { key: 'EMAIL', indexed: true, schema: 'string', repeatable: false });
  t.deepEqual(definitions.map((d) => d.key).sort(), ['ADDRESS', 'EMAIL', 'NICKNAME']);
  t.is(deleted, 'Successfully Deleted Attribute');
});

test.serial('entities', async (t) => {
  // example:start entities
  await vault.dataSubjects.save({ id: 'alice', tags: ['newsletter'] });
  const alice = await vault.dataSubjects.get('alice'); // { id: 'alice', type: 'datasubject', legalHold: false, ... }
  const subjects = await vault.dataSubjects.list();

  await vault.entities.save({ id: 'bob', tags: ['vip'] }); // `type` defaults to datasubject
  const held = await vault.entities.save({ id: 'bob', legalHold: true }); // admins only
  await vault.entities.save({ id: 'bob', legalHold: false }); // lifted again

  const ids: string[] = [];
  for await (const entity of vault.entities.all({ pageSize: 500 })) ids.push(entity.id);
  // example:end
  t.like(alice, { id: 'alice', type: 'datasubject', legalHold: false, tags: ['newsletter'] });
  t.deepEqual(subjects.map((s) => s.id), ['alice']);
  t.deepEqual(ids, ['alice', 'bob']);
  t.true(held.legalHold);
  t.false((await vault.entities.get('bob')).legalHold);
});

test.serial('store-and-read', async (t) => {
  // example:start store-and-read
  const stored = await vault.dataSubjects.storeAttributes('alice', [
    { attribute: 'EMAIL', value: 'alice@example.org', sensitivity: 'PERSONAL' },
    { attribute: 'ADDRESS', value: { street: '1 Main St', city: 'Springfield', phones: ['555-0100'] } },
  ]);

  // Reads send the private key; stores (above) send the public key.
  const [email] = await vault.dataSubjects.getAttribute<string>('alice', 'EMAIL');
  const everything = await vault.dataSubjects.getAttributes('alice');
  const onlyAddress = await vault.dataSubjects.getAttributes('alice', { attributes: ['ADDRESS'] });
  const byId = await vault.data.get(email.dataPointId);

  await vault.data.delete(email.dataPointId); // 'Successfully Deleted Data Point'
  await vault.dataSubjects.deleteAttribute('alice', 'ADDRESS'); // every value of it
  await vault.dataSubjects.purge('alice'); // all of alice's data, and alice
  // example:end
  t.is(stored.length, 2);
  t.is(email.value, 'alice@example.org');
  t.deepEqual(everything.map((p) => p.attribute).sort(), ['ADDRESS', 'EMAIL']);
  t.deepEqual(onlyAddress[0].value, { street: '1 Main St', city: 'Springfield', phones: ['555-0100'] });
  t.like(byId, { dataPointId: email.dataPointId, value: 'alice@example.org', sensitivity: 'PERSONAL', regulations: ['GDPR'] });
  await t.throwsAsync(vault.dataSubjects.get('alice'), { instanceOf: VaultApiError, message: 'Not found' });
});

test.serial('search', async (t) => {
  // example:start search
  await vault.dataSubjects.storeAttributes('carol', [{ attribute: 'EMAIL', value: 'carol@example.org' }]);
  await vault.dataSubjects.storeAttributes('bob', [{ attribute: 'EMAIL', value: 'Bob@Example.org' }]);

  // Matched through the blind index: no value is decrypted, none is returned.
  const matches = await vault.search({ query: { values: [{ attribute: 'EMAIL', value: 'bob@example.org' }] } });
  const none = await vault.search({ query: { values: [{ attribute: 'EMAIL', value: 'nobody@example.org' }] } }); // []

  const gdprEmails: SearchResult[] = [];
  for await (const point of vault.searchAll({ attributes: ['EMAIL'], regulations: ['GDPR'] }, { pageSize: 500 })) {
    gdprEmails.push(point);
  }

  // Deleting inside the loop would skip points: collect the ids, then delete.
  const carols: string[] = [];
  for await (const point of vault.searchAll({ attributes: ['EMAIL'], entityId: ['carol'] })) carols.push(point.dataPointId);
  for (const id of carols) await vault.data.delete(id);
  // example:end
  t.deepEqual(matches.map((p) => p.entityId), ['bob']);
  t.false('value' in matches[0]);
  t.deepEqual(none, []);
  t.deepEqual(gdprEmails.map((p) => p.entityId), ['carol', 'bob']);
  t.deepEqual(await vault.search({ query: { attributes: ['EMAIL'], entityId: ['carol'] } }), []);
});

test.serial('registry', async (t) => {
  // example:start registry
  const created = await vault.regulations.save({ key: 'INTERNAL', name: 'Internal policy', url: 'https://example.org/policy' });
  const gdpr = await vault.regulations.get('GDPR'); // built in
  const regulations = await vault.regulations.list();

  const vip = await vault.tags.save('vip'); // { name: 'vip', createdDate, modifiedDate }
  const tags = await vault.tags.list();

  await vault.entityTypes.save({ key: 'device', name: 'Device', description: 'A phone or a laptop' });
  await vault.entities.save({ id: 'laptop-42', type: 'device' });
  const types = await vault.entityTypes.list();

  await vault.regulations.delete('INTERNAL'); // 'Regulation deleted'
  // example:end
  t.is(created, 'Regulation created');
  t.is(gdpr.name, 'General Data Protection Regulation');
  t.true(regulations.some((r) => r.key === 'INTERNAL'));
  t.is(vip.name, 'vip');
  t.true(tags.some((x) => x.name === 'newsletter'));
  t.deepEqual(types.map((x) => x.key).sort(), ['datasubject', 'device']);
  t.is((await vault.entities.get('laptop-42')).type, 'device');
});

test.serial('rules-and-alerts', async (t) => {
  // example:start rules-and-alerts
  await vault.rules.save({
    key: 'watch-email',
    type: 'data', // evaluated on stores
    constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL'] },
    action: { type: 'alert', alertLevel: 'WARNING', message: 'An email address was stored' },
  });
  await vault.rules.save({
    key: 'only-crm-deletes',
    type: 'activity', // evaluated on audit events
    constraint: {
      type: 'all',
      constraints: [
        { type: 'eventType', eventTypes: ['DELETE'] },
        { type: 'application', operator: 'none', applications: ['crm'] },
      ],
    },
    action: { type: 'block' },
  });

  await vault.dataSubjects.storeAttributes('dave', [{ attribute: 'EMAIL', value: 'dave@example.org' }]);
  const alerts = await vault.alerts.list({ rule: 'watch-email', level: 'WARNING', from: new Date(Date.now() - 3_600_000) });
  const rule = await vault.rules.get('watch-email'); // as sent, plus executionOrder and dates

  await vault.rules.delete('watch-email'); // 'Rule deleted'
  // example:end
  t.like(alerts[0], { ruleKey: 'watch-email', level: 'WARNING', message: 'An email address was stored', entityId: 'dave', attribute: 'EMAIL' });
  t.like(rule, { key: 'watch-email', type: 'data' });
  t.true(Number.isInteger(rule.executionOrder));
});

test.serial('audit-logs', async (t) => {
  // example:start audit-logs
  // Data kept in another system: report what happens to it. Values go to the rules, not to storage.
  const reported = await vault.audit.log({
    eventType: 'STORE',
    subjectId: 'erin',
    data: { attribute: 'EMAIL', value: 'erin@example.org' },
    applicationId: 'crm',
    applicationUser: 'clerk-7',
    dataStoreName: 'crm-db',
    dataStoreEntityName: 'customers',
  }); // { eventType: 'STORE', dataPointId: <generated>, subjectId: 'erin', attribute: 'EMAIL' }

  // All or nothing. With an eventId on every event, a resend is harmless (and the SDK retries it).
  const summaries = await vault.audit.logBulk([
    { eventId: 'crm-read-1', eventType: 'READ', dataPointId: reported.dataPointId, applicationId: 'crm' },
    { eventId: 'crm-update-1', eventType: 'UPDATE', dataPointId: reported.dataPointId, data: { value: 'erin@example.com' }, applicationId: 'crm' },
  ]);
  // example:end
  t.like(reported, { eventType: 'STORE', subjectId: 'erin', attribute: 'EMAIL' });
  t.deepEqual(summaries.map((s) => s.eventType), ['READ', 'UPDATE']);
});

test.serial('errors', async (t) => {
  // example:start errors
  const address = await vault.audit.log({ eventType: 'STORE', subjectId: 'erin', data: { attribute: 'ADDRESS' }, applicationId: 'crm' });
  let outcome = '';
  try {
    // The activity rule of the rules example: only the crm application may delete.
    await vault.audit.log({ eventType: 'DELETE', dataPointId: address.dataPointId, applicationId: 'billing' }, { signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    if (err instanceof VaultApiError) {
      outcome = `${err.status} ${err.message}`; // the vault's exact message; `err.index` for a bulk
    } else if (err instanceof VaultNetworkError) {
      outcome = `no answer: ${err.code} after ${err.attempts} attempt(s)`; // ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ...
    } else if (err instanceof VaultAbortError) {
      outcome = err.timedOut ? 'no answer within 10 s' : 'cancelled'; // the signal's reason is `err.reason`
    } else {
      throw err;
    }
  }
  // example:end
  t.is(outcome, '403 The provided data could not be stored, as a rule disallows it');
});

test.serial('activity', async (t) => {
  // example:start activity
  const reads = await vault.activity.list({ subjectId: 'erin', eventType: 'READ', from: new Date(Date.now() - 3_600_000) });

  const byCrm: string[] = [];
  for await (const record of vault.activity.all({ applicationId: 'crm' })) byCrm.push(`${record.eventType} ${record.subjectId}`);

  const check = await vault.activity.verify(); // { valid: true, records, unsealed, lastSequence, lastHash }
  // Keep the head outside the database; later, a log cut short or rewritten no longer matches it.
  const head = await vault.activity.head(); // { sequence, hash }
  const still = await vault.activity.verify(head); // { valid, …, headMatches: true }

  // Administrative changes: access, legal holds, rules, purges (`change`: what was set; never a key).
  const changes = await vault.activity.list({ eventType: 'CHANGE', order: 'newest' });
  const ruleChanges = changes.filter((record) => record.change?.target === 'rule').map((record) => `${record.change!.action} ${record.change!.id}`);
  // example:end
  t.deepEqual(reads.map((r) => r.eventId), ['crm-read-1']);
  t.deepEqual(byCrm, ['STORE erin', 'READ erin', 'UPDATE erin', 'STORE erin']);
  t.true(check.valid);
  t.true(still.headMatches);
  t.true(ruleChanges.length > 0, 'the rules example saved a rule');
});

test.serial('reporter', async (t) => {
  const errors: string[] = [];
  const console = { error: (line: string) => errors.push(line) };
  // example:start reporter
  const reporter = vault.reporter({
    sidecar: process.env.VAULT_SIDECAR_URL, // unset: batches go straight to POST /auditlogs/bulk
    batchSize: 500,
    flushIntervalMs: 200,
    defaults: { applicationId: 'shop', dataStoreName: 'orders-db' },
    onError: (error, events) => console.error(`${events.length} event(s) not recorded: ${error.message}`),
  });

  // Returns at once, with eventId, timestamp and (for a STORE) dataPointId already set.
  const { dataPointId } = reporter.report({ eventType: 'STORE', subjectId: 'frank', data: { attribute: 'EMAIL' } });
  reporter.report({ eventType: 'READ', dataPointId: dataPointId!, applicationUser: 'support-3' });

  await reporter.close(); // flushes what is queued
  // example:end
  t.deepEqual(errors, []);
  t.like(reporter.stats, { reported: 2, delivered: 2 });
  t.deepEqual((await vault.activity.list({ subjectId: 'frank' })).map((r) => [r.eventType, r.dataPointId, r.applicationId]), [
    ['STORE', dataPointId, 'shop'],
    ['READ', dataPointId, 'shop'],
  ]);
});

test.serial('applications', async (t) => {
  // example:start applications
  const billing = await vault.applications.create({ name: 'billing', attributes: ['EMAIL', 'ADDRESS'] });
  // billing.apiKey is shown this once: put it in the billing service's secrets.
  const billingClient = new VaultClient({ url: process.env.VAULT_URL!, apiKey: billing.apiKey, ...(await loadKeysFromEnv()) });
  const apps = await vault.applications.list();
  const whoAmI = await billingClient.applications.me(); // any key may ask which application it is
  // Change it in place: its id, its key and what the activity log says it did stay.
  const widened = await vault.applications.update(billing.id, { attributes: ['EMAIL', 'ADDRESS', 'PHONE'] });
  // A new key; the old one keeps signing in for an hour while the service moves over.
  const rolled = await vault.applications.rollKey(billing.id, { keepPreviousForSeconds: 3600 });
  const rolledClient = new VaultClient({ url: process.env.VAULT_URL!, apiKey: rolled.apiKey, ...(await loadKeysFromEnv()) });
  await vault.applications.delete(billing.id); // 'Successfully Deleted Application'
  // example:end
  t.like(billing, { name: 'billing', admin: false, attributes: ['EMAIL', 'ADDRESS'] });
  t.true(apps.some((a) => a.id === billing.id));
  t.like(whoAmI, { id: billing.id, attributes: ['EMAIL', 'ADDRESS'], admin: false });
  t.like(widened, { id: billing.id, attributes: ['EMAIL', 'ADDRESS', 'PHONE'] });
  t.is(rolled.id, billing.id);
  t.not(rolled.apiKey, billing.apiKey);
  t.true(Date.parse(rolled.previousKeyValidUntil!) > Date.now());
  await t.throwsAsync(billingClient.tags.list(), { instanceOf: VaultApiError, message: 'Unauthorized' });
  await t.throwsAsync(rolledClient.tags.list(), { instanceOf: VaultApiError, message: 'Unauthorized' });
  await Promise.all([billingClient.close(), rolledClient.close()]);
});
