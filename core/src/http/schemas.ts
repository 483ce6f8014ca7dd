import { STATUS_CODES } from 'node:http';

/** Shared JSON-schema fragments: they validate input and document the API in OpenAPI. */

export const errorBody = {
  type: 'object',
  required: ['statusCode', 'error', 'message'],
  properties: {
    statusCode: { type: 'integer' },
    error: { type: 'string' },
    message: { type: 'string' },
    index: { type: 'integer' },
  },
} as const;

/** `{data: X}`: how the interface wraps every successful answer but the audit summaries. */
export function envelope(data: object) {
  return { type: 'object', properties: { data } } as const;
}

export const confirmation = envelope({ type: 'string' });

export const isoDate = { type: 'string', format: 'date-time' } as const;

/** Declared error answers, so the OpenAPI document lists them. */
export function errors(...codes: number[]) {
  return Object.fromEntries(codes.map((c) => [c, errorResponse(c)]));
}

/** The error body, described by its status text in the document. */
export function errorResponse(code: number) {
  return { ...errorBody, description: STATUS_CODES[code] ?? 'Error' };
}

/** Path parameters are caller-chosen ids: bounded so hostile lengths stop at validation. */
export function pathParams(...names: string[]) {
  return {
    type: 'object',
    required: names,
    properties: Object.fromEntries(names.map((n) => [n, { type: 'string', minLength: 1, maxLength: 512 }])),
  } as const;
}
