import { readFileSync } from 'node:fs';
import { eventTypes, type EventLocation, type EventType, type ExternalActivityData } from '../ingest/event.js';
import { validateEvent } from '../ingest/validate.js';
import { isJsonPointer, parsePointer } from './json-pointer.js';
import { comparable, CompiledRoutes, decodeSegment } from './route-match.js';

export { CompiledRoutes };

/**
 * Where a value comes from in proxied traffic. `request` and `response` are JSON pointers into
 * the bodies; only routes that use them make the proxy hold a body in memory. `item` is a
 * JSON pointer into one item of the route's list (`items`).
 */
export type Source =
  | { param: string }
  | { query: string }
  | { header: string }
  | { request: string }
  | { response: string }
  | { item: string };

export interface RouteSpec {
  method: string | string[];
  path: string;
  eventType: EventType;
  applicationId?: string;
  /**
   * Where a body holds a list (listings, searches, exports): each item yields its own events,
   * its `item` sources and `{item…}` placeholders read relative to it.
   */
  items?: { request: string } | { response: string };
  subjectId?: Source;
  /** Attribute name → where its value is; `{}` reports the attribute without a value. */
  attributes: Record<string, Source | Record<string, never>>;
  /** Template with {applicationId} {subjectId} {attribute} {params.NAME} {item/POINTER}. */
  dataPointId?: string;
  applicationUser?: Source;
  includeValues?: boolean;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: EventLocation;
  data?: Omit<ExternalActivityData, 'attribute' | 'value' | 'dataPointId'>;
}

export interface RoutesFile {
  applicationId?: string;
  routes: RouteSpec[];
}

export type CompiledSource =
  | { kind: 'param' | 'query' | 'header'; name: string }
  | { kind: 'request' | 'response' | 'item'; pointer: string; tokens: string[] };

export interface CompiledRoute {
  index: number;
  spec: RouteSpec;
  methods: Set<string> | 'any';
  segments: ({ literal: string } | { param: string })[];
  /** Trailing "*" matches any rest of the path, available as parameter "*". */
  rest: boolean;
  applicationId: string;
  items?: { body: 'request' | 'response'; pointer: string; tokens: string[] };
  subjectId?: CompiledSource;
  applicationUser?: CompiledSource;
  attributes: { name: string; source?: CompiledSource }[];
  dataPointId: string;
  /** The template's `{item…}` placeholders (by name, as between the braces) and their pointers' tokens. */
  itemPlaceholders: Record<string, string[]>;
  needsRequestBody: boolean;
  needsResponseBody: boolean;
}

export interface RouteMatch {
  route: CompiledRoute;
  params: Record<string, string>;
  /**
   * A parameter's %-escapes did not decode (`/users/bad%E0`): the upstream may still serve
   * it, but no id can be told from it, so its events are counted as lost, not guessed.
   */
  undecodable?: true;
}

export const defaultDataPointTemplate = '{applicationId}/{subjectId}/{attribute}';

export class RoutesFileError extends Error {
  constructor(file: string, readonly problems: string[]) {
    super(`invalid routes file ${file}:\n  - ${problems.join('\n  - ')}`);
    this.name = 'RoutesFileError';
  }
}

const routeKeys = new Set([
  'method', 'path', 'eventType', 'applicationId', 'items', 'subjectId', 'attributes', 'dataPointId', 'applicationUser',
  'includeValues', 'dataStoreName', 'dataStoreServer', 'dataStoreEntityName', 'location', 'data',
]);
const sourceKinds = ['param', 'query', 'header', 'request', 'response', 'item'] as const;
const bodyKinds = ['request', 'response'] as const;
const staticDataKeys = new Set(['regulations', 'tags', 'sensitivity', 'reportOnly', 'accessibility']);
/**
 * Anything in braces is a placeholder, checked at start: a narrower pattern left `{params.*}`
 * or a misspelt `{subject_id}` in every id as written, making one data point of all.
 */
export const placeholder = /\{([^{}]*)\}/g;

