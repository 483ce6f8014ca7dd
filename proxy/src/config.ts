/**
 * Sidecar configuration: read from the environment (`loadConfig`) or given as an object
 * (`resolveConfig`, used by tests and embedders). Both paths go through the same checks so
 * a bad setting fails at start with one message listing every problem, instead of surfacing
 * later as a confusing runtime error.
 */

export interface SidecarConfig {
  /** Interface the ingest API (and the proxy, if any) binds to. */
  host: string;
  /** Ingest API port; 0 picks a free port (tests). */
  port: number;
  /** Reverse-proxy port, only used when `upstream` is set; 0 picks a free port. */
  proxyPort: number;
  vaultUrl: string;
  apiKey: string;
  redisUrl: string;
  queue: string;
  prefix: string;
  batchSize: number;
  /**
   * Most bytes of one bulk body, below the vault's body limit: counted in events alone, a
   * batch of large ones would be refused whole and halved again and again, or be too big to send.
   */
  batchBytes: number;
  batchMs: number;
  /** Retries of a batch after its first attempt; `undefined` retries forever. */
  maxRetries: number | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  vaultTimeoutMs: number;
  /** Job lock and delivery-lease duration; also bounds how long a restart waits after a crash. */
  lockMs: number;
  shutdownMs: number;
  bodyLimit: number;
  /** How long a caller may take to send a whole request to the sidecar's API before 408; 0 waits forever. */
  requestTimeoutMs: number;
  enqueueTimeoutMs: number;
  upstream: string | undefined;
  routesFile: string | undefined;
  proxyBodyLimit: number;
  /**
   * Most events one proxied request yields (a list route: one per item per attribute); the
   * rest are counted as lost, so a huge export cannot flood Redis.
   */
  proxyMaxEvents: number;
  /** How long the upstream may take to send its answer's headers, and then between body chunks, before 504. */
  upstreamTimeoutMs: number;
  /**
   * How long the proxy keeps an idle client connection open. Longer than the idle timeout of
   * a load balancer in front (60 s on most), or it reuses a connection the proxy just closed.
   */
  proxyKeepAliveMs: number;
  logLevel: string;
  /**
   * Bearer token callers of the ingest and dead-letter endpoints must present; required when
   * `host` is not a loopback address.
   */
  ingestToken: string | undefined;
  /** Strip `data.value` from events before they reach Redis. */
  dropValues: boolean;
}

export type SidecarConfigInput = Partial<SidecarConfig> & Pick<SidecarConfig, 'apiKey'>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid sidecar configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

export const defaults = {
  host: '127.0.0.1',
  port: 8084,
  proxyPort: 8085,
  vaultUrl: 'http://127.0.0.1:8083',
  redisUrl: 'redis://127.0.0.1:6379',
  queue: 'vault-audit',
  prefix: 'bull',
  batchSize: 500,
  batchBytes: 8 * 1024 * 1024,
  batchMs: 200,
  maxRetries: undefined,
  retryBaseMs: 250,
  retryMaxMs: 30_000,
  vaultTimeoutMs: 30_000,
  lockMs: 30_000,
  shutdownMs: 7_000,
  bodyLimit: 5 * 1024 * 1024,
  requestTimeoutMs: 60_000,
  enqueueTimeoutMs: 5_000,
  upstream: undefined,
  routesFile: undefined,
  proxyBodyLimit: 1024 * 1024,
  proxyMaxEvents: 10_000,
  upstreamTimeoutMs: 300_000,
  proxyKeepAliveMs: 65_000,
  logLevel: 'info',
  ingestToken: undefined,
  dropValues: false,
} as const satisfies Omit<SidecarConfig, 'apiKey'>;

/** Environment variable for each setting, in the order the README documents them. */
export const envNames: Record<keyof SidecarConfig, string> = {
  host: 'SIDECAR_HOST',
  port: 'SIDECAR_PORT',
  proxyPort: 'SIDECAR_PROXY_PORT',
  vaultUrl: 'SIDECAR_VAULT_URL',
  apiKey: 'SIDECAR_API_KEY',
  redisUrl: 'REDIS_URL',
  queue: 'SIDECAR_QUEUE',
  prefix: 'SIDECAR_PREFIX',
  batchSize: 'SIDECAR_BATCH_SIZE',
  batchBytes: 'SIDECAR_BATCH_BYTES',
  batchMs: 'SIDECAR_BATCH_MS',
  maxRetries: 'SIDECAR_MAX_RETRIES',
  retryBaseMs: 'SIDECAR_RETRY_BASE_MS',
  retryMaxMs: 'SIDECAR_RETRY_MAX_MS',
  vaultTimeoutMs: 'SIDECAR_VAULT_TIMEOUT_MS',
  lockMs: 'SIDECAR_LOCK_MS',
  shutdownMs: 'SIDECAR_SHUTDOWN_MS',
  bodyLimit: 'SIDECAR_BODY_LIMIT',
  requestTimeoutMs: 'SIDECAR_REQUEST_TIMEOUT_MS',
  enqueueTimeoutMs: 'SIDECAR_ENQUEUE_TIMEOUT_MS',
  upstream: 'SIDECAR_UPSTREAM',
  routesFile: 'SIDECAR_ROUTES',
  proxyBodyLimit: 'SIDECAR_PROXY_BODY_LIMIT',
  proxyMaxEvents: 'SIDECAR_PROXY_MAX_EVENTS',
  upstreamTimeoutMs: 'SIDECAR_UPSTREAM_TIMEOUT_MS',
  proxyKeepAliveMs: 'SIDECAR_PROXY_KEEP_ALIVE_MS',
  logLevel: 'SIDECAR_LOG_LEVEL',
  ingestToken: 'SIDECAR_INGEST_TOKEN',
  dropValues: 'SIDECAR_DROP_VALUES',
};

