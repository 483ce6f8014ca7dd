import type { Kysely, Selectable } from 'kysely';
import { jsonList, parseJsonList } from '../db/json-list.js';
import { compiledQuery } from '../db/compiled.js';
import type { Database, EntitiesTable } from '../db/schema.js';
import { ensureTags, holdTagsAgainstDelete } from '../tags/repository.js';
import { nowIso } from '../util/time.js';

export interface Entity {
  id: string;
  type: string;
  tags: string[];
  legalHold: boolean;
  created: string;
  updated: string;
}

/** The entity's tags, sorted, in the entity's own row (`toEntity` reads it back). */
export const tagsColumn = (db: Kysely<Database>) => jsonList(db, { table: 'entity_tags', value: 'tag', owner: 'entity_id', ownerKey: 'entities.id', sorted: true }).as('tags_json');

export type EntityRow = Selectable<EntitiesTable> & { tags_json: unknown };

export function toEntity(row: EntityRow): Entity {
  return { id: row.id, type: row.type, tags: parseJsonList(row.tags_json), legalHold: row.legal_hold === 1, created: row.created_date, updated: row.updated_date };
}

// Entities are looked up, with their tags, in one statement compiled once: Kysely's builder
// costs more than the lookup, and on PostgreSQL each statement is a round trip. (Stores read
// more in the same statement and lock the row: datapoints/store-context.ts.)
const entityById = compiledQuery<[string], EntityRow>(1, (db, id) => db.selectFrom('entities').selectAll().select(tagsColumn(db)).where('id', '=', id));

export async function findEntity(db: Kysely<Database>, id: string): Promise<Entity | undefined> {
  const [row] = await entityById(db, id);
  return row && toEntity(row);
}

export interface NewEntity {
  id: string;
  type: string;
  tags?: string[];
  legalHold?: boolean;
}

/** Inserts an entity that does not exist yet (callers check first, inside their transaction). */
export async function insertEntity(db: Kysely<Database>, input: NewEntity): Promise<Entity> {
  const now = nowIso();
  await db
    .insertInto('entities')
    .values({ id: input.id, type: input.type, legal_hold: input.legalHold ? 1 : 0, created_date: now, updated_date: now })
    .execute();
  const tags = [...new Set(input.tags ?? [])].sort();
  await setEntityTags(db, input.id, tags);
  return { id: input.id, type: input.type, tags, legalHold: input.legalHold ?? false, created: now, updated: now };
}

/** Replaces an entity's tags (creating unknown tags on first use). */
export async function setEntityTags(db: Kysely<Database>, entityId: string, tags: string[]): Promise<void> {
  await holdTagsAgainstDelete(db);
  await db.deleteFrom('entity_tags').where('entity_id', '=', entityId).execute();
  if (tags.length === 0) return;
  await ensureTags(db, tags);
  // Callers hold the entity's row; a tag another writer without it put back meanwhile is simply there already.
  await db
    .insertInto('entity_tags')
    .values([...new Set(tags)].map((tag) => ({ entity_id: entityId, tag })))
    .onConflict((oc) => oc.columns(['entity_id', 'tag']).doNothing())
    .execute();
}
