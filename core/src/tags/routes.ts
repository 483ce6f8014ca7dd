import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';

const tag = {
  type: 'object',
  required: ['name', 'createdDate', 'modifiedDate'],
  properties: { name: { type: 'string' }, createdDate: isoDate, modifiedDate: isoDate },
} as const;

const body = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    // ViziVault clients send back the whole tag they read; the dates are the vault's own.
    createdDate: { type: 'string', readOnly: true },
    modifiedDate: { type: 'string', readOnly: true },
  },
} as const;

// Before validation, so a non-admin learns nothing from how its body is judged.
const adminOnly = async (request: FastifyRequest) => requireAdmin(request.caller);

export const tagRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['tags'];

  app.post<{ Body: { name?: string } }>(
    '/tags',
    { schema: { tags, summary: 'Create a tag, or touch the one with that name', body, response: { 201: envelope(tag), ...errors(400, 403) } }, preValidation: adminOnly },
    async (request, reply) => {
      return reply.status(201).send({ data: await vault.tags.upsert(request.caller, request.body.name) });
    },
  );

  app.get('/tags', { schema: { tags, summary: 'List tags', response: { 200: envelope({ type: 'array', items: tag }) } } }, async () => ({
    data: await vault.tags.list(),
  }));

  app.get<{ Params: { tagName: string } }>(
    '/tags/:tagName',
    { schema: { tags, summary: 'Read a tag', params: pathParams('tagName'), response: { 200: envelope(tag), ...errors(404) } } },
    async (request) => ({ data: await vault.tags.get(request.params.tagName) }),
  );

  app.delete<{ Params: { tagName: string } }>(
    '/tags/:tagName',
    {
      schema: {
        tags,
        summary: 'Delete a tag and remove it from definitions, entities and data points',
        params: pathParams('tagName'),
        response: { 200: confirmation, ...errors(403, 404, 409) },
      },
      preValidation: adminOnly,
    },
    async (request) => {
      await vault.tags.delete(request.caller, request.params.tagName);
      return { data: 'Successfully Deleted Tag' };
    },
  );
};
