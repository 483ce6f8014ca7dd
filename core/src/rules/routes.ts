import type { FastifyPluginAsync } from 'fastify';
import { requireAdmin } from '../access/caller.js';
import { badRequest, isVaultError } from '../errors.js';
import { INVALID_JSON_MESSAGE } from '../http/json.js';
import { confirmation, envelope, errors, isoDate, pathParams } from '../http/schemas.js';
import type { Vault } from '../vault.js';
import { RULE_NOT_JSON } from './compile.js';
import { ruleRequestBody } from './openapi.js';

const freeForm = { type: 'object', additionalProperties: true } as const;

const rule = {
  type: 'object',
  // `name` and `type` are returned only when they were sent: a rule comes back as sent.
  required: ['key', 'constraint', 'action', 'executionOrder', 'createdDate', 'modifiedDate'],
  additionalProperties: true,
  properties: {
    key: { type: 'string' },
    name: { type: 'string', nullable: true },
    // Null when sent so (a data rule): without `nullable` the answer's serialiser wrote "".
    type: { type: 'string', nullable: true, enum: ['data', 'activity', null] },
    constraint: { ...freeForm, description: 'A constraint object with a string `type`; see the README, "Rules and alerts".' },
    action: { ...freeForm, description: 'An action object with a string `type`; see the README, "Rules and alerts".' },
    executionOrder: { type: 'integer' },
    createdDate: isoDate,
    modifiedDate: isoDate,
  },
} as const;

export const ruleRoutes: FastifyPluginAsync<{ vault: Vault }> = async (app, { vault }) => {
  const tags = ['rules'];

  app.post(
    '/rules',
    {
      schema: {
        tags,
        summary: 'Create or update a rule (by key)',
        body: ruleRequestBody,
        response: { 200: confirmation, 201: confirmation, ...errors(400, 402, 403, 422) },
      },
      // The interface names this endpoint's own answer to a body that is not JSON; what a
      // handler throws goes on to the vault's error handler.
      errorHandler: (err) => {
        throw isVaultError(err) && err.message === INVALID_JSON_MESSAGE ? badRequest(RULE_NOT_JSON) : err;
      },
    },
    async (request, reply) => {
      requireAdmin(request.caller);
      const outcome = await vault.ruleService.save(request.caller, request.body);
      return outcome === 'created' ? reply.status(201).send({ data: 'Rule created' }) : reply.status(200).send({ data: 'Rule updated' });
    },
  );

  app.get('/rules', { schema: { tags, summary: 'List rules', response: { 200: envelope({ type: 'array', items: rule }) } } }, async () => ({
    data: await vault.ruleService.list(),
  }));

  app.get<{ Params: { ruleName: string } }>(
    '/rules/:ruleName',
    { schema: { tags, summary: 'Read a rule, by key or else by name', params: pathParams('ruleName'), response: { 200: envelope(rule), ...errors(404) } } },
    async (request) => ({ data: await vault.ruleService.get(request.params.ruleName) }),
  );

  app.delete<{ Params: { ruleName: string } }>(
    '/rules/:ruleName',
    { schema: { tags, summary: 'Delete a rule, by key or else by name', params: pathParams('ruleName'), response: { 200: confirmation, ...errors(403, 404) } } },
    async (request) => {
      requireAdmin(request.caller);
      await vault.ruleService.delete(request.caller, request.params.ruleName);
      return { data: 'Rule deleted' };
    },
  );
};
