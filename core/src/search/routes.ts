import type { FastifyPluginAsync } from 'fastify';
import { envelope, errors } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { searchResultSchema, SENSITIVITIES } from '../datapoints/model.js';
import type { SearchRequest } from './service.js';

/** PostgreSQL refuses NUL in text; such a string can match nothing anyway. */
const text = (maxLength: number) => ({ type: 'string', maxLength, pattern: '^[^\\u0000]*$' }) as const;
const ids = { anyOf: [{ type: 'array', maxItems: 1000, items: text(512) }, text(512), { type: 'null' }] } as const;
const nullableText = (maxLength: number) => ({ anyOf: [text(maxLength), { type: 'null' }] }) as const;
const nullableDate = { anyOf: [{ type: 'string', maxLength: 64 }, { type: 'null' }], description: 'ISO 8601' } as const;

const searchBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    query: {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            values: {
              anyOf: [
                {
                  type: 'array',
                  maxItems: 1000,
                  items: {
                    type: 'object',
                    required: ['attribute', 'value'],
                    additionalProperties: false,
                    properties: { attribute: text(256), value: { anyOf: [text(1_048_576), { type: 'number' }, { type: 'boolean' }] } },
                  },
                },
                { type: 'null' },
              ],
              description: 'Attribute and value pairs, matched through the blind index (indexed attributes only)',
            },
            attributes: { anyOf: [{ type: 'array', maxItems: 1000, items: text(256) }, { type: 'null' }] },
            regulations: { anyOf: [{ type: 'array', maxItems: 1000, items: text(256) }, { type: 'null' }], description: 'Any of these; "" matches points with none' },
            sensitivity: { anyOf: [{ type: 'string', maxLength: 64 }, { type: 'null' }], description: SENSITIVITIES.join(', ') },
            entityId: ids,
            subjectId: { ...ids, description: 'Alias of entityId' },
            country: nullableText(64),
            subdivision: nullableText(64),
            city: nullableText(256),
            minCreatedDate: nullableDate,
            maxCreatedDate: nullableDate,
            minModifiedDate: nullableDate,
            maxModifiedDate: nullableDate,
          },
        },
        { type: 'null' },
      ],
    },
    // Untyped on purpose: a value out of range or of another type ("5", true) gets the
    // service's message naming the range, not the validator's account of an anyOf.
    page: { description: '0-based page: an integer from 0 to 1000000, default 0 (null: the default)' },
    count: { description: 'Results per page: an integer from 1 to 1000, default 100 (null: the default)' },
  },
} as const;

export const searchRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  // `/data/search` is the path ViziVault's own search tutorial names.
  for (const url of ['/search', '/data/search']) {
    app.post<{ Body: SearchRequest }>(
      url,
      {
        schema: {
          tags: ['data points'],
          summary: 'Search data points by blind-indexed value and metadata (results carry no value)',
          hide: url !== '/search',
          body: searchBody,
          response: { 200: envelope({ type: 'array', items: searchResultSchema }), ...errors(400, 404) },
        },
      },
      async (request) => ({ data: await vault.search.search(request.caller, request.body ?? {}) }),
    );
  }
};
