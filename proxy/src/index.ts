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
  /** Graceful stop: stop accepting, finish the batch in flight, release Redis. Idempotent. */
  close(): Promise<void>;
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
  log.info({ config: describeConfig(config) }, 'starting sidecar');

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
        producer,
        metrics,
        log: log.child({ component: 'proxy' }),
      })
    : undefined;

  // The worker ends workerRedis when it stops; the dead-letter queue shares it.
  const releaseRedis = async () => {
    await producer.close();
    await deadLetters.close();
    controlRedis.disconnect();
  };

  // Give Redis a moment before opening the ports, so a sidecar reported up by /healthz does
  // not refuse its first requests; if Redis is really away we start anyway and answer 503
  // until it is back.
  if (!(await producer.waitUntilConnected(config.enqueueTimeoutMs))) {
    log.warn('Redis not reachable yet; ingest answers 503 until it is');
  }

  let url: string;
  let proxyUrl: string | undefined;
  try {
    await app.listen({ host: config.host, port: config.port });
    const address = app.server.address() as AddressInfo;
    url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    if (proxy) proxyUrl = await proxy.listen(config.host, config.proxyPort);
  } catch (err) {
    await app.close().catch(() => {});
    await proxy?.close(0).catch(() => {});
    await worker.stop();
    await vault.close();
    await releaseRedis();
    throw err;
  }
  worker.start();
  log.info({ url, proxyUrl }, 'sidecar listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      log.info('stopping sidecar');
      // Stop taking traffic first, so nothing is accepted that we could not enqueue.
      await Promise.allSettled([
        withTimeout(app.close(), config.shutdownMs + 1000, 'ingest close'),
        proxy?.close(config.shutdownMs),
      ]);
      await worker.stop();
      await vault.close();
      await releaseRedis();
      log.info('sidecar stopped');
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
