import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { SidecarMetrics } from '../metrics.js';
import { QueueUnavailableError, type EventProducer } from '../queue/producer.js';
import { prepareBatch } from './validate.js';

export interface IngestDeps {
  producer: EventProducer;
  metrics: SidecarMetrics;
  log: Logger;
}

/**
 * POST /events. 202 means Redis has the accepted events (with appendfsync always, on disk);
 * anything short of that is a 503 with nothing accepted, so a caller never has to guess.
 */
export function registerIngestRoutes(app: FastifyInstance, { producer, metrics, log }: IngestDeps): void {
  app.post('/events', async (request, reply) => {
    const outcome = prepareBatch(request.body);
    if (outcome.rejected.length > 0) metrics.eventsRejected.inc({ source: 'api' }, outcome.rejected.length);
    if (outcome.events.length === 0) {
      return reply.code(400).send({
        accepted: [],
        rejected: outcome.rejected,
        ...(outcome.rejected.length === 0 ? { message: 'the request contains no events' } : {}),
      });
    }
    try {
      await producer.enqueue(outcome.events);
    } catch (err) {
      if (!(err instanceof QueueUnavailableError)) throw err;
      metrics.enqueueFailures.inc();
      const full = err.outOfMemory;
      if (full) log.warn({ eventCount: outcome.events.length }, 'Redis is out of memory (maxmemory reached); refusing events');
      else log.warn({ eventCount: outcome.events.length, cause: (err.cause as Error | undefined)?.message }, 'Redis unavailable; refusing events');
      return reply
        .code(503)
        .header('retry-after', '1')
        .send({
          accepted: [],
          rejected: outcome.rejected,
          message: `${full ? 'the event queue is full (Redis is out of memory)' : 'the event queue is unavailable'}; nothing was accepted, retry later (with the same eventIds to avoid duplicates)`,
        });
    }
    metrics.eventsAccepted.inc({ source: 'api' }, outcome.events.length);
    return reply.code(202).send({ accepted: outcome.accepted, rejected: outcome.rejected });
  });
}
