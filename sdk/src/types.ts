/**
 * The vault's resources as they travel over the wire: the interface document's fields,
 * completed by decisions.md where the interface says "not shown".
 */

/** ISO 8601 timestamp. Inputs accept any ISO 8601 form (or a Date, serialised as ISO). */
export type Timestamp = string;

export type Sensitivity = 'NORMAL' | 'PERSONAL' | 'SENSITIVE' | 'CONFIDENTIAL';

export type EventType = 'READ' | 'STORE' | 'UPDATE' | 'DELETE';

/** What the activity log holds: the data events, and `CHANGE`, an administrative change (see {@link AdministrativeChange}). */
export type RecordType = EventType | 'CHANGE';

/**
 * A `CHANGE` record's change: an application created, changed, re-keyed or deleted, a legal
 * hold put on or lifted (by an admin, or by the rule named in `rule`), a subject purged, a rule
 * saved or deleted, an attribute definition, entity type, tag or regulation created, changed
 * or deleted. Never a key.
 */
export interface AdministrativeChange {
  target: 'application' | 'entity' | 'rule' | 'attribute' | 'entityType' | 'tag' | 'regulation' | 'encryptionKey';
  /**
   * The application's or entity's id; the rule's, attribute's, entity type's or regulation's
   * key; the tag's name; the encryption key's id.
   */
  id: string;
  action: 'create' | 'update' | 'delete' | 'rollKey' | 'rewrap';
  /** The values the change set. */
  fields?: Record<string, unknown>;
  /** The rule whose action made the change, when a rule did. */
  rule?: string;
}

// ---------------------------------------------------------------------------------------
// Entities

export interface Entity {
  id: string;
  /** Entity type key; `datasubject` by default. */
  type: string;
  tags: string[];
  /** While true, nonrepeatable values cannot be overwritten and the subject's data cannot be purged. */
  legalHold: boolean;
  created: Timestamp;
  updated: Timestamp;
}

export interface EntityInput {
  id: string;
  /** Defaults to `datasubject`; taken as `datasubject` on the `/datasubjects` form. */
  type?: string;
  tags?: string[];
  /** Admin applications only. */
  legalHold?: boolean;
}

// ---------------------------------------------------------------------------------------
// Attribute values and data points

export type AttributeValue = string | number | boolean | StructuredValue | AttributeValue[];
export interface StructuredValue {
  [subAttribute: string]: AttributeValue | null | undefined;
}

/** One attribute value in a storage request (or the `data` of an audit event). */
export interface AttributeInput<V = AttributeValue> {
  /** Attribute key (a definition's key). */
  attribute: string;
  /** A string, or an object for a structured attribute; must match the definition's schema. */
  value?: V;
  dataPointId?: string;
  regulations?: string[];
  tags?: string[];
  sensitivity?: Sensitivity;
  reportOnly?: boolean;
  accessibility?: string;
}

export interface StorageRequest {
  data: AttributeInput[];
  /** Type of the entity to create when it does not exist; default `datasubject`. */
  entityType?: string;
  namespace?: string;
  /** Where the data comes from (an address or a country code), used by geolocation rules. */
  origin?: string;
}

export interface DataPoint<V = AttributeValue> {
  /** Attribute key; `<ATTRIBUTE>.<sub_attribute>` for a sub-point of a structured value. */
  attribute: string;
  dataPointId: string;
  entityId: string;
  /** Same as `entityId` (ViziVault clients read this one). */
  subjectId: string;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
  regulations: string[];
  tags: string[];
  sensitivity: Sensitivity;
  reportOnly: boolean;
  /** Root point of the structure this sub-point belongs to; null otherwise. */
  structureRootId: string | null;
  /** Present in store and read answers; absent from search results. */
  value?: V;
}

/** A search result: a data point without its value. */
export type SearchResult = Omit<DataPoint, 'value'>;

// ---------------------------------------------------------------------------------------
// Search

export interface SearchValue {
  attribute: string;
  value: string | number | boolean;
}

