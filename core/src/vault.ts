/**
 * The vault without HTTP: a database, the key material it may hold, and one service per
 * concept. The server, the CLI and tests all build on this.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { ApplicationService } from './applications/service.js';
import { isIndexKey, MIN_INDEX_KEY_BYTES, type VaultConfig } from './config.js';
import { WriteGroup } from './db/write-group.js';
import { connect, disconnect, redactUrl, type DatabaseHandle } from './db/connect.js';
import { tightenMode } from './db/sqlite.js';
import type { DialectName } from './db/dialect.js';
import { migrateToLatest, newerRelease, pendingMigrations } from './db/migrate.js';
import type { Database } from './db/schema.js';
import { generateKeyPair, Keyring, parsePublicKeyHeader } from './crypto/keys.js';
import { KeyRotation } from './crypto/rotation.js';
import { operatorActor } from './activity/changes.js';
import { DefinitionService } from './definitions/service.js';
import { DataPointService } from './datapoints/service.js';
import { SearchService } from './search/service.js';
import { confirmIndexKey } from './blindindex/key-check.js';
import { EntityService } from './entities/service.js';
import { EntityTypeService } from './entitytypes/service.js';
import { RegulationService } from './regulations/service.js';
import { TagService } from './tags/service.js';
import { VaultMetrics } from './ops/metrics.js';
import { meterActivity, meterAlerts, meterRules, meterSearches } from './ops/metering.js';
import type { RulesEngine } from './rules/engine.js';
import { VaultRulesEngine } from './rules/evaluator.js';
import { RuleService } from './rules/service.js';
import { RetentionSweeper } from './rules/retention.js';
import { AlertService } from './alerts/service.js';
import { DEFAULT_WEBHOOK_OPTIONS, WebhookDelivery } from './alerts/webhooks.js';
import type { ActivityLog } from './activity/log.js';
import { PendingActivityLog } from './activity/appender.js';
import { ActivitySealer } from './activity/sealer.js';
import { DataKeys } from './crypto/datakeys.js';
import { ValueOpener } from './crypto/opener.js';
import { DefinitionCatalog } from './definitions/catalog.js';

export interface VaultOptions {
  config: VaultConfig;
  logger: Logger;
  /** Where first-start secrets are announced; defaults to stderr, never the structured log. */
  announce?: (message: string) => void;
  /**
   * Opens the vault as it is, for the command line's verbs: a database that does not exist or
   * is not migrated to this release is refused, and nothing is created (no database, no key,
   * no admin application) or migrated. Only a start or `vault migrate` does that: an older
   * release may still be serving the database, and a verb run from the wrong directory must
   * not make a vault of its own there.
   */
  existing?: boolean;
  /**
   * With `existing`: a database of another release is opened as it is, for `vault backup`,
   * which copies it whole. The way back from an upgrade is a backup taken by the new
   * release's command line before it migrates anything.
   */
  anyRelease?: boolean;
}

export class Vault {
  readonly config: VaultConfig;
  readonly logger: Logger;
  readonly db: Kysely<Database>;
  /** For reads outside transactions (a second connection on SQLite). */
  readonly reader: Kysely<Database>;
  readonly dialect: DialectName;
  /** Transactions of requests that write: on SQLite those arriving together share a commit. */
  readonly writes: WriteGroup;
  readonly handle: DatabaseHandle;
  readonly keyring: Keyring;
  /** The operator's key rotation (`vault keys register`, `rewrap`, `retire`). */
  readonly keyRotation: KeyRotation;
  readonly applications: ApplicationService;
  readonly entityTypes: EntityTypeService;
  readonly tags: TagService;
  readonly regulations: RegulationService;
  readonly definitions: DefinitionService;
  /** The definitions in memory, for the data paths. */
  readonly catalog: DefinitionCatalog;
  /** The encrypted data plane: stores, reads, deletes, purges (and the data-key cache). */
  readonly datapoints: DataPointService;
  private readonly opener: ValueOpener;
  readonly search: SearchService;
  readonly entities: EntityService;
  /** Rule management and the cached rule set; `rules` is the engine the data paths call. */
  readonly ruleService: RuleService;
  readonly alerts: AlertService;
  /** Deletes expired points that retention rules marked for deletion (VAULT_RETENTION_SWEEP_MS). */
  readonly retention: RetentionSweeper;
  rules: RulesEngine;
  activity: ActivityLog;
  /** Chains committed activity records into the hash chain, in the background. */
  readonly sealer: ActivitySealer;
  readonly metrics = new VaultMetrics();
  /** The blind-index secret; it never enters the database. */
  readonly indexKey: Buffer;

