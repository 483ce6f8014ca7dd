import { v7 as uuidv7 } from 'uuid';
import { eventTypes, type ExternalActivityEvent, type StampedEvent } from './event.js';

/**
 * Cheap structural validation: required fields and types only. Anything deeper (does the
 * application exist, is the attribute known) is the vault's call; an event the vault refuses
 * ends up in the dead-letter queue with the vault's reason instead.
 *
 * Unknown fields are refused here rather than passed on: the vault would refuse the whole bulk
 * for them, and the application learns about a typo now instead of from a dead letter.
 */
export type Validation = { ok: true; event: ExternalActivityEvent } | { ok: false; field: string; problem: string };

const topLevel = new Set([
  'eventType', 'dataPointId', 'subjectId', 'data', 'timestamp', 'applicationId', 'applicationUser',
  'dataStoreName', 'dataStoreServer', 'dataStoreEntityName', 'location', 'eventId',
]);
const dataFields = new Set([
  'attribute', 'value', 'dataPointId', 'regulations', 'tags', 'sensitivity', 'reportOnly', 'accessibility',
]);
const locationFields = new Set(['country', 'subdivision', 'city']);
const optionalStrings = [
  'applicationUser', 'dataStoreName', 'dataStoreServer', 'dataStoreEntityName',
] as const;

/** Ids end up in Redis keys (hashed) and in the vault's dedupe index; bound them. */
const maxIdLength = 512;

/**
 * Deepest nesting of `data.value`. The vault checks values against schemas of at most 32
 * levels (each may hold a list), so nothing deeper could ever be recorded; and far deeper
 * values would not even survive serialisation into Redis.
 */
export const maxValueDepth = 64;

export type StringDefect = 'nul' | 'surrogate';

/** With the `u` flag a surrogate pair is one code point, so only a lone half matches. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Text the vault refuses to store, since neither of its databases keeps it as sent: U+0000
 * (PostgreSQL text cannot hold it) and unpaired surrogates (UTF-8 cannot). Any key or string
 * in the value; iterative, since a body may be nested far deeper than the call stack allows.
 */
export function findStringDefect(root: unknown): StringDefect | undefined {
  const check = (s: string): StringDefect | undefined => (s.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(s) ? 'surrogate' : undefined);
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      const defect = check(value);
      if (defect) return defect;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const defect = check(key);
        if (defect) return defect;
        stack.push(item);
      }
    }
  }
  return undefined;
}

function fail(field: string, problem: string): Validation {
  return { ok: false, field, problem };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * C0 controls, DEL and the C1 controls, which the vault refuses in entity ids, tags, and the
 * ids and origin of an event (hasControlCharacter in core/src/util/characters.ts): shown in
 * its activity log, console and exports, they could forge or hide text. NUL is left to
 * `findStringDefect`, which names it.
 */
const CONTROL = /[\u0001-\u001f\u007f-\u009f]/;
const NO_CONTROL = 'must not contain control characters';

export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

function checkNoControl(value: unknown, field: string): Validation | undefined {
  return typeof value === 'string' && CONTROL.test(value) ? fail(field, NO_CONTROL) : undefined;
}

function characters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

function checkId(value: unknown, field: string, required: boolean): Validation | undefined {
  if (value === undefined) return required ? fail(field, 'is required') : undefined;
  if (typeof value !== 'string') return fail(field, 'must be a string');
  if (value.length === 0) return fail(field, 'must not be empty');
  // Characters, as the vault's schemas count them: an emoji is one, not its two UTF-16 halves.
  if (value.length > maxIdLength && characters(value) > maxIdLength) return fail(field, `must be at most ${maxIdLength} characters`);
  return undefined;
}

function checkOptionalString(value: unknown, field: string): Validation | undefined {
  if (value !== undefined && typeof value !== 'string') return fail(field, 'must be a string');
  return undefined;
}

/**
 * The vault's bound on who did it and where: an application user is often a client's own
 * header in proxy mode, and one over it could only become a dead letter no replay mends.
 */
const maxOriginLength = 1024;

function checkOriginString(value: unknown, field: string, max = maxOriginLength): Validation | undefined {
  const problem = checkOptionalString(value, field);
  if (problem || typeof value !== 'string') return problem;
  if (CONTROL.test(value)) return fail(field, NO_CONTROL);
  if (value.length > max && characters(value) > max) return fail(field, `must be at most ${max} characters`);
  return undefined;
}

/** The vault's bounds on where it happened (its request schema). */
const maxLocationLength: Record<string, number> = { country: 64, subdivision: 64, city: 256 };

/**
 * The vault refuses a point id with a control character where the id would be new: a STORE of
 * a point it does not hold, or a READ, UPDATE or DELETE that registers the point it names
 * (one with subjectId and data.attribute, about a point it has not seen). Which points it
 * holds is its call, so the sidecar refuses wherever the id may be new, and lets an event that
 * can only name a point held already (one stored under such an id before they were refused)
 * through for the vault to record.
 */
const NEW_POINT_ID = `${NO_CONTROL} in an event that may register its point (a STORE, or one with subjectId and data.attribute)`;

function mayRegister(raw: Record<string, unknown>, isStore: boolean): boolean {
  if (isStore) return true;
  const data = raw.data;
  return typeof raw.subjectId === 'string' && isPlainObject(data) && typeof data.attribute === 'string' && data.attribute !== '';
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * An ISO 8601 date or date-time as the vault reads one (parseIsoDate in core/src/util/time.ts):
 * whatever Date.parse takes, up to 64 characters, starting with a day the calendar has, since
 * Date.parse rolls 02-30 over into March. So a date alone and a time without an offset
 * (Python's isoformat(), Java's LocalDateTime) pass, as they do at the vault, which reads the
 * latter as UTC (isoMs); the string is queued as sent, for the vault to read it as it would have.
 */
export function isIsoDateTime(value: string): boolean {
  if (value.length > 64) return false;
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)) return false;
  return !Number.isNaN(isoMs(value));
}

