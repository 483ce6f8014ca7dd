import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { badRequest } from '../errors.js';

function containsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 64 || value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => containsNul(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || containsNul(v, depth + 1));
}

/**
 * The JSON body parser. Prototype-poisoning keys are refused (as Fastify's own parser does);
 * an empty body is no body, since many clients send a JSON content type on every DELETE;
 * and NUL characters are refused anywhere, since PostgreSQL cannot store them in text and
 * no identifier or name legitimately holds one.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, raw, done) => {
    const text = raw as string;
    if (text.trim().length === 0) return done(null, undefined);
    let body: unknown;
    try {
      body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      const poisoned = /forbidden (prototype|constructor) property/.test((err as Error).message);
      return done(badRequest(poisoned ? 'Body contains a forbidden property name' : 'Body is not valid JSON'), undefined);
    }
    if (text.includes('\\u0000') && containsNul(body)) return done(badRequest('Strings may not contain NUL characters'), undefined);
    done(null, body);
  });
  app.addHook('onRequest', async (request) => {
    if (request.url.includes('%00') || request.url.includes('\u0000')) throw badRequest('Strings may not contain NUL characters');
  });
}