const integerKeys = [
  'port', 'proxyPort', 'batchSize', 'batchBytes', 'batchMs', 'maxRetries', 'retryBaseMs', 'retryMaxMs',
  'vaultTimeoutMs', 'lockMs', 'shutdownMs', 'bodyLimit', 'requestTimeoutMs', 'enqueueTimeoutMs', 'proxyBodyLimit',
  'proxyMaxEvents', 'upstreamTimeoutMs', 'proxyKeepAliveMs',
] as const satisfies readonly (keyof SidecarConfig)[];

type IntegerKey = (typeof integerKeys)[number];

/** Smallest accepted value per integer setting; ports accept 0 so tests can ask for a free one. */
const minimum: Record<IntegerKey, number> = {
  port: 0,
  proxyPort: 0,
  batchSize: 1,
  batchBytes: 1024,
  batchMs: 0,
  maxRetries: 0,
  retryBaseMs: 1,
  retryMaxMs: 1,
  vaultTimeoutMs: 100,
  // Locks are renewed every third of this; below a second a GC pause could lose them.
  lockMs: 1000,
  shutdownMs: 0,
  bodyLimit: 1024,
  requestTimeoutMs: 0,
  enqueueTimeoutMs: 50,
  proxyBodyLimit: 0,
  proxyMaxEvents: 1,
  upstreamTimeoutMs: 100,
  // Node sends it to clients in whole seconds (Keep-Alive: timeout=N).
  proxyKeepAliveMs: 1000,
};

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads `SIDECAR_*` / `REDIS_URL` variables; empty strings count as unset. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): SidecarConfig {
  const problems: string[] = [];
  const input: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(envNames) as [keyof SidecarConfig, string][]) {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') continue;
    if ((integerKeys as readonly string[]).includes(key)) {
      if (!/^\d+$/.test(raw)) {
        problems.push(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
        continue;
      }
      input[key] = Number(raw);
    } else if (key === 'dropValues') {
      if (raw !== 'true' && raw !== 'false') {
        problems.push(`${name} must be true or false, got ${JSON.stringify(raw)}`);
        continue;
      }
      input[key] = raw === 'true';
    } else {
      input[key] = raw;
    }
  }
  if (input.apiKey === undefined) problems.push('SIDECAR_API_KEY is required (the vault API key sent as a Bearer token)');
  return check({ ...defaults, ...input } as SidecarConfig, problems, (key) => envNames[key]);
}

/** Fills defaults into a programmatic configuration and validates it like `loadConfig`. */
export function resolveConfig(input: SidecarConfigInput): SidecarConfig {
  const merged: Record<string, unknown> = { ...defaults };
  for (const [key, value] of Object.entries(input)) if (value !== undefined) merged[key] = value;
  return check(merged as unknown as SidecarConfig, [], (key) => key);
}

