import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import type { RegulationInput } from './service.js';

const regulation = {
  type: 'object',
  required: ['key', 'name', 'url', 'createdDate', 'modifiedDate'],
  properties: {
    key: { type: 'string' },
    name: { type: 'string', nullable: true },
    url: { type: 'string', nullable: true },
    createdDate: isoDate,
    modifiedDate: isoDate,
  },
} as const;

// PostgreSQL refuses NUL in text; it is never meaningful in a name or an address.
const text = (maxLength: number) => ({ type: 'string', maxLength, pattern: '^[^\\u0000]*$', nullable: true }) as const;

const body = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // Loose on purpose: a missing or malformed key gets the service's own message.
    key: {},
    name: text(1024),
    url: text(4096),
    // ViziVault clients send back the whole regulation they read; the dates are the vault's own.
    createdDate: { type: 'string', readOnly: true },
    modifiedDate: { type: 'string', readOnly: true },
  },
} as const;

// Before validation, so a non-admin learns nothing from how its body is judged.
const adminOnly = async (request: FastifyRequest) => requireAdmin(request.caller);

export const regulationRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['regulations'];

  app.post<{ Body: RegulationInput }>(
    '/regulations',
    {
      schema: {
        tags,
        summary: 'Create a regulation, or update the one with that key',
        body,
        response: { 200: confirmation, 201: confirmation, ...errors(400, 402, 403) },
      },
      preValidation: adminOnly,
    },
    async (request, reply) => {
      const outcome = await vault.regulations.upsert(request.caller, request.body);
      return outcome === 'created' ? reply.status(201).send({ data: 'Regulation created' }) : { data: 'Regulation updated' };
    },
  );

  app.get('/regulations', { schema: { tags, summary: 'List regulations', response: { 200: envelope({ type: 'array', items: regulation }) } } }, async () => ({
    data: await vault.regulations.list(),
  }));

  app.get<{ Params: { regulationKey: string } }>(
    '/regulations/:regulationKey',
    { schema: { tags, summary: 'Read a regulation', params: pathParams('regulationKey'), response: { 200: envelope(regulation), ...errors(404) } } },
    async (request) => ({ data: await vault.regulations.get(request.params.regulationKey) }),
  );

  app.delete<{ Params: { regulationKey: string } }>(
    '/regulations/:regulationKey',
    {
      schema: {
        tags,
        summary: 'Delete a regulation and remove it from definitions and data points',
        params: pathParams('regulationKey'),
        response: { 200: confirmation, ...errors(403, 404, 409) },
      },
      preValidation: adminOnly,
    },
    async (request) => {
      await vault.regulations.delete(request.caller, request.params.regulationKey);
      return { data: 'Regulation deleted' };
    },
  );
};
