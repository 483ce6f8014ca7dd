/**
 * Rules: what they match (constraints), what they do (actions), and the rules themselves. An
 * optional member may be sent as `null`, which the vault takes as left out; a rule is answered
 * as it was sent, nulls included.
 */

import type { EventType, Timestamp } from './common.js';

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
  countries?: string[] | null;
  /** ISO 3166-2 hyphenated codes such as `US-CA`. */
  subdivisions?: string[] | null;
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
  predicate?: Predicate | null;
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

// Rules: actions

export type AlertLevel = 'NORMAL' | 'INFO' | 'WARNING' | 'DANGER' | 'SUCCESS' | 'NEUTRAL';

export interface AlertAction {
  type: 'alert';
  /** Default `NORMAL`. */
  alertLevel?: AlertLevel | null;
  message?: string | null;
}

/** Tags the stored point (data rules) or the event's point (activity rules). */
export interface TagAction {
  type: 'tag';
  tag: string;
  /** `false` removes the tag instead; default true. */
  status?: boolean | null;
}

export interface RegulationAction {
  type: 'regulation';
  regulation: string;
}

export interface EntityTagAction {
  type: 'entityTag';
  tag: string;
  /** `false` removes the tag instead; default true. */
  status?: boolean | null;
}

export interface BlockAction {
  type: 'block';
  /** The 403 message; default `The provided data could not be stored, as a rule disallows it`. */
  message?: string | null;
}

/** Refuses these operations on the entity from then on (`status: false` lifts them). */
export interface ProhibitionAction {
  type: 'prohibition';
  status?: boolean | null;
  prohibitions: EventType[];
}

/** Puts the entity under legal hold (`status: false` releases it). */
export interface LegalHoldAction {
  type: 'legalHold';
  status?: boolean | null;
}

/** Expiry of the stored point; with `autoDelete`, expired points are removed. At least one of the three. */
export interface RetentionAction {
  type: 'retention';
  expirationDate?: Timestamp | null;
  daysSinceStore?: number | null;
  daysSinceRead?: number | null;
  /** Alias of `daysSinceRead`. */
  daysSinceAccess?: number | null;
  /** Default false. */
  autoDelete?: boolean | null;
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

// Rules

interface RuleCommon {
  /** Required unique identifier. */
  key: string;
  /** Rules are found by key, then by name; `null` (or left out) for none, and answered as sent. */
  name?: string | null;
  action: RuleAction;
  /** Default: one more than the highest. */
  executionOrder?: number;
}

export interface DataRuleInput extends RuleCommon {
  /** Default `data`; `null` means it too, and is answered as sent. */
  type?: 'data' | null;
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
