/**
 * Answers that every route of a kind can give come from hooks shared by all routes
 * (authentication, rate limits, the body parser, schema validation), so they are declared
 * here, once, rather than in each route file: the OpenAPI document lists what a client can
 * actually get. Each route declares its own answers (403, 404, 409, 422, ...) itself.
 */
import type { RouteOptions } from 'fastify';
import { errorResponse } from './schemas.js';

type Schema = Record<string, unknown> & { response?: Record<string, unknown>; hide?: boolean };

function declare(response: Record<string, unknown>, ...codes: number[]) {
  for (const code of codes) if (!(code in response) && !(String(code) in response)) response[code] = errorResponse(code);
}

/** An `onRoute` hook; it must be added before @fastify/swagger is registered so the document sees its work. */
export function documentCommonAnswers(route: RouteOptions): void {
  const schema = route.schema as Schema | undefined;
  if (!schema || schema.hide) return;
  const response = (schema.response ??= {}) as Record<string, unknown>;
  if ((route.config as { public?: boolean } | undefined)?.public) {
    // Health, readiness and metrics answer without a key.
    (schema as Record<string, unknown>).security = [];
  } else {
    // 401 without a valid key; 429 over the rate limit or after too many failed logins.
    declare(response, 401, 429);
  }
  // Malformed JSON, an unknown member or a wrong type; 413 over VAULT_BODY_LIMIT; 415 not JSON, or not UTF-8.
  if (schema.body) declare(response, 400, 413, 415);
  if (schema.params || schema.querystring) declare(response, 400);
}
