import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { MAX_API_KEY_LENGTH, MIN_API_KEY_LENGTH } from './api-key.js';
import { MAX_KEEP_PREVIOUS_SECONDS, type CreateApplicationInput, type RollKeyInput, type UpdateApplicationInput } from './service.js';

const attributesList = { type: 'array', maxItems: 10000, items: { type: 'string', minLength: 1, maxLength: 256 } } as const;

const application = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    attributes: { type: 'array', items: { type: 'string' } },
    admin: { type: 'boolean' },
    createdDate: isoDate,
    modifiedDate: isoDate,
    previousKeyValidUntil: { ...isoDate, description: 'Present while the key a roll replaced is still accepted.' },
    apiKey: { type: 'string', description: 'Returned once, on create and on a key roll.' },
  },
} as const;

const createBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    attributes: attributesList,
    admin: { type: 'boolean' },
    apiKey: { type: 'string', minLength: MIN_API_KEY_LENGTH, maxLength: MAX_API_KEY_LENGTH },
  },
} as const;

const updateBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 256 },
    attributes: attributesList,
    admin: { type: 'boolean' },
  },
} as const;

const rollKeyBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    apiKey: { type: 'string', minLength: MIN_API_KEY_LENGTH, maxLength: MAX_API_KEY_LENGTH },
    keepPreviousForSeconds: { type: 'integer', minimum: 0, maximum: MAX_KEEP_PREVIOUS_SECONDS },
  },
} as const;

export const applicationRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['applications'];

  // Any key may ask who it is: a client (the console, a service checking its deployment) learns
  // what it may do without trying, and without an admin's key.
  app.get(
    '/applications/me',
    { schema: { tags, summary: 'The calling application: its name, attributes and admin flag', response: { 200: envelope(application) } } },
    async (request) => ({ data: await vault.applications.get(request.caller.applicationId) }),
  );

  await app.register(async (admin) => {
    admin.addHook('preHandler', async (request) => requireAdmin(request.caller));
    await adminRoutes(admin, vault, tags);
  });
};

async function adminRoutes(app: FastifyInstance, vault: Vault, tags: string[]): Promise<void> {

  app.post<{ Body: CreateApplicationInput }>(
    '/applications',
    { schema: { tags, summary: 'Create an application and its API key', body: createBody, response: { 201: envelope(application), ...errors(400, 401, 403, 409) } } },
    async (request, reply) => {
      const { application: created, apiKey } = await vault.applications.create(request.caller, request.body);
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

  app.patch<{ Params: { id: string }; Body: UpdateApplicationInput }>(
    '/applications/:id',
    {
      schema: {
        tags,
        summary: 'Change an application in place: name, attributes, admin (its id, key and history stay)',
        params: pathParams('id'),
        body: updateBody,
        response: { 200: envelope(application), ...errors(400, 403, 404, 409) },
      },
    },
    async (request) => ({ data: await vault.applications.update(request.caller, request.params.id, request.body) }),
  );

  app.post<{ Params: { id: string }; Body: RollKeyInput }>(
    '/applications/:id/key',
    {
      schema: {
        tags,
        summary: "Roll an application's API key: the new key is answered once; the old one stops, or stays valid for keepPreviousForSeconds",
        params: pathParams('id'),
        body: rollKeyBody,
        response: { 200: envelope(application), ...errors(400, 403, 404, 409) },
      },
      // A roll with every default is a bare POST: no body is an empty one.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) => {
      const { application: rolled, apiKey } = await vault.applications.rollKey(request.caller, request.params.id, request.body);
      return { data: { ...rolled, apiKey } };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/applications/:id',
    { schema: { tags, summary: 'Delete an application', params: pathParams('id'), response: { 200: confirmation, ...errors(403, 404, 409) } } },
    async (request) => {
      await vault.applications.delete(request.caller, request.params.id);
      return { data: 'Successfully Deleted Application' };
    },
  );
}
