/**
 * Rules in their checked, evaluation-ready form. The wire form is kept as sent (rules
 * round-trip exactly); this is what `parseRule` (compile.ts) makes of it.
 */
import type { EventType } from './engine.js';
import type { SafeRegex } from './regex.js';

export type RuleType = 'data' | 'activity';
export type ListOperator = 'any' | 'none' | 'all';

export const EVENT_TYPES: readonly EventType[] = ['READ', 'STORE', 'UPDATE', 'DELETE'];
export const ALERT_LEVELS = ['NORMAL', 'INFO', 'WARNING', 'DANGER', 'SUCCESS', 'NEUTRAL'] as const;
export type AlertLevel = (typeof ALERT_LEVELS)[number];
export const PREDICATES = ['eq', 'neq', 'lt', 'gt', 'leq', 'geq', 'before', 'after', 'in', 'nin', 'regex'] as const;
export type Predicate = (typeof PREDICATES)[number];

export type Constraint =
  | { type: 'all' | 'any'; constraints: Constraint[] }
  | { type: 'attribute'; operator: ListOperator; attributes: string[] }
  | { type: 'tag'; operator: ListOperator; tags: string[] }
  | { type: 'regulation'; operator: ListOperator; regulations: string[] }
  | { type: 'geolocation'; operator: ListOperator; countries: Set<string>; subdivisions: Set<string> }
  | { type: 'entityType'; entityTypes: Set<string> }
  | {
      type: 'user';
      attribute: string;
      predicate: Predicate;
      value: string | number | boolean;
      /** `in` and `nin`: the list's members as text, and those that are numbers as numbers. */
      list?: Set<string>;
      numbers?: Set<number>;
      regex?: SafeRegex;
      number?: number;
      time?: number;
    }
  | { type: 'sentiment'; threshold: number }
  | { type: 'application'; operator: ListOperator; applications: Set<string> }
  | { type: 'eventType'; eventTypes: Set<EventType> };

export type Action =
  | { type: 'alert'; level: AlertLevel; message: string }
  | { type: 'tag'; tag: string; status: boolean }
  | { type: 'regulation'; regulation: string }
  | { type: 'entityTag'; tag: string; status: boolean }
  | { type: 'block'; message?: string }
  | { type: 'prohibition'; status: boolean; prohibitions: EventType[] }
  | { type: 'legalHold'; status: boolean }
  | { type: 'retention'; expirationDate?: string; daysSinceStore?: number; daysSinceRead?: number; autoDelete: boolean };

/** What a rule can name that has a delete of its own: refused while a rule names it. */
export type ReferenceKind = 'tag' | 'attribute' | 'regulation' | 'entityType';

/** Names a rule points at: these must exist when it is saved, and cannot be deleted while it does. */
export interface RuleReferences {
  attributes: Set<string>;
  regulations: Set<string>;
  tags: Set<string>;
  entityTypes: Set<string>;
  /** Names written `KEY.sub` (their `KEY` is in `attributes`): each must be in KEY's schema. */
  subAttributes: Set<string>;
  /** Tags the rule's actions apply: created on save, as tags are created on first use. */
  actionTags: Set<string>;
}

export interface CompiledRule {
  key: string;
  name?: string;
  type: RuleType;
  constraint: Constraint;
  action: Action;
  references: RuleReferences;
}

export interface StoredRule extends CompiledRule {
  executionOrder: number;
}

/**
 * Evaluation order of data rules: tags first and regulations next, so that every later rule
 * sees them; then alerts, so a store that a block refuses has still raised its alerts; then
 * blocks; then the effects on the entity and on retention.
 */
export function actionGroup(action: Action): number {
  switch (action.type) {
    case 'tag':
      return 0;
    case 'regulation':
      return 1;
    case 'alert':
      return 2;
    case 'block':
      return 3;
    default:
      return 4;
  }
}
