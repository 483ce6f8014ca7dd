/**
 * What a store must know before it writes, read in one statement: its entity with the tags
 * (locked on PostgreSQL, so its legal hold stays as read until the store commits), whether
 * rules prohibit storing or updating there, the rules' version stamp, and whether the
 * subject's cached data key still exists. These were four statements, and on PostgreSQL a
 * statement is a round trip: socket writes were a third of a store's CPU there.
 */
import { sql, type Kysely } from 'kysely';
import { liveKeyColumn } from '../crypto/datakeys.js';
import { compiledQuery } from '../db/compiled.js';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { tagsColumn, toEntity, type Entity, type EntityRow } from '../entities/repository.js';
import { prohibitedColumn, truthy } from '../rules/prohibitions.js';
import { rulesVersionColumn } from '../rules/service.js';

export interface StoreContext extends Entity {
  storeProhibited: boolean;
  updateProhibited: boolean;
  /** For the rules engine (`DataRuleContext.rulesVersion`). */
  rulesVersion: unknown;
  /** The data key id asked about, when its row still belongs to the entity. */
  liveKeyId?: string;
}

type ContextRow = EntityRow & { store_prohibited: unknown; update_prohibited: unknown; rules_version: unknown; key_live: unknown; locked_version?: string; read_version?: string };

const contextQuery = (lock: boolean) =>
  compiledQuery<[string, string | null], ContextRow>(2, (db, id, keyId) => {
    const query = db
      .selectFrom('entities')
      .selectAll()
      .select(tagsColumn(db))
      .select(prohibitedColumn('entities.id', 'STORE', 'store_prohibited'))
      .select(prohibitedColumn('entities.id', 'UPDATE', 'update_prohibited'))
      .select(rulesVersionColumn())
      .select(liveKeyColumn(keyId, 'entities.id'))
      .where('id', '=', id);
    if (!lock) return query;
    // A statement that waited for the row lock returns the row as its holder committed it, but
    // its subqueries (tags, prohibitions) still read as of the statement's start. The row's
    // version beside the version those subqueries see tells whether that happened.
    return query
      .select(sql<string>`entities.xmin::text`.as('locked_version'))
      .select(sql<string>`(select e.xmin::text from entities e where e.id = entities.id)`.as('read_version'))
      .forUpdate();
  });
const unlocked = contextQuery(false);
const locked = contextQuery(true);

/** `keyId`: the data key the store would reuse (`DataKeys.reusable`), if any. */
export async function findStoreContext(trx: Kysely<Database>, id: string, keyId: string | undefined): Promise<StoreContext | undefined> {
  // SQLite runs one writer at a time: what a store reads there stays current until it commits.
  if (dialectOf(trx) !== 'postgres') return toContext((await unlocked(trx, id, keyId ?? null))[0], keyId);
  let [row] = await locked(trx, id, keyId ?? null);
  // Changed by a transaction that committed while this one waited: read again, now that the
  // lock is held and a new statement sees what that transaction wrote (every write that
  // changes what a store must respect, such as a rule's prohibition or tags, updates the row).
  if (row && row.locked_version !== row.read_version) [row] = await locked(trx, id, keyId ?? null);
  return toContext(row, keyId);
}

function toContext(row: ContextRow | undefined, keyId: string | undefined): StoreContext | undefined {
  if (!row) return undefined;
  return {
    ...toEntity(row),
    storeProhibited: truthy(row.store_prohibited),
    updateProhibited: truthy(row.update_prohibited),
    rulesVersion: row.rules_version,
    liveKeyId: truthy(row.key_live) ? keyId : undefined,
  };
}
