import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** True once a shutdown has begun: readiness fails and connections are not kept alive. */
    draining: boolean;
  }
}

/**
 * Graceful shutdown in two steps. First drain: keep serving, but fail readiness so a load
 * balancer stops routing here, and answer with `Connection: close` so clients stop reusing
 * their sockets. Then close: stop accepting, let in-flight requests finish, and only then
 * let the caller close the database.
 */
export function installDraining(app: FastifyInstance): void {
  app.decorate('draining', false);
  // A callback, not an async hook: it runs on every answer, and a promise per answer costs.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (app.draining) reply.header('connection', 'close');
    done(null, payload);
  });
}

/**
 * Drains for `graceMs`, then stops accepting and lets requests in flight finish until
 * `requestsUntil` (epoch ms). Requests still running then (a database that stopped
 * answering) have their connections cut: they were never answered, so nothing acknowledged
 * is lost, and their transactions roll back when the process ends. Resolves to whether every
 * request finished on its own.
 */
export async function drainAndClose(app: FastifyInstance, graceMs: number, requestsUntil = Number.POSITIVE_INFINITY): Promise<boolean> {
  app.draining = true;
  if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
  const closed = app.close().then(() => true);
  const wait = requestsUntil - Date.now();
  if (!Number.isFinite(wait)) return closed;
  let timer: NodeJS.Timeout | undefined;
  const finished = await Promise.race([closed, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, wait))))]);
  clearTimeout(timer);
  if (!finished) app.server.closeAllConnections();
  return finished;
}
