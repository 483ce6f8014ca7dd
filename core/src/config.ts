/**
 * The operator contract: every setting comes from the environment, is checked at start,
 * and a bad value stops the process with a message naming the variable.
 */
import { createPrivateKey } from 'node:crypto';
import { accessSync, constants, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import pg from 'pg';
import { parsePublicKeyHeader } from './crypto/keys.js';
import { isUsableApiKey, MAX_API_KEY_LENGTH, MIN_API_KEY_LENGTH } from './applications/api-key.js';
import { redactUrl } from './db/connect.js';

export interface LicenseConfig {
  /** Undefined: unlimited custom regulations. */
  maxCustomRegulations?: number;
  customRules: boolean;
}

export interface VaultConfig {
  host: string;
  port: number;
  dataDir: string;
  /** `sqlite:<path>` or a `postgres://` URL. */
  db: string;
  dbPoolSize: number;
  /** PostgreSQL: how long a request waits for a connection, ms. */
  dbConnectTimeoutMs: number;
  /** PostgreSQL: how long a statement may go unanswered before its connection is given up, ms; 0 waits forever. */
  dbStatementTimeoutMs: number;
  /** SQLite page cache, MiB. */
  sqliteCacheMb: number;
  /** Unwrapped data keys kept in memory (each spares an RSA decryption on a later read). */
  dataKeyCacheSize: number;
  /** Threads that open the values of reads of several points; 0 opens them on the event loop. */
  decryptThreads: number;
  adminApiKey?: string;
  /** Base64 of a PEM public key, as in the X-Encryption-Key header. */
  encryptionPublicKey?: string;
  /** Base64 of the blind-index secret, at least `MIN_INDEX_KEY_BYTES` of it. */
  indexKey?: string;
  /** Where every alert is POSTed, and the secret that signs each delivery. */
  alertWebhooks: { urls: string[]; secret?: string };
  /** Between retention sweeps, ms; 0 turns the sweep off. */
  retentionSweepMs: number;
  bodyLimit: number;
  /**
   * Most bytes one read of several points may answer (each value's sealed size, plus
   * `READ_POINT_ALLOWANCE` per point); 413 above it. A single value is always answered.
   */
  readLimit: number;
  /** How long a client may take to send a whole request before 408; 0 waits forever. */
  requestTimeoutMs: number;
  logLevel: string;
  license: LicenseConfig;
  /**
   * Whose X-Forwarded-For to believe (Fastify's trustProxy): false, a hop count, or the
   * proxies' addresses and CIDRs. `true` believes anyone, which lets clients pick their address.
   */
  trustProxy: boolean | number | string[];
  /** Requests per application per window; 0 turns the limit off. */
  rateLimit: { max: number; windowMs: number };
  /** Failed authentications per address per window before 429. */
  authFailures: { max: number; windowMs: number };
  /** On SIGTERM: how long to keep serving (readiness failing, `Connection: close`) before closing. */
  shutdownGraceMs: number;
  /** Serve HTTPS with this certificate and key (PEM file paths). */
  tls?: { certPath: string; keyPath: string };
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(true|1|yes)$/i.test(raw)) return true;
  if (/^(false|0|no)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** proxy-addr's names for whole ranges, accepted beside addresses and CIDRs. */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function trustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined || raw.trim() === '' || /^false$/i.test(raw.trim())) return false;
  if (/^true$/i.test(raw.trim())) return true;
  if (/^\d+$/.test(raw.trim())) {
    const hops = Number(raw.trim());
    if (hops < 1 || hops > 16) throw new ConfigError(`VAULT_TRUST_PROXY hop count must be from 1 to 16, got "${raw}"`);
    return hops;
  }
  const entries = raw.split(',').map((e) => e.trim()).filter((e) => e !== '');
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (!NAMED_RANGES.has(entry) && (family === 0 || !prefixOk || extra !== undefined)) {
      throw new ConfigError(`VAULT_TRUST_PROXY must be false, a hop count, or proxy addresses/CIDRs separated by commas; "${entry}" is none of them`);
    }
  }
  return entries.length === 0 ? false : entries;
}

/** Webhook URLs may carry credentials, so a bad entry is named by its position, never quoted. */
function webhookUrls(raw: string | undefined): string[] {
  const urls = (raw ?? '').split(',').map((u) => u.trim()).filter((u) => u.length > 0);
  urls.forEach((url, i) => {
    if (!URL.canParse(url) || !['http:', 'https:'].includes(new URL(url).protocol)) {
      throw new ConfigError(`VAULT_ALERT_WEBHOOKS must be http(s) URLs separated by commas; entry ${i + 1} is not one`);
    }
  });
  return urls;
}

