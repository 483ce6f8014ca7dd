/**
 * Per-subject data keys and the in-memory cache that amortises RSA work.
 *
 * A subject's values are sealed under data keys wrapped by the vault's public key and kept
 * in `subject_keys`. Deleting those rows is crypto-shredding: every ciphertext of the
 * subject, including copies in old backups, becomes unreadable for good.
 *
 * The vault cannot unwrap on its own. It holds a data key in memory only when it generated
 * it (for a store) or when a caller proved it holds the private key (for a read); reads
 * then cost one RSA decryption per data key, not one per data point.
 */
import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { badRequest } from '../errors.js';
import { generateDataKey, unwrapDataKey, wrapDataKey, EnvelopeError } from './envelope.js';
import { INVALID_KEY, type DecryptionCredential, type RegisteredKey } from './keys.js';
import { LruMap } from '../util/lru.js';

interface CachedKey {
  key: Buffer;
  entityId: string;
  /** The registered key that wrapped it: only its private half may use the cached copy. */
  encryptionKeyId: string;
}

export interface StoreKeyOptions {
  /** A key id whose `subject_keys` row the caller saw in this transaction (`liveKeyColumn`). */
  confirmed?: string;
}

/**
 * `exists(...)`: whether the data key `keyId` (a value, possibly null) still belongs to the
 * entity whose id `entityRef` names, as a column of a statement the caller runs anyway.
 */
export const liveKeyColumn = (keyId: string | null, entityRef: string) =>
  sql<unknown>`exists (select 1 from subject_keys k where k.id = ${keyId} and k.entity_id = ${sql.ref(entityRef)})`.as('key_live');

export interface DataKey {
  id: string;
  key: Buffer;
}

const CHUNK = 500;

export interface RewrapOptions {
  batchSize?: number;
  /** Called in each batch's transaction with the number of data keys it gave a copy. */
  onBatch?: (trx: Kysely<Database>, count: number) => Promise<void>;
}

export class DataKeys {
  private readonly byId: LruMap<string, CachedKey>;
  /** Subject → the data key new values of that subject are sealed under. */
  private readonly current: LruMap<string, string>;
  /** RSA private-key operations performed: the cost the cache exists to bound. */
  unwraps = 0;
  /** Read lookups answered from memory, and those that went to the database. */
  hits = 0;
  misses = 0;

  constructor(capacity = 10_000) {
    this.byId = new LruMap(capacity);
    this.current = new LruMap(capacity);
  }

  /**
   * The data key to seal a subject's new values under, inside the store's transaction. A
   * cached key is reused only while its wrapped row still exists (another process may have
   * purged the subject) and was wrapped by the key now in use; otherwise a fresh key is
   * generated and its wrapped copy written in the same transaction.
   */
  async forStore(trx: Kysely<Database>, entityId: string, wrapping: RegisteredKey, now: string, readers: readonly RegisteredKey[] = [], { confirmed }: StoreKeyOptions = {}): Promise<DataKey> {
    const currentId = this.reusable(entityId, wrapping);
    if (currentId !== undefined) {
      const live = confirmed === currentId || (await trx.selectFrom('subject_keys').select('id').where('id', '=', currentId).where('entity_id', '=', entityId).executeTakeFirst()) !== undefined;
      if (live) return { id: currentId, key: this.byId.get(currentId)!.key };
      this.byId.delete(currentId);
    }
    const key = generateDataKey();
    const id = randomUUID();
    await trx
      .insertInto('subject_keys')
      .values({ id, entity_id: entityId, encryption_key_id: wrapping.id, wrapped_key: wrapDataKey(wrapping.publicKey, key), created_date: now })
      .execute();
    // During a rotation every registered key can read what is stored meanwhile, so callers
    // may switch private keys at their own pace.
    let extra = readers.filter((r) => r.id !== wrapping.id);
    if (extra.length > 0) {
      // `readers` may be a second old: a key retired through another process meanwhile gets no
      // copy, or its private half would open data stored after its retirement. Held until the
      // commit on PostgreSQL, so a retirement (`Keyring.remove`) waits and destroys the copy.
      let live = trx.selectFrom('encryption_keys').select('id').where('id', 'in', extra.map((r) => r.id)).where('status', '!=', 'destroyed');
      if (dialectOf(trx) === 'postgres') live = live.forShare();
      const kept = new Set((await live.execute()).map((r) => r.id));
      extra = extra.filter((r) => kept.has(r.id));
    }
    if (extra.length > 0) {
      await trx
        .insertInto('subject_key_wraps')
        .values(extra.map((r) => ({ subject_key_id: id, encryption_key_id: r.id, wrapped_key: wrapDataKey(r.publicKey, key), created_date: now })))
        .execute();
    }
    // If the transaction rolls back, the row check above discards this entry on next use.
    this.byId.set(id, { key, entityId, encryptionKeyId: wrapping.id });
    this.current.set(entityId, id);
    return { id, key };
  }

