import { sql, type Kysely } from 'kysely';
import { dialectOf, lockForTransaction } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';

/** Tags are created on first use, wherever they are first used. */
export async function ensureTags(db: Kysely<Database>, names: Iterable<string>): Promise<void> {
  // Sorted: two writers creating the same new tags wait for each other's rows in one order.
  const unique = [...new Set(names)].sort();
  if (unique.length === 0) return;
  const now = nowIso();
  await db
    .insertInto('tags')
    .values(unique.map((name) => ({ name, created_date: now, modified_date: now })))
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/**
 * A tag's delete takes this lock alone, and the writers of entities' and definitions' tags
 * take it together (on PostgreSQL; SQLite runs one write transaction at a time). Otherwise a
 * delete holding the tag's row waits for a writer's lock on its row of the tag (entity_tags,
 * definition_tags) while that writer waits to create the tag the delete is removing: a
 * deadlock, which the database ends by failing one of them.
 */
const TAG_DELETE_LOCK = 0x7461_6773; // "tags"

/** Taken by a tag's delete before it touches the tag's rows. */
export function lockTagsForDelete(trx: Kysely<Database>): Promise<void> {
  return lockForTransaction(trx, TAG_DELETE_LOCK);
}

/** Taken by a writer of an entity's or a definition's tags before it touches them: any number at once. */
export async function holdTagsAgainstDelete(trx: Kysely<Database>): Promise<void> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock_shared(${TAG_DELETE_LOCK}::bigint)`.execute(trx);
}