/**
 * The blind index, and the request log's digests of ids, are HMAC-SHA256 under this key:
 * 32 bytes is SHA-256's own strength, and a shorter key is one that an attacker holding a
 * copy of the database could search for. Node's base64 decoder skips what is not base64, so
 * a passphrase would pass as a shorter key than it looks: only the base64 alphabets count.
 */
export const MIN_INDEX_KEY_BYTES = 32;

/** Whether `raw` is the base64 of a key long enough for the blind index. */
export function isIndexKey(raw: string): boolean {
  // Line breaks are base64's own (`openssl rand -base64 64` wraps at 64 characters).
  const base64 = raw.replace(/\s+/g, '');
  return /^[A-Za-z0-9+/_-]+={0,2}$/.test(base64) && Buffer.from(base64, 'base64').length >= MIN_INDEX_KEY_BYTES;
}

function indexKey(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!isIndexKey(raw)) {
    throw new ConfigError(`VAULT_INDEX_KEY must be the base64 of at least ${MIN_INDEX_KEY_BYTES} random bytes (\`openssl rand -base64 ${MIN_INDEX_KEY_BYTES}\` makes one)`);
  }
  return raw;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** As the X-Encryption-Key header is read, so a key the vault would refuse at start stops it here, named. */
function isRsaPublicKey(base64: string): boolean {
  try {
    parsePublicKeyHeader(base64);
    return true;
  } catch {
    return false;
  }
}