  /** The cached data key `forStore` would reuse for this subject, provided its row still exists. */
  reusable(entityId: string, wrapping: RegisteredKey): string | undefined {
    const currentId = this.current.get(entityId);
    const cached = currentId === undefined ? undefined : this.byId.get(currentId);
    return cached && cached.entityId === entityId && cached.encryptionKeyId === wrapping.id ? currentId : undefined;
  }

  /**
   * The data keys with these ids, for a caller holding `credential`. Keys wrapped by
   * another registered key are 400 (this private key cannot be the right one). Ids whose
   * row is gone (a subject purged meanwhile) are absent from the answer.
   */
  async forRead(db: Kysely<Database>, ids: Iterable<string>, credential: DecryptionCredential): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const cached = this.byId.get(id);
      if (cached && cached.encryptionKeyId === credential.registered.id) out.set(id, cached.key);
      else missing.push(id);
    }
    this.hits += out.size;
    this.misses += missing.length;
    for (let i = 0; i < missing.length; i += CHUNK) {
      const rows = await db.selectFrom('subject_keys').selectAll().where('id', 'in', missing.slice(i, i + CHUNK)).execute();
      const foreign = rows.filter((row) => row.encryption_key_id !== credential.registered.id).map((row) => row.id);
      const wraps = new Map<string, Buffer>();
      if (foreign.length > 0) {
        const found = await db
          .selectFrom('subject_key_wraps')
          .select(['subject_key_id', 'wrapped_key'])
          .where('subject_key_id', 'in', foreign)
          .where('encryption_key_id', '=', credential.registered.id)
          .execute();
        for (const w of found) wraps.set(w.subject_key_id, Buffer.from(w.wrapped_key));
      }
      for (const row of rows) {
        const wrapped = row.encryption_key_id === credential.registered.id ? Buffer.from(row.wrapped_key) : wraps.get(row.id);
        if (!wrapped) throw badRequest(INVALID_KEY);
        let key: Buffer;
        try {
          this.unwraps++;
          key = unwrapDataKey(credential.privateKey(), wrapped);
        } catch (err) {
          if (err instanceof EnvelopeError) throw badRequest(INVALID_KEY);
          throw err;
        }
        this.byId.set(row.id, { key, entityId: row.entity_id, encryptionKeyId: credential.registered.id });
        if (this.current.get(row.entity_id) === undefined) this.current.set(row.entity_id, row.id);
        out.set(row.id, key);
      }
    }
    return out;
  }

  /**
   * Key rotation, step one: gives every data key wrapped by `from` (proven by its private
   * key) a second wrapped copy under `to`. Both private keys then read everything, so
   * clients switch keys while the vault keeps serving. Values are not re-encrypted: their
   * data keys stay the same. Each batch commits on its own, with what `onBatch` writes in
   * its transaction (the rotation's record of it): an interrupted rewrap leaves exactly the
   * batches it committed, each with its record. Returns the number of data keys that gained
   * a copy.
   */
  async rewrap(db: Kysely<Database>, from: DecryptionCredential, to: RegisteredKey, { batchSize = 200, onBatch }: RewrapOptions = {}): Promise<number> {
    if (from.registered.id === to.id) return 0;
    let done = 0;
    let after = '';
    for (;;) {
      const rows = await db
        .selectFrom('subject_keys')
        .select(['id', 'wrapped_key'])
        .where('encryption_key_id', '=', from.registered.id)
        .where('id', '>', after)
        .where((eb) =>
          eb.not(eb.exists(eb.selectFrom('subject_key_wraps').select('subject_key_id').whereRef('subject_key_wraps.subject_key_id', '=', 'subject_keys.id').where('subject_key_wraps.encryption_key_id', '=', to.id))),
        )
        .orderBy('id')
        .limit(batchSize)
        .execute();
      if (rows.length === 0) return done;
      const now = new Date().toISOString();
      const copies = rows.map((row) => {
        let key: Buffer;
        try {
          this.unwraps++;
          key = unwrapDataKey(from.privateKey(), Buffer.from(row.wrapped_key));
        } catch (err) {
          if (err instanceof EnvelopeError) throw badRequest(INVALID_KEY);
          throw err;
        }
        return { subject_key_id: row.id, encryption_key_id: to.id, wrapped_key: wrapDataKey(to.publicKey, key), created_date: now };
      });
      // The RSA work above stays outside the transaction: on SQLite it would hold the one
      // writer meanwhile, and every store of a serving vault would wait for it.
      done += await db.transaction().execute(async (trx) => {
        // Copies only of keys still there, held until commit: a purge deletes the key first
        // (`DataPointDeleter`), so on PostgreSQL it waits for this batch and then deletes the
        // copies made, or went first and leaves nothing here to copy. A copy outliving its
        // purged key would undo the crypto-shredding. SQLite runs one writer at a time.
        let live = trx.selectFrom('subject_keys').select('id').where('id', 'in', rows.map((r) => r.id));
        if (dialectOf(trx) === 'postgres') live = live.forShare();
        const kept = new Set((await live.execute()).map((r) => r.id));
        const alive = copies.filter((c) => kept.has(c.subject_key_id));
        if (alive.length === 0) return 0;
        const inserted = await trx
          .insertInto('subject_key_wraps')
          .values(alive)
          .onConflict((oc) => oc.columns(['subject_key_id', 'encryption_key_id']).doNothing())
          .executeTakeFirst();
        // Counted as committed: a concurrent rewrap that made some copies first counts those.
        const gained = Number(inserted.numInsertedOrUpdatedRows ?? 0);
        if (gained > 0) await onBatch?.(trx, gained);
        return gained;
      });
      after = rows[rows.length - 1].id;
    }
  }

  /**
   * Key rotation, step two: the retiring key's wrapped copies are destroyed, each data key
   * keeping the copy another key holds. Refused while any data key has no other copy (run
   * `rewrap` first). Afterwards the old private key opens nothing in the live database, and
   * once it is destroyed, backups taken before the rotation are unreadable too.
   */
  async retire(db: Kysely<Database>, retiring: RegisteredKey, onto: RegisteredKey, batchSize = 500): Promise<number> {
    const stranded = await db
      .selectFrom('subject_keys')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('encryption_key_id', '=', retiring.id)
      .where((eb) =>
        eb.not(eb.exists(eb.selectFrom('subject_key_wraps').select('subject_key_id').whereRef('subject_key_wraps.subject_key_id', '=', 'subject_keys.id').where('subject_key_wraps.encryption_key_id', '=', onto.id))),
      )
      .executeTakeFirstOrThrow();
    if (Number(stranded.n) > 0) throw badRequest(`${Number(stranded.n)} data keys are readable only with the retiring key: run rewrap first`);
    let moved = 0;
    for (;;) {
      const done = await db.transaction().execute(async (trx) => {
        const rows = await trx
          .selectFrom('subject_keys')
          .innerJoin('subject_key_wraps', 'subject_key_wraps.subject_key_id', 'subject_keys.id')
          .select(['subject_keys.id as id', 'subject_key_wraps.wrapped_key as wrapped'])
          .where('subject_keys.encryption_key_id', '=', retiring.id)
          .where('subject_key_wraps.encryption_key_id', '=', onto.id)
          .limit(batchSize)
          .execute();
        for (const row of rows) {
          await trx.updateTable('subject_keys').set({ encryption_key_id: onto.id, wrapped_key: Buffer.from(row.wrapped) }).where('id', '=', row.id).execute();
          await trx.deleteFrom('subject_key_wraps').where('subject_key_id', '=', row.id).where('encryption_key_id', '=', onto.id).execute();
        }
        return rows.length;
      });
      moved += done;
      if (done === 0) break;
    }
    // Data keys made after the register rest on the active key already; their copies under
    // the retiring one go here, and they count as much as those moved above.
    const copies = await db.deleteFrom('subject_key_wraps').where('encryption_key_id', '=', retiring.id).executeTakeFirst();
    this.byId.deleteWhere((cached) => cached.encryptionKeyId === retiring.id);
    return moved + Number(copies.numDeletedRows);
  }

  /** Forgets every key of a purged subject, so not even this process can read its values. */
  evictEntity(entityId: string): void {
    this.byId.deleteWhere((cached) => cached.entityId === entityId);
    this.current.delete(entityId);
  }

  clear(): void {
    this.byId.clear();
    this.current.clear();
  }
}
