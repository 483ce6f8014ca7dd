import type { Kysely } from 'kysely';
import { committed } from '../db/after-commit.js';
import { dialectOf, forUpdateOnPostgres } from '../db/dialect.js';
import type { Database, EntityTypesTable } from '../db/schema.js';
import { badRequest, conflict, methodNotAllowed, notFound } from '../errors.js';
import { recordChange, recordUpsert, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import type { RulesEngine } from '../rules/engine.js';
import { nowIso } from '../util/time.js';

export const DATASUBJECT = 'datasubject';

export interface EntityType {
  key: string;
  name: string | null;
  description: string | null;
  createdDate: string;
  modifiedDate: string;
}

export interface EntityTypeInput {
  key: string;
  name?: string | null;
  description?: string | null;
}

export const ENTITY_TYPE_KEY = /^[A-Za-z0-9_-]{1,128}$/;
const NAME_MAX = 1024;
const NAME_MESSAGE = `Entity type name must be a string of at most ${NAME_MAX} characters, without control characters`;

/** Control characters are checked against what is stored (see `upsert`); the rest here. */
function checkName(name: unknown): void {
  if (name !== undefined && name !== null && (typeof name !== 'string' || longerThan(name, NAME_MAX))) throw badRequest(NAME_MESSAGE);
}

function toEntityType(row: EntityTypesTable): EntityType {
  return { key: row.key, name: row.name, description: row.description, createdDate: row.created_date, modifiedDate: row.modified_date };
}

export class EntityTypeService {
  constructor(
    private readonly db: Kysely<Database>,
    /** Every change is recorded (`CHANGE`) in its transaction; the system type's seeding is not. */
    private readonly activity: ActivityLog,
    /** Read at call time: the engine is installed on the vault after construction. */
    private readonly rules: () => RulesEngine,
  ) {}

  /** The system type exists from the first start; seeding is idempotent for concurrent starts. */
  async seed(): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto('entity_types')
      .values({ key: DATASUBJECT, name: 'Data subject', description: 'A person the data is about', system: 1, created_date: now, modified_date: now })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
  }

  async upsert(actor: ChangeActor, input: EntityTypeInput): Promise<EntityType> {
    if (typeof input.key !== 'string' || !ENTITY_TYPE_KEY.test(input.key)) {
      throw badRequest('Entity type key must contain only alphanumeric characters, hyphens and underscores');
    }
    checkName(input.name);
    const now = nowIso();
    // An update changes what the body names: a client making sure a type exists, with its key
    // alone, does not wipe the name an operator gave it. `null` clears.
    const changes = {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.description !== undefined && { description: input.description }),
    };
    const key = input.key;
    return committed(this.db, async (trx) => {
      // The insert waits for a concurrent create of the key (another process's too) to commit,
      // and the row lock then makes concurrent updates take turns: each compares against what
      // the one before it committed, so the same create or change sent twice is recorded once.
      let before: EntityTypesTable | undefined;
      for (;;) {
        const created = await trx
          .insertInto('entity_types')
          .values({ key, name: null, description: null, ...changes, system: 0, created_date: now, modified_date: now })
          .onConflict((oc) => oc.column('key').doNothing())
          .returning('key')
          .executeTakeFirst();
        if (created) break;
        before = await forUpdateOnPostgres(dialectOf(trx), trx.selectFrom('entity_types').selectAll().where('key', '=', key)).executeTakeFirst();
        // Absent: deleted between the two statements, so it is created after all.
        if (before) break;
      }
      // A name with control characters is refused unless it is the one already stored: a
      // client posting back the type it read, to change its description, keeps working.
      if (typeof changes.name === 'string' && hasControlCharacter(changes.name) && changes.name !== before?.name) throw badRequest(NAME_MESSAGE);
      if (before) {
        await trx
          .updateTable('entity_types')
          .set({ ...changes, modified_date: now })
          .where('key', '=', key)
          .execute();
      }
      const stored = toEntityType(await trx.selectFrom('entity_types').selectAll().where('key', '=', key).executeTakeFirstOrThrow());
      await recordUpsert(this.activity, trx, actor, { target: 'entityType', id: key, before: before && toEntityType(before), after: stored, keys: ['name', 'description'] }, now);
      return stored;
    });
  }

  async list(): Promise<EntityType[]> {
    const rows = await this.db.selectFrom('entity_types').selectAll().orderBy('key').execute();
    return rows.map(toEntityType);
  }

  async find(key: string): Promise<EntityType | undefined> {
    const row = await this.db.selectFrom('entity_types').selectAll().where('key', '=', key).executeTakeFirst();
    return row && toEntityType(row);
  }

  async get(key: string): Promise<EntityType> {
    const found = await this.find(key);
    if (!found) throw notFound('No such entity type');
    return found;
  }

  async delete(actor: ChangeActor, key: string): Promise<void> {
    await committed(this.db, async (trx) => {
      // Locked on PostgreSQL first: an entity being created with this type through another
      // process holds the row (`resolveForStore`), so it is committed, and found below, first.
      const row = await forUpdateOnPostgres(dialectOf(trx), trx.selectFrom('entity_types').select(['key', 'system']).where('key', '=', key)).executeTakeFirst();
      if (!row) throw notFound('Entity type not found');
      if (row.system === 1) throw methodNotAllowed('Cannot delete entity type, as it is managed by the system');
      const entity = await trx.selectFrom('entities').select('id').where('type', '=', key).limit(1).executeTakeFirst();
      if (entity) throw conflict('Cannot delete entity type, as there are entities belonging to it');
      const definition = await trx
        .selectFrom('definition_entity_types')
        .select('definition_key')
        .where('entity_type', '=', key)
        .limit(1)
        .executeTakeFirst();
      if (definition) throw conflict('Cannot delete entity type, as there are attributes referencing it');
      // Last, after the interface's own refusals. A rule left naming a deleted type could no
      // longer be saved as it reads (422 `No such entity type`), and would start matching
      // again, unseen, should a type of that key be made anew.
      if ((await this.rules().findReferencingRule(trx, 'entityType', key)) !== undefined) {
        throw conflict('Cannot delete entity type, because it is referenced by rule');
      }
      await trx.deleteFrom('entity_types').where('key', '=', key).execute();
      await recordChange(this.activity, trx, actor, { target: 'entityType', id: key, action: 'delete' }, nowIso());
    });
  }
}
