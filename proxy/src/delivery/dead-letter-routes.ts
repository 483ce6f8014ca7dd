import type { FastifyInstance, FastifyReply } from 'fastify';
import type { SidecarMetrics } from '../metrics.js';
import { withTimeout } from '../queue/connection.js';
import { QueueUnavailableError } from '../queue/producer.js';
import { withoutValue } from '../ingest/event.js';
import type { DeadLetter, DeadLetterQueue } from './dead-letters.js';

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

  app.get<{ Querystring: { offset?: string; limit?: string; values?: string } }>('/deadletters', async (request, reply) => {
    const offset = parseCount(request.query.offset, 0);
    const limit = parseCount(request.query.limit, 100);
    if (offset === undefined || limit === undefined || limit > 1000) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: 'offset and limit must be integers, limit at most 1000' });
    }
    const values = parseValues(request.query.values);
    if (values === undefined) return badValues(reply);
    try {
      const page = await withTimeout(deadLetters.list(offset, limit), timeoutMs, 'list');
      return { offset, limit, total: page.total, items: values ? page.items : page.items.map(hideValue) };
    } catch {
      return unavailable(reply);
    }
  });

  app.get<{ Params: { id: string }; Querystring: { values?: string } }>('/deadletters/:id', async (request, reply) => {
    const values = parseValues(request.query.values);
    if (values === undefined) return badValues(reply);
    try {
      const entry = await withTimeout(deadLetters.get(request.params.id), timeoutMs, 'get');
      if (!entry) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'no such dead letter' });
      return values ? entry : hideValue(entry);
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

  // No body means every dead letter, so a body that is not exactly `{"ids": [...]}` or `{}` is
  // refused rather than read as none: `{"id": [...]}` or `[...]` replayed them all. Checked by
  // hand, not by a route schema: Fastify's default Ajv drops unknown members and coerces a
  // string to an array, which would let both mistakes through.
  app.post<{ Body: unknown }>('/deadletters/replay', async (request, reply) => {
    const body = request.body;
    if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: replayBodyMessage });
    }
    const stray = body === undefined ? undefined : Object.keys(body).find((key) => key !== 'ids');
    if (stray !== undefined) {
      return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: `unknown member ${JSON.stringify(stray)}: ${replayBodyMessage}` });
    }
    const ids = (body as { ids?: unknown } | undefined)?.ids;
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

const replayBodyMessage = 'the body must be {"ids": [...]} to replay those dead letters, or empty or {} to replay all';

/** Values are shown only when asked for: a listing is for finding out what went wrong, not for reading data. */
function parseValues(raw: string | undefined): boolean | undefined {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  return raw === 'true' ? true : undefined;
}

function badValues(reply: FastifyReply) {
  return reply.code(400).send({ statusCode: 400, error: 'Bad Request', message: 'values must be true or false' });
}

function hideValue(entry: DeadLetter): DeadLetter {
  return { ...entry, event: withoutValue(entry.event) };
}

function parseCount(raw: string | undefined, fallback: number): number | undefined {
  if (raw === undefined || raw === '') return fallback;
  return /^\d+$/.test(raw) ? Number(raw) : undefined;
}
