/**
 * The contract between the rules engine and the code paths it guards (vault stores and
 * audit events). Callers build a context inside their transaction and call the engine
 * before writing; the engine may change the candidates' metadata in place, persist its own
 * effects on the entity through the same transaction, and throw a 403 VaultError to block.
 */
import type { Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import type { Alert } from '../alerts/service.js';
import type { Database } from '../db/schema.js';
import type { Leaf } from '../definitions/schema.js';
import type { ReferenceKind } from './model.js';

export type EventType = 'READ' | 'STORE' | 'UPDATE' | 'DELETE';

export interface Location {
  country?: string;
  subdivision?: string;
  city?: string;
}

/** One attribute value about to be stored, or reported by an audit STORE/UPDATE. */
export interface CandidatePoint {
  /** Definition key. */
  attribute: string;
  /** The whole value: used by rules, never kept for report-only data. */
  value: unknown;
  leaves: Leaf[];
  /** Rules may add to these; the point is stored with what they hold afterwards. */
  tags: Set<string>;
  regulations: Set<string>;
  sensitivity: string;
  /** Retention set by rules. */
  expiresAt?: string;
  autoDelete?: boolean;
  /** The point's id when the caller knows it before evaluating (alerts then name it). */
  dataPointId?: string;
}

export interface RuleEntity {
  id: string;
  type: string;
  tags: Set<string>;
  legalHold: boolean;
}

export interface DataRuleContext {
  /** The caller's open transaction: the rules' writes commit or roll back with the store. */
  trx: Kysely<Database>;
  caller: Caller;
  entity: RuleEntity;
  points: CandidatePoint[];
  /**
   * Every point of the request, when `points` are some of them: a store judges its first
   * values and its overwrites apart, yet an entity-value constraint reads the whole request.
   */
  requestPoints?: CandidatePoint[];
  /**
   * Alerts the operation's earlier evaluations raised, which sit in `trx`: a block in a later
   * one records them with its own, or its rollback would take them. The engine adds to it.
   */
  raised?: Alert[];
  location?: Location;
  eventType: 'STORE' | 'UPDATE';
  reportOnly: boolean;
  /** The rules' version stamp when the caller read it in `trx` already. */
  rulesVersion?: unknown;
}

export interface ActivityEvent {
  eventType: EventType;
  subjectId?: string;
  dataPointId?: string;
  attribute?: string;
  applicationId: string;
  applicationUser?: string;
  location?: Location;
  timestamp: string;
}

export interface ActivityRuleContext {
  trx: Kysely<Database>;
  caller: Caller;
  event: ActivityEvent;
  /** Present when the event's subject exists. */
  entity?: RuleEntity;
  /** As for data rules: the alerts the batch raised before, recorded with a block's own. */
  raised?: Alert[];
  /**
   * Tags (or untags) the event's point where the caller holds it: an audit batch writes its
   * points only after every rule has run, so the point an event registers is not in `trx` yet.
   */
  tagPoint?: (tag: string, status: boolean) => void;
}

export interface RuleEffects {
  /** Work that must wait for the transaction to commit, such as alert delivery. */
  afterCommit: Array<() => void | Promise<void>>;
}

export interface RulesEngine {
  evaluateData(ctx: DataRuleContext): Promise<RuleEffects>;
  evaluateActivity(ctx: ActivityRuleContext): Promise<RuleEffects>;
  /** Throws 403 when a rule has prohibited this operation on the entity. */
  checkProhibited(trx: Kysely<Database>, entityId: string, operation: EventType): Promise<void>;
  /**
   * The key of a rule that references this tag, attribute, regulation or entity type (which
   * blocks its delete), asked in the deleting transaction: no rule can start referencing it
   * before that commits.
   */
  findReferencingRule(trx: Kysely<Database>, kind: ReferenceKind, name: string): Promise<string | undefined>;
}

/** An engine with no rules: everything passes unchanged. */
export const noRules: RulesEngine = {
  evaluateData: async () => ({ afterCommit: [] }),
  evaluateActivity: async () => ({ afterCommit: [] }),
  checkProhibited: async () => {},
  findReferencingRule: async () => undefined,
};

/** Runs after-commit work without letting its failure reach the request that caused it. */
export function runAfterCommit(effects: RuleEffects[], onError: (err: unknown) => void): void {
  for (const effect of effects) {
    for (const job of effect.afterCommit) {
      Promise.resolve()
        .then(job)
        .catch(onError);
    }
  }
}