  private constructor(options: VaultOptions, handle: DatabaseHandle, indexKey: Buffer) {
    this.config = options.config;
    this.logger = options.logger;
    this.handle = handle;
    this.db = handle.db;
    this.reader = handle.reader;
    this.dialect = handle.dialect;
    this.indexKey = indexKey;
    this.opener = new ValueOpener({ threads: this.config.decryptThreads, logger: this.logger });
    this.sealer = new ActivitySealer(this.db, this.dialect, {
      logger: this.logger,
      observeLockWait: (stage, seconds) => this.metrics.activityLockWait.observe({ stage }, seconds),
      observeSealed: (records, lag) => {
        this.metrics.activitySealed.inc(records);
        this.metrics.activitySealLag.observe(lag);
      },
    });
    const appender = new PendingActivityLog(this.db, this.sealer, {
      observeQueueWait: (seconds) => this.metrics.activityLockWait.observe({ stage: 'group_commit' }, seconds),
    });
    this.activity = meterActivity(appender, this.metrics);
    this.keyring = new Keyring(this.db, this.activity);
    this.applications = new ApplicationService(this.db, this.activity);
    this.entityTypes = new EntityTypeService(this.db, this.activity, () => this.rules);
    this.catalog = new DefinitionCatalog(this.db);
    const definitionsChanged = () => this.catalog.invalidate();
    this.tags = new TagService(this.db, () => this.rules, this.activity, definitionsChanged);
    this.regulations = new RegulationService(this.db, this.dialect, () => this.config.license.maxCustomRegulations, () => this.rules, this.activity, definitionsChanged);
    this.definitions = new DefinitionService(this.db, () => this.rules, this.activity, definitionsChanged);
    this.entities = new EntityService(this.db, this.activity);
    this.search = new SearchService(this.reader, this.indexKey);
    this.alerts = new AlertService(this.db, this.logger, new WebhookDelivery({ ...DEFAULT_WEBHOOK_OPTIONS, ...this.config.alertWebhooks }, this.logger));
    this.ruleService = new RuleService(this.db, this.logger, () => this.config.license.customRules, this.activity);
    this.rules = meterRules(new VaultRulesEngine(this.ruleService, this.alerts, this.logger, this.activity), this.metrics);
    this.writes = new WriteGroup(this.db, this.dialect, {
      // Half the pool: reads, the sealer and writes of their own keep connections to run on.
      shared: { concurrency: Math.max(1, Math.floor(this.config.dbPoolSize / 2)), observeGroup: (writes) => this.metrics.sharedTransactionWrites.observe(writes) },
    });
    this.datapoints = new DataPointService({
      db: this.db,
      writes: this.writes,
      reader: this.reader,
      dialect: this.dialect,
      keyring: this.keyring,
      dataKeys: new DataKeys(this.config.dataKeyCacheSize),
      opener: this.opener,
      definitions: this.catalog,
      rules: () => this.rules,
      activity: () => this.activity,
      indexKey: this.indexKey,
      readLimit: this.config.readLimit,
      logger: this.logger,
    });
    meterAlerts(this.alerts, this.metrics);
    meterSearches(this.search, this.metrics);
    this.metrics.dataKeyLookups = () => ({ hits: this.datapoints.dataKeys.hits, misses: this.datapoints.dataKeys.misses });
    const checkpointer = handle.checkpointer;
    if (checkpointer) this.metrics.meterCheckpoints(() => checkpointer.stats());
    // On SQLite a request chains its own records: nothing ever waits.
    if (this.dialect === 'postgres') {
      this.metrics.meterUnsealed(async () => {
        const row = await this.db.selectFrom('activity_pending').select('recorded_date').orderBy('id').limit(1).executeTakeFirst();
        return row ? new Date(row.recorded_date) : undefined;
      });
    }
    this.keyRotation = new KeyRotation(this.db, this.keyring, this.datapoints.dataKeys, this.activity);
    this.retention = new RetentionSweeper(this.db, () => this.activity, this.logger, this.config.retentionSweepMs);
  }

