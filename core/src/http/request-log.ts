/**
 * The request log. Paths carry caller-chosen ids (often e-mail addresses), so a line names
 * the route template and a keyed digest of each path parameter, never the raw URL or query:
 * the same id always gives the same digest, so an operator can follow one entity through
 * the log (and find the lines of an id they already know with `idDigester`), but the log
 * alone reveals no id.
 */
import { createHmac } from 'node:crypto';
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

export type IdDigest = (id: string) => string;

/** Keyed by a key derived from `secret` (the blind-index key), so every process of a deployment agrees. */
export function idDigester(secret: Buffer): IdDigest {
  const key = createHmac('sha256', secret).update('vault request log id digest v1').digest();
  return (id) => createHmac('sha256', key).update(id, 'utf8').digest('hex').slice(0, 16);
}

/** What a log line may say about a request. */
export function describeRequest(request: FastifyRequest, digest: IdDigest): Record<string, unknown> {
  const params = request.params as Record<string, unknown> | undefined;
  const digests: Record<string, string> = {};
  if (params && typeof params === 'object') {
    for (const [name, value] of Object.entries(params)) if (typeof value === 'string') digests[name] = digest(value);
  }
  return {
    method: request.method,
    route: request.routeOptions.url ?? 'unmatched',
    ...(Object.keys(digests).length > 0 ? { params: digests } : {}),
  };
}

/**
 * Fastify's own lines (`incoming request`, `request completed`, errors, `Route ... not found`)
 * carry `req.url`; these carry describeRequest() instead, one line per request.
 */
export class RequestLog extends LogController {
  constructor(private readonly digest: IdDigest) {
    super();
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // Digesting the ids is most of a line's cost; skip it when the line would be dropped.
    if (!(reply.log as Logger).isLevelEnabled(error ? 'error' : 'info')) return;
    // Fields are added to the line rather than spread into a new one: a literal that opens with
    // a spread and adds fields takes V8's slow path (bench/spread.mjs), on every request.
    const line = describeRequest(request, this.digest);
    line.statusCode = reply.statusCode;
    line.responseTime = Math.round(reply.elapsedTime * 10) / 10;
    if (error) {
      line.err = error;
      reply.log.error(line, 'request errored');
    } else reply.log.info(line, 'request completed');
  }

  override defaultErrorLog(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    const line = describeRequest(request, this.digest);
    line.statusCode = reply.statusCode;
    line.err = error;
    if (reply.statusCode >= 500) reply.log.error(line, 'request failed');
    else reply.log.info(line, 'request refused');
  }

  override writeHeadError(error: Error, request: FastifyRequest, reply: FastifyReply): void {
    reply.log.warn({ ...describeRequest(request, this.digest), err: error }, 'could not write the error answer');
  }
}