/** Node derives a public key from a private one without a word, so a private key passes `isRsaPublicKey`. */
function isPrivateKey(base64: string): boolean {
  try {
    createPrivateKey(Buffer.from(base64, 'base64').toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * What would fail only on opening the database, after index.key and the data directory were
 * made. A postgres:// URL without a host is left alone: pg then uses PGHOST or localhost,
 * as libpq does.
 */
function checkDatabase(db: string): void {
  if (db.startsWith('sqlite:')) {
    const path = db.slice('sqlite:'.length);
    if (path.trim() === '') throw new ConfigError('VAULT_DB must be sqlite:<path>, with the path of the database file; the path is empty');
    if (path !== ':memory:' && (/[/\\]$/.test(path) || isDirectory(path))) {
      throw new ConfigError(`VAULT_DB must name the database file, not a directory: ${path}`);
    }
    return;
  }
  try {
    // Parses the URL as connecting will, without connecting.
    new pg.Client({ connectionString: db });
  } catch {
    // Never the URL itself: it may hold the password.
    throw new ConfigError('VAULT_DB is not a URL PostgreSQL can be reached by: postgres://user:password@host:port/database');
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function loadConfig(env: Env = process.env): VaultConfig {
  const dataDir = resolve(env.VAULT_DATA_DIR || './data');
  const db = env.VAULT_DB || `sqlite:${resolve(dataDir, 'vault.db')}`;
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(db)) {
    throw new ConfigError('VAULT_DB must be sqlite:<path> or a postgres:// URL');
  }
  checkDatabase(db);
  const adminApiKey = env.VAULT_ADMIN_API_KEY || undefined;
  if (adminApiKey !== undefined && !isUsableApiKey(adminApiKey)) {
    throw new ConfigError(`VAULT_ADMIN_API_KEY must be ${MIN_API_KEY_LENGTH} to ${MAX_API_KEY_LENGTH} characters of printable ASCII, without spaces`);
  }
  const logLevel = env.VAULT_LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`VAULT_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const encryptionPublicKey = env.VAULT_ENCRYPTION_PUBLIC_KEY || undefined;
  if (encryptionPublicKey !== undefined && isPrivateKey(encryptionPublicKey)) {
    throw new ConfigError('VAULT_ENCRYPTION_PUBLIC_KEY holds a private key: give the public key only, the vault must never hold a private key');
  }
  if (encryptionPublicKey !== undefined && !isRsaPublicKey(encryptionPublicKey)) {
    throw new ConfigError('VAULT_ENCRYPTION_PUBLIC_KEY must be the base64 of a PEM RSA public key (PKCS#1 or SPKI)');
  }
  const maxRegs = env.VAULT_LICENSE_MAX_CUSTOM_REGULATIONS;
  const certPath = env.VAULT_TLS_CERT || undefined;
  const keyPath = env.VAULT_TLS_KEY || undefined;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    throw new ConfigError('VAULT_TLS_CERT and VAULT_TLS_KEY must be set together');
  }
  for (const [name, path] of [['VAULT_TLS_CERT', certPath], ['VAULT_TLS_KEY', keyPath]] as const) {
    if (path !== undefined && !readable(path)) throw new ConfigError(`${name} names no readable file: ${path}`);
  }
  return {
    host: env.VAULT_HOST || '127.0.0.1',
    port: integer(env, 'VAULT_PORT', 8083, 0, 65535),
    dataDir,
    db,
    dbPoolSize: integer(env, 'VAULT_DB_POOL_SIZE', 10, 1, 1000),
    dbConnectTimeoutMs: integer(env, 'VAULT_DB_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
    dbStatementTimeoutMs: integer(env, 'VAULT_DB_STATEMENT_TIMEOUT_MS', 30_000, 0, 3_600_000),
    sqliteCacheMb: integer(env, 'VAULT_SQLITE_CACHE_MB', 32, 1, 65_536),
    dataKeyCacheSize: integer(env, 'VAULT_DATA_KEY_CACHE_SIZE', 10_000, 1, 10_000_000),
    // On one core a thread would only take turns with the event loop.
    decryptThreads: integer(env, 'VAULT_DECRYPT_THREADS', availableParallelism() > 1 ? 1 : 0, 0, 64),
    adminApiKey,
    encryptionPublicKey,
    indexKey: indexKey(env.VAULT_INDEX_KEY),
    alertWebhooks: { urls: webhookUrls(env.VAULT_ALERT_WEBHOOKS), secret: env.VAULT_ALERT_WEBHOOK_SECRET || undefined },
    retentionSweepMs: integer(env, 'VAULT_RETENTION_SWEEP_MS', 60_000, 0, 86_400_000),
    bodyLimit: integer(env, 'VAULT_BODY_LIMIT', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    // At most 256 MiB: the answer is one JSON text, and V8 strings end near 512 MiB.
    readLimit: integer(env, 'VAULT_READ_LIMIT', 64 * 1024 * 1024, 64 * 1024, 256 * 1024 * 1024),
    requestTimeoutMs: integer(env, 'VAULT_REQUEST_TIMEOUT_MS', 60_000, 0, 3_600_000),
    logLevel,
    license: {
      maxCustomRegulations:
        maxRegs === undefined || maxRegs === '' ? undefined : integer(env, 'VAULT_LICENSE_MAX_CUSTOM_REGULATIONS', 0, 0, 1_000_000),
      customRules: boolean(env, 'VAULT_LICENSE_CUSTOM_RULES', true),
    },
    rateLimit: {
      max: integer(env, 'VAULT_RATE_LIMIT_MAX', 60_000, 0, 100_000_000),
      windowMs: integer(env, 'VAULT_RATE_LIMIT_WINDOW_MS', 60_000, 1000, 86_400_000),
    },
    authFailures: {
      max: integer(env, 'VAULT_AUTH_FAILURE_LIMIT', 20, 0, 1_000_000),
      windowMs: integer(env, 'VAULT_AUTH_FAILURE_WINDOW_MS', 60_000, 1000, 86_400_000),
    },
    shutdownGraceMs: integer(env, 'VAULT_SHUTDOWN_GRACE_MS', 0, 0, 600_000),
    tls: certPath && keyPath ? { certPath, keyPath } : undefined,
    trustProxy: trustProxy(env.VAULT_TRUST_PROXY),
  };
}

/**
 * The configuration as the start line shows it: secrets as `***` (only whether they are set
 * shows), passwords out of every URL; the public key is long and no secret, so its length.
 * A webhook shows only its origin: many services take the URL's path as the credential.
 */
export function describeConfig(config: VaultConfig): Record<string, unknown> {
  const set = (value: string | undefined) => (value === undefined ? undefined : '***');
  // Member by member, never a spread: a setting added later must be described here (the type
  // asks for every key) before it can reach the log, so a new secret is not logged by default.
  const described: { [K in keyof Required<VaultConfig>]: unknown } = {
    host: config.host,
    port: config.port,
    dataDir: config.dataDir,
    db: redactUrl(config.db),
    dbPoolSize: config.dbPoolSize,
    dbConnectTimeoutMs: config.dbConnectTimeoutMs,
    dbStatementTimeoutMs: config.dbStatementTimeoutMs,
    sqliteCacheMb: config.sqliteCacheMb,
    dataKeyCacheSize: config.dataKeyCacheSize,
    decryptThreads: config.decryptThreads,
    adminApiKey: set(config.adminApiKey),
    encryptionPublicKey: config.encryptionPublicKey === undefined ? undefined : `${config.encryptionPublicKey.length} characters`,
    indexKey: set(config.indexKey),
    alertWebhooks: { urls: config.alertWebhooks.urls.map(webhookOrigin), secret: set(config.alertWebhooks.secret) },
    retentionSweepMs: config.retentionSweepMs,
    bodyLimit: config.bodyLimit,
    readLimit: config.readLimit,
    requestTimeoutMs: config.requestTimeoutMs,
    logLevel: config.logLevel,
    license: config.license,
    trustProxy: config.trustProxy,
    rateLimit: config.rateLimit,
    authFailures: config.authFailures,
    shutdownGraceMs: config.shutdownGraceMs,
    tls: config.tls,
  };
  return described;
}

function webhookOrigin(url: string): string {
  const { origin, pathname, search } = new URL(url);
  return pathname === '/' && search === '' ? origin : `${origin}/***`;
}
