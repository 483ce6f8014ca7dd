import type { FastifyPluginAsync } from 'fastify';
import { envelope, isoDate } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { ALERT_LEVELS } from '../rules/model.js';
import { StatsService } from './service.js';

const nullableCount = { type: 'integer', nullable: true } as const;

const stats = {
  type: 'object',
  properties: {
    subjects: { type: 'integer', description: 'Data subjects' },
    dataPoints: { type: 'integer', description: 'Values of the attributes the caller may access (a structure counts once)' },
    definitions: { type: 'integer' },
    rules: { type: 'integer' },
    applications: { ...nullableCount, description: 'Admins only; null otherwise' },
    alertsLast24Hours: {
      type: 'object',
      nullable: true,
      description: 'Alerts of the last 24 hours by level; admins only, null otherwise',
      properties: Object.fromEntries(ALERT_LEVELS.map((level) => [level, { type: 'integer' }])),
      additionalProperties: { type: 'integer' },
    },
    asOf: isoDate,
  },
} as const;

export const statsRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const service = new StatsService(vault.reader);
  app.get(
    '/stats',
    { schema: { tags: ['stats'], summary: 'Counts of what the vault holds, within what the caller may see', response: { 200: envelope(stats) } } },
    async (request) => ({ data: await service.summary(request.caller) }),
  );
};