const ZONELESS_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/i;

/** The instant the vault reads (parseIsoMs in core/src/util/time.ts): a time without an offset is UTC. */
function isoMs(value: string): number {
  return Date.parse(ZONELESS_DATE_TIME.test(value) ? `${value}Z` : value);
}

/** Epoch milliseconds as the vault takes them: a whole number a Date can hold. */
function isEpochMillis(value: number): boolean {
  return Number.isSafeInteger(value) && Math.abs(value) <= 8.64e15;
}

/** Whether `value` nests more than `limit` arrays and objects; iterative, whatever the depth. */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

function checkStringArray(value: unknown, field: string): Validation | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return fail(field, 'must be an array of strings');
  for (let i = 0; i < value.length; i++) {
    if (typeof value[i] !== 'string') return fail(`${field}[${i}]`, 'must be a string');
  }
  return undefined;
}

/**
 * The vault's rule for a new tag name (checkTagNameShapes in core/src/tags/service.ts), as an event's
 * tags are created with its point there: one it refuses could only become a dead letter.
 * Empty names are dropped by the vault, and NUL is left to `findStringDefect`, which names it.
 */
const maxTagLength = 256;

function checkTagNames(value: unknown, field: string): Validation | undefined {
  const problem = checkStringArray(value, field);
  if (problem || !Array.isArray(value)) return problem;
  for (let i = 0; i < value.length; i++) {
    const tag = value[i] as string;
    if (CONTROL.test(tag)) return fail(`${field}[${i}]`, 'must not contain control characters');
    if (tag.length > maxTagLength && characters(tag) > maxTagLength) return fail(`${field}[${i}]`, `must be at most ${maxTagLength} characters`);
  }
  return undefined;
}

/**
 * The vault's bounds on an event's time (parseTimestamp in core/src/audit/events.ts): it keeps
 * the UTC form, which must have a four-digit year, and refuses more than a day ahead of its
 * clock. Time only moves on while an event waits in the queue, so what passes here at
 * acceptance still passes when delivered.
 */
const FIRST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const PAST_LAST_MS = Date.parse('9999-12-31T23:59:59.999Z') + 1;
const FUTURE_TOLERANCE_MS = 24 * 60 * 60 * 1000;

