import type { IncomingHttpHeaders } from 'node:http';
import type { ExternalActivityEvent } from '../ingest/event.js';
import { findStringDefect, hasControlCharacter, validateEvent } from '../ingest/validate.js';
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

/**
 * On list routes, `item` is the first item it happened to and `count` how many items it
 * happened to: a listing of thousands must not make as many log entries.
 */
export interface Skipped {
  attribute: string;
  reason: string;
  item?: number;
  count?: number;
}

export interface Lost {
  attribute: string;
  reason: 'subject-not-found' | 'invalid-event';
  problem: string;
  item?: number;
  count?: number;
}

export interface BuiltEvents {
  events: ExternalActivityEvent[];
  /** Attributes the traffic does not show (a field absent from a response): no event is due. */
  skipped: Skipped[];
  /**
   * Attributes the traffic shows whose event could not be built: data was read or written and
   * goes unrecorded, so these are counted and logged (field names only, never values).
   */
  lost: Lost[];
  /** Events the traffic shows beyond the bound per request: not built, only counted. */
  overLimit: number;
  /**
   * What a list route found where its list should be, when that is neither an array nor
   * absent nor null (which are an empty list): the items cannot be told, so their events
   * are lost, in a number nobody can know.
   */
  notAList?: string;
}

/** The proxy's bound (SIDECAR_PROXY_MAX_EVENTS) when none is given. */
export const defaultMaxEvents = 10_000;

function resolve(source: CompiledSource, ctx: TrafficContext, item: unknown): unknown {
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
    case 'item':
      return resolvePointer(item, source.tokens);
  }
}

function asId(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * One event per configured attribute that the traffic shows, and on a list route one per item
 * per attribute the item shows. An attribute whose value source is absent (a field missing
 * from a response) or null is skipped: the data wasn't read or written. The exception is an
 * UPDATE whose request sets the attribute to null: that erases it, which is reported as the
 * data point's DELETE (a privacy officer must see the erasure, and an UPDATE would leave the
 * vault listing a value that no longer exists). Past `maxEvents`, events are only counted
 * (`overLimit`): a huge export must not flood Redis.
 */
export function buildEvents(route: CompiledRoute, ctx: TrafficContext, maxEvents = defaultMaxEvents): BuiltEvents {
  const out: BuiltEvents = { events: [], skipped: [], lost: [], overLimit: 0 };
  if (!route.items) {
    buildItem(route, ctx, undefined, out, maxEvents);
    return out;
  }
  const body = route.items.body === 'request' ? ctx.requestBody : ctx.responseBody;
  const list = body === undefined ? undefined : resolvePointer(body, route.items.tokens);
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) {
    out.notAList = typeof list;
    return out;
  }
  const lost = new Summary<Lost>();
  const skipped = new Summary<Skipped>();
  const one: BuiltEvents = { events: out.events, skipped: [], lost: [], overLimit: 0 };
  list.forEach((item, index) => {
    buildItem(route, ctx, item, one, maxEvents);
    for (const entry of one.lost) lost.add(`${entry.attribute}\0${entry.reason}\0${entry.problem}`, entry, index);
    for (const entry of one.skipped) skipped.add(`${entry.attribute}\0${entry.reason}`, entry, index);
    one.lost.length = 0;
    one.skipped.length = 0;
  });
  out.overLimit = one.overLimit;
  out.lost = lost.entries();
  out.skipped = skipped.entries();
  return out;
}

/** Entries alike summed up, in the order they first happened. */
class Summary<T extends { item?: number; count?: number }> {
  private readonly byKey = new Map<string, T>();

  add(key: string, entry: T, item: number): void {
    const seen = this.byKey.get(key);
    if (seen) seen.count! += 1;
    else this.byKey.set(key, { ...entry, item, count: 1 });
  }

  entries(): T[] {
    return [...this.byKey.values()];
  }
}

function buildItem(route: CompiledRoute, ctx: TrafficContext, item: unknown, out: BuiltEvents, maxEvents: number): void {
  const spec = route.spec;
  const subjectId = route.subjectId ? asId(resolve(route.subjectId, ctx, item)) : undefined;
  const applicationUser = route.applicationUser ? asId(resolve(route.applicationUser, ctx, item)) : undefined;
  for (const attribute of route.attributes) {
    let value: unknown;
    let eventType = spec.eventType;
    if (attribute.source) {
      value = resolve(attribute.source, ctx, item);
      if (value === undefined) {
        out.skipped.push({ attribute: attribute.name, reason: 'value not found' });
        continue;
      }
      if (value === null) {
        if (eventType !== 'UPDATE' || attribute.source.kind !== 'request') {
          out.skipped.push({ attribute: attribute.name, reason: 'value is null' });
          continue;
        }
        eventType = 'DELETE';
      }
    }
    if (out.events.length >= maxEvents) {
      out.overLimit++;
      continue;
    }
    if (subjectId === undefined && (spec.eventType === 'STORE' || route.dataPointId.includes('{subjectId}'))) {
      out.lost.push({ attribute: attribute.name, reason: 'subject-not-found', problem: 'no subject id in the traffic' });
      continue;
    }
    let missing: string | undefined;
    const dataPointId = route.dataPointId.replace(placeholder, (_, name: string) => {
      if (name === 'applicationId') return route.applicationId;
      if (name === 'subjectId') return subjectId ?? '';
      if (name === 'attribute') return attribute.name;
      const tokens = route.itemPlaceholders[name];
      if (tokens) {
        const id = asId(resolvePointer(item, tokens));
        if (id === undefined) missing ??= name;
        return id ?? '';
      }
      return ctx.params[name.slice('params.'.length)] ?? '';
    });
    if (missing !== undefined) {
      out.lost.push({ attribute: attribute.name, reason: 'invalid-event', problem: `dataPointId needs {${missing}}, which the item does not have` });
      continue;
    }
    const event: ExternalActivityEvent = {
      eventType,
      applicationId: route.applicationId,
      dataPointId,
      data: {
        ...spec.data,
        attribute: attribute.name,
        ...(attribute.source && value !== null && spec.includeValues !== false ? { value } : {}),
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
    // Stricter than the ingest API, which lets such an id through on an event that cannot
    // register its point, for the vault to record against a point stored under it earlier:
    // built from a client's path or body, it would be a dead letter for any other point.
    if (hasControlCharacter(dataPointId)) {
      out.lost.push({ attribute: attribute.name, reason: 'invalid-event', problem: 'dataPointId must not contain control characters' });
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
}
