import { sql, type Kysely } from 'kysely';
import { dialectOf, lockForTransaction } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';

/**
 * Tags are created on first use, wherever they are first used. The caller then writes the
 * rows that use them, so the tags are held against a delete first (`holdTagsAgainstDelete`).
 */
export async function ensureTags(db: Kysely<Database>, names: Iterable<string>): Promise<void> {
  // Sorted: two writers creating the same new tags wait for each other's rows in one order.
  const unique = [...new Set(names)].sort();
  if (unique.length === 0) return;
  await holdTagsAgainstDelete(db);
  const now = nowIso();
  await db
    .insertInto('tags')
    .values(unique.map((name) => ({ name, created_date: now, modified_date: now })))
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/**
 * A tag's delete takes this lock alone, and every transaction that writes the rows tags are
 * used in (definition_tags, entity_tags, datapoint_tags, inserts and deletes alike, and the
 * tags it creates on first use) takes it together, before the first of those writes (on
 * PostgreSQL; SQLite runs one write transaction at a time). Otherwise a delete holding the
 * tag's row waits for a writer's lock on a row of the tag while that writer waits to create
 * the tag the delete is removing (or, deleting a subject, for the delete's lock on the
 * subject's row of it): a deadlock, which the database ends by failing one of them. And a
 * point labelled just before the delete commits would keep the label of a tag no longer
 * there, the delete's statements not seeing the label yet. With the lock, a write either
 * commits before the delete starts (which then takes its labels off too) or starts after the
 * delete committed (and creates the tag anew). A writer takes it after the rows it locks for
 * its own checks (its subject's, its definitions'), so a cycle through a third writer is still
 * possible: stores sharing a transaction, one holding this lock, another waiting for a subject
 * whose writer asks for it behind a waiting delete. PostgreSQL ends it, and the victim runs
 * again (`committed`).
 */
const TAG_DELETE_LOCK = 0x7461_6773; // "tags"

/** Transactions already holding the lock shared: a store labels several points, a bulk many. */
const holding = new WeakSet<object>();

/** Taken by a tag's delete before it touches the tag's rows. */
export function lockTagsForDelete(trx: Kysely<Database>): Promise<void> {
  return lockForTransaction(trx, TAG_DELETE_LOCK);
}

/** Taken by a writer of tag rows before it touches any: any number at once. Held until its transaction ends. */
export async function holdTagsAgainstDelete(trx: Kysely<Database>): Promise<void> {
  if (holding.has(trx) || dialectOf(trx) !== 'postgres') return;
  await sql`select pg_advisory_xact_lock_shared(${TAG_DELETE_LOCK}::bigint)`.execute(trx);
  holding.add(trx);
}
