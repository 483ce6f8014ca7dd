/**
 * The operator contract: every setting comes from the environment, is checked at start,
 * and a bad value stops the process with a message naming the variable.
 */
import { resolve } from 'node:path';

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
  adminApiKey?: string;
  /** Base64 of a PEM public key, as in the X-Encryption-Key header. */
  encryptionPublicKey?: string;
  /** Base64 of the blind-index secret. */
  indexKey?: string;
  bodyLimit: number;
  logLevel: string;
  license: LicenseConfig;
  /** Honour X-Forwarded-For from these proxies (Fastify's trustProxy). */
  trustProxy: boolean | string;
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

export function loadConfig(env: Env = process.env): VaultConfig {
  const dataDir = resolve(env.VAULT_DATA_DIR || './data');
  const db = env.VAULT_DB || `sqlite:${resolve(dataDir, 'vault.db')}`;
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(db)) {
    throw new ConfigError('VAULT_DB must be sqlite:<path> or a postgres:// URL');
  }
  const adminApiKey = env.VAULT_ADMIN_API_KEY || undefined;
  if (adminApiKey !== undefined && adminApiKey.length < 16) {
    throw new ConfigError('VAULT_ADMIN_API_KEY must be at least 16 characters');
  }
  const maxRegs = env.VAULT_LICENSE_MAX_CUSTOM_REGULATIONS;
  const certPath = env.VAULT_TLS_CERT || undefined;
  const keyPath = env.VAULT_TLS_KEY || undefined;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    throw new ConfigError('VAULT_TLS_CERT and VAULT_TLS_KEY must be set together');
  }
  const trust = env.VAULT_TRUST_PROXY;
  return {
    host: env.VAULT_HOST || '127.0.0.1',
    port: integer(env, 'VAULT_PORT', 8083, 0, 65535),
    dataDir,
    db,
    dbPoolSize: integer(env, 'VAULT_DB_POOL_SIZE', 10, 1, 1000),
    adminApiKey,
    encryptionPublicKey: env.VAULT_ENCRYPTION_PUBLIC_KEY || undefined,
    indexKey: env.VAULT_INDEX_KEY || undefined,
    bodyLimit: integer(env, 'VAULT_BODY_LIMIT', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    logLevel: env.VAULT_LOG_LEVEL || 'info',
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
    trustProxy: trust === undefined || trust === '' ? false : /^(true|false)$/i.test(trust) ? /^true$/i.test(trust) : trust,
  };
}
