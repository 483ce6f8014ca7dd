import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { describeConfig, resolveConfig, type SidecarConfig, type SidecarConfigInput } from './config.js';
import { DeadLetterQueue } from './delivery/dead-letters.js';
import { Deliverer } from './delivery/deliverer.js';
import { VaultClient } from './delivery/vault-client.js';
import { DeliveryWorker } from './delivery/worker.js';
import { createLogger } from './logger.js';
import { SidecarMetrics } from './metrics.js';
import { connect, withTimeout } from './queue/connection.js';
import { EventProducer } from './queue/producer.js';
import { ReverseProxy } from './reverse/proxy.js';
import { loadRoutesFile } from './reverse/routes-file.js';
import { buildServer } from './server.js';
import { SIDECAR_VERSION } from './version.js';

export { ConfigError, loadConfig, resolveConfig, defaults, envNames, type SidecarConfig, type SidecarConfigInput } from './config.js';
export type { ExternalActivityEvent, StampedEvent, EventType } from './ingest/event.js';
export { RoutesFileError, compileRoutes, loadRoutesFile } from './reverse/routes-file.js';
export { deadLetterId, deadLetterQueueName } from './delivery/dead-letters.js';

export interface SidecarHandle {
  config: SidecarConfig;
  /** Base URL of the ingest API, e.g. http://127.0.0.1:8084 */
  url: string;
  /** Base URL of the reverse proxy, when SIDECAR_UPSTREAM is set. */
  proxyUrl: string | undefined;
  metrics: SidecarMetrics;
  log: Logger;
  /** Current delivery state: standby, recovering, delivering, stopping, stopped. */
  readonly deliveryState: string;
  /**
   * Graceful stop, bounded by `shutdownMs` whatever Redis, the vault or the upstream are doing:
   * stop accepting, finish the requests and the batch in flight, release Redis. Idempotent.
   */
  close(): Promise<StopReport>;
}

export interface StopReport {
  /** False when the deadline cut something short; nothing acknowledged is lost either way. */
  finished: boolean;
  /** What was cut short. */
  unfinished: string[];
}

export interface StartOptions {
  /** Use this logger instead of a new pino logger on stdout. */
  logger?: Logger;
}

/**
 * Starts a sidecar in this process. Configuration errors (including a bad routes file) throw
 * before anything listens. An unreachable Redis does not: the sidecar starts, reports not
 * ready, answers 503 to ingest, and catches up when Redis appears.
 */
export async function startSidecar(input: SidecarConfigInput | SidecarConfig, options: StartOptions = {}): Promise<SidecarHandle> {
  const config = resolveConfig(input);
  const routes = config.upstream ? loadRoutesFile(config.routesFile!) : undefined;
  const log = options.logger ?? createLogger(config.logLevel);
  log.info({ version: SIDECAR_VERSION, node: process.version, config: describeConfig(config) }, 'starting sidecar');

  const metrics = new SidecarMetrics();
  const producerRedis = connect(config.redisUrl, 'producer');
  const workerRedis = connect(config.redisUrl, 'worker');
  const controlRedis = connect(config.redisUrl, 'control');
  const producer = new EventProducer(producerRedis, config);
  const deadLetters = new DeadLetterQueue(workerRedis, config, producer);
  const vault = new VaultClient({ vaultUrl: config.vaultUrl, apiKey: config.apiKey, timeoutMs: config.vaultTimeoutMs });
  const deliverer = new Deliverer(vault, deadLetters, config, metrics, log.child({ component: 'delivery' }));
  const worker = new DeliveryWorker(workerRedis, controlRedis, deliverer, config, metrics, log.child({ component: 'worker' }));
  const app = buildServer({ config, producer, deadLetters, worker, metrics, log });
  const proxy = routes
    ? new ReverseProxy({
        upstream: config.upstream!,
        routes,
        bodyLimit: config.proxyBodyLimit,
        maxEvents: config.proxyMaxEvents,
        upstreamTimeoutMs: config.upstreamTimeoutMs,
        keepAliveMs: config.proxyKeepAliveMs,
        producer,
        metrics,
        log: log.child({ component: 'proxy' }),
      })
    : undefined;

  // The worker ends workerRedis when it stops; the dead-letter queue shares it.
  // Each close ends its connection first thing, so even a close that then hangs on a dead
  // Redis leaves no connection open.
  const releaseRedis = async () => {
    controlRedis.disconnect();
    await Promise.allSettled([producer.close(), deadLetters.close()]);
  };

  let url: string;
  let proxyUrl: string | undefined;
  try {
    // The proxy at once: it never waits on Redis (its events are retried for a minute), and the
    // service behind it must not be unreachable while a sidecar starts with Redis away.
    if (proxy) {
      proxyUrl = await proxy.listen(config.host, config.proxyPort);
      // Said at once: the ingest port may wait for Redis, and the service is reachable already.
      log.info({ proxyUrl }, 'proxy listening');
    }
    // Give Redis a moment before opening the ingest port, so a sidecar reported up by
    // /healthz does not refuse its first events; if Redis is really away we start anyway and
    // answer 503 until it is back.
    if (!(await producer.waitUntilConnected(config.enqueueTimeoutMs))) {
      log.warn('Redis not reachable yet; ingest answers 503 until it is');
    }
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address() as AddressInfo;
    url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  } catch (err) {
    await app.close().catch(() => {});
    await proxy?.close(Date.now()).catch(() => {});
    await worker.stop(Date.now() + 1000);
    await vault.close();
    await releaseRedis();
    throw err;
  }
  worker.start();
  log.info({ url, proxyUrl }, 'sidecar listening');

  let closing: Promise<StopReport> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const deadline = Date.now() + config.shutdownMs;
      const left = () => Math.max(0, deadline - Date.now());
      log.info({ shutdownMs: config.shutdownMs }, 'stopping sidecar');
      const unfinished: string[] = [];
      // Taking traffic and delivering are independent (what is accepted meanwhile waits in
      // Redis for the next start), so both wind down at once and share the one deadline.
      const ingestClosed = async () => {
        const done = await withTimeout(app.close(), left(), 'ingest close').then(() => true, () => false);
        if (!done) {
          app.server.closeAllConnections();
          unfinished.push('ingest requests');
        }
      };
      await Promise.all([
        ingestClosed(),
        proxy?.close(deadline).then((done) => done || unfinished.push('proxied requests')),
        worker.stop(deadline).then((done) => done || unfinished.push('delivery in progress')),
      ]);
      await vault.close(Math.min(1000, left()));
      await withTimeout(releaseRedis(), 1000, 'Redis close').catch(() => {});
      if (unfinished.length > 0) {
        log.warn({ unfinished }, 'sidecar stopped before finishing; what it had not delivered stays in Redis for the next start');
      } else log.info('sidecar stopped');
      return { finished: unfinished.length === 0, unfinished };
    })());

  return {
    config,
    url,
    proxyUrl,
    metrics,
    log,
    get deliveryState() {
      return worker.state;
    },
    close,
  };
}