  /** Opens the database, migrates it, and makes sure the operator has keys to get in. */
  static async open(options: VaultOptions): Promise<Vault> {
    const { config } = options;
    const announce = options.announce ?? ((m: string) => process.stderr.write(`${m}\n`));
    const existing = options.existing === true;
    if (existing) requireDatabaseFile(config);
    else mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
    const tightened = keepDataDirPrivate(config.dataDir);
    const { key: indexKey, generated } = loadIndexKey(config);
    const handle = connect({
      url: config.db,
      poolSize: config.dbPoolSize,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      statementTimeoutMs: config.dbStatementTimeoutMs,
      sqliteCacheMb: config.sqliteCacheMb,
      onCheckpointError: (err) => options.logger.warn({ err }, 'the SQLite checkpoint thread stopped; the writer checkpoints by itself again'),
      onModesTightened: (changes) => tightened.push(...changes),
    });
    if (tightened.length > 0) {
      // A file another user owns stays readable (`… stays 0644: EPERM`): saying it was made private would hide that.
      const kept = tightened.some((change) => / stays \d+: /.test(change));
      options.logger.warn(
        { changes: tightened },
        kept
          ? 'files of the vault are readable by other users and could not all be made private (a file of another user): change their owner or mode'
          : 'files of the vault were readable by other users (as older releases created them): made them private to their owner',
      );
    }
    const vault = new Vault(options, handle, indexKey);
    try {
      if (existing) {
        await vault.requireMigrated(options.anyRelease === true);
      } else {
        await oneStartAtATime(handle, async () => {
          const migrating = handle.unbounded?.();
          try {
            await migrateToLatest(migrating ?? vault.db);
          } finally {
            await migrating?.destroy();
          }
          await vault.requireOwnIndexKey(generated);
          await vault.bootstrap(announce);
        });
        vault.retention.start();
        vault.sealer.start();
      }
    } catch (err) {
      await vault.close();
      throw err;
    }
    return vault;
  }

  private async requireMigrated(anyRelease: boolean): Promise<void> {
    const { pending, applied, unknown } = await pendingMigrations(this.db);
    if (applied === 0) throw new Error(`${redactUrl(this.config.db)} holds no vault: check VAULT_DB (a start or \`vault migrate\` creates one)`);
    // Its verbs would write as this release does, leaving out what the newer one keeps.
    if (unknown.length > 0 && !anyRelease) throw new Error(newerRelease(unknown));
    if (pending.length > 0 && !anyRelease) {
      throw new Error(`the database is not migrated to this release (${pending.join(', ')} not applied): run \`vault migrate\`, or start this release's vault, first`);
    }
  }

  /** Before an admin or a key pair is made: a key the database was not indexed with stops the start. */
  private async requireOwnIndexKey(generated: boolean): Promise<void> {
    const keyFile = join(this.config.dataDir, 'index.key');
    const ours = await confirmIndexKey(this.db, this.indexKey, generated ? () => writeSecretFile(keyFile, this.indexKey.toString('base64')) : undefined);
    if (ours) return;
    throw new Error(
      generated
        ? `there is no blind-index key here (VAULT_INDEX_KEY, or ${keyFile}), and this vault's database was indexed with one: put the one its other processes use (or the one kept with the backup) in place`
        : `the blind-index key (${this.config.indexKey ? 'VAULT_INDEX_KEY' : keyFile}) is not the one this vault's database was indexed with: give every process the same key (the one kept with the backups), or search would miss what the others stored`,
    );
  }

  private async bootstrap(announce: (message: string) => void): Promise<void> {
    await this.entityTypes.seed();
    await this.regulations.seed();
    const generatedKey = await this.applications.bootstrapAdmin(this.config.adminApiKey);
    if (generatedKey) {
      announce(`Admin API key (shown once, store it safely): ${generatedKey}`);
    }
    if (this.config.encryptionPublicKey) {
      await this.keyring.adopt(parsePublicKeyHeader(this.config.encryptionPublicKey), operatorActor('vault-start'));
    } else if (!(await this.keyring.active())) {
      const pair = generateKeyPair();
      const privatePath = join(this.config.dataDir, 'vault-private-key.pem');
      writeSecretFile(privatePath, pair.privatePem);
      writeFileSync(join(this.config.dataDir, 'vault-public-key.pem'), pair.publicPem);
      await this.keyring.register(parsePublicKeyHeader(pair.publicKey), 'active');
      announce(
        `Generated the vault's RSA key pair. Private key: ${privatePath} (mode 0600). ` +
          'Send it base64-encoded as X-Decryption-Key to read values; move it off this machine for production.',
      );
    }
  }

