/**
 * Audit events as sent and as the batch reads them: the field checks that need no database,
 * in the order the interface's messages suggest.
 */
import { isSensitivity, SENSITIVITY_MESSAGE } from '../datapoints/model.js';
import type { ValueErrorStatuses } from '../definitions/schema.js';
import { badRequest } from '../errors.js';
import { checkReferencedEntityId } from '../entities/service.js';
import { checkTagNameShapes } from '../tags/service.js';
import type { EventOrigin } from '../activity/log.js';
import type { EventType, Location } from '../rules/engine.js';
import { hasControlCharacter } from '../util/characters.js';
import { parseIsoDate } from '../util/time.js';

export const EVENT_TYPES: readonly EventType[] = ['READ', 'STORE', 'UPDATE', 'DELETE'];
export const MAX_BULK_EVENTS = 50_000;
const FUTURE_TOLERANCE_MS = 24 * 60 * 60 * 1000;

export const BLOCKED = 'The provided data could not be stored, as a rule disallows it';

export type AuditMode = 'single' | 'bulk';

/** The interface's statuses for value errors differ between the two endpoints. */
export const VALUE_STATUSES: Record<AuditMode, ValueErrorStatuses> = {
  single: { mismatch: 422, unknownSubAttribute: 422 },
  bulk: { mismatch: 400, unknownSubAttribute: 400 },
};

export interface AuditEventInput {
  eventType?: unknown;
  eventId?: string | null;
  dataPointId?: string | null;
  subjectId?: string | null;
  data?: {
    attribute?: string | null;
    value?: unknown;
    dataPointId?: string | null;
    regulations?: string[] | null;
    tags?: string[] | null;
    sensitivity?: string | null;
    reportOnly?: boolean | null;
    accessibility?: string | null;
  } | null;
  timestamp?: string | number | null;
  applicationId?: string | null;
  applicationUser?: string | null;
  dataStoreName?: string | null;
  dataStoreServer?: string | null;
  dataStoreEntityName?: string | null;
  location?: { country?: string | null; subdivision?: string | null; city?: string | null } | null;
}

export interface SubPointSummary {
  attribute: string;
  dataPointId: string;
}

/** The answer per event, returned without the `data` wrapper. */
export interface ActivitySummary {
  eventType: EventType;
  dataPointId: string;
  subjectId: string;
  attribute: string;
  subPoints?: SubPointSummary[];
}

export interface ParsedEvent extends EventOrigin {
  eventType: EventType;
  eventId?: string;
  dataPointId?: string;
  subjectId?: string;
  attribute?: string;
  /** Undefined when the event carries none. */
  value?: unknown;
  tags: readonly string[];
  /** Those of `tags` with a control character: taken only if stored by an earlier release. */
  legacyTags: readonly string[];
  regulations: readonly string[];
  /**
   * As sent; checked only when the event registers a point (a STORE, or the first event
   * about a point the vault has not seen), since nothing else uses it.
   */
  sensitivity?: string;
  timestamp: string;
}

export function optionalText(value: string | null | undefined): string | undefined {
  return value === null || value === undefined || value === '' ? undefined : value;
}

/** When the batch began: the time of an event that names none, and the bound on those that do. */
export interface BatchClock {
  now: number;
  /** `now` as ISO 8601, made once per batch rather than once per event. */
  nowIso: string;
}

export function batchClock(now = Date.now()): BatchClock {
  return { now, nowIso: new Date(now).toISOString() };
}

function parseTimestamp(input: string | number | null | undefined, { now, nowIso }: BatchClock): string {
  if (input === null || input === undefined || input === '') return nowIso;
  let iso: string | undefined;
  if (typeof input === 'number') {
    // Epoch milliseconds, as JSON serialisers of date objects often send them.
    const date = Number.isSafeInteger(input) ? new Date(input) : undefined;
    iso = date && !Number.isNaN(date.getTime()) ? date.toISOString() : undefined;
  } else {
    iso = parseIsoDate(input);
  }
  if (iso === undefined || !/^\d{4}-/.test(iso)) throw badRequest('Timestamp must be an ISO 8601 date-time');
  if (Date.parse(iso) > now + FUTURE_TOLERANCE_MS) throw badRequest('Timestamp out of range');
  return iso;
}

/** The sensitivity a registered point gets: the event's (case-insensitive), else NORMAL. */
export function checkSensitivity(given: string | undefined): string {
  if (given === undefined) return 'NORMAL';
  const sensitivity = given.toUpperCase();
  if (!isSensitivity(sensitivity)) throw badRequest(SENSITIVITY_MESSAGE);
  return sensitivity;
}

const NO_NAMES: readonly string[] = Object.freeze([]);

/** Distinct, non-empty names; most events carry none, and then nothing is allocated. */
function names(given: string[] | null | undefined): readonly string[] {
  if (!given || given.length === 0) return NO_NAMES;
  return [...new Set(given)].filter((n) => n !== '');
}

/**
 * The longest text each field takes (the request schema's `maxLength`), and how its messages
 * name it. Ids are bounded as entity ids are; who did it and where, more loosely.
 */