function checkTimestamp(timestamp: unknown, now: number): Validation | undefined {
  const valid = typeof timestamp === 'number' ? isEpochMillis(timestamp) : typeof timestamp === 'string' && isIsoDateTime(timestamp);
  if (!valid) return fail('timestamp', 'must be an ISO 8601 date-time such as 2024-05-01T12:00:00Z, or epoch milliseconds');
  const ms = typeof timestamp === 'number' ? timestamp : isoMs(timestamp as string);
  if (ms < FIRST_MS || ms >= PAST_LAST_MS) return fail('timestamp', 'must fall in the years 0000 to 9999 (UTC), as the vault takes it');
  if (ms > now + FUTURE_TOLERANCE_MS) return fail('timestamp', 'is more than a day in the future, which the vault refuses');
  return undefined;
}

/**
 * The vault takes null for any member as its absence (serialisers of client objects, Jackson's
 * and Json.NET's by default, write every unset member as null), and an empty timestamp as none:
 * so does the sidecar, and queues the event without them. `data.value` null is a value, kept.
 * Copies only an event that has such a member.
 */
function withoutUnset(event: Record<string, unknown>): Record<string, unknown> {
  // Loops rather than Object.entries: this runs once per ingested event, and most have none.
  let found = false;
  for (const key in event) {
    if (isUnset(key, event[key]) || holdsNull(event[key])) {
      found = true;
      break;
    }
  }
  if (!found) return event;
  const copy: Record<string, unknown> = {};
  for (const key in event) {
    const value = event[key];
    if (isUnset(key, value)) continue;
    copy[key] = (key === 'data' || key === 'location') && holdsNull(value) ? withoutNulls(value as Record<string, unknown>) : value;
  }
  return copy;
}

function isUnset(key: string, value: unknown): boolean {
  return value === null || (key === 'timestamp' && value === '');
}

/** Whether an object has a member that is null, `value` (a value of null) aside. */
function holdsNull(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  for (const key in value) if (value[key] === null && key !== 'value') return true;
  return false;
}

function withoutNulls(object: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key in object) if (object[key] !== null || key === 'value') copy[key] = object[key];
  return copy;
}

/** `now` (epoch ms) is the acceptance time a timestamp may be at most a day ahead of. */
export function validateEvent(given: unknown, now: number = Date.now()): Validation {
  if (!isPlainObject(given)) return fail('(event)', 'must be a JSON object');
  const raw = withoutUnset(given);
  for (const key of Object.keys(raw)) {
    if (!topLevel.has(key)) return fail(key, 'is not a known field');
  }

  const { eventType } = raw;
  if (eventType === undefined) return fail('eventType', 'is required');
  if (typeof eventType !== 'string' || !(eventTypes as readonly string[]).includes(eventType)) {
    return fail('eventType', `must be one of ${eventTypes.join(', ')}`);
  }
  const isStore = eventType === 'STORE';

  const problem =
    checkId(raw.applicationId, 'applicationId', true) ??
    checkNoControl(raw.applicationId, 'applicationId') ??
    checkId(raw.eventId, 'eventId', false) ??
    // The vault takes one only for an event id it recorded earlier; a retry keeps its id.
    checkNoControl(raw.eventId, 'eventId') ??
    (raw.dataPointId === undefined && !isStore
      ? fail('dataPointId', `is required for ${eventType} events`)
      : checkId(raw.dataPointId, 'dataPointId', false)) ??
    (raw.subjectId === undefined && isStore
      ? fail('subjectId', 'is required for STORE events')
      : checkId(raw.subjectId, 'subjectId', false)) ??
    // The vault's rule for entity ids, which a subject named here may become there.
    checkNoControl(raw.subjectId, 'subjectId');
  if (problem) return problem;

  for (const field of optionalStrings) {
    const p = checkOriginString(raw[field], field);
    if (p) return p;
  }

  if (raw.timestamp !== undefined) {
    const p = checkTimestamp(raw.timestamp, now);
    if (p) return p;
  }

  if (raw.location !== undefined) {
    if (!isPlainObject(raw.location)) return fail('location', 'must be an object');
    for (const key of Object.keys(raw.location)) {
      if (!locationFields.has(key)) return fail(`location.${key}`, 'is not a known field');
      const p = checkOriginString(raw.location[key], `location.${key}`, maxLocationLength[key]);
      if (p) return p;
    }
  }

  const { data } = raw;
  if (data === undefined) {
    if (isStore) return fail('data.attribute', 'is required for STORE events');
  } else {
    if (!isPlainObject(data)) return fail('data', 'must be an object');
    for (const key of Object.keys(data)) {
      if (!dataFields.has(key)) return fail(`data.${key}`, 'is not a known field');
    }
    if (data.attribute === undefined) {
      if (isStore) return fail('data.attribute', 'is required for STORE events');
    } else if (typeof data.attribute !== 'string' || data.attribute.length === 0) {
      return fail('data.attribute', 'must be a non-empty string');
    }
    const p =
      checkId(data.dataPointId, 'data.dataPointId', false) ??
      checkStringArray(data.regulations, 'data.regulations') ??
      checkTagNames(data.tags, 'data.tags') ??
      checkOptionalString(data.sensitivity, 'data.sensitivity') ??
      checkOptionalString(data.accessibility, 'data.accessibility');
    if (p) return p;
    // The vault refuses a STORE naming two different points; here it would become a dead letter.
    if (isStore && raw.dataPointId !== undefined && data.dataPointId !== undefined && raw.dataPointId !== data.dataPointId) {
      return fail('data.dataPointId', 'names a different point than dataPointId');
    }
    if (isStore && typeof data.dataPointId === 'string' && CONTROL.test(data.dataPointId)) return fail('data.dataPointId', NEW_POINT_ID);
    if (nestedDeeperThan(data.value, maxValueDepth)) {
      return fail('data.value', `is nested too deeply (more than ${maxValueDepth} levels)`);
    }
    if (data.reportOnly !== undefined && typeof data.reportOnly !== 'boolean') {
      return fail('data.reportOnly', 'must be a boolean');
    }
  }

  if (typeof raw.dataPointId === 'string' && CONTROL.test(raw.dataPointId) && mayRegister(raw, isStore)) return fail('dataPointId', NEW_POINT_ID);

  return { ok: true, event: raw as unknown as ExternalActivityEvent };
}

