import type { FastifyPluginAsync } from 'fastify';
import { confirmation, envelope, errors } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { dataPointSchema, SENSITIVITIES } from './model.js';
import type { PathForm, StorageRequest } from './service.js';

/** PostgreSQL refuses NUL in text; no id or key can contain one. */
const NO_NUL = '^[^\\u0000]*$';
const id = { type: 'string', minLength: 1, maxLength: 512, pattern: NO_NUL } as const;
const label = { type: 'string', maxLength: 256, pattern: NO_NUL } as const;

/** Optional members may be null, as in an audit event: some clients send every member, unset ones as null. */
const attributeInput = {
  type: 'object',
  required: ['attribute'],
  additionalProperties: false,
  properties: {
    attribute: { type: 'string', minLength: 1, maxLength: 256, pattern: NO_NUL },
    // Free-form: the attribute's schema decides, with the interface's 413/422 messages.
    value: {},
    dataPointId: { type: 'string', maxLength: 512, nullable: true, description: 'Ignored on store: ids are generated' },
    regulations: { type: 'array', maxItems: 100, items: label, nullable: true },
    // Tag names are checked by the tags module's rule, with its message.
    tags: { type: 'array', maxItems: 100, items: { type: 'string' }, nullable: true },
    // Loose on purpose: the service answers an unknown level with its own message.
    sensitivity: { description: `One of ${SENSITIVITIES.join(', ')} (default NORMAL)` },
    reportOnly: { type: 'boolean', nullable: true, description: 'Must be false (or absent): report-only data goes through POST /auditlogs' },
    accessibility: { type: 'string', maxLength: 256, nullable: true },
  },
} as const;

const storageRequest = {
  type: 'object',
  required: ['data'],
  additionalProperties: false,
  properties: {
    data: { type: 'array', maxItems: 10_000, items: attributeInput },
    entityType: { type: 'string', minLength: 1, maxLength: 128, pattern: NO_NUL, nullable: true },
    namespace: { type: 'string', maxLength: 1024, nullable: true },
    origin: { type: 'string', maxLength: 256, pattern: NO_NUL, nullable: true, description: 'Client address or ISO 3166 code the data comes from; default the request address' },
  },
} as const;

const encryptionHeaders = {
  type: 'object',
  properties: { 'x-encryption-key': { type: 'string', description: 'Base64 of the PEM RSA public key registered with the vault' } },
} as const;

/**
 * Value reads have no HEAD: it would decrypt, and record a READ, for an answer that shows nothing.
 * (Each value-read route sets `exposeHeadRoute: false`.)
 */
const decryptionHeaders = {
  type: 'object',
  properties: { 'x-decryption-key': { type: 'string', description: 'Base64 of the matching PEM RSA private key; used for this request only' } },
} as const;

const entityParams = { type: 'object', required: ['entityId'], properties: { entityId: id } } as const;
const attributeParams = { type: 'object', required: ['entityId', 'attributeKey'], properties: { entityId: id, attributeKey: id } } as const;
const pointParams = { type: 'object', required: ['dataPointId'], properties: { dataPointId: id } } as const;
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { attributes: { type: 'array', maxItems: 1000, items: { type: 'string', maxLength: 64 * 1024, pattern: NO_NUL }, description: 'Comma-delimited attribute keys' } },
} as const;

const points = envelope({ type: 'array', items: dataPointSchema });

export const DELETED_POINT = 'Successfully Deleted Data Point';
export const DELETED_SUBJECT = 'Successfully Deleted Data Subject';

type EntityParams = { entityId: string };
type AttributeParams = { entityId: string; attributeKey: string };

export const dataPointRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const service = vault.datapoints;
  const tags = ['data points'];

  for (const form of ['entities', 'datasubjects'] as PathForm[]) {
    const noun = form === 'entities' ? 'an entity' : 'a data subject';

    app.post<{ Params: EntityParams; Body: StorageRequest }>(
      `/${form}/:entityId/attributes`,
      {
        schema: {
          tags,
          summary: `Store attribute values of ${noun} (encrypted; created on first store)`,
          params: entityParams,
          headers: encryptionHeaders,
          body: storageRequest,
          response: { 200: points, ...errors(400, 403, 409, 413, 422) },
        },
      },
      async (request) => ({
        data: await service.store(request.caller, {
          entityId: request.params.entityId,
          request: request.body,
          encryptionKey: request.headers['x-encryption-key'],
          clientAddress: request.ip,
          form,
        }),
      }),
    );

    for (const spelling of ['attributes', 'attribute']) {
      app.get<{ Params: AttributeParams }>(
        `/${form}/:entityId/${spelling}/:attributeKey`,
        {
          schema: {
            tags,
            summary: `Read every value of one attribute of ${noun}`,
            params: attributeParams,
            headers: decryptionHeaders,
            response: { 200: points, ...errors(400, 403, 404, 413) },
          },
          exposeHeadRoute: false,
        },
        async (request) => ({
          data: await service.readAttribute(request.caller, {
            entityId: request.params.entityId,
            attributeKey: request.params.attributeKey,
            decryptionKey: request.headers['x-decryption-key'],
            form,
          }),
        }),
      );
    }

    app.get<{ Params: EntityParams; Querystring: { attributes?: string[] } }>(
      `/${form}/:entityId/attributes`,
      {
        schema: {
          tags,
          summary: `Read the attributes of ${noun} (all the application may access, or those listed)`,
          params: entityParams,
          querystring: listQuery,
          headers: decryptionHeaders,
          response: { 200: points, ...errors(400, 403, 404, 413) },
        },
        exposeHeadRoute: false,
      },
      async (request) => ({
        data: await service.readAttributes(request.caller, {
          entityId: request.params.entityId,
          attributes: request.query.attributes,
          decryptionKey: request.headers['x-decryption-key'],
          form,
        }),
      }),
    );

    app.delete<{ Params: AttributeParams }>(
      `/${form}/:entityId/attributes/:attributeKey`,
      { schema: { tags, summary: `Delete every value of one attribute of ${noun}`, params: attributeParams, response: { 200: confirmation, ...errors(400, 403, 404) } } },
      async (request) => {
        await service.deleteAttribute(request.caller, { ...request.params, form });
        return { data: DELETED_POINT };
      },
    );

    app.delete<{ Params: EntityParams }>(
      `/${form}/:entityId/data`,
      {
        schema: {
          tags,
          summary: `Delete all data of ${noun} and the entity itself (its data keys are destroyed)`,
          params: entityParams,
          response: { 200: confirmation, ...errors(400, 403, 404) },
        },
      },
      async (request) => {
        await service.purge(request.caller, { entityId: request.params.entityId, form });
        return { data: DELETED_SUBJECT };
      },
    );
  }

  app.get<{ Params: { dataPointId: string } }>(
    '/data/:dataPointId',
    {
      schema: {
        tags,
        summary: 'Read one data point with its value',
        params: pointParams,
        headers: decryptionHeaders,
        response: { 200: envelope(dataPointSchema), ...errors(400, 403, 404) },
      },
      exposeHeadRoute: false,
    },
    async (request) => ({ data: await service.readPoint(request.caller, request.params.dataPointId, request.headers['x-decryption-key']) }),
  );

  app.delete<{ Params: { dataPointId: string } }>(
    '/data/:dataPointId',
    { schema: { tags, summary: 'Delete one data point (a sub-point deletes its whole structure)', params: pointParams, response: { 200: confirmation, ...errors(403, 404) } } },
    async (request) => {
      await service.deletePoint(request.caller, request.params.dataPointId);
      return { data: DELETED_POINT };
    },
  );
};