export function loadRoutesFile(file: string): CompiledRoutes {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new RoutesFileError(file, [`cannot read: ${(err as Error).message}`]);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new RoutesFileError(file, [`not valid JSON: ${(err as Error).message}`]);
  }
  return compileRoutes(parsed, file);
}

export function compileRoutes(input: unknown, file = '(inline)'): CompiledRoutes {
  const problems: string[] = [];
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new RoutesFileError(file, ['must be an object with a "routes" array']);
  }
  const doc = input as Record<string, unknown>;
  for (const key of Object.keys(doc)) {
    if (key !== 'applicationId' && key !== 'routes') problems.push(`unknown field "${key}"`);
  }
  if (doc.applicationId !== undefined && (typeof doc.applicationId !== 'string' || doc.applicationId === '')) {
    problems.push('applicationId must be a non-empty string');
  }
  if (!Array.isArray(doc.routes) || doc.routes.length === 0) {
    problems.push('routes must be a non-empty array');
    throw new RoutesFileError(file, problems);
  }
  const compiled: CompiledRoute[] = [];
  doc.routes.forEach((raw, index) => {
    const route = compileRoute(raw, index, doc.applicationId as string | undefined, problems);
    if (route) compiled.push(route);
  });
  if (problems.length > 0) throw new RoutesFileError(file, problems);
  return new CompiledRoutes(compiled);
}

