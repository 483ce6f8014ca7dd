import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { envelope, errors } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { ActivityService, parseChainHead, type ActivityQuery } from './service.js';
import { CHANGE, CHANGE_ACTIONS, CHANGE_TARGETS } from './changes.js';

/** Text that both databases store as sent: no NUL, no unpaired surrogate. */
export const TEXT_PATTERN = '^[^\\u0000\\uD800-\\uDFFF]*$';
const text = (maxLength: number) => ({ type: 'string', maxLength, pattern: TEXT_PATTERN }) as const;

/** The data events, and `CHANGE`: an administrative change (`changes.ts`). */
const eventTypeEnum = ['READ', 'STORE', 'UPDATE', 'DELETE', CHANGE] as const;

const query = {
  type: 'object',
  additionalProperties: false,
  properties: {
    subjectId: text(512),
    dataPointId: text(512),
    attribute: text(256),
    eventType: { type: 'string', enum: eventTypeEnum },
    applicationId: text(512),
    applicationUser: text(1024),
    from: { type: 'string', maxLength: 64, description: 'ISO 8601; records whose event time is at or after it' },
    to: { type: 'string', maxLength: 64, description: 'ISO 8601; records whose event time is at or before it' },
    fromSequence: { type: 'integer', minimum: 1, maximum: 1e15, description: 'Sealed records from this position of the chain on (records not yet sealed have none)' },
    toSequence: { type: 'integer', minimum: 1, maximum: 1e15, description: 'Sealed records up to this position of the chain' },
    order: { type: 'string', enum: ['oldest', 'newest'], default: 'oldest', description: '`newest`: the same entries in exactly the reverse order' },
    page: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 0 },
    count: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
  },
} as const;

const optionalText = { type: 'string' } as const;

export const activityEntrySchema = {
  type: 'object',
  properties: {
    sequence: { type: 'integer', description: 'Position of the record in the hash chain, given when it is sealed; absent before. Entries of one record share it' },
    eventId: { type: 'string', description: 'The record’s id; for an entry of a record that names several points, `<record id>.<part>`' },
    part: {
      type: 'integer',
      minimum: 1,
      description: 'A read answered with several points is one record, listed as one entry per point: this entry’s place in it. Absent otherwise',
    },
    eventType: { type: 'string', enum: eventTypeEnum },
    subjectId: optionalText,
    dataPointId: optionalText,
    attribute: optionalText,
    applicationId: { type: 'string' },
    applicationUser: optionalText,
    dataStoreName: optionalText,
    dataStoreServer: optionalText,
    dataStoreEntityName: optionalText,
    location: { type: 'object', properties: { country: optionalText, subdivision: optionalText, city: optionalText } },
    reportOnly: { type: 'boolean' },
    timestamp: { type: 'string', description: 'When the event happened' },
    recordedDate: { type: 'string', description: 'When the vault recorded it' },
    recordedBy: { type: 'string', description: 'Id of the application whose API key submitted it' },
    sealed: { type: 'boolean', description: 'Whether the record is chained yet (it is within about a second)' },
    hash: { type: 'string', description: 'SHA-256 over the previous record’s hash and this record; absent until sealed' },
    change: {
      description: 'A `CHANGE` record’s administrative change: an application’s access or key, a legal hold or a purge, a rule, the registry. Never a key',
      // A record altered outside the vault may hold any object: the first form that fits is
      // answered, so such a one is shown as stored rather than bent into the vault's shape
      // (the serialiser writes a null string as "" and drops members a schema does not name).
      anyOf: [
        {
          type: 'object',
          required: ['target', 'id', 'action'],
          additionalProperties: false,
          properties: {
            target: { type: 'string', enum: CHANGE_TARGETS },
            id: { type: 'string', description: 'The application’s or entity’s id; the rule’s, attribute’s, entity type’s or regulation’s key; the tag’s name' },
            action: { type: 'string', enum: CHANGE_ACTIONS },
            fields: { type: 'object', additionalProperties: true, description: 'The values the change set' },
            rule: { type: 'string', description: 'The rule whose action made the change, when a rule did' },
          },
        },
        { type: 'object', additionalProperties: true, description: 'The column of a record altered outside the vault, as it holds it (verification reports the record)' },
      ],
    },
  },
} as const;

const verifySchema = envelope({
  type: 'object',
  properties: {
    valid: { type: 'boolean' },
    records: { type: 'integer', description: 'Sealed records checked' },
    unsealed: { type: 'integer', description: 'Committed records not yet chained (sealed within about a second)' },
    firstBrokenSequence: { type: 'integer' },
    firstBrokenEventId: { type: 'string' },
    lastSequence: { type: 'integer' },
    lastHash: { type: 'string' },
    headMatches: { type: 'boolean', description: 'With `head`: whether the log still holds that record unchanged, whether or not the chain breaks before it' },
  },
});

const verifyQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    head: { type: 'string', pattern: '^\\d{1,15}:[0-9a-f]{64}$', description: 'SEQUENCE:HASH kept from an earlier `vault activity head`' },
  },
} as const;

/** The log names subjects and what was done with their data: admins only. */
export const activityRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['activity'];
  const service = new ActivityService(vault.db, vault.sealer);
  app.addHook('preHandler', async (request) => requireAdmin(request.caller));

  app.get<{ Querystring: ActivityQuery }>(
    '/activity',
    {
      schema: {
        tags,
        summary: 'List activity records, oldest first (or newest first)',
        querystring: query,
        response: { 200: envelope({ type: 'array', items: activityEntrySchema }), ...errors(400, 401, 403) },
      },
    },
    async (request) => ({ data: await service.list(request.query) }),
  );

  app.get<{ Querystring: { head?: string } }>(
    '/activity/verify',
    {
      schema: {
        tags,
        summary: 'Seal pending records and recompute the activity hash chain',
        querystring: verifyQuery,
        response: { 200: verifySchema, ...errors(400, 401, 403) },
      },
    },
    async (request) => ({ data: await service.verify(request.query.head === undefined ? undefined : parseChainHead(request.query.head)) }),
  );

  app.get(
    '/activity/head',
    {
      schema: {
        tags,
        summary: 'The chain head (after sealing pending records), to keep outside the database',
        response: { 200: envelope({ type: 'object', properties: { sequence: { type: 'integer' }, hash: { type: 'string' } } }), ...errors(401, 403) },
      },
    },
    async () => ({ data: await service.head() }),
  );
};
