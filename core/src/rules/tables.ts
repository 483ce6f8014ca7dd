/** Table types of rules, alerts and rule effects, joined into the `Database` type in `db/schema.ts`. */

export interface RulesTable {
  key: string;
  name: string | null;
  /** `data` or `activity`. */
  type: string;
  /** JSON of the rule exactly as sent, without the members the vault sets. */
  definition: string;
  execution_order: number;
  created_date: string;
  modified_date: string;
}

/** One row (id 1), bumped with every rule change: how each process knows its cached rules are stale. */
export interface RulesVersionTable {
  id: number;
  version: number;
}

/** Operations a rule has prohibited on an entity; checked before its reads, stores, updates and deletes. */
export interface EntityProhibitionsTable {
  entity_id: string;
  /** READ, STORE, UPDATE or DELETE. */
  operation: string;
  rule_key: string;
  created_date: string;
}

/**
 * Which of an entity's attributes carry a "days since read" retention: the sweep looks at
 * their points' last reads in the activity log. `next_check` is the earliest moment any of
 * them could expire, so the sweep skips the rest.
 */
export interface IdleRetentionTable {
  entity_id: string;
  definition_key: string;
  days: number;
  next_check: string;
}

export interface AlertsTable {
  id: string;
  rule_key: string;
  level: string;
  message: string;
  entity_id: string | null;
  attribute: string | null;
  datapoint_id: string | null;
  event_type: string;
  created_date: string;
}

export interface RulesTables {
  rules: RulesTable;
  rules_version: RulesVersionTable;
  entity_prohibitions: EntityProhibitionsTable;
  idle_retention: IdleRetentionTable;
  alerts: AlertsTable;
}
