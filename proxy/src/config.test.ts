import test from 'ava';
import { ConfigError, defaults, describeConfig, loadConfig, resolveConfig } from './config.js';

test('defaults apply when only the API key is set', (t) => {
  const config = loadConfig({ SIDECAR_API_KEY: 'k' });
  t.is(config.host, '127.0.0.1');
  t.is(config.port, 8084);
  t.is(config.vaultUrl, 'http://127.0.0.1:8083');
  t.is(config.redisUrl, 'redis://127.0.0.1:6379');
  t.is(config.queue, 'vault-audit');
  t.is(config.prefix, 'bull');
  t.is(config.batchSize, 500);
  t.is(config.batchMs, 200);
  t.is(config.batchBytes, 8 * 1024 * 1024);
  t.is(config.maxRetries, undefined);
  t.is(config.upstream, undefined);
  t.is(config.proxyPort, defaults.proxyPort);
  t.is(config.proxyMaxEvents, 10_000);
});

test('every variable is read', (t) => {
  const config = loadConfig({
    SIDECAR_API_KEY: 'key',
    SIDECAR_HOST: '0.0.0.0',
    SIDECAR_PORT: '9000',
    SIDECAR_PROXY_PORT: '9001',
    SIDECAR_VAULT_URL: 'https://vault.internal:8443/base',
    REDIS_URL: 'redis://:secret@redis:6380/2',
    SIDECAR_QUEUE: 'audit.q',
    SIDECAR_PREFIX: '{vault}',
    SIDECAR_BATCH_SIZE: '100',
    SIDECAR_BATCH_BYTES: '65536',
    SIDECAR_BATCH_MS: '0',
    SIDECAR_MAX_RETRIES: '0',
    SIDECAR_RETRY_BASE_MS: '10',
    SIDECAR_RETRY_MAX_MS: '1000',
    SIDECAR_VAULT_TIMEOUT_MS: '5000',
    SIDECAR_LOCK_MS: '5000',
    SIDECAR_SHUTDOWN_MS: '3000',
    SIDECAR_BODY_LIMIT: '2048',
    SIDECAR_REQUEST_TIMEOUT_MS: '4000',
    SIDECAR_ENQUEUE_TIMEOUT_MS: '100',
    SIDECAR_UPSTREAM: 'http://127.0.0.1:3000',
    SIDECAR_ROUTES: '/etc/routes.json',
    SIDECAR_PROXY_BODY_LIMIT: '0',
    SIDECAR_PROXY_MAX_EVENTS: '500',
    SIDECAR_UPSTREAM_TIMEOUT_MS: '15000',
    SIDECAR_PROXY_KEEP_ALIVE_MS: '75000',
    SIDECAR_LOG_LEVEL: 'debug',
    SIDECAR_INGEST_TOKEN: 'token-0123456789abcdef',
    SIDECAR_DROP_VALUES: 'true',
  });
  t.like(config, {
    host: '0.0.0.0', port: 9000, proxyPort: 9001, vaultUrl: 'https://vault.internal:8443/base', queue: 'audit.q', prefix: '{vault}',
    batchSize: 100, batchBytes: 65536, batchMs: 0, maxRetries: 0, retryBaseMs: 10, retryMaxMs: 1000, vaultTimeoutMs: 5000, lockMs: 5000,
    shutdownMs: 3000, bodyLimit: 2048, requestTimeoutMs: 4000, enqueueTimeoutMs: 100, upstream: 'http://127.0.0.1:3000', routesFile: '/etc/routes.json',
    proxyBodyLimit: 0, proxyMaxEvents: 500, upstreamTimeoutMs: 15000, proxyKeepAliveMs: 75000, logLevel: 'debug', ingestToken: 'token-0123456789abcdef', dropValues: true,
  });
});

test('empty variables count as unset', (t) => {
  t.is(loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_PORT: '', SIDECAR_MAX_RETRIES: ' ' }).port, 8084);
});

test('every problem is reported at once, naming the variable', (t) => {
  const err = t.throws(
    () =>
      loadConfig({
        SIDECAR_PORT: 'eighty',
        SIDECAR_BATCH_SIZE: '0',
        SIDECAR_VAULT_URL: 'ftp://vault',
        REDIS_URL: 'not a url',
        SIDECAR_QUEUE: 'a:b',
        SIDECAR_UPSTREAM: 'http://127.0.0.1:3000',
        SIDECAR_LOG_LEVEL: 'loud',
      }),
    { instanceOf: ConfigError },
  );
  const text = err!.message;
  for (const fragment of [
    'SIDECAR_API_KEY is required',
    'SIDECAR_PORT must be a non-negative integer, got "eighty"',
    'SIDECAR_BATCH_SIZE must be an integer >= 1',
    'SIDECAR_VAULT_URL must use http: or https:',
    'REDIS_URL must be a URL',
    'SIDECAR_QUEUE must match',
    'SIDECAR_ROUTES is required when SIDECAR_UPSTREAM is set',
    'SIDECAR_LOG_LEVEL must be one of',
  ]) {
    t.true(text.includes(fragment), `missing "${fragment}" in:\n${text}`);
  }
});

test('routes without an upstream, equal ports and inverted retry bounds are refused', (t) => {
  t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_ROUTES: 'r.json' }), { message: /only used in reverse-proxy mode/ });
  t.throws(
    () => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_UPSTREAM: 'http://127.0.0.1:1', SIDECAR_ROUTES: 'r.json', SIDECAR_PROXY_PORT: '8084' }),
    { message: /SIDECAR_PROXY_PORT must differ/ },
  );
  t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_RETRY_BASE_MS: '100', SIDECAR_RETRY_MAX_MS: '10' }), { message: /RETRY_MAX_MS must be >=/ });
});