export interface SearchQuery {
  /** Blind-indexed value matches (indexed attributes only). */
  values?: SearchValue[];
  attributes?: string[];
  /** Points with any of these regulations; `""` matches points with none. */
  regulations?: string[];
  sensitivity?: Sensitivity;
  entityId?: string[];
  /** Alias of `entityId`. */
  subjectId?: string[];
  country?: string;
  subdivision?: string;
  city?: string;
  minCreatedDate?: Timestamp | Date;
  maxCreatedDate?: Timestamp | Date;
  minModifiedDate?: Timestamp | Date;
  maxModifiedDate?: Timestamp | Date;
}

export interface SearchRequest {
  query: SearchQuery;
  /** 0-based page number; default 0. */
  page?: number;
  /** Results per page, 1 to 1000; default 100. */
  count?: number;
}

// ---------------------------------------------------------------------------------------
// Attribute definitions

export type PrimitiveSchema = 'string' | 'int' | 'integer' | 'float' | 'boolean' | 'date' | 'file';
/** A primitive, or an object from sub-attribute key to schema; a key written `[name]` holds a list. */
export type AttributeSchema = PrimitiveSchema | { [subAttribute: string]: AttributeSchema };

export interface AttributeDefinitionInput {
  /** Letters, digits and underscores. When only `name` is given, the key is the name. */
  key?: string;
  name?: string;
  hint?: string;
  /** Default `string`. */
  schema?: AttributeSchema;
  repeatable?: boolean;
  /** Whether values are blind-indexed for search. */
  indexed?: boolean;
  tags?: string[];
  regulations?: string[];
  /** Entity types the attribute applies to; empty means `datasubject`. */
  entityTypes?: string[];
  immutable?: boolean;
}

