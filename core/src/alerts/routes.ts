import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { envelope, errors, isoDate } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import type { AlertQuery } from './service.js';

const alert = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    ruleKey: { type: 'string' },
    level: { type: 'string' },
    message: { type: 'string' },
    entityId: { type: 'string' },
    attribute: { type: 'string' },
    dataPointId: { type: 'string' },
    eventType: { type: 'string' },
    createdDate: isoDate,
  },
} as const;

const query = {
  type: 'object',
  additionalProperties: false,
  properties: {
    rule: { type: 'string', minLength: 1, maxLength: 256, description: 'Only alerts of this rule key' },
    level: { type: 'string', minLength: 1, maxLength: 32, description: 'Only alerts of this level (NORMAL, INFO, WARNING, DANGER, SUCCESS, NEUTRAL)' },
    from: { type: 'string', maxLength: 64, description: 'ISO 8601: alerts raised at or after' },
    to: { type: 'string', maxLength: 64, description: 'ISO 8601: alerts raised at or before' },
    page: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 0 },
    count: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
} as const;

export const alertRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  app.get<{ Querystring: AlertQuery }>(
    '/alerts',
    {
      schema: {
        tags: ['alerts'],
        summary: 'Alerts raised by rules, oldest first (admin only)',
        querystring: query,
        response: { 200: envelope({ type: 'array', items: alert }), ...errors(400, 403) },
      },
    },
    async (request) => {
      requireAdmin(request.caller);
      return { data: await vault.alerts.list(request.query) };
    },
  );
};
