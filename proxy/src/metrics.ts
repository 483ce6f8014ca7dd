import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One registry per sidecar instance (not prom-client's global one) so several instances can
 * live in one process, as they do in tests.
 */
export class SidecarMetrics {
  readonly registry = new Registry();

  readonly eventsAccepted = new Counter({
    name: 'sidecar_events_accepted_total',
    help: 'Events accepted by the ingest API and enqueued in Redis',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly eventsRejected = new Counter({
    name: 'sidecar_events_rejected_total',
    help: 'Events refused by ingest validation',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });
  readonly enqueueFailures = new Counter({
    name: 'sidecar_enqueue_failures_total',
    help: 'Requests answered 503 because Redis did not take the events',
    registers: [this.registry],
  });
  readonly redisOutOfMemory = new Gauge({
    name: 'sidecar_redis_out_of_memory',
    help: '1 while Redis refuses writes for lack of memory (maxmemory reached), else 0; read on scrape',
    registers: [this.registry],
  });
  readonly queueJobs = new Gauge({
    name: 'sidecar_queue_jobs',
    help: 'Jobs (one per accepted request) in the delivery queue, by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly oldestEventAge = new Gauge({
    name: 'sidecar_oldest_event_age_seconds',
    help: 'Seconds the oldest event not yet acknowledged by the vault has been queued (0 when none waits); read on scrape',
    registers: [this.registry],
  });
  readonly bufferedEvents = new Gauge({
    name: 'sidecar_buffered_events',
    help: 'Events taken from the queue by this process and not yet acknowledged by the vault',
    registers: [this.registry],
  });
  readonly deadLetterDepth = new Gauge({
    name: 'sidecar_dead_letters',
    help: 'Events currently in the dead-letter queue',
    registers: [this.registry],
  });
  readonly eventsDelivered = new Counter({
    name: 'sidecar_events_delivered_total',
    help: 'Events acknowledged by the vault (including ones it already had)',
    registers: [this.registry],
  });
  readonly batchesDelivered = new Counter({
    name: 'sidecar_batches_delivered_total',
    help: 'Bulk requests acknowledged by the vault',
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'sidecar_delivery_retries_total',
    help: 'Bulk requests retried after a network error or a retryable vault answer',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly eventsDeadLettered = new Counter({
    name: 'sidecar_events_dead_lettered_total',
    help: 'Events moved to the dead-letter queue',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly eventsReplayed = new Counter({
    name: 'sidecar_events_replayed_total',
    help: 'Dead letters put back into the delivery queue',
    registers: [this.registry],
  });
  readonly batchLatency = new Histogram({
    name: 'sidecar_batch_latency_seconds',
    help: 'Time from sending a batch to the vault until it is fully handled, retries included',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'sidecar_batch_size_events',
    help: 'Events per batch sent to the vault',
    buckets: [1, 5, 10, 50, 100, 250, 500, 1000, 5000],
    registers: [this.registry],
  });
  readonly vaultRequests = new Histogram({
    name: 'sidecar_vault_request_seconds',
    help: 'Duration of single bulk requests to the vault, by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly proxyRequests = new Counter({
    name: 'sidecar_proxy_requests_total',
    help: 'Requests forwarded by the reverse proxy',
    labelNames: ['matched'] as const,
    registers: [this.registry],
  });
  readonly proxyEventsLost = new Counter({
    name: 'sidecar_proxy_events_lost_total',
    help: 'Events derived from proxied traffic that could not be enqueued (Redis away too long) or built',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'sidecar_' });
  }
}
