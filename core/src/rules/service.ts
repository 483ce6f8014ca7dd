/**
 * Rule management (create or update, list, read, delete) and the in-memory rule set the
 * engine evaluates.
 *
 * Caching: every evaluation reads one row, `rules_version`, through the caller's own
 * transaction, and reloads the rules only when it changed. Every rule write bumps that row
 * in the same transaction as the change, so a process never evaluates rules older than the
 * last committed change, whichever process made it, at the price of one primary-key lookup
 * per store (a time-to-live would save that lookup but let a deleted block rule keep
 * refusing stores, or a new one miss them, until it expired).
 */
import { sql, type Kysely } from 'kysely';
import type { Logger } from 'pino';
import { committed } from '../db/after-commit.js';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { notFound, paymentRequired, unprocessable } from '../errors.js';
import { ensureTags } from '../tags/repository.js';
import { checkTagNamesStored, storedTagsAmong } from '../tags/service.js';
import { nowIso } from '../util/time.js';
import { recordChange, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { findDefinitions } from '../definitions/repository.js';
import { hasSubAttribute } from '../definitions/schema.js';
import { parseRule } from './compile.js';
import { checkRuleNames, controlTagNames, hasControlNames } from './compile-names.js';
import { actionGroup, type CompiledRule, type ReferenceKind, type RuleReferences, type StoredRule } from './model.js';
import type { RulesTable } from './tables.js';

/** The rules' version stamp as a column of a statement the caller runs anyway (see `ruleSet`). */
export const rulesVersionColumn = () => sql<unknown>`(select version from rules_version where id = 1)`.as('rules_version');

export interface RuleView {
  [member: string]: unknown;
  key: string;
  executionOrder: number;
  createdDate: string;
  modifiedDate: string;
}

export interface RuleSet {
  version: number;
  /** Data rules in evaluation order: by action group, then executionOrder, then key. */
  data: StoredRule[];
  activity: StoredRule[];
  all: StoredRule[];
  /** Whether any retention counts days since the last read (reads must then be watched). */
  idleRetention: boolean;
}

/** Where a rule keeps the names of each kind it references. */
const REFERENCES: Record<ReferenceKind, keyof Pick<RuleReferences, 'tags' | 'attributes' | 'regulations' | 'entityTypes'>> = {
  tag: 'tags',
  attribute: 'attributes',
  regulation: 'regulations',
  entityType: 'entityTypes',
};

function evaluationOrder(a: StoredRule, b: StoredRule): number {
  return actionGroup(a.action) - actionGroup(b.action) || a.executionOrder - b.executionOrder || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

function toView(row: RulesTable): RuleView {
  return { ...(JSON.parse(row.definition) as object), key: row.key, executionOrder: row.execution_order, createdDate: row.created_date, modifiedDate: row.modified_date };
}

/** The interface's 422 `No such attribute` for a `KEY.sub` its definition's schema does not have (KEY exists). */
async function requireSubAttributes(trx: Kysely<Database>, names: Set<string>): Promise<void> {
  if (names.size === 0) return;
  const paths = [...names].map((name) => name.split('.'));
  const definitions = await findDefinitions(trx, [...new Set(paths.map(([root]) => root))]);
  for (const [root, ...path] of paths) {
    const definition = definitions.get(root);
    if (!definition || !hasSubAttribute(definition.schema, path)) throw unprocessable('No such attribute');
  }
}

export class RuleService {
  private cached: RuleSet | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly logger: Logger,
    private readonly customRulesAllowed: () => boolean,
    /** Every rule change is recorded (`CHANGE`) in its transaction: rules decide blocks and holds. */
    private readonly activity: ActivityLog,
  ) {}

  /** Creates the rule, or replaces the one with its key. */
  async save(actor: ChangeActor, input: unknown): Promise<'created' | 'updated'> {
    if (!this.customRulesAllowed()) throw paymentRequired('Your current subscription does not support custom rules');
    const parsed = parseRule(input);
    const { rule } = parsed;
    // The tags its actions apply are created with the rule: the rule of every path that creates
    // tags (a tag an earlier release stored with a control character may still be applied).
    // Checked here, as control characters in its names are below, rather than in parseRule, so
    // a rule stored before either check still loads.
    await checkTagNamesStored(this.db, [...rule.references.actionTags]);
    const outcome = await committed(this.db, async (trx) => {
      // First write of the transaction: on PostgreSQL its row lock serialises rule changes,
      // which keeps the default execution order unique.
      await trx
        .updateTable('rules_version')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', 1)
        .execute();
      if (hasControlNames(rule)) checkRuleNames(rule, await this.storedRule(trx, rule.key), await storedTagsAmong(trx, controlTagNames(rule)));
      await this.requireExisting(trx, rule.references.attributes, 'attribute_definitions', 'key', 'No such attribute');
      await requireSubAttributes(trx, rule.references.subAttributes);
      await this.requireExisting(trx, rule.references.regulations, 'regulations', 'key', 'No such regulation');
      await this.requireExisting(trx, rule.references.entityTypes, 'entity_types', 'key', 'No such entity type');
      await ensureTags(trx, rule.references.actionTags);

      const existing = await trx.selectFrom('rules').selectAll().where('key', '=', rule.key).executeTakeFirst();
      let order = parsed.executionOrder ?? existing?.execution_order;
      if (order === undefined) {
        const max = await trx.selectFrom('rules').select((eb) => eb.fn.max('execution_order').as('max')).executeTakeFirst();
        order = max?.max === null || max?.max === undefined ? 1 : Number(max.max) + 1;
      }
      const now = nowIso();
      const row = {
        name: rule.name ?? null,
        type: rule.type,
        definition: JSON.stringify(parsed.definition),
        execution_order: order,
        modified_date: now,
      };
      const fields = { ...(rule.name !== undefined ? { name: rule.name } : {}), type: rule.type, executionOrder: order, definition: parsed.definition };
      const recordSaved = (action: 'create' | 'update') => recordChange(this.activity, trx, actor, { target: 'rule', id: rule.key, action, fields }, now);
      if (existing) {
        // Saved exactly as it is (a client making sure its rules exist): nothing changed, so
        // nothing to record, as for the registry's entries.
        const unchanged =
          existing.name === row.name && existing.type === row.type && existing.definition === row.definition && Number(existing.execution_order) === order;
        if (unchanged) return 'updated' as const;
        await trx.updateTable('rules').set(row).where('key', '=', rule.key).execute();
        await recordSaved('update');
        return 'updated' as const;
      }
      await trx
        .insertInto('rules')
        .values({ key: rule.key, ...row, created_date: now })
        .execute();
      await recordSaved('create');
      return 'created' as const;
    });
    this.cached = undefined;
    return outcome;
  }

  /** The rule saved under `key` as it compiles, if it does. */
  private async storedRule(trx: Kysely<Database>, key: string): Promise<CompiledRule | undefined> {
    const row = await trx.selectFrom('rules').select(['key', 'definition']).where('key', '=', key).executeTakeFirst();
    if (!row) return undefined;
    try {
      return parseRule({ ...(JSON.parse(row.definition) as object), key: row.key }).rule;
    } catch {
      return undefined;
    }
  }

  private async requireExisting(
    trx: Kysely<Database>,
    names: Set<string>,
    table: 'attribute_definitions' | 'regulations' | 'entity_types',
    column: 'key',
    message: string,
  ): Promise<void> {
    if (names.size === 0) return;
    const wanted = [...names];
    const found = new Set<string>();
    for (let i = 0; i < wanted.length; i += 500) {
      const rows = await trx
        .selectFrom(table)
        .select(column)
        .where(column, 'in', wanted.slice(i, i + 500))
        .execute();
      for (const r of rows) found.add(r.key);
    }
    if (wanted.some((n) => !found.has(n))) throw unprocessable(message);
  }

  async list(): Promise<RuleView[]> {
    const rows = await this.db.selectFrom('rules').selectAll().orderBy('execution_order').orderBy('key').execute();
    return rows.map(toView);
  }

  /** `ruleName` is the key, or else the name (the first in execution order). */
  private async find(ruleName: string): Promise<RulesTable | undefined> {
    const byKey = await this.db.selectFrom('rules').selectAll().where('key', '=', ruleName).executeTakeFirst();
    if (byKey) return byKey;
    return this.db.selectFrom('rules').selectAll().where('name', '=', ruleName).orderBy('execution_order').orderBy('key').limit(1).executeTakeFirst();
  }

  async get(ruleName: string): Promise<RuleView> {
    const row = await this.find(ruleName);
    if (!row) throw notFound('Rule not found');
    return toView(row);
  }

  async delete(actor: ChangeActor, ruleName: string): Promise<void> {
    const row = await this.find(ruleName);
    if (!row) throw notFound('Rule not found');
    await committed(this.db, async (trx) => {
      await trx
        .updateTable('rules_version')
        .set((eb) => ({ version: eb('version', '+', 1) }))
        .where('id', '=', 1)
        .execute();
      // The rule was found before this transaction: a delete of it through another request
      // (or process) may have committed since, and must stay the only one answered and recorded.
      const deleted = await trx.deleteFrom('rules').where('key', '=', row.key).returning('name').executeTakeFirst();
      if (!deleted) throw notFound('Rule not found');
      const fields = deleted.name === null ? undefined : { name: deleted.name };
      await recordChange(this.activity, trx, actor, { target: 'rule', id: row.key, action: 'delete', ...(fields ? { fields } : {}) }, nowIso());
    });
    this.cached = undefined;
  }

  /**
   * The rules one transaction evaluates against: read once per transaction, so a bulk of
   * thousands of audit events costs one version check, not two per event.
   */
  private readonly perTransaction = new WeakMap<object, Promise<RuleSet>>();

  /**
   * The current rules, read through `db` (the caller's transaction when it has one).
   * `knownVersion`: the version stamp the caller already read in that transaction (through
   * `rulesVersionColumn`), which spares the engine a statement of its own.
   */
  async ruleSet(db: Kysely<Database>, knownVersion?: unknown): Promise<RuleSet> {
    if (!db.isTransaction) return this.load(db, knownVersion);
    let set = this.perTransaction.get(db);
    if (!set) {
      set = this.load(db, knownVersion);
      this.perTransaction.set(db, set);
    }
    return set;
  }

  private async load(db: Kysely<Database>, knownVersion?: unknown): Promise<RuleSet> {
    const stamp = knownVersion === undefined ? (await db.selectFrom('rules_version').select('version').where('id', '=', 1).executeTakeFirst())?.version : knownVersion;
    const version = Number(stamp ?? 0);
    const cached = this.cached;
    if (cached && cached.version === version) return cached;
    const rows = await db.selectFrom('rules').selectAll().execute();
    const all: StoredRule[] = [];
    for (const row of rows) {
      try {
        // The row's key is authoritative (it is what /rules/{ruleName} finds).
        const { rule } = parseRule({ ...(JSON.parse(row.definition) as object), key: row.key });
        all.push({ ...rule, executionOrder: row.execution_order });
      } catch (err) {
        // Only possible if a later release tightened validation: the rule is skipped, loudly.
        this.logger.error({ ruleKey: row.key, err }, 'a stored rule no longer compiles and is not evaluated');
      }
    }
    all.sort(evaluationOrder);
    const set: RuleSet = {
      version,
      all,
      data: all.filter((r) => r.type === 'data'),
      activity: all.filter((r) => r.type === 'activity'),
      idleRetention: all.some((r) => r.action.type === 'retention' && r.action.daysSinceRead !== undefined && r.action.autoDelete),
    };
    // A slower load of an older version must not replace a newer one.
    if (!this.cached || this.cached.version <= version) this.cached = set;
    return set;
  }

  /**
   * Asked inside the transaction that deletes the tag, attribute, regulation or entity type. On PostgreSQL
   * it first locks the version row every rule change writes first, so a rule created through
   * another process either committed before this look (and is seen) or checks its references
   * after the delete commits (and is refused): neither can pass unseen by the other.
   */
  async findReferencingRule(trx: Kysely<Database>, kind: ReferenceKind, name: string): Promise<string | undefined> {
    let version: unknown;
    if (dialectOf(trx) === 'postgres') {
      version = (await trx.selectFrom('rules_version').select('version').where('id', '=', 1).forUpdate().executeTakeFirst())?.version;
    }
    const set = await this.ruleSet(trx, version);
    const refs = REFERENCES[kind];
    return set.all.find((r) => r.references[refs].has(name))?.key;
  }
}
