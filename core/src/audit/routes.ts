import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { TEXT_PATTERN } from '../activity/routes.js';
import { badRequest, VaultError } from '../errors.js';
import { errors } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { MAX_BULK_EVENTS, TEXT_FIELDS, type AuditEventInput } from './events.js';
import { AuditService } from './service.js';

/** Optional text: null counts as absent, as serialisers of client objects often send it. */
const text = (maxLength: number) => ({ type: 'string', nullable: true, maxLength, pattern: TEXT_PATTERN }) as const;
const field = (name: keyof typeof TEXT_FIELDS) => text(TEXT_FIELDS[name].max);
const textList = { type: 'array', nullable: true, maxItems: 100, items: { type: 'string', maxLength: 256, pattern: TEXT_PATTERN } } as const;

/**
 * Fields with an exact message of their own when missing (`eventType`, `applicationId`, …)
 * are left loose enough for the service to give it.
 */
export const eventSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    eventType: { description: 'READ, STORE, UPDATE or DELETE' },
    eventId: { ...field('eventId'), description: 'Caller-chosen id: an event id already recorded is answered as before and not recorded again' },
    dataPointId: field('dataPointId'),
    subjectId: text(512),
    data: {
      type: 'object',
      nullable: true,
      additionalProperties: false,
      properties: {
        attribute: text(256),
        value: { description: 'Checked against the attribute schema and shown to the rules; never stored' },
        dataPointId: field('dataPointId'),
        regulations: textList,
        tags: textList,
        sensitivity: text(64),
        reportOnly: { type: 'boolean', nullable: true },
        accessibility: text(64),
      },
    },
    timestamp: {
      anyOf: [{ type: 'string', nullable: true, maxLength: 64 }, { type: 'integer' }],
      description: 'ISO 8601 (or epoch milliseconds); default now',
    },
    applicationId: field('applicationId'),
    applicationUser: field('applicationUser'),
    dataStoreName: field('dataStoreName'),
    dataStoreServer: field('dataStoreServer'),
    dataStoreEntityName: field('dataStoreEntityName'),
    location: {
      type: 'object',
      nullable: true,
      additionalProperties: false,
      properties: { country: field('country'), subdivision: field('subdivision'), city: field('city') },
    },
  },
} as const;

const summarySchema = {
  type: 'object',
  required: ['eventType', 'dataPointId', 'subjectId', 'attribute'],
  properties: {
    eventType: { type: 'string' },
    dataPointId: { type: 'string' },
    subjectId: { type: 'string' },
    attribute: { type: 'string' },
    subPoints: {
      type: 'array',
      items: { type: 'object', required: ['attribute', 'dataPointId'], properties: { attribute: { type: 'string' }, dataPointId: { type: 'string' } } },
    },
  },
} as const;

/**
 * Schema failures are turned into errors here rather than by the global handler, so that a
 * bulk failure names the event it is about, as every other bulk error does.
 */
function rejectInvalid(request: FastifyRequest, bulk: boolean): void {
  const failure = request.validationError;
  if (!failure) return;
  const path = (failure as { validation?: { instancePath?: string }[] }).validation?.[0]?.instancePath ?? '';
  const match = bulk ? /^\/(\d+)(?:\/|$)/.exec(path) : null;
  if (match) throw new VaultError(400, failure.message, { index: Number(match[1]) });
  throw badRequest(failure.message);
}

export const auditRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['audit'];
  const service = new AuditService({ writes: vault.writes, rules: () => vault.rules, activity: () => vault.activity, logger: vault.logger });

  app.post<{ Body: AuditEventInput }>(
    '/auditlogs',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Record activity on report-only data',
        description:
          'Answers the activity summary itself, without the `data` wrapper. A READ, UPDATE or DELETE of a point the vault has never seen ' +
          'is recorded when it carries `subjectId` and `data.attribute`: the point is registered as report-only, as a STORE without a value would.',
        body: eventSchema,
        response: { 200: summarySchema, ...errors(400, 401, 403, 404, 409, 413, 422, 503) },
      },
    },
    async (request) => {
      rejectInvalid(request, false);
      const [summary] = await service.record(request.caller, [request.body], 'single');
      return summary;
    },
  );

  app.post<{ Body: AuditEventInput[] }>(
    '/auditlogs/bulk',
    {
      attachValidation: true,
      schema: {
        tags,
        summary: 'Record many audit events, all or nothing',
        description: `At most ${MAX_BULK_EVENTS} events. On the first failing event nothing is recorded and the error carries its \`index\`.`,
        body: { type: 'array', maxItems: MAX_BULK_EVENTS, items: eventSchema },
        response: { 200: { type: 'array', items: summarySchema }, ...errors(400, 401, 403, 404, 409, 413, 503) },
      },
    },
    async (request) => {
      rejectInvalid(request, true);
      return service.record(request.caller, request.body, 'bulk');
    },
  );
};
