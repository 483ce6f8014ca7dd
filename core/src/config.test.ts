import test from 'ava';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { ConfigError, describeConfig, loadConfig } from './config.js';

test('VAULT_ALERT_WEBHOOKS and its secret are read with the rest of the configuration', (t) => {
  const config = loadConfig({ VAULT_ALERT_WEBHOOKS: 'http://a.example/x, https://b.example/y,', VAULT_ALERT_WEBHOOK_SECRET: 's' });
  t.deepEqual(config.alertWebhooks, { urls: ['http://a.example/x', 'https://b.example/y'], secret: 's' });
  t.deepEqual(loadConfig({}).alertWebhooks, { urls: [], secret: undefined });
  t.throws(() => loadConfig({ VAULT_ALERT_WEBHOOKS: 'ftp://x.example' }), {
    instanceOf: ConfigError,
    message: 'VAULT_ALERT_WEBHOOKS must be http(s) URLs separated by commas; entry 1 is not one',
  });
});

test('VAULT_RETENTION_SWEEP_MS: a minute by default, 0 turns the sweep off', (t) => {
  t.is(loadConfig({}).retentionSweepMs, 60_000);
  t.is(loadConfig({ VAULT_RETENTION_SWEEP_MS: '0' }).retentionSweepMs, 0);
  t.throws(() => loadConfig({ VAULT_RETENTION_SWEEP_MS: '1.5' }), {
    instanceOf: ConfigError,
    message: 'VAULT_RETENTION_SWEEP_MS must be an integer from 0 to 86400000, got "1.5"',
  });
});

test('VAULT_INDEX_KEY: 32 bytes or more, in either base64 alphabet', (t) => {
  const key = randomBytes(32);
  t.is(loadConfig({ VAULT_INDEX_KEY: key.toString('base64') }).indexKey, key.toString('base64'));
  t.is(loadConfig({ VAULT_INDEX_KEY: key.toString('base64url') }).indexKey, key.toString('base64url'));
  t.is(loadConfig({ VAULT_INDEX_KEY: randomBytes(64).toString('base64') }).indexKey?.length, 88);
  // As `openssl rand -base64 64` prints it: wrapped at 64 characters.
  const wrapped = randomBytes(64).toString('base64').replace(/(.{64})/, '$1\n');
  t.is(loadConfig({ VAULT_INDEX_KEY: wrapped }).indexKey, wrapped);
  for (const bad of [randomBytes(31).toString('base64'), `${key.toString('base64')}!`, 'correct horse battery staple, correct horse battery staple', '!'.repeat(64)]) {
    const err = t.throws(() => loadConfig({ VAULT_INDEX_KEY: bad }), { instanceOf: ConfigError });
    t.is(err?.message, 'VAULT_INDEX_KEY must be the base64 of at least 32 random bytes (`openssl rand -base64 32` makes one)');
  }
});

test('VAULT_ADMIN_API_KEY follows the rule for every API key', (t) => {
  t.is(loadConfig({ VAULT_ADMIN_API_KEY: 'vk_!#$%&()*+-./0123456789:;<=>?@[]^_{|}~' }).adminApiKey?.length, 40);
  for (const bad of ['short_key', ' leading_space_key', 'trailing_newline_key\n']) {
    t.throws(() => loadConfig({ VAULT_ADMIN_API_KEY: bad }), {
      instanceOf: ConfigError,
      message: 'VAULT_ADMIN_API_KEY must be 16 to 512 characters of printable ASCII, without spaces',
    });
  }
});

test('VAULT_DB: an empty sqlite path, a directory or an unreadable postgres URL is refused here, not when opened', (t) => {
  t.is(loadConfig({ VAULT_DB: 'sqlite:/var/lib/vault/vault.db' }).db, 'sqlite:/var/lib/vault/vault.db');
  t.is(loadConfig({ VAULT_DB: 'sqlite::memory:' }).db, 'sqlite::memory:');
  // No host: pg falls back to PGHOST or localhost, as libpq does.
  t.is(loadConfig({ VAULT_DB: 'postgres:///vault' }).db, 'postgres:///vault');
  t.is(loadConfig({ VAULT_DB: 'postgres://vault:pw@db.internal:5432/vault?sslmode=require' }).db, 'postgres://vault:pw@db.internal:5432/vault?sslmode=require');
  for (const db of ['sqlite:', 'sqlite:  ']) {
    t.throws(() => loadConfig({ VAULT_DB: db }), { instanceOf: ConfigError, message: 'VAULT_DB must be sqlite:<path>, with the path of the database file; the path is empty' });
  }
  t.throws(() => loadConfig({ VAULT_DB: 'sqlite:/var/lib/vault/' }), { instanceOf: ConfigError, message: 'VAULT_DB must name the database file, not a directory: /var/lib/vault/' });
  const dir = tmpdir();
  t.throws(() => loadConfig({ VAULT_DB: `sqlite:${dir}` }), { instanceOf: ConfigError, message: `VAULT_DB must name the database file, not a directory: ${dir}` });
  for (const db of ['postgres://vault:s3cret@:5432/vault', 'postgres://vault:s3cret@db.internal:99999/vault']) {
    t.throws(() => loadConfig({ VAULT_DB: db }), {
      instanceOf: ConfigError,
      message: 'VAULT_DB is not a URL PostgreSQL can be reached by: postgres://user:password@host:port/database',
    });
  }
});

test('the configuration the start line shows holds no secret', (t) => {
  const config = loadConfig({
    VAULT_DB: 'postgres://vault:pg-password-1@db.example:5432/vault?sslpassword=ssl-secret-2',
    VAULT_ADMIN_API_KEY: 'admin_key_secret_0123456789',
    VAULT_ALERT_WEBHOOKS: 'https://hooks.example/services/T0/B0/webhook-token-3',
    VAULT_ALERT_WEBHOOK_SECRET: 'webhook-secret-4',
  });
  const shown = describeConfig(config);
  const text = JSON.stringify(shown);
  for (const secret of ['pg-password-1', 'ssl-secret-2', 'admin_key_secret', 'webhook-token-3', 'webhook-secret-4']) t.false(text.includes(secret), secret);
  t.is(shown.db, 'postgres://vault:***@db.example:5432/vault?sslpassword=***');
  t.is(shown.adminApiKey, '***');
  t.deepEqual(shown.alertWebhooks, { urls: ['https://hooks.example/***'], secret: '***' });
});