  async close(): Promise<void> {
    await this.retention.stop();
    await this.sealer.stop();
    await this.alerts.webhooks.close();
    await this.opener.close();
    await disconnect(this.handle);
  }
}

/** Any number that no other user of the database takes an advisory lock on. */
const START_LOCK = 0x7661_756c;

/**
 * Replicas first started together on a new PostgreSQL database would each find no admin and
 * no key pair, and each make its own (printing admin keys that all work, and leaving all but
 * the last key pair retired). So a start's migrations and bootstrap wait for any other's, on
 * a connection of their own: the lock is a transaction's, so an idle timeout of the pool
 * cannot drop it, and a start that dies releases it with its connection. SQLite has no such
 * lock to spare (a second writer would wait on the bootstrap's own writes), and one process
 * per file is its design.
 */
async function oneStartAtATime(handle: DatabaseHandle, work: () => Promise<void>): Promise<void> {
  const own = handle.unbounded?.();
  if (!own) return work();
  let locked = false;
  try {
    await own.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${START_LOCK})`.execute(trx);
      locked = true;
      await work();
    });
  } catch (err) {
    // Said as the migrations say a database they cannot reach.
    if (!locked) throw new Error(`the database could not be migrated: ${(err as Error).message}`);
    throw err;
  } finally {
    await own.destroy();
  }
}

function writeSecretFile(path: string, content: string | Buffer): void {
  writeFileSync(path, content, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * Older releases created the data directory 0755 and its files 0644, and the vault made them
 * private only when creating them. The directory is changed only if it is this user's and not
 * one shared with others (sticky, as /tmp is). Returns what it changed.
 */
function keepDataDirPrivate(dataDir: string): string[] {
  if (!existsSync(dataDir)) return [];
  const dir = statSync(dataDir);
  const owned = dir.isDirectory() && dir.uid === process.getuid?.() && (dir.mode & 0o1000) === 0;
  const changes = [owned ? tightenMode(dataDir, 0o700) : undefined, ...['index.key', 'vault-private-key.pem'].map((name) => tightenMode(join(dataDir, name), 0o600))];
  return changes.filter((c): c is string => c !== undefined);
}

/** A SQLite file must be there already; connecting would create an empty one. */
function requireDatabaseFile(config: VaultConfig): void {
  const path = config.db.startsWith('sqlite:') ? config.db.slice('sqlite:'.length) : undefined;
  if (path !== undefined && path !== ':memory:' && !existsSync(path)) {
    throw new Error(`there is no vault database at ${path}: check VAULT_DB and VAULT_DATA_DIR (a start or \`vault migrate\` creates one)`);
  }
}

/**
 * A generated key is written to index.key only once the database has accepted it
 * (`confirmIndexKey`); the command line, which computes no blind index, never writes it, so it
 * leaves no index.key that a later start would take for the vault's own.
 */
function loadIndexKey(config: VaultConfig): { key: Buffer; generated: boolean } {
  if (config.indexKey) return { key: Buffer.from(config.indexKey, 'base64'), generated: false };
  const path = join(config.dataDir, 'index.key');
  if (existsSync(path)) {
    const kept = readFileSync(path, 'utf8');
    // An emptied or cut-off file would index every later store under another key, and search
    // would quietly stop finding what was stored before.
    if (!isIndexKey(kept)) throw new Error(`${path} does not hold the base64 of ${MIN_INDEX_KEY_BYTES} or more bytes: put back the copy kept with the backups (a new key would leave every stored value unsearchable)`);
    return { key: Buffer.from(kept.trim(), 'base64'), generated: false };
  }
  return { key: randomBytes(MIN_INDEX_KEY_BYTES), generated: true };
}
