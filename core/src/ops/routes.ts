/** Liveness, readiness and metrics: unauthenticated, and free of personal data. */
import { sql } from 'kysely';
import type { FastifyPluginAsync } from 'fastify';
import { migrationsApplied } from '../db/migrate.js';
import type { Vault } from '../vault.js';

const status = { type: 'object', properties: { status: { type: 'string' }, reason: { type: 'string' } } } as const;

export const opsRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['operations'];
  const config = { public: true };

  app.get('/healthz', { config, schema: { tags, summary: 'The process is up', response: { 200: status } } }, async () => ({ status: 'ok' }));

  app.get(
    '/readyz',
    { config, schema: { tags, summary: 'The database answers and every migration is applied', response: { 200: status, 503: status } } },
    async (_request, reply) => {
      if (app.draining) return reply.status(503).send({ status: 'unavailable', reason: 'shutting down' });
      try {
        await sql`select 1`.execute(vault.db);
        if (!(await migrationsApplied(vault.db))) return reply.status(503).send({ status: 'unavailable', reason: 'migrations pending' });
        return { status: 'ready' };
      } catch {
        return reply.status(503).send({ status: 'unavailable', reason: 'database unreachable' });
      }
    },
  );

  const metricsText = { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } };
  app.get('/metrics', { config, schema: { tags, summary: 'Prometheus metrics', response: { 200: metricsText } } }, async (_request, reply) => {
    reply.header('content-type', vault.metrics.registry.contentType);
    return vault.metrics.registry.metrics();
  });
};
