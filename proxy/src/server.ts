import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { SidecarConfig } from './config.js';
import { registerDeadLetterRoutes } from './delivery/dead-letter-routes.js';
import type { DeadLetterQueue } from './delivery/dead-letters.js';
import { NOT_THE_VAULT } from './delivery/vault-client.js';
import type { DeliveryWorker } from './delivery/worker.js';
import { installIngestAuth } from './auth.js';
import { answerClientError, describeFailure, discardBody, errorBody, installJsonParser, receiving, refuseOversizedContinue, requestId } from './http.js';
import { registerIngestRoutes } from './ingest/routes.js';
import type { SidecarMetrics } from './metrics.js';
import { withTimeout } from './queue/connection.js';
import type { EventProducer } from './queue/producer.js';

export interface ServerDeps {
  config: SidecarConfig;
  producer: EventProducer;
  deadLetters: DeadLetterQueue;
  worker: DeliveryWorker;
  metrics: SidecarMetrics;
  log: Logger;
}

/** The sidecar's own HTTP API: ingest, dead letters, health and metrics. */
export function buildServer({ config, producer, deadLetters, worker, metrics, log }: ServerDeps): FastifyInstance {
  const app = Fastify({
    // Fastify logs every request at info: one line per reported event is noise, so only its
    // warnings and errors come through.
    loggerInstance: log.child({ component: 'http' }, { level: log.levelVal > 40 ? log.level : 'warn' }) as FastifyBaseLogger,
    bodyLimit: config.bodyLimit,
    // `/deadletters/:id` takes an eventId, up to 512 characters and 12 each once
    // percent-encoded: Fastify's default of 100 answered 414 for longer ones. As the vault's,
    // bounded only by the request line's own limit, so any other id is simply not found.
    routerOptions: { maxParamLength: 65_536 },
    forceCloseConnections: 'idle',
    genReqId: requestId,
    clientErrorHandler: answerClientError,
    ...receiving(config.requestTimeoutMs),
  });

  refuseOversizedContinue(app.server, config.bodyLimit);
  // First, so every answer carries it, refusals included: the id of the request's log lines.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  installJsonParser(app);
  app.setErrorHandler(async (err: FastifyError, request, reply) => {
    const { statusCode, message } = describeFailure(err);
    if (statusCode >= 500) request.log.error({ err }, 'request failed');
    if (statusCode === 413) await discardBody(request.raw);
    const body = errorBody(statusCode, message);
    // Keep the ingest answer shape even when the body could not be parsed.
    if (request.url.startsWith('/events')) return reply.code(statusCode).send({ accepted: [], rejected: [], ...body });
    return reply.code(statusCode).send(body);
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send(errorBody(404, 'Not Found')));

  // Before the routes' own hooks, so an unauthenticated caller learns nothing, not even whether Redis is up.
  installIngestAuth(app, config.ingestToken);
  registerIngestRoutes(app, { producer, metrics, log });
  registerDeadLetterRoutes(app, deadLetters, metrics);

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const reachable = await producer.ping();
    // A full or read-only Redis still answers pings while it refuses every event: for ingest, as good as away.
    const redis = !reachable ? 'unreachable' : ((await producer.writeRefusal()) ?? 'ok');
    const running = ['standby', 'recovering', 'delivering'].includes(worker.state);
    const ready = redis === 'ok' && running;
    const body = { status: ready ? 'ready' : 'not ready', redis, worker: worker.state };
    // Still ready: events are taken and wait safely in Redis. But an operator must see it.
    const refusal = worker.vaultRefusal;
    if (refusal) {
      const check = refusal.endsWith(NOT_THE_VAULT) ? 'SIDECAR_VAULT_URL' : 'SIDECAR_API_KEY';
      Object.assign(body, { vault: `refuses the sidecar (${refusal}): check ${check}` });
    } else if (worker.vaultFailure) {
      const failure = worker.vaultFailure;
      Object.assign(body, { vault: failure.startsWith('http ') ? `answers ${failure}: retrying` : `unreachable (${failure}): retrying` });
    }
    return reply.code(ready ? 200 : 503).send(body);
  });

  app.get('/metrics', async (_request, reply) => {
    // Queue gauges are read from Redis on scrape; if Redis is away they keep their last value.
    await Promise.allSettled([
      producer.counts().then((counts) => {
        for (const [state, n] of Object.entries(counts)) metrics.queueJobs.set({ state }, n);
      }),
      withTimeout(deadLetters.count(), 1000, 'dead-letter count').then((n) => metrics.deadLetterDepth.set(n)),
      producer.outOfMemory().then((full) => metrics.redisOutOfMemory.set(full ? 1 : 0)),
      producer.oldestEventAge().then((seconds) => metrics.oldestEventAge.set(seconds)),
    ]);
    metrics.bufferedEvents.set(worker.buffered);
    return reply.header('content-type', metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  return app;
}
