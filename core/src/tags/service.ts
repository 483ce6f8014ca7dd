import type { Kysely } from 'kysely';
import { committed } from '../db/after-commit.js';
import type { Database, TagsTable } from '../db/schema.js';
import { badRequest, conflict, notFound } from '../errors.js';
import type { RulesEngine } from '../rules/engine.js';
import { recordChange, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import { nowIso } from '../util/time.js';
import { lockTagsForDelete } from './repository.js';

export interface Tag {
  name: string;
  createdDate: string;
  modifiedDate: string;
}

export const TAG_NAME_MAX = 256;
// Control characters make names that cannot be typed or logged safely, and PostgreSQL
// refuses NUL in text outright.

export function isValidTagName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && !longerThan(name, TAG_NAME_MAX) && !hasControlCharacter(name);
}

const TAG_NAME_MESSAGE = `Tag name must be 1 to ${TAG_NAME_MAX} characters, without control characters`;

/** Every place that accepts tag names (tags, definitions, entities, data points, audit events, rules) checks them alike. */
export function checkTagNames(names: readonly unknown[]): string[] {
  for (const name of names) {
    if (!isValidTagName(name)) throw badRequest(TAG_NAME_MESSAGE);
  }
  return [...new Set(names as string[])].sort();
}

function toTag(row: TagsTable): Tag {
  return { name: row.name, createdDate: row.created_date, modifiedDate: row.modified_date };
}

export class TagService {
  /** `rules` is read at call time: the engine is installed on the vault after construction. */
  constructor(
    private readonly db: Kysely<Database>,
    private readonly rules: () => RulesEngine,
    /** A tag created or deleted here is recorded (`CHANGE`) in its transaction. */
    private readonly activity: ActivityLog,
    /** Told when definitions lose a tag (their cached copies are stale). */
    private readonly onDefinitionsChanged: () => void = () => {},
  ) {}

  async upsert(actor: ChangeActor, name: unknown): Promise<Tag> {
    if (name === undefined || name === null) throw badRequest('Tag name is required');
    const [valid] = checkTagNames([name]);
    const now = nowIso();
    await committed(this.db, async (trx) => {
      const created = await trx.insertInto('tags').values({ name: valid, created_date: now, modified_date: now }).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      // A tag has nothing to change but its date: only its creation is worth a record.
      if (Number(created.numInsertedOrUpdatedRows ?? 0) > 0) {
        await recordChange(this.activity, trx, actor, { target: 'tag', id: valid, action: 'create' }, now);
      } else {
        await trx.updateTable('tags').set({ modified_date: now }).where('name', '=', valid).execute();
      }
    });
    return this.get(valid);
  }

  async list(): Promise<Tag[]> {
    const rows = await this.db.selectFrom('tags').selectAll().orderBy('name').execute();
    return rows.map(toTag);
  }

  async find(name: string): Promise<Tag | undefined> {
    // A name no tag can have is simply absent; PostgreSQL would reject some of them as input.
    if (!isValidTagName(name)) return undefined;
    const row = await this.db.selectFrom('tags').selectAll().where('name', '=', name).executeTakeFirst();
    return row && toTag(row);
  }

  async get(name: string): Promise<Tag> {
    const found = await this.find(name);
    if (!found) throw notFound('No such tag');
    return found;
  }

  /** Removes the tag and every use of it: definitions, entities and data points, all or nothing. */
  async delete(actor: ChangeActor, name: string): Promise<void> {
    if (!(await this.find(name))) throw notFound('No such tag');
    // `committed`: a deadlock's victim runs again rather than answering 500.
    await committed(this.db, async (trx) => {
      if ((await this.rules().findReferencingRule(trx, 'tag', name)) !== undefined) {
        throw conflict('Cannot delete tag, because it is referenced by rule');
      }
      // After the rules' version row, which an attribute's delete locks before its definition's
      // row, and a definition's tag writer holds that row while it waits for this lock.
      await lockTagsForDelete(trx);
      const deleted = await trx.deleteFrom('tags').where('name', '=', name).executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) throw notFound('No such tag');
      await trx.deleteFrom('definition_tags').where('tag', '=', name).execute();
      await trx.deleteFrom('entity_tags').where('tag', '=', name).execute();
      await trx.deleteFrom('datapoint_tags').where('tag', '=', name).execute();
      await recordChange(this.activity, trx, actor, { target: 'tag', id: name, action: 'delete' }, nowIso());
    });
    this.onDefinitionsChanged();
  }
}
