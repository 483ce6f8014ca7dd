import type { IncomingHttpHeaders } from 'node:http';
import type { ExternalActivityEvent } from '../ingest/event.js';
import { findStringDefect, validateEvent } from '../ingest/validate.js';
import { resolvePointer } from './json-pointer.js';
import { placeholder, type CompiledRoute, type CompiledSource } from './routes-file.js';

export interface TrafficContext {
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON request body, when the route needs it and it was JSON within the size limit. */
  requestBody?: unknown;
  responseBody?: unknown;
}

export interface BuiltEvents {
  events: ExternalActivityEvent[];
  /** Attributes the traffic does not show (a field absent from a response): no event is due. */
  skipped: { attribute: string; reason: string }[];
  /**
   * Attributes the traffic shows whose event could not be built: data was read or written and
   * goes unrecorded, so these are counted and logged (field names only, never values).
   */
  lost: { attribute: string; reason: 'subject-not-found' | 'invalid-event'; problem: string }[];
}

function resolve(source: CompiledSource, ctx: TrafficContext): unknown {
  switch (source.kind) {
    case 'param':
      return ctx.params[source.name];
    case 'query':
      return ctx.query.get(source.name) ?? undefined;
    case 'header': {
      const value = ctx.headers[source.name];
      return Array.isArray(value) ? value[0] : value;
    }
    case 'request':
      return ctx.requestBody === undefined ? undefined : resolvePointer(ctx.requestBody, source.tokens);
    case 'response':
      return ctx.responseBody === undefined ? undefined : resolvePointer(ctx.responseBody, source.tokens);
  }
}

function asId(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * One event per configured attribute that the traffic shows. An attribute whose value source
 * is absent (a field missing from a response) is skipped: the data wasn't read or written.
 */
export function buildEvents(route: CompiledRoute, ctx: TrafficContext): BuiltEvents {
  const spec = route.spec;
  const out: BuiltEvents = { events: [], skipped: [], lost: [] };
  const subjectId = route.subjectId ? asId(resolve(route.subjectId, ctx)) : undefined;
  const applicationUser = route.applicationUser ? asId(resolve(route.applicationUser, ctx)) : undefined;
  for (const attribute of route.attributes) {
    let value: unknown;
    if (attribute.source) {
      value = resolve(attribute.source, ctx);
      if (value === undefined) {
        out.skipped.push({ attribute: attribute.name, reason: 'value not found' });
        continue;
      }
    }
    if (subjectId === undefined && (spec.eventType === 'STORE' || route.dataPointId.includes('{subjectId}'))) {
      out.lost.push({ attribute: attribute.name, reason: 'subject-not-found', problem: 'no subject id in the traffic' });
      continue;
    }
    const dataPointId = route.dataPointId.replace(placeholder, (_, name: string) => {
      if (name === 'applicationId') return route.applicationId;
      if (name === 'subjectId') return subjectId ?? '';
      if (name === 'attribute') return attribute.name;
      return ctx.params[name.slice('params.'.length)] ?? '';
    });
    const event: ExternalActivityEvent = {
      eventType: spec.eventType,
      applicationId: route.applicationId,
      dataPointId,
      data: {
        ...spec.data,
        attribute: attribute.name,
        ...(attribute.source && spec.includeValues !== false ? { value } : {}),
      },
    };
    if (subjectId !== undefined) event.subjectId = subjectId;
    if (applicationUser !== undefined) event.applicationUser = applicationUser;
    if (spec.dataStoreName !== undefined) event.dataStoreName = spec.dataStoreName;
    if (spec.dataStoreServer !== undefined) event.dataStoreServer = spec.dataStoreServer;
    if (spec.dataStoreEntityName !== undefined) event.dataStoreEntityName = spec.dataStoreEntityName;
    if (spec.location !== undefined) event.location = spec.location;
    const check = validateEvent(event);
    if (!check.ok) {
      out.lost.push({ attribute: attribute.name, reason: 'invalid-event', problem: `${check.field} ${check.problem}` });
      continue;
    }
    // Text the vault can never store (a NUL or a lone surrogate from a path or a body) would
    // only become a dead letter that no replay can mend.
    const defect = findStringDefect(event);
    if (defect) {
      out.lost.push({ attribute: attribute.name, reason: 'invalid-event', problem: defect === 'nul' ? 'holds a NUL character' : 'holds an unpaired surrogate' });
      continue;
    }
    out.events.push(event);
  }
  return out;
}
