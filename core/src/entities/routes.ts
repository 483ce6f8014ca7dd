import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import type { EntityInput, EntityListOptions, ResolvedEntity } from './service.js';

const entity = {
  type: 'object',
  required: ['id', 'type', 'tags', 'legalHold', 'created', 'updated'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
    legalHold: { type: 'boolean' },
    created: isoDate,
    updated: isoDate,
  },
} as const;

function body(typeDescription: string) {
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      // Loose on purpose: a missing or malformed id gets the service's own message.
      id: { description: 'Caller-chosen, 1 to 512 characters.' },
      type: { type: 'string', maxLength: 128, description: typeDescription },
      tags: { type: 'array', maxItems: 1000, items: { type: 'string' } },
      legalHold: { type: 'boolean', description: 'Only admins may change it.' },
      // Clients send back the whole entity they read; the dates are the vault's own.
      created: { type: 'string', readOnly: true },
      updated: { type: 'string', readOnly: true },
    },
  } as const;
}

const paging = {
  type: 'object',
  properties: {
    page: { type: 'integer', minimum: 0, maximum: 1_000_000, description: '0-based page; paging applies when page or count is given.' },
    count: { type: 'integer', minimum: 1, maximum: 1000, description: 'Entities per page, default 100.' },
  },
} as const;

const list = envelope({ type: 'array', items: entity });

function answer(reply: FastifyReply, { entity: e, created }: ResolvedEntity) {
  return reply.status(created ? 201 : 200).send({ data: e });
}

export const entityRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['entities'];

  app.post<{ Body: EntityInput }>(
    '/entities',
    {
      schema: {
        tags,
        summary: 'Create an entity, or update the metadata of the one with that id',
        body: body('Entity type key; a new entity without one is a `datasubject`.'),
        response: { 200: envelope(entity), 201: envelope(entity), ...errors(400, 403) },
      },
    },
    async (request, reply) => answer(reply, await vault.entities.upsert(request.caller, request.body)),
  );

  app.get<{ Querystring: EntityListOptions }>(
    '/entities',
    { schema: { tags, summary: 'List entities, ordered by id', querystring: paging, response: { 200: list, ...errors(400) } } },
    async (request) => ({ data: await vault.entities.list({ page: request.query.page, count: request.query.count }) }),
  );

  app.get<{ Params: { entityId: string } }>(
    '/entities/:entityId',
    { schema: { tags, summary: 'Read an entity', params: pathParams('entityId'), response: { 200: envelope(entity), ...errors(404) } } },
    async (request) => ({ data: await vault.entities.get(request.params.entityId) }),
  );

  app.post<{ Body: EntityInput }>(
    '/datasubjects',
    {
      schema: {
        tags,
        summary: 'Create a data subject, or update the metadata of the one with that id',
        body: body('Optional; only `datasubject`.'),
        response: { 200: envelope(entity), 201: envelope(entity), ...errors(400, 403) },
      },
    },
    async (request, reply) => answer(reply, await vault.entities.upsert(request.caller, request.body, { dataSubjectsOnly: true })),
  );

  app.get<{ Querystring: EntityListOptions }>(
    '/datasubjects',
    { schema: { tags, summary: 'List data subjects, ordered by id', querystring: paging, response: { 200: list, ...errors(400) } } },
    async (request) => ({ data: await vault.entities.list({ type: DATASUBJECT, page: request.query.page, count: request.query.count }) }),
  );

  app.get<{ Params: { entityId: string } }>(
    '/datasubjects/:entityId',
    { schema: { tags, summary: 'Read a data subject', params: pathParams('entityId'), response: { 200: envelope(entity), ...errors(400, 404) } } },
    async (request) => ({ data: await vault.entities.getDataSubject(request.params.entityId) }),
  );
};
