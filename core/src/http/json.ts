import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { badRequest, VaultError } from '../errors.js';
import { findStringDefect, jsonTooDeep, MAX_JSON_DEPTH, mayHoldStringDefect } from '../util/json-safety.js';

export const NUL_MESSAGE = 'Strings may not contain NUL characters';
export const INVALID_UTF8_MESSAGE = 'Body is not valid UTF-8';
export const LONE_SURROGATE_MESSAGE = 'Strings may not contain unpaired surrogates';
export const INVALID_JSON_MESSAGE = 'Body is not valid JSON';
export const CHARSET_MESSAGE = 'Content type charset must be utf-8';
export const ENCODING_MESSAGE = 'Content encoding must be identity';
export const TOO_DEEP_MESSAGE = `Body is nested too deeply (at most ${MAX_JSON_DEPTH} levels)`;

/** Charsets whose text is read exactly as UTF-8: UTF-8 itself, and ASCII, a subset of it. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** Whether every `charset` parameter of a Content-Type (none is fine: JSON is UTF-8) names UTF-8. */
export function utf8Charset(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  for (const parameter of contentType.split(';').slice(1)) {
    const at = parameter.indexOf('=');
    if (at === -1 || parameter.slice(0, at).trim().toLowerCase() !== 'charset') continue;
    const value = parameter.slice(at + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    if (!UTF8_CHARSETS.has(value)) return false;
  }
  return true;
}

/** Whether a Content-Encoding (none is fine) leaves the body as sent: the vault decompresses nothing. */
export function identityEncoding(contentEncoding: string | string[] | undefined): boolean {
  if (contentEncoding === undefined) return true;
  const codings = [contentEncoding].flat().flatMap((h) => h.split(','));
  return codings.every((c) => ['', 'identity'].includes(c.trim().toLowerCase()));
}

/**
 * The JSON body parser, the one gate every stored string passes. It refuses, each with a 400
 * naming the problem, rather than store something other than what was sent:
 * - bytes that are not UTF-8 (decoding would silently turn them into U+FFFD);
 * - unpaired surrogates (`\uD800`), which UTF-8 cannot hold and both databases rewrite;
 * - NUL characters, which PostgreSQL cannot store in text and no name legitimately holds;
 * - nesting deeper than MAX_JSON_DEPTH, measured before parsing, so no recursive walker
 *   downstream can overflow the stack;
 * - prototype-poisoning keys (as Fastify's own parser does).
 * A body labelled with another charset (`charset=latin1`) is 415: read as UTF-8 it would be
 * stored as something other than what the client meant. So is a compressed one (gzip, br):
 * read as it is, it would be refused as bytes that are not UTF-8, which hides the cause. An empty body is no body, since many
 * clients send a JSON content type on every DELETE, whatever its charset.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, raw, done) => {
    const bytes = raw as Buffer;
    if (!identityEncoding(request.headers['content-encoding']) && bytes.length > 0) return done(new VaultError(415, ENCODING_MESSAGE), undefined);
    if (!utf8Charset(request.headers['content-type'])) {
      return done(bytes.toString('latin1').trim().length === 0 ? null : new VaultError(415, CHARSET_MESSAGE), undefined);
    }
    if (!isUtf8(bytes)) return done(badRequest(INVALID_UTF8_MESSAGE), undefined);
    const text = bytes.toString('utf8');
    if (text.trim().length === 0) return done(null, undefined);
    if (jsonTooDeep(text)) return done(badRequest(TOO_DEEP_MESSAGE), undefined);
    let body: unknown;
    try {
      body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      const poisoned = /forbidden (prototype|constructor) property/.test((err as Error).message);
      return done(badRequest(poisoned ? 'Body contains a forbidden property name' : INVALID_JSON_MESSAGE), undefined);
    }
    if (mayHoldStringDefect(text)) {
      const defect = findStringDefect(body);
      if (defect) return done(badRequest(defect === 'nul' ? NUL_MESSAGE : LONE_SURROGATE_MESSAGE), undefined);
    }
    done(null, body);
  });
  // A callback, not an async hook: it runs on every request.
  app.addHook('onRequest', (request, _reply, done) => {
    done(request.url.includes('%00') || request.url.includes('\u0000') ? badRequest(NUL_MESSAGE) : undefined);
  });
}
