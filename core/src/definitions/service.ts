import type { Kysely } from 'kysely';
import { committed } from '../db/after-commit.js';
import { dialectOf, isUniqueViolation } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { DATASUBJECT, ENTITY_TYPE_KEY } from '../entitytypes/service.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { REGULATION_KEY } from '../regulations/service.js';
import type { RulesEngine } from '../rules/engine.js';
import { checkTagNamesStored } from '../tags/service.js';
import { ensureTags, holdTagsAgainstDelete } from '../tags/repository.js';
import { nowIso } from '../util/time.js';
import { recordChange, recordUpsert, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { allDefinitions, findDefinition, type Definition } from './repository.js';
import { ATTRIBUTE_KEY, isCompatibleChange, longestSubPath, MAX_PATH_LENGTH, normalizeSchema, PATH_TOO_LONG_MESSAGE, type Schema } from './schema.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';

/** As sent: absent members of an existing definition keep their value, of a new one get the default. */
export interface DefinitionInput {
  key?: unknown;
  name?: unknown;
  hint?: string | null;
  schema?: unknown;
  repeatable?: boolean;
  indexed?: boolean;
  immutable?: boolean;
  tags?: string[];
  regulations?: string[];
  entityTypes?: string[];
}

export const ATTRIBUTE_KEY_MAX = 128;
const NAME_MAX = 1024;
/** A schema is a shape, not data: anything this large is a mistake or an attack. */
const SCHEMA_MAX_CHARS = 256 * 1024;

export function isValidAttributeKey(key: unknown): key is string {
  return typeof key === 'string' && key.length <= ATTRIBUTE_KEY_MAX && ATTRIBUTE_KEY.test(key);
}

function present(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function resolveKey(input: DefinitionInput): string {
  const key = present(input.key) ? input.key : input.name;
  if (!present(key)) throw badRequest('Attribute must contain at least one of key or name');
  if (typeof key !== 'string' || !ATTRIBUTE_KEY.test(key)) throw badRequest('Attribute key must contain only alphanumeric characters and underscores');
  if (key.length > ATTRIBUTE_KEY_MAX) throw badRequest(`Attribute key must be at most ${ATTRIBUTE_KEY_MAX} characters`);
  return key;
}

const nameMessage = () => `Attribute name must be a string of at most ${NAME_MAX} characters, without control characters`;

/** Control characters are judged once the stored definition is known (`upsert`). */
function checkName(name: unknown): string | null | undefined {
  if (name === undefined || name === null) return name;
  if (typeof name !== 'string' || longerThan(name, NAME_MAX)) throw badRequest(nameMessage());
  return name;
}

function checkSchema(key: string, schema: unknown): Schema | undefined {
  if (schema === undefined) return undefined;
  const normalized = normalizeSchema(schema);
  if (JSON.stringify(normalized).length > SCHEMA_MAX_CHARS) throw badRequest('Schema is too large');
  if (key.length + longestSubPath(normalized) > MAX_PATH_LENGTH) throw badRequest(PATH_TOO_LONG_MESSAGE);
  return normalized;
}

/** Empty means `datasubject` only, so that is what an empty list stands for when comparing. */
function effectiveTypes(types: readonly string[]): string[] {
  return types.length === 0 ? [DATASUBJECT] : [...types];
}

/** What a definition's CHANGE record compares and carries. */
const DEFINITION_FIELDS = ['name', 'hint', 'schema', 'repeatable', 'indexed', 'immutable', 'tags', 'regulations', 'entityTypes'] as const;

/** `query` with FOR SHARE on PostgreSQL; SQLite runs one write transaction at a time. */
function forShareOnPostgres<Q extends { forShare(): Q }>(trx: Kysely<Database>, query: Q): Q {
  return dialectOf(trx) === 'postgres' ? query.forShare() : query;
}

export class DefinitionService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly rules: () => RulesEngine,
    /** Every change is recorded (`CHANGE`) in its transaction: a definition says what is indexed, and under which regulations. */
    private readonly activity: ActivityLog,
    /** Told after every change, so cached definitions are re-read. */
    private readonly onChange: () => void = () => {},
  ) {}

  async upsert(actor: ChangeActor, input: DefinitionInput): Promise<Definition> {
    const key = resolveKey(input);
    const name = present(input.key) ? checkName(input.name) : key;
    const schema = checkSchema(key, input.schema);
    const tags = input.tags === undefined ? undefined : await checkTagNamesStored(this.db, input.tags);
    const regulations = input.regulations === undefined ? undefined : [...new Set(input.regulations)].sort();
    const entityTypes = input.entityTypes === undefined ? undefined : [...new Set(input.entityTypes)].sort();

    const attempt = () =>
      committed(this.db, async (trx) => {
        // Keys no regulation or type can have are refused before they reach the database (PostgreSQL rejects NUL).
        if (regulations?.length && !regulations.every((r) => REGULATION_KEY.test(r))) throw badRequest('No such regulation');
        if (entityTypes?.length) {
          if (!entityTypes.every((t) => ENTITY_TYPE_KEY.test(t))) throw badRequest('No such entity type');
          // Held until the commit on PostgreSQL, as a store holds its subject's type: a delete of
          // the type through another process then finds this definition naming it (409), or
          // went first and this is refused; never a definition naming a type that is gone.
          const found = await forShareOnPostgres(trx, trx.selectFrom('entity_types').select('key').where('key', 'in', entityTypes)).execute();
          if (found.length !== entityTypes.length) throw badRequest('No such entity type');
        }

        await this.lockDefinition(trx, key);
        if (regulations?.length) {
          // Held likewise, after the definition's row, in the order a store takes them and a
          // regulation's delete changes them (`touchDefinitions`): that delete then takes the
          // regulation off this definition too, or went first and this is refused.
          const found = await forShareOnPostgres(trx, trx.selectFrom('regulations').select('key').where('key', 'in', regulations)).execute();
          if (found.length !== regulations.length) throw badRequest('No such regulation');
        }
        const existing = await findDefinition(trx, key);
        // A name stored by an earlier release, which let control characters in, may be sent
        // back as it is (clients post back the definition they read); a new one may not.
        if (typeof name === 'string' && hasControlCharacter(name) && name !== existing?.name) throw badRequest(nameMessage());
        const next = {
          name: name !== undefined ? name : (existing?.name ?? null),
          hint: input.hint !== undefined ? input.hint : (existing?.hint ?? null),
          schema: schema ?? existing?.schema ?? ('string' as Schema),
          repeatable: input.repeatable ?? existing?.repeatable ?? false,
          indexed: input.indexed ?? existing?.indexed ?? false,
          immutable: input.immutable ?? existing?.immutable ?? false,
          tags: tags ?? existing?.tags ?? [],
          regulations: regulations ?? existing?.regulations ?? [],
          entityTypes: entityTypes ?? existing?.entityTypes ?? [],
        };
        if (existing) await this.checkExistingData(trx, existing, next);

        const now = nowIso();
        const row = {
          name: next.name,
          hint: next.hint,
          schema: JSON.stringify(next.schema),
          repeatable: next.repeatable ? (1 as const) : (0 as const),
          indexed: next.indexed ? (1 as const) : (0 as const),
          immutable: next.immutable ? (1 as const) : (0 as const),
          modified_date: now,
        };
        if (existing) {
          await trx.updateTable('attribute_definitions').set(row).where('key', '=', key).execute();
        } else {
          await trx.insertInto('attribute_definitions').values({ key, ...row, created_date: now }).execute();
        }
        await this.replaceLinks(trx, key, next);
        const stored = (await findDefinition(trx, key))!;
        await recordUpsert(this.activity, trx, actor, { target: 'attribute', id: key, before: existing, after: stored, keys: DEFINITION_FIELDS }, now);
        return stored;
      });
    try {
      return await attempt();
    } catch (err) {
      // Lost a race to create the same key: it exists now, so this becomes an update.
      if (isUniqueViolation(err)) return attempt();
      throw err;
    } finally {
      this.onChange();
    }
  }

  /** Changes that could strand stored values are refused only once there are values to strand. */
  private async checkExistingData(
    trx: Kysely<Database>,
    existing: Definition,
    next: { schema: Schema; repeatable: boolean; entityTypes: string[] },
  ): Promise<void> {
    const repeatableDropped = existing.repeatable && !next.repeatable;
    const schemaChanged = !isCompatibleChange(existing.schema, next.schema);
    const kept = new Set(effectiveTypes(next.entityTypes));
    const removedTypes = effectiveTypes(existing.entityTypes).filter((t) => !kept.has(t));
    if (!repeatableDropped && !schemaChanged && removedTypes.length === 0) return;

    const anyData = await trx.selectFrom('datapoints').select('id').where('definition_key', '=', existing.key).limit(1).executeTakeFirst();
    if (!anyData) return;
    if (repeatableDropped) throw conflict('Cannot change existing attribute from repeatable to non-repeatable, as it would invalidate existing data');
    if (schemaChanged) throw conflict('Cannot edit attribute schema, as it may invalidate existing data');
    const stranded = await trx
      .selectFrom('datapoints')
      .innerJoin('entities', 'entities.id', 'datapoints.entity_id')
      .select('datapoints.id')
      .where('datapoints.definition_key', '=', existing.key)
      .where('entities.type', 'in', removedTypes)
      .limit(1)
      .executeTakeFirst();
    if (stranded) throw conflict('Cannot remove entity types from attribute, as it would invalidate existing data');
  }

  private async replaceLinks(
    trx: Kysely<Database>,
    key: string,
    next: { tags: string[]; regulations: string[]; entityTypes: string[] },
  ): Promise<void> {
    await holdTagsAgainstDelete(trx);
    await trx.deleteFrom('definition_tags').where('definition_key', '=', key).execute();
    await trx.deleteFrom('definition_regulations').where('definition_key', '=', key).execute();
    await trx.deleteFrom('definition_entity_types').where('definition_key', '=', key).execute();
    if (next.tags.length) {
      await ensureTags(trx, next.tags);
      await trx.insertInto('definition_tags').values(next.tags.map((tag) => ({ definition_key: key, tag }))).execute();
    }
    if (next.regulations.length) {
      await trx.insertInto('definition_regulations').values(next.regulations.map((regulation) => ({ definition_key: key, regulation }))).execute();
    }
    if (next.entityTypes.length) {
      await trx.insertInto('definition_entity_types').values(next.entityTypes.map((entity_type) => ({ definition_key: key, entity_type }))).execute();
    }
  }

  list(): Promise<Definition[]> {
    return allDefinitions(this.db);
  }

  async get(key: string): Promise<Definition> {
    const found = isValidAttributeKey(key) ? await findDefinition(this.db, key) : undefined;
    if (!found) throw notFound('No such attribute');
    return found;
  }

  /**
   * On PostgreSQL, the definition's row before its checks: a store holds it (FOR SHARE) from
   * its own check of the definition to its commit, so the data a change must look at is either
   * committed by then or written after it, against the changed definition. SQLite runs one
   * write transaction at a time.
   */
  private async lockDefinition(trx: Kysely<Database>, key: string): Promise<void> {
    if (dialectOf(trx) !== 'postgres') return;
    await trx.selectFrom('attribute_definitions').select('key').where('key', '=', key).forUpdate().execute();
  }

  /** Only a definition without data and without rules pointing at it can go. */
  async delete(actor: ChangeActor, key: string): Promise<void> {
    const found = isValidAttributeKey(key) ? await findDefinition(this.db, key) : undefined;
    if (!found) throw notFound('Attribute not found');
    await committed(this.db, async (trx) => {
      if ((await this.rules().findReferencingRule(trx, 'attribute', key)) !== undefined) {
        throw conflict('Cannot delete attribute, because it is referenced by rule');
      }
      await this.lockDefinition(trx, key);
      const inUse = await trx.selectFrom('datapoints').select('id').where('definition_key', '=', key).limit(1).executeTakeFirst();
      if (inUse) throw conflict('Cannot delete attribute, because it is in use');
      const deleted = await trx.deleteFrom('attribute_definitions').where('key', '=', key).executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) throw notFound('Attribute not found');
      await holdTagsAgainstDelete(trx);
      await trx.deleteFrom('definition_tags').where('definition_key', '=', key).execute();
      await trx.deleteFrom('definition_regulations').where('definition_key', '=', key).execute();
      await trx.deleteFrom('definition_entity_types').where('definition_key', '=', key).execute();
      await recordChange(this.activity, trx, actor, { target: 'attribute', id: key, action: 'delete' }, nowIso());
    });
    this.onChange();
  }
}
