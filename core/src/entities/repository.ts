import type { Kysely, Selectable } from 'kysely';
import { compiledQuery } from '../db/compiled.js';
import type { Database, EntitiesTable } from '../db/schema.js';
import { ensureTags } from '../tags/repository.js';
import { nowIso } from '../util/time.js';

export interface Entity {
  id: string;
  type: string;
  tags: string[];
  legalHold: boolean;
  created: string;
  updated: string;
}

// Every store and read looks its entity up: compiled once, as Kysely's builder costs more than the lookups.
const entityById = compiledQuery<[string], Selectable<EntitiesTable>>(1, (db, id) => db.selectFrom('entities').selectAll().where('id', '=', id));
const tagsOfEntity = compiledQuery<[string], { tag: string }>(1, (db, id) =>
  db.selectFrom('entity_tags').select('tag').where('entity_id', '=', id).orderBy('tag'),
);

export async function findEntity(db: Kysely<Database>, id: string): Promise<Entity | undefined> {
  const [row] = await entityById(db, id);
  if (!row) return undefined;
  const tags = await tagsOfEntity(db, id);
  return { id: row.id, type: row.type, tags: tags.map((t) => t.tag), legalHold: row.legal_hold === 1, created: row.created_date, updated: row.updated_date };
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
  await db.deleteFrom('entity_tags').where('entity_id', '=', entityId).execute();
  if (tags.length === 0) return;
  await ensureTags(db, tags);
  await db.insertInto('entity_tags').values([...new Set(tags)].map((tag) => ({ entity_id: entityId, tag }))).execute();
}
