import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import type { DefinitionInput } from './service.js';

const schemaDoc = {
  description: 'A primitive (`string`, `int`, `float`, `boolean`, `date`, `file`) or an object from sub-attribute key to schema; a key written `[name]` holds a list.',
  anyOf: [{ type: 'string' }, { type: 'object', additionalProperties: true }],
} as const;

const definition = {
  type: 'object',
  properties: {
    key: { type: 'string' },
    name: { type: 'string', nullable: true },
    hint: { type: 'string', nullable: true },
    schema: schemaDoc,
    repeatable: { type: 'boolean' },
    indexed: { type: 'boolean' },
    immutable: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    regulations: { type: 'array', items: { type: 'string' } },
    entityTypes: { type: 'array', items: { type: 'string' }, description: 'Empty means `datasubject` only.' },
    createdDate: isoDate,
    modifiedDate: isoDate,
  },
} as const;

const names = { type: 'array', maxItems: 1000, items: { type: 'string' } } as const;

const body = {
  type: 'object',
  additionalProperties: false,
  properties: {
    // Loose on purpose: the interface names the message for a missing or malformed key, name and schema.
    key: {},
    name: {},
    schema: { description: schemaDoc.description },
    hint: { type: 'string', maxLength: 65536, pattern: '^[^\\u0000]*$', nullable: true },
    repeatable: { type: 'boolean' },
    indexed: { type: 'boolean' },
    immutable: { type: 'boolean' },
    tags: names,
    regulations: names,
    entityTypes: names,
    // ViziVault clients send back the whole definition they read; the dates are the vault's own.
    createdDate: { type: 'string', readOnly: true },
    modifiedDate: { type: 'string', readOnly: true },
  },
} as const;

export const definitionRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['attribute definitions'];

  app.post<{ Body: DefinitionInput }>(
    '/attributes',
    {
      schema: {
        tags,
        summary: 'Create an attribute definition, or update the one with that key',
        description: 'Members left out of an update keep their value; a new definition gets the defaults (schema `string`, not repeatable, not indexed).',
        body,
        response: { 201: envelope(definition), ...errors(400, 403, 409) },
      },
      // Before validation, so a non-admin learns nothing from how its body is judged.
      preValidation: async (request) => requireAdmin(request.caller, 'Forbidden access to edit attribute definitions'),
    },
    async (request, reply) => reply.status(201).send({ data: await vault.definitions.upsert(request.caller, request.body) }),
  );

  app.get('/attributes', { schema: { tags, summary: 'List attribute definitions', response: { 200: envelope({ type: 'array', items: definition }) } } }, async () => ({
    data: await vault.definitions.list(),
  }));

  app.get<{ Params: { attributeKey: string } }>(
    '/attributes/:attributeKey',
    { schema: { tags, summary: 'Read an attribute definition', params: pathParams('attributeKey'), response: { 200: envelope(definition), ...errors(404) } } },
    async (request) => ({ data: await vault.definitions.get(request.params.attributeKey) }),
  );

  app.delete<{ Params: { attributeKey: string } }>(
    '/attributes/:attributeKey',
    {
      schema: {
        tags,
        summary: 'Delete an attribute definition that has no data and no rule referencing it',
        params: pathParams('attributeKey'),
        response: { 200: confirmation, ...errors(403, 404, 409) },
      },
      preValidation: async (request) => requireAdmin(request.caller, 'Forbidden access to delete attribute definitions'),
    },
    async (request) => {
      await vault.definitions.delete(request.caller, request.params.attributeKey);
      return { data: 'Successfully Deleted Attribute' };
    },
  );
};