function compileRoute(raw: unknown, index: number, defaultApp: string | undefined, problems: string[]): CompiledRoute | undefined {
  const at = `routes[${index}]`;
  const before = problems.length;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problems.push(`${at} must be an object`);
    return undefined;
  }
  const r = raw as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!routeKeys.has(key)) problems.push(`${at}.${key} is not a known field`);

  let methods: Set<string> | 'any' = 'any';
  const methodList = typeof r.method === 'string' ? [r.method] : r.method;
  if (!Array.isArray(methodList) || methodList.length === 0 || !methodList.every((m) => typeof m === 'string' && /^[A-Za-z*]+$/.test(m))) {
    problems.push(`${at}.method must be an HTTP method or an array of them ("*" for any)`);
  } else if (!methodList.includes('*')) {
    methods = new Set(methodList.map((m: string) => m.toUpperCase()));
  }

  const segments: CompiledRoute['segments'] = [];
  let rest = false;
  const paramNames = new Set<string>();
  if (typeof r.path !== 'string' || !r.path.startsWith('/')) {
    problems.push(`${at}.path must be a string starting with "/"`);
  } else {
    const parts = r.path.split('/').slice(1);
    parts.forEach((part, i) => {
      if (part === '*' && i === parts.length - 1) {
        rest = true;
        paramNames.add('*');
      }
      else if (part.startsWith(':')) {
        const name = part.slice(1);
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) problems.push(`${at}.path has an invalid parameter "${part}"`);
        paramNames.add(name);
        segments.push({ param: name });
      } else {
        // Requests are matched decoded, so a literal written %-encoded must be too.
        const literal = decodeSegment(part);
        if (literal === undefined) problems.push(`${at}.path has a segment whose %-escapes do not decode: "${part}"`);
        else segments.push({ literal: comparable(literal) });
      }
    });
  }

  if (typeof r.eventType !== 'string' || !(eventTypes as readonly string[]).includes(r.eventType)) {
    problems.push(`${at}.eventType must be one of ${eventTypes.join(', ')}`);
  }
  const applicationId = r.applicationId ?? defaultApp;
  if (typeof applicationId !== 'string' || applicationId === '') {
    problems.push(`${at}.applicationId is required (on the route or at the top of the file)`);
  }
  const items = r.items === undefined ? undefined : compileItems(r.items, at, problems);

  const source = (value: unknown, label: string): CompiledSource | undefined => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${label} must be an object with one of ${sourceKinds.join(', ')}`);
      return undefined;
    }
    const keys = Object.keys(value);
    if (keys.length !== 1 || !(sourceKinds as readonly string[]).includes(keys[0])) {
      problems.push(`${label} must have exactly one of ${sourceKinds.join(', ')}`);
      return undefined;
    }
    const kind = keys[0] as (typeof sourceKinds)[number];
    const arg = (value as Record<string, unknown>)[kind];
    if (typeof arg !== 'string') {
      problems.push(`${label}.${kind} must be a string`);
      return undefined;
    }
    if (kind === 'item') {
      if (r.items === undefined) {
        problems.push(`${label}.item needs ${at}.items (where the list is)`);
        return undefined;
      }
      if (!isJsonPointer(arg)) {
        problems.push(`${label}.item must be a JSON pointer into the item such as "/id" ("" for the item itself)`);
        return undefined;
      }
      return { kind, pointer: arg, tokens: parsePointer(arg) };
    }
    if (kind === 'request' || kind === 'response') {
      if (!isJsonPointer(arg)) {
        problems.push(`${label}.${kind} must be a JSON pointer such as "/user/email"`);
        return undefined;
      }
      return { kind, pointer: arg, tokens: parsePointer(arg) };
    }
    if (kind === 'param' && !paramNames.has(arg)) problems.push(`${label}.param "${arg}" is not a parameter of ${at}.path`);
    return { kind, name: kind === 'header' ? arg.toLowerCase() : arg };
  };

  const subjectId = r.subjectId === undefined ? undefined : source(r.subjectId, `${at}.subjectId`);
  if (r.eventType === 'STORE' && r.subjectId === undefined) problems.push(`${at}.subjectId is required for STORE routes`);
  const applicationUser = r.applicationUser === undefined ? undefined : source(r.applicationUser, `${at}.applicationUser`);

  const attributes: CompiledRoute['attributes'] = [];
  if (typeof r.attributes !== 'object' || r.attributes === null || Array.isArray(r.attributes) || Object.keys(r.attributes).length === 0) {
    problems.push(`${at}.attributes must map at least one attribute name to a source ({} for none)`);
  } else {
    for (const [name, spec] of Object.entries(r.attributes as Record<string, unknown>)) {
      if (typeof spec === 'object' && spec !== null && !Array.isArray(spec) && Object.keys(spec).length === 0) {
        attributes.push({ name });
      } else {
        attributes.push({ name, source: source(spec, `${at}.attributes.${name}`) });
      }
    }
  }

  const dataPointId = r.dataPointId ?? defaultDataPointTemplate;
  const itemPlaceholders: Record<string, string[]> = {};
  if (typeof dataPointId !== 'string' || dataPointId === '') {
    problems.push(`${at}.dataPointId must be a template string`);
  } else {
    for (const [, name] of dataPointId.matchAll(placeholder)) {
      if (name === 'item' || name.startsWith('item/') || name.startsWith('item~')) {
        const pointer = name.slice('item'.length);
        if (r.items === undefined) problems.push(`${at}.dataPointId uses {${name}}, which needs ${at}.items (where the list is)`);
        else if (!isJsonPointer(pointer)) problems.push(`${at}.dataPointId placeholder {${name}} must be {item} followed by a JSON pointer such as {item/id}`);
        else itemPlaceholders[name] = parsePointer(pointer);
        continue;
      }
      const ok = ['applicationId', 'subjectId', 'attribute'].includes(name) || (name.startsWith('params.') && paramNames.has(name.slice(7)));
      if (!ok) problems.push(`${at}.dataPointId uses unknown placeholder {${name}}`);
    }
  }

  for (const key of ['dataStoreName', 'dataStoreServer', 'dataStoreEntityName'] as const) {
    if (r[key] !== undefined && typeof r[key] !== 'string') problems.push(`${at}.${key} must be a string`);
  }
  if (r.includeValues !== undefined && typeof r.includeValues !== 'boolean') problems.push(`${at}.includeValues must be a boolean`);
  if (r.location !== undefined) {
    const loc = r.location as Record<string, unknown>;
    if (typeof loc !== 'object' || loc === null || Object.entries(loc).some(([k, v]) => !['country', 'subdivision', 'city'].includes(k) || typeof v !== 'string')) {
      problems.push(`${at}.location must be an object of country, subdivision, city strings`);
    }
  }
  if (r.data !== undefined) {
    const data = r.data as Record<string, unknown>;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) problems.push(`${at}.data must be an object`);
    else {
      for (const key of Object.keys(data)) if (!staticDataKeys.has(key)) problems.push(`${at}.data.${key} is not allowed (only ${[...staticDataKeys].join(', ')})`);
      for (const key of ['regulations', 'tags']) {
        if (data[key] !== undefined && !(Array.isArray(data[key]) && (data[key] as unknown[]).every((s) => typeof s === 'string'))) {
          problems.push(`${at}.data.${key} must be an array of strings`);
        }
      }
      for (const key of ['sensitivity', 'accessibility']) {
        if (data[key] !== undefined && typeof data[key] !== 'string') problems.push(`${at}.data.${key} must be a string`);
      }
      if (data.reportOnly !== undefined && typeof data.reportOnly !== 'boolean') problems.push(`${at}.data.reportOnly must be a boolean`);
    }
  }

  if (problems.length === before) checkFixedFields(r, applicationId as string, at, problems);

  // Items whose data points are all alike would be one data point read over and over, each
  // item's subject and values mixed up in it: a route that cannot say which item is which.
  if (items && problems.length === before) {
    const template = dataPointId as string;
    const perItem = Object.keys(itemPlaceholders).length > 0 || (subjectId?.kind === 'item' && template.includes('{subjectId}'));
    if (!perItem) {
      problems.push(`${at}.items: every item would get the same data points; read subjectId from the item ({"item": "/id"}) with {subjectId} in dataPointId, or put {item/…} in dataPointId`);
    }
  }

  if (problems.length > before) return undefined;
  const all = [subjectId, applicationUser, ...attributes.map((a) => a.source)];
  return {
    index,
    spec: r as unknown as RouteSpec,
    methods,
    segments,
    rest,
    applicationId: applicationId as string,
    items,
    subjectId,
    applicationUser,
    attributes,
    dataPointId: dataPointId as string,
    itemPlaceholders,
    needsRequestBody: items?.body === 'request' || all.some((s) => s?.kind === 'request'),
    needsResponseBody: items?.body === 'response' || all.some((s) => s?.kind === 'response'),
  };
}

/**
 * What the route copies into every event as written (application, data store, location,
 * labels) is held to the ingest API's rules, which are the vault's: a control character or an
 * over-long name there would make every event of the route lost at run time.
 */
function checkFixedFields(r: Record<string, unknown>, applicationId: string, at: string, problems: string[]): void {
  const probe: Record<string, unknown> = { eventType: 'STORE', applicationId, subjectId: 'route-check', data: { ...(r.data as object | undefined), attribute: 'route-check' } };
  for (const key of ['dataStoreName', 'dataStoreServer', 'dataStoreEntityName', 'location'] as const) if (r[key] !== undefined) probe[key] = r[key];
  const verdict = validateEvent(probe);
  if (!verdict.ok) problems.push(`${at}.${verdict.field} ${verdict.problem}`);
}

function compileItems(value: unknown, at: string, problems: string[]): CompiledRoute['items'] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(`${at}.items must be an object with one of ${bodyKinds.join(', ')} (the body holding the list)`);
    return undefined;
  }
  const keys = Object.keys(value);
  if (keys.length !== 1 || !(bodyKinds as readonly string[]).includes(keys[0])) {
    problems.push(`${at}.items must have exactly one of ${bodyKinds.join(', ')} (the body holding the list)`);
    return undefined;
  }
  const body = keys[0] as (typeof bodyKinds)[number];
  const pointer = (value as Record<string, unknown>)[body];
  if (typeof pointer !== 'string' || !isJsonPointer(pointer)) {
    problems.push(`${at}.items.${body} must be a JSON pointer such as "/items" ("" for a top-level array)`);
    return undefined;
  }
  return { body, pointer, tokens: parsePointer(pointer) };
}