export const TEXT_FIELDS = {
  eventId: { label: 'Event ID', max: 512 },
  dataPointId: { label: 'Data point ID', max: 512 },
  applicationId: { label: 'Application ID', max: 512 },
  applicationUser: { label: 'Application user', max: 1024 },
  dataStoreName: { label: 'Data store name', max: 1024 },
  dataStoreServer: { label: 'Data store server', max: 1024 },
  dataStoreEntityName: { label: 'Data store entity name', max: 1024 },
  country: { label: 'Location country', max: 64 },
  subdivision: { label: 'Location subdivision', max: 64 },
  city: { label: 'Location city', max: 256 },
} as const;
type TextField = keyof typeof TEXT_FIELDS;

/**
 * Refuses control characters in text that names an event's ids and origin: it is shown in the
 * activity log, the console, the logs and exports, where an escape sequence or a line break
 * could forge or hide what a reader sees. Values are not names and may hold them.
 */
export function checkPlainText<T extends string | undefined>(field: TextField, text: T): T {
  if (text !== undefined && hasControlCharacter(text)) {
    const { label, max } = TEXT_FIELDS[field];
    throw badRequest(`${label} must be at most ${max} characters, without control characters`);
  }
  return text;
}

export const TWO_POINT_IDS = 'dataPointId and data.dataPointId name different points';

export function parseEvent(input: AuditEventInput, clock: BatchClock): ParsedEvent {
  const rawType = input.eventType;
  if (rawType === undefined || rawType === null || rawType === '') throw badRequest('Event type is required');
  if (typeof rawType !== 'string' || !(EVENT_TYPES as readonly string[]).includes(rawType)) throw badRequest('Unrecognized event type');
  const eventType = rawType as EventType;
  const data = input.data ?? undefined;
  const topLevelId = optionalText(input.dataPointId);
  const dataId = eventType === 'STORE' ? optionalText(data?.dataPointId) : undefined;
  // Two different ids for one new point: taking either would leave the sender's other one unknown here.
  if (topLevelId !== undefined && dataId !== undefined && topLevelId !== dataId) throw badRequest(TWO_POINT_IDS);
  const dataPointId = topLevelId ?? dataId;
  if (eventType !== 'STORE' && dataPointId === undefined) throw badRequest('Data point ID is required for events other than creation');
  const timestamp = parseTimestamp(input.timestamp, clock);
  const applicationId = optionalText(input.applicationId);
  if (applicationId === undefined) throw badRequest('Application ID is required');
  checkPlainText('applicationId', applicationId);
  const applicationUser = checkPlainText('applicationUser', optionalText(input.applicationUser));
  const dataStoreName = checkPlainText('dataStoreName', optionalText(input.dataStoreName));
  const dataStoreServer = checkPlainText('dataStoreServer', optionalText(input.dataStoreServer));
  const dataStoreEntityName = checkPlainText('dataStoreEntityName', optionalText(input.dataStoreEntityName));
  const subjectId = optionalText(input.subjectId);
  // A subject an event names may be registered by it: the rule every other path applies to
  // entity ids, so that what is registered here can be read, listed and purged there. A
  // control character is judged once the batch knows whether the subject exists (`AuditBatch`).
  if (subjectId !== undefined) checkReferencedEntityId(subjectId);
  const attribute = optionalText(data?.attribute);
  const sensitivity = optionalText(data?.sensitivity);
  if (eventType === 'STORE') {
    if (subjectId === undefined) throw badRequest('Data subject ID is required for creation');
    if (attribute === undefined) throw badRequest('Attribute is required for creation');
    checkSensitivity(sensitivity);
  }
  const tags = names(data?.tags);
  // The tags an event names are created with its point: the rule of every path that creates
  // tags, but for tags stored earlier (`AuditBatch`).
  const legacyTags = tags.length > 0 ? checkTagNameShapes(tags) : NO_NAMES;
  let location: Location | undefined;
  if (input.location) {
    const country = checkPlainText('country', optionalText(input.location.country));
    const subdivision = checkPlainText('subdivision', optionalText(input.location.subdivision));
    const city = checkPlainText('city', optionalText(input.location.city));
    if (country !== undefined) (location ??= {}).country = country.toUpperCase();
    // Rules and search know subdivisions by their ISO 3166-2 code (`US-CA`), as the vault's own
    // geolocation gives them; a sender's bare `CA` beside its country means the same.
    if (subdivision !== undefined) {
      const code = subdivision.toUpperCase();
      (location ??= {}).subdivision = country !== undefined && !code.includes('-') ? `${country.toUpperCase()}-${code}` : code;
    }
    if (city !== undefined) (location ??= {}).city = city;
  }
  return {
    eventType,
    eventId: optionalText(input.eventId),
    dataPointId,
    subjectId,
    attribute,
    value: data?.value === null ? undefined : data?.value,
    tags,
    legacyTags,
    regulations: names(data?.regulations),
    sensitivity,
    timestamp,
    applicationId,
    applicationUser,
    dataStoreName,
    dataStoreServer,
    dataStoreEntityName,
    location,
  };
}

/** Whether a READ, UPDATE or DELETE names enough to register a point the vault has not seen. */
export function canRegister(e: ParsedEvent): boolean {
  return e.eventType !== 'STORE' && e.subjectId !== undefined && e.attribute !== undefined;
}
