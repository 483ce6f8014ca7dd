import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

/**
 * Bodies are validated as sent: no type coercion and no silent removal of unknown members,
 * so a wrong type or an unexpected field is a 400 rather than a quiet surprise. Query
 * strings and path parameters arrive as text and are coerced.
 */
export function installValidation(app: FastifyInstance): void {
  const common = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false } as const;
  const body = new Ajv.default({ ...common, coerceTypes: false });
  const text = new Ajv.default({ ...common, coerceTypes: 'array' });
  addFormats.default(body);
  addFormats.default(text);
  app.setValidatorCompiler(({ schema, httpPart }) => {
    // A schema that only documents (the rule body): its service checks with its own messages.
    if ((schema as Record<string, unknown>)['x-vault-unchecked'] === true) return () => true;
    return (httpPart === 'body' ? body : text).compile(schema);
  });
}
