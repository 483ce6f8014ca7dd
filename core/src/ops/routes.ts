/** Liveness, readiness and metrics: unauthenticated, and free of personal data. */
import { sql } from 'kysely';
import type { FastifyPluginAsync } from 'fastify';
import { migrationState } from '../db/migrate.js';
import type { Vault } from '../vault.js';

/** A readiness probe is answered within this, even when the database does not answer at all. */
const READY_WITHIN_MS = 2000;

const status = { type: 'object', properties: { status: { type: 'string' }, reason: { type: 'string' } } } as const;

export const opsRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['operations'];
  const config = { public: true };

  app.get('/healthz', { config, schema: { tags, summary: 'The process is up', response: { 200: status } } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    { config, schema: { tags, summary: 'The database answers and every migration is applied, none unknown to this release', response: { 200: status, 503: status } } },
    async (_request, reply) => {
      if (app.draining) return reply.status(503).send({ status: 'unavailable', reason: 'shutting down' });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer')), READY_WITHIN_MS);
      });
      const checks = (async () => {
        await sql`select 1`.execute(vault.db);
        return migrationState(vault.db);
      })();
      checks.catch(() => {});
      try {
        const state = await Promise.race([checks, timeout]);
        if (state === 'pending') return reply.status(503).send({ status: 'unavailable', reason: 'migrations pending' });
        if (state === 'newer') return reply.status(503).send({ status: 'unavailable', reason: 'database migrated by a newer release' });
        return { status: 'ready' };
      } catch {
        return reply.status(503).send({ status: 'unavailable', reason: 'database unreachable' });
      } finally {
        clearTimeout(timer);
      }
    },
  );

  const metricsText = { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } };
  app.get('/metrics', { config, schema: { tags, summary: 'Prometheus metrics', response: { 200: metricsText } } }, async (_request, reply) => {
    reply.header('content-type', vault.metrics.registry.contentType);
    return vault.metrics.registry.metrics();
  });
};
