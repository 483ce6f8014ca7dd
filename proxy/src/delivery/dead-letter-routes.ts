import type { FastifyInstance, FastifyReply } from 'fastify';
import type { SidecarMetrics } from '../metrics.js';
import { withTimeout } from '../queue/connection.js';
import { QueueUnavailableError } from '../queue/producer.js';
import type { DeadLetterQueue } from './dead-letters.js';

/** Dead letters wait for a human; this API lists, inspects, replays and discards them. */
export function registerDeadLetterRoutes(app: FastifyInstance, deadLetters: DeadLetterQueue, metrics: SidecarMetrics): void {
  // The dead-letter queue shares the delivery connection, which waits for Redis instead of
  // failing; an operator's request should fail instead of hanging.
  const timeoutMs = 5000;
  const unavailable = (reply: FastifyReply) =>
    reply.code(503).send({ statusCode: 503, error: 'Service Unavailable', message: 'Redis is not reachable' });
  app.addHook('onRequest', async (request, reply) => {
    if (request.url.startsWith('/deadletters') && !deadLetters.available) return unavailable(reply);
  });

  app.get<{ Querystring: { offset?: string; limit?: string } }>('/deadletters', async (request, reply) => {
    const offset = parseCount(request.query.offset, 0);
    const limit = parseCount(request.query.limit, 100);
    if (offset === undefined || limit === undefined || limit > 1000) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: 'offset and limit must be integers, limit at most 1000' });
    }
    try {
      const page = await withTimeout(deadLetters.list(offset, limit), timeoutMs, 'list');
      return { offset, limit, ...page };
    } catch {
      return unavailable(reply);
    }
  });

  app.get<{ Params: { id: string } }>('/deadletters/:id', async (request, reply) => {
    try {
      const entry = await withTimeout(deadLetters.get(request.params.id), timeoutMs, 'get');
      if (!entry) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'no such dead letter' });
      return entry;
    } catch {
      return unavailable(reply);
    }
  });

  app.delete<{ Params: { id: string } }>('/deadletters/:id', async (request, reply) => {
    try {
      const removed = await withTimeout(deadLetters.remove(request.params.id), timeoutMs, 'remove');
      if (!removed) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'no such dead letter' });
      return reply.code(204).send();
    } catch {
      return unavailable(reply);
    }
  });

  app.post<{ Body: { ids?: unknown } | null | undefined }>('/deadletters/replay', async (request, reply) => {
    const ids = request.body?.ids;
    if (ids !== undefined && (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string'))) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: 'ids must be an array of dead-letter ids or eventIds' });
    }
    try {
      const result = await withTimeout(deadLetters.replay(ids as string[] | undefined), timeoutMs * 6, 'replay');
      metrics.eventsReplayed.inc(result.replayed.length);
      return result;
    } catch (err) {
      if (err instanceof QueueUnavailableError || /timed out/.test((err as Error).message)) return unavailable(reply);
      throw err;
    }
  });
}

function parseCount(raw: string | undefined, fallback: number): number | undefined {
  if (raw === undefined || raw === '') return fallback;
  return /^\d+$/.test(raw) ? Number(raw) : undefined;
}
