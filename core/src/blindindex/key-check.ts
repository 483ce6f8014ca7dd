/**
 * Which blind-index key a vault's database was indexed with. The key itself never enters the
 * database, so without this a process given another key (one host without VAULT_INDEX_KEY,
 * a restore on a machine without the backup's index.key) would start and serve: its stores
 * unfindable by every other process's search, and everything stored before unfindable by its
 * own. What is kept is an HMAC under the key of a fixed text, which tells nothing about it.
 */
import { createHmac } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

export interface BlindIndexTables {
  index_key_check: { id: number; digest: string };
}

const CHECKED_TEXT = 'vault blind-index key check';

export function indexKeyDigest(indexKey: Buffer): string {
  return createHmac('sha256', indexKey).update(CHECKED_TEXT, 'utf8').digest('hex');
}

/**
 * Records the key's digest if the database holds none yet (a new vault, or one from before
 * the check), else compares. `generated` is told a key made for this start, so it is on disk
 * before the database depends on it; such a key is refused for a database from before the
 * check that already holds indexed values, which were indexed under some other key. Resolves
 * to whether the key is the database's own.
 */
export async function confirmIndexKey(db: Kysely<Database>, indexKey: Buffer, generated?: () => void): Promise<boolean> {
  const digest = indexKeyDigest(indexKey);
  const read = () => db.selectFrom('index_key_check').select('digest').where('id', '=', 1).executeTakeFirst();
  let kept = await read();
  if (!kept) {
    if (generated) {
      const indexed = await db.selectFrom('datapoints').select('id').where('blind_index', 'is not', null).limit(1).executeTakeFirst();
      if (indexed) return false;
      generated();
    }
    // Two new processes starting together: the first insert wins, and the other compares with it.
    await db.insertInto('index_key_check').values({ id: 1, digest }).onConflict((oc) => oc.column('id').doNothing()).execute();
    kept = await read();
  }
  return kept?.digest === digest;
}
