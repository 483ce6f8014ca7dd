import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { HttpError } from './http.js';

/** Open to probes and scrapers: they show neither events nor values. Everything else needs the token. */
const publicRoutes = new Set(['/healthz', '/readyz', '/metrics']);

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/**
 * With a token configured, the ingest and dead-letter endpoints (and unknown paths) answer 401 `Unauthorized`
 * (the vault's wording) unless the request carries `Authorization: Bearer <token>`. Both sides
 * are hashed first so the comparison takes the same time whatever the guess.
 */
export function installIngestAuth(app: FastifyInstance, token: string | undefined): void {
  if (token === undefined) return;
  const expected = digest(token);
  app.addHook('onRequest', async (request) => {
    const route = request.routeOptions.url;
    if (route !== undefined && publicRoutes.has(route)) return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (!match || !timingSafeEqual(digest(match[1]), expected)) throw new HttpError(401, 'Unauthorized');
  });
}