test('resolveConfig fills defaults and validates programmatic input with field names', (t) => {
  const config = resolveConfig({ apiKey: 'k', port: 0, batchSize: 10 });
  t.is(config.batchSize, 10);
  t.is(config.batchMs, 200);
  t.true(Object.isFrozen(config));
  t.throws(() => resolveConfig({ apiKey: '', lockMs: 10 }), { message: /lockMs must be an integer >= 1000[\s\S]*apiKey must be a non-empty string/ });
});

test('a non-loopback address needs an ingest token; loopback addresses do not', (t) => {
  for (const host of ['0.0.0.0', '::', '10.0.0.5', 'sidecar.internal', '[::]']) {
    t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_HOST: host }), {
      instanceOf: ConfigError,
      message: new RegExp(`SIDECAR_HOST is "${host.replace(/[[\]]/g, '\\$&')}", which is not a loopback address: set SIDECAR_INGEST_TOKEN too`),
    }, host);
    t.is(loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_HOST: host, SIDECAR_INGEST_TOKEN: 'token-0123456789abcdef' }).host, host);
  }
  for (const host of ['127.0.0.1', '127.10.0.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
    t.is(loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_HOST: host }).ingestToken, undefined, host);
  }
  t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_INGEST_TOKEN: 'short' }), { message: /SIDECAR_INGEST_TOKEN must be at least 16 characters/ });
  t.throws(() => resolveConfig({ apiKey: 'k', host: '0.0.0.0' }), { message: /host is "0.0.0.0", which is not a loopback address: set ingestToken too/ });
});

test('SIDECAR_DROP_VALUES is true or false', (t) => {
  t.false(loadConfig({ SIDECAR_API_KEY: 'k' }).dropValues);
  t.false(loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_DROP_VALUES: 'false' }).dropValues);
  t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', SIDECAR_DROP_VALUES: 'yes' }), { message: /SIDECAR_DROP_VALUES must be true or false, got "yes"/ });
});

test('describeConfig hides the API key, the ingest token and the Redis password', (t) => {
  const shown = JSON.stringify(
    describeConfig(loadConfig({ SIDECAR_API_KEY: 'super-secret', SIDECAR_INGEST_TOKEN: 'token-secret-0123456789', REDIS_URL: 'redis://:hunter2@127.0.0.1:6379' })),
  );
  t.false(shown.includes('super-secret'));
  t.false(shown.includes('token-secret'));
  t.false(shown.includes('hunter2'));
  t.true(JSON.parse(shown).ingestTokenSet, 'but says a token is set');
  t.false(describeConfig(loadConfig({ SIDECAR_API_KEY: 'k' })).ingestTokenSet, 'or that none is');
});

test('describeConfig, the start line, hides a password in any URL: the vault and upstream URLs too, and in a query string', (t) => {
  const config = loadConfig({
    SIDECAR_API_KEY: 'k',
    SIDECAR_VAULT_URL: 'https://sidecar:vault-pw-1@vault.internal:8443/base',
    // ioredis takes any connection option from the query string, the password among them.
    REDIS_URL: 'redis://redis.internal:6379/2?password=redis-pw-2&family=6',
    SIDECAR_UPSTREAM: 'http://app:upstream-pw-3@127.0.0.1:3000/?token=upstream-token-4',
    SIDECAR_ROUTES: 'routes.json',
  });
  const shown = describeConfig(config);
  const text = JSON.stringify(shown);
  for (const secret of ['vault-pw-1', 'redis-pw-2', 'upstream-pw-3', 'upstream-token-4']) t.false(text.includes(secret), secret);
  // What is not a credential is still there to read.
  t.is(shown.vaultUrl, 'https://sidecar:***@vault.internal:8443/base');
  t.is(shown.redisUrl, 'redis://redis.internal:6379/2?password=***&family=6');
  t.is(shown.upstream, 'http://app:***@127.0.0.1:3000/?token=***');
  t.is(describeConfig(loadConfig({ SIDECAR_API_KEY: 'k' })).vaultUrl, 'http://127.0.0.1:8083', 'a URL without credentials as it was given');
});

test('a URL that does not parse is named without the password in it', (t) => {
  // An unencoded `/` or `#` in a password, as base64 and generated passwords hold.
  for (const [variable, url] of [
    ['REDIS_URL', 'redis://:s3cr/et#pw@127.0.0.1:6379'],
    ['REDIS_URL', 'redis://default:s3cr/et#pw@redis.internal:6379/0'],
    ['SIDECAR_VAULT_URL', 'https://sidecar:s3cr/et#pw@vault.internal'],
    ['SIDECAR_UPSTREAM', 'http://app:s3cr/et#pw@127.0.0.1:3000'],
  ]) {
    const env: Record<string, string> = { SIDECAR_API_KEY: 'k', SIDECAR_ROUTES: 'r.json', [variable]: url };
    const err = t.throws(() => loadConfig(env), { message: new RegExp(`${variable} must be a URL`) });
    t.false(err?.message.includes('s3cr'), err?.message);
    t.false(err?.message.includes('pw'), err?.message);
  }
  t.throws(() => loadConfig({ SIDECAR_API_KEY: 'k', REDIS_URL: 'redis://:s3cr/et@127.0.0.1:6379' }), {
    message: 'invalid sidecar configuration:\n  - REDIS_URL must be a URL, got "redis://***@127.0.0.1:6379" (percent-encode any of : / ? # [ ] @ in its user name or password)',
  });
});
