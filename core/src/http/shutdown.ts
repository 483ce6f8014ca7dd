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
  app.addHook('onSend', async (_request, reply, payload) => {
    if (app.draining) reply.header('connection', 'close');
    return payload;
  });
}

export async function drainAndClose(app: FastifyInstance, graceMs: number): Promise<void> {
  app.draining = true;
  if (graceMs > 0) await new Promise((resolve) => setTimeout(resolve, graceMs));
  await app.close();
}
