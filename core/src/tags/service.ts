import type { Kysely } from 'kysely';
import { committed } from '../db/after-commit.js';
import type { Database, TagsTable } from '../db/schema.js';
import { badRequest, conflict, notFound } from '../errors.js';
import type { RulesEngine } from '../rules/engine.js';
import { recordChange, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import { nowIso } from '../util/time.js';
import { touchDefinitions } from '../definitions/repository.js';
import { lockTagsForDelete } from './repository.js';

export interface Tag {
  name: string;
  createdDate: string;
  modifiedDate: string;
}

export const TAG_NAME_MAX = 256;
// Control characters make names that cannot be typed or logged safely, and PostgreSQL
// refuses NUL in text outright.

export const TAG_NAME_MESSAGE = `Tag name must be 1 to ${TAG_NAME_MAX} characters, without control characters`;

/**
 * A name that may be a tag's stored by an earlier release, which let control characters in:
 * such a tag keeps being read, deleted and given to what it is given to; a new one holding
 * them is refused (`requireStoredTags`). NUL no database column holds.
 */
function isReferencedTagName(name: unknown): name is string {
  return typeof name === 'string' && name.length > 0 && !longerThan(name, TAG_NAME_MAX) && !name.includes('\u0000');
}

/**
 * Every place that accepts tag names (tags, definitions, entities, data points, audit events,
 * rules) checks them alike: returns the names holding a control character, which must then
 * be stored tags (`requireStoredTags`); every other name needs no query.
 */
export function checkTagNameShapes(names: readonly unknown[]): string[] {
  let legacy: string[] | undefined;
  for (const name of names) {
    if (!isReferencedTagName(name)) throw badRequest(TAG_NAME_MESSAGE);
    if (hasControlCharacter(name)) (legacy ??= []).push(name);
  }
  return legacy ?? [];
}

/** Which of `names` are the names of stored tags. */
export async function storedTagsAmong(db: Kysely<Database>, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db.selectFrom('tags').select('name').where('name', 'in', [...new Set(names)]).execute();
  return new Set(rows.map((row) => row.name));
}

/** Refuses names with a control character (from `checkTagNameShapes`) that no stored tag has. */
export async function requireStoredTags(db: Kysely<Database>, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const found = await storedTagsAmong(db, names);
  if (names.some((name) => !found.has(name))) throw badRequest(TAG_NAME_MESSAGE);
}

/** `checkTagNameShapes` and `requireStoredTags` at once: the names, distinct and sorted. */
export async function checkTagNamesStored(db: Kysely<Database>, names: readonly unknown[]): Promise<string[]> {
  await requireStoredTags(db, checkTagNameShapes(names));
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
    // Posting a tag stored earlier back only touches it, whatever its name holds: a name with
    // a control character is refused only when it would create the tag.
    const legacy = checkTagNameShapes([name]).length > 0;
    const valid = name as string;
    const now = nowIso();
    await committed(this.db, async (trx) => {
      const created = await trx.insertInto('tags').values({ name: valid, created_date: now, modified_date: now }).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      // A tag has nothing to change but its date: only its creation is worth a record.
      if (Number(created.numInsertedOrUpdatedRows ?? 0) > 0) {
        if (legacy) throw badRequest(TAG_NAME_MESSAGE);
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
    if (!isReferencedTagName(name)) return undefined;
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
      const now = nowIso();
      // The definitions losing the tag change before the lock below: a store holds its
      // definitions' rows while it waits for that lock, so changing them after it deadlocks.
      const tagged = await trx.selectFrom('definition_tags').select('definition_key').where('tag', '=', name).execute();
      const touched = tagged.map((r) => r.definition_key);
      await touchDefinitions(trx, touched, now);
      // After the rules' version row, which an attribute's delete locks before its definition's
      // row, and a definition's tag writer holds that row while it waits for this lock.
      await lockTagsForDelete(trx);
      const deleted = await trx.deleteFrom('tags').where('name', '=', name).executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) throw notFound('No such tag');
      const untagged = await trx.deleteFrom('definition_tags').where('tag', '=', name).returning('definition_key').execute();
      // Tagged by a definition's change that committed meanwhile (rare): marked too, at the
      // risk of a deadlock, which `committed` runs again.
      await touchDefinitions(trx, untagged.map((r) => r.definition_key).filter((k) => !touched.includes(k)), now);
      await trx.deleteFrom('entity_tags').where('tag', '=', name).execute();
      await trx.deleteFrom('datapoint_tags').where('tag', '=', name).execute();
      await recordChange(this.activity, trx, actor, { target: 'tag', id: name, action: 'delete' }, now);
    });
    this.onDefinitionsChanged();
  }
}