export function describeProblem(index: number, v: Extract<Validation, { ok: false }>): string {
  return `event ${index}: field "${v.field}" ${v.problem}`;
}

/**
 * Gives the event its identity. The eventId is what makes redelivery safe (the vault records
 * an eventId once), so a caller that may retry a POST should send its own. The timestamp is
 * stamped at acceptance because the vault may receive the event much later (vault down).
 *
 * Ids made here are UUIDv7: they follow each other in time, so the vault's event-id and
 * point-id keys grow at their end instead of writing a random page for every event.
 */
export function stampEvent(event: ExternalActivityEvent, now: Date | string = new Date()): StampedEvent {
  // Object.assign rather than a spread with extra fields: V8 takes a slow path for the latter,
  // and this runs once per ingested event.
  const stamped: StampedEvent = Object.assign({}, event, {
    eventId: event.eventId ?? uuidv7(),
    timestamp:
      typeof event.timestamp === 'number'
        ? new Date(event.timestamp).toISOString()
        : (event.timestamp ?? (typeof now === 'string' ? now : now.toISOString())),
  });
  if (stamped.eventType === 'STORE' && stamped.dataPointId === undefined) {
    stamped.dataPointId = event.data?.dataPointId ?? uuidv7();
  }
  return stamped;
}

export interface IngestOutcome {
  events: StampedEvent[];
  accepted: { index: number; eventId: string; dataPointId?: string }[];
  rejected: { index: number; message: string }[];
}

/**
 * Validates and stamps a request body (one event or an array); invalid ones don't stop the rest.
 * No body at all holds no events, as an empty array, rather than one bad "event 0".
 */
export function prepareBatch(body: unknown, now: Date = new Date()): IngestOutcome {
  const items = body === undefined ? [] : Array.isArray(body) ? body : [body];
  const outcome: IngestOutcome = { events: [], accepted: [], rejected: [] };
  const stampedAt = now.toISOString();
  items.forEach((item, index) => {
    const v = validateEvent(item, now.getTime());
    if (!v.ok) {
      outcome.rejected.push({ index, message: describeProblem(index, v) });
      return;
    }
    const event = stampEvent(v.event, stampedAt);
    outcome.events.push(event);
    outcome.accepted.push(
      event.eventType === 'STORE'
        ? { index, eventId: event.eventId, dataPointId: event.dataPointId }
        : { index, eventId: event.eventId },
    );
  });
  return outcome;
}
