import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import type { CreateApplicationInput } from './service.js';

const application = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    attributes: { type: 'array', items: { type: 'string' } },
    admin: { type: 'boolean' },
    createdDate: isoDate,
    modifiedDate: isoDate,
    apiKey: { type: 'string', description: 'Returned once, on create.' },
  },
} as const;

const createBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    attributes: { type: 'array', maxItems: 10000, items: { type: 'string', minLength: 1, maxLength: 256 } },
    admin: { type: 'boolean' },
    apiKey: { type: 'string', minLength: 16, maxLength: 512 },
  },
} as const;

export const applicationRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['applications'];
  app.addHook('preHandler', async (request) => requireAdmin(request.caller));

  app.post<{ Body: CreateApplicationInput }>(
    '/applications',
    { schema: { tags, summary: 'Create an application and its API key', body: createBody, response: { 201: envelope(application), ...errors(400, 401, 403, 409) } } },
    async (request, reply) => {
      const { application: created, apiKey } = await vault.applications.create(request.body);
      return reply.status(201).send({ data: { ...created, apiKey } });
    },
  );

  app.get('/applications', { schema: { tags, summary: 'List applications', response: { 200: envelope({ type: 'array', items: application }), ...errors(403) } } }, async () => ({
    data: await vault.applications.list(),
  }));

  app.get<{ Params: { id: string } }>(
    '/applications/:id',
    { schema: { tags, summary: 'Read an application', params: pathParams('id'), response: { 200: envelope(application), ...errors(403, 404) } } },
    async (request) => ({ data: await vault.applications.get(request.params.id) }),
  );

  app.delete<{ Params: { id: string } }>(
    '/applications/:id',
    { schema: { tags, summary: 'Delete an application', params: pathParams('id'), response: { 200: confirmation, ...errors(403, 404, 409) } } },
    async (request) => {
      await vault.applications.delete(request.params.id);
      return { data: 'Successfully Deleted Application' };
    },
  );
};