function check(
  config: SidecarConfig,
  problems: string[],
  name: (key: keyof SidecarConfig) => string,
): SidecarConfig {
  for (const key of integerKeys) {
    const value = config[key];
    if (value === undefined && key === 'maxRetries') continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum[key]) {
      problems.push(`${name(key)} must be an integer >= ${minimum[key]}, got ${JSON.stringify(value)}`);
    }
  }
  for (const key of ['port', 'proxyPort'] as const) {
    if (typeof config[key] === 'number' && config[key] > 65535) problems.push(`${name(key)} must be <= 65535`);
  }
  if (typeof config.apiKey !== 'string' || config.apiKey.length === 0) {
    if (!problems.some((p) => p.startsWith('SIDECAR_API_KEY'))) problems.push(`${name('apiKey')} must be a non-empty string`);
  } else if (/[\s]/.test(config.apiKey)) {
    problems.push(`${name('apiKey')} must not contain whitespace`);
  }
  if (typeof config.host !== 'string' || config.host.length === 0) problems.push(`${name('host')} must be a non-empty string`);
  if (config.ingestToken !== undefined) {
    if (typeof config.ingestToken !== 'string' || config.ingestToken.length < minTokenLength || /\s/.test(config.ingestToken)) {
      problems.push(`${name('ingestToken')} must be at least ${minTokenLength} characters without whitespace`);
    }
  } else if (typeof config.host === 'string' && config.host.length > 0 && !isLoopback(config.host)) {
    problems.push(
      `${name('host')} is ${JSON.stringify(config.host)}, which is not a loopback address: set ${name('ingestToken')} too, ` +
        'or anyone who can reach the port could post events and read dead letters',
    );
  }
  if (typeof config.dropValues !== 'boolean') problems.push(`${name('dropValues')} must be true or false`);
  checkUrl(config.vaultUrl, name('vaultUrl'), ['http:', 'https:'], problems);
  checkUrl(config.redisUrl, name('redisUrl'), ['redis:', 'rediss:'], problems);
  // BullMQ builds keys as prefix:queue:..., so a colon in the queue name would corrupt them.
  if (typeof config.queue !== 'string' || !/^[A-Za-z0-9._-]+$/.test(config.queue)) {
    problems.push(`${name('queue')} must match [A-Za-z0-9._-]+, got ${JSON.stringify(config.queue)}`);
  }
  if (typeof config.prefix !== 'string' || !/^[A-Za-z0-9._:{}-]+$/.test(config.prefix)) {
    problems.push(`${name('prefix')} must match [A-Za-z0-9._:{}-]+, got ${JSON.stringify(config.prefix)}`);
  }
  if (config.upstream !== undefined) {
    checkUrl(config.upstream, name('upstream'), ['http:', 'https:'], problems);
    if (config.routesFile === undefined || config.routesFile === '') {
      problems.push(`${name('routesFile')} is required when ${name('upstream')} is set`);
    }
    if (config.port !== 0 && config.port === config.proxyPort) {
      problems.push(`${name('proxyPort')} must differ from ${name('port')} (the proxy has its own port)`);
    }
  } else if (config.routesFile !== undefined) {
    problems.push(`${name('routesFile')} is only used in reverse-proxy mode; set ${name('upstream')} too`);
  }
  if (typeof config.retryMaxMs === 'number' && typeof config.retryBaseMs === 'number' && config.retryMaxMs < config.retryBaseMs) {
    problems.push(`${name('retryMaxMs')} must be >= ${name('retryBaseMs')}`);
  }
  if (!logLevels.includes(config.logLevel)) {
    problems.push(`${name('logLevel')} must be one of ${logLevels.join(', ')}, got ${JSON.stringify(config.logLevel)}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({ ...config });
}

/** Long enough that guessing it is hopeless; `openssl rand -hex 32` makes a good one. */
const minTokenLength = 16;

/** 127.0.0.0/8, ::1 (also as an IPv4-mapped address) and localhost reach only this machine. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function checkUrl(value: unknown, label: string, protocols: string[], problems: string[]): void {
  if (typeof value !== 'string') {
    problems.push(`${label} must be a URL`);
    return;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    const shown = withoutCredentials(value);
    const hint = shown === value ? '' : ' (percent-encode any of : / ? # [ ] @ in its user name or password)';
    problems.push(`${label} must be a URL, got ${JSON.stringify(shown)}${hint}`);
    return;
  }
  if (!protocols.includes(url.protocol)) {
    problems.push(`${label} must use ${protocols.join(' or ')}, got ${JSON.stringify(url.protocol)}`);
  }
}

/**
 * A URL that does not parse cannot have its password replaced by URL's own setter, and the
 * likeliest reason it does not parse is a password with an unencoded `/` or `#` in it: so
 * everything up to the last `@` goes, which may hide more than the password, never less.
 */
function withoutCredentials(url: string): string {
  return url.replace(/^([^:/?#]*:\/\/)[^]*@/, '$1***@');
}

/** Query parameters that may carry a credential: ioredis, for one, reads `?password=`. */
const CREDENTIAL_PARAMETER = /pass|secret|token|key|auth|cred/i;

/**
 * A URL as a log may show it: the password of its user, and every query parameter that looks
 * like a credential, replaced by `***`; the rest (host, port, database, options) stays.
 */
function withoutPasswords(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return withoutCredentials(value);
  }
  const credentials = url.password !== '' || [...url.searchParams.keys()].some((name) => CREDENTIAL_PARAMETER.test(name));
  // As configured when there is nothing to hide: URL would add a trailing slash, for one.
  if (!credentials) return value;
  if (url.password) url.password = '***';
  // Rebuilt by hand: URLSearchParams would percent-encode the mask.
  const query = [...url.searchParams].map(([name, v]) => `${encodeURIComponent(name)}=${CREDENTIAL_PARAMETER.test(name) ? '***' : encodeURIComponent(v)}`);
  url.search = '';
  const shown = url.toString();
  return query.length === 0 ? shown : `${shown.replace(/#.*$/, '')}?${query.join('&')}${url.hash}`;
}

/** A copy safe to log: the API key and the ingest token are never written anywhere. */
export function describeConfig(config: SidecarConfig): Record<string, unknown> {
  // Whether a token is set, under a name the log's redaction leaves alone: an operator reading
  // the start line must be able to tell.
  const { ingestToken, ...rest } = config;
  return {
    ...rest,
    apiKey: '***',
    ingestTokenSet: ingestToken !== undefined,
    vaultUrl: withoutPasswords(config.vaultUrl),
    redisUrl: withoutPasswords(config.redisUrl),
    upstream: config.upstream === undefined ? undefined : withoutPasswords(config.upstream),
  };
}
