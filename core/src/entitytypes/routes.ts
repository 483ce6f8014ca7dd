import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import type { EntityTypeInput } from './service.js';

const entityType = {
  type: 'object',
  required: ['key', 'name', 'description', 'createdDate', 'modifiedDate'],
  properties: {
    key: { type: 'string' },
    name: { type: 'string', nullable: true },
    description: { type: 'string', nullable: true },
    createdDate: isoDate,
    modifiedDate: isoDate,
  },
} as const;

const body = {
  type: 'object',
  required: ['key'],
  additionalProperties: false,
  properties: {
    key: { type: 'string', minLength: 1, maxLength: 128 },
    name: { type: 'string', maxLength: 1024, nullable: true },
    description: { type: 'string', maxLength: 65536, nullable: true },
    // Clients edit a type by posting back the one they read; the dates are the vault's own.
    createdDate: { type: 'string', readOnly: true },
    modifiedDate: { type: 'string', readOnly: true },
  },
} as const;

export const entityTypeRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['entity types'];

  app.post<{ Body: EntityTypeInput }>(
    '/entitytypes',
    { schema: { tags, summary: 'Create or update an entity type', body, response: { 201: envelope(entityType), ...errors(400, 403) } } },
    async (request, reply) => {
      requireAdmin(request.caller);
      return reply.status(201).send({ data: await vault.entityTypes.upsert(request.caller, request.body) });
    },
  );

  app.get('/entitytypes', { schema: { tags, summary: 'List entity types', response: { 200: envelope({ type: 'array', items: entityType }) } } }, async () => ({
    data: await vault.entityTypes.list(),
  }));

  app.get<{ Params: { typeKey: string } }>(
    '/entitytypes/:typeKey',
    { schema: { tags, summary: 'Read an entity type', params: pathParams('typeKey'), response: { 200: envelope(entityType), ...errors(404) } } },
    async (request) => ({ data: await vault.entityTypes.get(request.params.typeKey) }),
  );

  app.delete<{ Params: { typeKey: string } }>(
    '/entitytypes/:typeKey',
    { schema: { tags, summary: 'Delete an unused entity type', params: pathParams('typeKey'), response: { 200: confirmation, ...errors(403, 404, 405, 409) } } },
    async (request) => {
      requireAdmin(request.caller);
      await vault.entityTypes.delete(request.caller, request.params.typeKey);
      return { data: 'Successfully Deleted Entity Type' };
    },
  );
};
