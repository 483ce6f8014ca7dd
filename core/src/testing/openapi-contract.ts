/**
 * Holds a served OpenAPI document to the answers the server really gives, as a client
 * generated from the document would: the status must be one the operation lists, the body
 * must match the schema declared for that status, and nothing the handler answered may be
 * lost on the way. fast-json-stringify silently drops a member the response schema does not
 * declare (and turns a null into "" where the schema says string), so the handler's payload
 * is caught before serialisation and compared with what went out.
 */
import type { FastifyInstance } from 'fastify';
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Response } from './harness.js';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, any> }>> };

export class Contract {
  private doc!: Doc;
  private readonly ajv: Ajv.default;
  private readonly compiled = new Map<string, ValidateFunction>();
  /** The last payload a handler (or the error handler) answered, before serialisation. */
  private sent: unknown;
  /** `METHOD /path/{template} status` of every answer checked. */
  readonly answered = new Set<string>();
  /** JSON answers whose payload was not seen before serialisation (so not compared). */
  readonly unseen: string[] = [];

  constructor() {
    // The document is OpenAPI 3.0: `nullable` is Ajv's own keyword; `example` and the like are
    // annotations, hence not strict.
    this.ajv = new Ajv.default({ strict: false, allErrors: true });
    addFormats.default(this.ajv);
  }

  /** For `startTestVault({ instrument })`. */
  readonly instrument = (app: FastifyInstance): void => {
    app.addHook('onRequest', async () => {
      this.sent = undefined;
    });
    app.addHook('preSerialization', async (_request, _reply, payload) => {
      this.sent = JSON.parse(JSON.stringify(payload));
      return payload;
    });
  };

  use(doc: Doc): void {
    this.doc = doc;
  }

  /** Every way the answer departs from the document; empty when it keeps to it. */
  check(method: string, template: string, res: Response): string[] {
    const op = this.doc.paths[template]?.[method.toLowerCase()];
    if (!op) return [`${method} ${template} is not in the document`];
    this.answered.add(`${method} ${template} ${res.status}`);
    const declared = op.responses[String(res.status)] ?? op.responses[`${String(res.status)[0]}XX`] ?? (res.status >= 400 ? op.responses.default : undefined);
    if (!declared) return [`answered ${res.status}, which the operation does not list (${JSON.stringify(res.body).slice(0, 200)})`];
    const type = String(res.headers['content-type'] ?? '').split(';')[0].trim();
    const media = declared.content?.[type];
    if (!media) return [`answered ${res.status} as ${type || 'no content type'}, which the operation does not declare for it`];
    const problems: string[] = [];
    const validate = this.validator(`${method} ${template} ${res.status} ${type}`, media.schema ?? {});
    if (!validate(res.body)) {
      for (const e of validate.errors ?? []) problems.push(`body${e.instancePath} ${e.message} (${JSON.stringify(e.params)})`);
    }
    if (type === 'application/json') {
      if (this.sent === undefined) this.unseen.push(`${method} ${template} ${res.status}`);
      problems.push(...lost(this.sent, res.body, 'body'));
    }
    return problems;
  }

  private validator(id: string, schema: object): ValidateFunction {
    let fn = this.compiled.get(id);
    if (!fn) {
      fn = this.ajv.compile(schema);
      this.compiled.set(id, fn);
    }
    return fn;
  }
}

/** What the handler answered and the client did not get: members dropped or values changed. */
function lost(sent: unknown, got: unknown, path: string): string[] {
  if (sent === undefined) return [];
  if (Array.isArray(sent)) {
    if (!Array.isArray(got)) return [`${path} was a list but was answered as ${JSON.stringify(got)?.slice(0, 80)}`];
    // One finding per member, not one per list item.
    return [...new Set(sent.flatMap((item, i) => lost(item, got[i], `${path}[]`)))];
  }
  if (sent !== null && typeof sent === 'object') {
    if (got === null || typeof got !== 'object') return [`${path} was an object but was answered as ${JSON.stringify(got)?.slice(0, 80)}`];
    return Object.entries(sent).flatMap(([key, value]) =>
      key in got ? lost(value, (got as Record<string, unknown>)[key], `${path}.${key}`) : [`${path}.${key} was dropped by the response schema`],
    );
  }
  return Object.is(sent, got) ? [] : [`${path} was ${JSON.stringify(sent)} but was answered as ${JSON.stringify(got)}`];
}
