import type { IncomingHttpHeaders } from 'node:http';
import type { ExternalActivityEvent } from '../ingest/event.js';
import { validateEvent } from '../ingest/validate.js';
import { resolvePointer } from './json-pointer.js';
import type { CompiledRoute, CompiledSource } from './routes-file.js';

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
  /** Why an attribute produced no event; counted in metrics, never logged with values. */
  skipped: { attribute: string; reason: string }[];
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
  const out: BuiltEvents = { events: [], skipped: [] };
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
      out.skipped.push({ attribute: attribute.name, reason: 'subject not found' });
      continue;
    }
    const dataPointId = route.dataPointId.replace(/\{([A-Za-z]+(?:\.[A-Za-z0-9_]+)?)\}/g, (_, name: string) => {
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
      out.skipped.push({ attribute: attribute.name, reason: `invalid event: ${check.field} ${check.problem}` });
      continue;
    }
    out.events.push(event);
  }
  return out;
}
