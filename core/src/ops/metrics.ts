/**
 * Prometheus metrics. One registry per vault (tests run several in one process). Labels are
 * route templates, methods and status codes only: never an id, a key or a value.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CheckpointStats } from '../db/checkpointer.js';

export class VaultMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'vault_http_requests_total',
    help: 'HTTP requests by route template, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'vault_http_request_duration_seconds',
    help: 'HTTP request latency by route template, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly dataPoints = new Counter({
    name: 'vault_datapoints_total',
    help: 'Data points stored, read and deleted',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  readonly searches = new Counter({ name: 'vault_searches_total', help: 'Searches run', registers: [this.registry] });
  readonly ruleEvaluations = new Counter({
    name: 'vault_rule_evaluations_total',
    help: 'Rule set evaluations by rule type',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });
  readonly alerts = new Counter({ name: 'vault_alerts_total', help: 'Alerts fired by level', labelNames: ['level'] as const, registers: [this.registry] });
  readonly auditEvents = new Counter({ name: 'vault_audit_events_total', help: 'Audit events recorded', registers: [this.registry] });
  /**
   * Time spent waiting to get activity records written: `group_commit` is a read's wait for
   * the next group commit to take its records; `seal` is the sealer's attempt at the seal
   * (PostgreSQL's try-lock, which never waits for a holder). Requests themselves take no
   * activity-log lock: on PostgreSQL they insert unchained records.
   */
  readonly activityLockWait = new Histogram({
    name: 'vault_activity_lock_wait_seconds',
    help: 'Time spent waiting for the activity log (group-commit queue, seal lock)',
    labelNames: ['stage'] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1],
    registers: [this.registry],
  });
  readonly activitySealLag = new Histogram({
    name: 'vault_activity_seal_lag_seconds',
    help: 'Age of the oldest record in each sealed batch when it was chained',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 30],
    registers: [this.registry],
  });
  /** PostgreSQL: writes per shared transaction that committed (`SharedTransactions`). */
  readonly sharedTransactionWrites = new Histogram({
    name: 'vault_shared_transaction_writes',
    help: 'Writes (stores) per transaction shared on PostgreSQL, for each shared transaction that committed',
    buckets: [1, 2, 4, 8, 16, 32, 64],
    registers: [this.registry],
  });
  readonly activitySealed = new Counter({ name: 'vault_activity_sealed_total', help: 'Activity records chained by this process', registers: [this.registry] });
  readonly dataKeyCacheHitRatio: Gauge;
  readonly dataKeyCacheLookups: Counter;
  /** Set by the vault to the data-key cache's counters. */
  dataKeyLookups: () => { hits: number; misses: number } = () => ({ hits: 0, misses: 0 });

  constructor(defaultMetrics = true) {
    if (defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'vault_' });
    const self = this;
    this.dataKeyCacheHitRatio = new Gauge({
      name: 'vault_data_key_cache_hit_ratio',
      help: 'Share of data key lookups for reads answered from memory since start',
      registers: [this.registry],
      // Read at scrape time from the cache's own counters: one source of truth.
      collect() {
        const { hits, misses } = self.dataKeyLookups();
        this.set(hits + misses === 0 ? 0 : hits / (hits + misses));
      },
    });
    this.dataKeyCacheLookups = new Counter({
      name: 'vault_data_key_cache_lookups_total',
      help: 'Data key lookups for reads, by whether memory answered them (hit) or the key had to be unwrapped (miss)',
      labelNames: ['result'] as const,
      registers: [this.registry],
      collect() {
        const { hits, misses } = self.dataKeyLookups();
        this.reset();
        this.inc({ result: 'hit' }, hits);
        this.inc({ result: 'miss' }, misses);
      },
    });
  }

  /**
   * PostgreSQL: seconds the oldest record not yet chained has waited, read at scrape time
   * (`oldest` gives its recorded date). The seal-lag histogram only gets samples when a seal
   * happens, so a sealer that stopped chaining would leave it silent; this keeps growing.
   * A scrape waits at most a second for the database: without an answer, no value.
   */
  meterUnsealed(oldest: () => Promise<Date | undefined>): void {
    new Gauge({
      name: 'vault_activity_unsealed_oldest_age_seconds',
      help: 'Age of the oldest activity record not yet chained into the hash chain (0 when none waits)',
      registers: [this.registry],
      async collect() {
        let timer: NodeJS.Timeout | undefined;
        try {
          const found = await Promise.race([
            oldest(),
            new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no answer')), 1000))),
          ]);
          this.set(found ? Math.max(0, (Date.now() - found.getTime()) / 1000) : 0);
        } catch {
          this.reset();
        } finally {
          clearTimeout(timer);
        }
      },
    });
  }

  /**
   * The checkpoint thread's counters, registered by a vault on an SQLite file only: on
   * PostgreSQL they would be series that are always empty.
   */
  meterCheckpoints(stats: () => CheckpointStats | undefined): void {
    new Counter({
      name: 'vault_sqlite_checkpoints_total',
      help: "Checkpoints run by the vault's checkpoint thread that copied log pages into the SQLite file",
      registers: [this.registry],
      collect() {
        const counted = stats();
        this.reset();
        if (counted) this.inc(counted.checkpoints);
      },
    });
    new Gauge({
      name: 'vault_sqlite_wal_pages',
      help: 'Pages in the SQLite write-ahead log at the last checkpoint, by whether they were copied into the file yet',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const pages = stats();
        if (!pages) return;
        this.set({ state: 'copied' }, pages.copiedPages);
        this.set({ state: 'waiting' }, pages.walPages - pages.copiedPages);
      },
    });
  }
}
