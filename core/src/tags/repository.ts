import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';

/** Tags are created on first use, wherever they are first used. */
export async function ensureTags(db: Kysely<Database>, names: Iterable<string>): Promise<void> {
  const unique = [...new Set(names)];
  if (unique.length === 0) return;
  const now = nowIso();
  await db
    .insertInto('tags')
    .values(unique.map((name) => ({ name, created_date: now, modified_date: now })))
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}