export interface AttributeDefinition {
  key: string;
  name: string | null;
  hint: string | null;
  schema: AttributeSchema;
  repeatable: boolean;
  indexed: boolean;
  immutable: boolean;
  tags: string[];
  regulations: string[];
  entityTypes: string[];
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

// ---------------------------------------------------------------------------------------
// Regulations, tags, entity types

export interface RegulationInput {
  key: string;
  /** `null` clears it; left out, it is kept. */
  name?: string | null;
  /** `null` clears it; left out, it is kept. */
  url?: string | null;
}

export interface Regulation {
  key: string;
  name: string | null;
  url: string | null;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

export interface Tag {
  name: string;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

export interface EntityTypeInput {
  key: string;
  /** `null` clears it; left out, it is kept. */
  name?: string | null;
  /** `null` clears it; left out, it is kept. */
  description?: string | null;
}

export interface EntityType {
  key: string;
  name: string | null;
  description: string | null;
  createdDate?: Timestamp;
  modifiedDate?: Timestamp;
}

// ---------------------------------------------------------------------------------------
// Rules: constraints

export type ListOperator = 'any' | 'none';
export type SetOperator = 'any' | 'none' | 'all';

export interface AttributeConstraint {
  type: 'attribute';
  operator: ListOperator;
  /** Attribute keys; each must exist. */
  attributes: string[];
}

export interface TagConstraint {
  type: 'tag';
  operator: SetOperator;
  tags: string[];
}

export interface RegulationConstraint {
  type: 'regulation';
  operator: SetOperator;
  /** Regulation keys; each must exist. */
  regulations: string[];
}

export interface GeolocationConstraint {
  type: 'geolocation' | 'geo';
  operator: ListOperator;
  /** ISO 3166-1 two-letter codes, case-insensitive. At least one of the two lists. */
  countries?: string[];
  /** ISO 3166-2 hyphenated codes such as `US-CA`. */
  subdivisions?: string[];
}

/** The entity is of one of these types. */
export interface EntityTypeConstraint {
  type: 'entityType';
  entityTypes: string[];
}

export type NumericPredicate = 'eq' | 'neq' | 'lt' | 'gt' | 'leq' | 'geq';
export type TimePredicate = 'before' | 'after';
export type ListPredicate = 'in' | 'nin';
export type Predicate = NumericPredicate | TimePredicate | ListPredicate | 'regex';

/** Entity value: compares a stored attribute of the entity with `value`. */
export interface EntityValueConstraint {
  type: 'user' | 'value';
  attribute: string;
  /** Numbers for the numeric predicates, times for `before`/`after`, a comma-separated list for `in`/`nin`. */
  value: string | number | boolean;
  /** Default `eq`. */
  predicate?: Predicate;
}

/** Text values scored (offline) at or below `threshold`, from -1 (negative) to 1 (positive). */
export interface SentimentConstraint {
  type: 'sentiment';
  threshold: number;
}

export interface ApplicationConstraint {
  type: 'application';
  operator: ListOperator;
  /** Application ids. */
  applications: string[];
}

export interface EventTypeConstraint {
  type: 'eventType';
  eventTypes: EventType[];
}

export interface AllConstraint<C> {
  type: 'all';
  constraints: Array<C | AllConstraint<C> | AnyConstraint<C>>;
}

export interface AnyConstraint<C> {
  type: 'any';
  constraints: Array<C | AllConstraint<C> | AnyConstraint<C>>;
}

/** Constraints of rules of type `data` (evaluated on stores). */
export type DataLeafConstraint =
  | AttributeConstraint
  | TagConstraint
  | RegulationConstraint
  | GeolocationConstraint
  | EntityTypeConstraint
  | EntityValueConstraint
  | SentimentConstraint;
export type DataConstraint = DataLeafConstraint | AllConstraint<DataLeafConstraint> | AnyConstraint<DataLeafConstraint>;

/** Constraints of rules of type `activity` (evaluated on audit events). */
export type ActivityLeafConstraint = AttributeConstraint | GeolocationConstraint | ApplicationConstraint | EventTypeConstraint;
export type ActivityConstraint =
  | ActivityLeafConstraint
  | AllConstraint<ActivityLeafConstraint>
  | AnyConstraint<ActivityLeafConstraint>;

export type Constraint = DataConstraint | ActivityConstraint;

// ---------------------------------------------------------------------------------------
// Rules: actions

export type AlertLevel = 'NORMAL' | 'INFO' | 'WARNING' | 'DANGER' | 'SUCCESS' | 'NEUTRAL';

export interface AlertAction {
  type: 'alert';
  /** Default `NORMAL`. */
  alertLevel?: AlertLevel;
  message?: string;
}

/** Tags the stored point (data rules) or the event's point (activity rules). */
export interface TagAction {
  type: 'tag';
  tag: string;
  /** `false` removes the tag instead; default true. */
  status?: boolean;
}

export interface RegulationAction {
  type: 'regulation';
  regulation: string;
}

export interface EntityTagAction {
  type: 'entityTag';
  tag: string;
  /** `false` removes the tag instead; default true. */
  status?: boolean;
}

export interface BlockAction {
  type: 'block';
  /** The 403 message; default `The provided data could not be stored, as a rule disallows it`. */
  message?: string;
}

/** Refuses these operations on the entity from then on (`status: false` lifts them). */
export interface ProhibitionAction {
  type: 'prohibition';
  status?: boolean;
  prohibitions: EventType[];
}

/** Puts the entity under legal hold (`status: false` releases it). */
export interface LegalHoldAction {
  type: 'legalHold';
  status?: boolean;
}

/** Expiry of the stored point; with `autoDelete`, expired points are removed. At least one of the three. */
export interface RetentionAction {
  type: 'retention';
  expirationDate?: Timestamp;
  daysSinceStore?: number;
  daysSinceRead?: number;
  autoDelete?: boolean;
}

export type RuleAction =
  | AlertAction
  | TagAction
  | RegulationAction
  | EntityTagAction
  | BlockAction
  | ProhibitionAction
  | LegalHoldAction
  | RetentionAction;

// ---------------------------------------------------------------------------------------
// Rules

interface RuleCommon {
  /** Required unique identifier. */
  key: string;
  name?: string;
  action: RuleAction;
  /** Default: one more than the highest. */
  executionOrder?: number;
}

export interface DataRuleInput extends RuleCommon {
  /** Default `data`. */
  type?: 'data';
  constraint: DataConstraint;
}

export interface ActivityRuleInput extends RuleCommon {
  type: 'activity';
  constraint: ActivityConstraint;
}

export type RuleInput = DataRuleInput | ActivityRuleInput;

interface RuleStored {
  executionOrder: number;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

/** A rule as stored: exactly as sent, plus its order and dates. */
export type Rule = (DataRuleInput & RuleStored) | (ActivityRuleInput & RuleStored);

// ---------------------------------------------------------------------------------------
// Report-only audit logs

export interface Geolocation {
  country?: string;
  subdivision?: string;
  city?: string;
}

interface ActivityEventCommon {
  /** Caller-chosen unique id: the vault records an event id once, so resending is harmless. */
  eventId?: string;
  /** ISO 8601, a Date, or epoch milliseconds; default now. At most one day ahead. */
  timestamp?: Timestamp | Date | number;
  /** Required. */
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: Geolocation;
}

export interface StoreActivityEvent extends ActivityEventCommon {
  eventType: 'STORE';
  /** Generated by the vault when absent. */
  dataPointId?: string;
  subjectId: string;
  /** `data.attribute` is required; a value is used by the rules engine and never stored. */
  data: AttributeInput;
}

export interface UpdateActivityEvent extends ActivityEventCommon {
  eventType: 'UPDATE';
  dataPointId: string;
  subjectId?: string;
  /** Only `value` is used (by the rules engine; it is not stored). */
  data?: Partial<AttributeInput>;
}

export interface ReadActivityEvent extends ActivityEventCommon {
  eventType: 'READ';
  dataPointId: string;
  subjectId?: string;
  data?: Partial<AttributeInput>;
}

export interface DeleteActivityEvent extends ActivityEventCommon {
  eventType: 'DELETE';
  dataPointId: string;
  subjectId?: string;
  data?: Partial<AttributeInput>;
}

export type ExternalActivityEvent = StoreActivityEvent | UpdateActivityEvent | ReadActivityEvent | DeleteActivityEvent;

export interface SubPoint {
  /** `<ATTRIBUTE>.<sub_attribute>` */
  attribute: string;
  dataPointId: string;
}

/** The vault's answer to one audit event. */
export interface ActivitySummary {
  eventType: EventType;
  dataPointId: string;
  subjectId: string;
  attribute: string;
  /** For newly stored structured attributes: one per sub-attribute. */
  subPoints?: SubPoint[];
}

// ---------------------------------------------------------------------------------------
// Activity log and alerts

export interface ActivityFilter {
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  eventType?: RecordType;
  applicationId?: string;
  applicationUser?: string;
  from?: Timestamp | Date;
  to?: Timestamp | Date;
  /** Sealed records from this position of the chain on (unsealed records have none). */
  fromSequence?: number;
  /** Sealed records up to this position of the chain. */
  toSequence?: number;
  /** `oldest` (default) or `newest`: the same records in exactly the reverse order. */
  order?: 'oldest' | 'newest';
  /** 0-based. */
  page?: number;
  /** 1 to 1000; default 100. */
  count?: number;
}

/**
 * One entry of the append-only activity log (never a value). A read that answered several
 * points is one record of the log, listed as one entry per point: those entries share
 * `sequence` and `hash`, and `part` numbers them.
 */
export interface ActivityRecord {
  /** Position of the record in the hash chain; absent until it is sealed (within about a second). */
  sequence?: number;
  /** The record's id; for an entry of a record naming several points, `<record id>.<part>`. */
  eventId: string;
  /** This entry's place (from 1) in a read recorded as one record for several points. */
  part?: number;
  eventType: RecordType;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: Geolocation;
  reportOnly: boolean;
  /** When the event happened. */
  timestamp: Timestamp;
  /** When the vault recorded it. */
  recordedDate: Timestamp;
  /** Id of the application whose API key submitted it. */
  recordedBy: string;
  /** Whether the record is chained yet. */
  sealed: boolean;
  /** SHA-256 over the previous record's hash and this record; absent until sealed. */
  hash?: string;
  /** For a `CHANGE` record: what was changed, and by which rule if a rule did it. */
  change?: AdministrativeChange;
}

/**
 * The activity log's chain head: the last sealed record. Keep it outside the vault's database
 * and pass it to `activity.verify` later to catch records cut off the end. An empty log's
 * head is sequence 0 and a hash of 64 zeros.
 */
export interface ActivityHead {
  sequence: number;
  /** SHA-256, 64 lowercase hex digits. */
  hash: string;
}

/** Result of recomputing the activity log's hash chain. */
export interface ActivityVerification {
  /** True when every record's hash matches (and, given a head, the head matches too). */
  valid: boolean;
  /** Sealed records checked. */
  records: number;
  /** Records committed but not chained yet (sealed within about a second). */
  unsealed: number;
  /** The first record whose hash does not match, when the chain is broken. */
  firstBrokenSequence?: number;
  firstBrokenEventId?: string;
  /** The last record's sequence, when the chain is whole and not empty. */
  lastSequence?: number;
  /** Hash of the last record, when the chain is whole and not empty (anchor it elsewhere to detect truncation). */
  lastHash?: string;
  /**
   * Given a head: whether the log still holds that record unchanged. Absent without a head,
   * and when the chain breaks before the head's sequence.
   */
  headMatches?: boolean;
}

export interface AlertFilter {
  /** Rule key. */
  rule?: string;
  level?: AlertLevel;
  from?: Timestamp | Date;
  to?: Timestamp | Date;
  page?: number;
  count?: number;
}

/** An alert a rule raised: names the rule, entity, attribute and point, never a value. */
export interface Alert {
  id: string;
  ruleKey: string;
  level: AlertLevel;
  message: string;
  entityId?: string;
  attribute?: string;
  dataPointId?: string;
  eventType: EventType;
  createdDate: Timestamp;
}

// ---------------------------------------------------------------------------------------
// Applications

export interface ApplicationInput {
  name: string;
  /** Attribute keys it may use, or `["*"]` for all (the default). */
  attributes?: string[];
  /** May manage definitions, entity types, regulations, tags, rules and applications. */
  admin?: boolean;
  /** Keep a key the deployment already uses (at least 16 characters); otherwise one is generated. */
  apiKey?: string;
}

/** `applications.update`: what to change; the id, the key and the history stay. */
export interface ApplicationChanges {
  name?: string;
  attributes?: string[];
  admin?: boolean;
}

export interface RollKeyOptions {
  /** The new key, if the deployment chooses it (16 to 512 printable ASCII characters); otherwise one is generated. */
  apiKey?: string;
  /** How long the replaced key still signs in, 0 (the default) to 2,592,000 (30 days). */
  keepPreviousForSeconds?: number;
}

export interface Application {
  id: string;
  name: string;
  attributes: string[];
  admin: boolean;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
  /** Present while the key a roll replaced still signs in. */
  previousKeyValidUntil?: Timestamp;
}

/** The created (or re-keyed) application and its API key, which the vault shows this once. */
export interface CreatedApplication extends Application {
  apiKey: string;
}

// ---------------------------------------------------------------------------------------
// Operations

/** `GET /stats`: what the vault holds, within what the calling application may see. */
export interface VaultStats {
  subjects: number;
  /** Values of the attributes the caller may access; a structure counts once. */
  dataPoints: number;
  definitions: number;
  rules: number;
  /** null for a non-admin key. */
  applications: number | null;
  /** Alerts of the last 24 hours by level; null for a non-admin key. */
  alertsLast24Hours: Record<string, number> | null;
  asOf: string;
}

export interface Readiness {
  ready: boolean;
  status: string;
  reason?: string;
}
