/**
 * Rotation of the vault's encryption key, as an operator runs it from the command line while
 * the vault keeps serving: register the new key (it becomes the active one), rewrap every data
 * key under it, move clients to the new private key, retire the old key. Each step is
 * recorded in the activity log (`CHANGE`, target `encryptionKey`, never a key), so the log
 * shows when the keys that protect the data changed and who changed them.
 */
import type { KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ActivityLog } from '../activity/log.js';
import { recordChange, type ChangeActor } from '../activity/changes.js';
import { nowIso } from '../util/time.js';
import type { DataKeys } from './datakeys.js';
import type { Keyring, RegisteredKey } from './keys.js';

export class KeyRotation {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly keyring: Keyring,
    private readonly dataKeys: DataKeys,
    private readonly activity: ActivityLog,
  ) {}

  /** Step one: the new key becomes the active one; the previous one still reads until retired. */
  register(publicKey: KeyObject, actor: ChangeActor): Promise<RegisteredKey> {
    return this.keyring.register(publicKey, 'active', actor);
  }

  /**
   * Step two: every data key under the key whose private half is `oldPrivateKeyHeader` gains
   * a copy under the active key. It runs in batches while the vault serves; each batch
   * commits with its own record (`rewrap`, `fields.dataKeys`: that batch's count), so the
   * log holds exactly the copies that exist, even of a rewrap interrupted midway (run it
   * again: it goes on with the rest). Returns the number of copies made.
   */
  async rewrap(oldPrivateKeyHeader: string, actor: ChangeActor, { batchSize }: { batchSize?: number } = {}): Promise<number> {
    const old = await this.keyring.requireDecryptionKey(oldPrivateKeyHeader);
    const active = await this.keyring.active();
    if (!active) throw new Error('register the new key first (vault keys register)');
    if (active.id === old.registered.id) {
      throw new Error(`--old-private-key is the active key's own (${active.id}): give the private key of the key being replaced, or register the new key first (vault keys register)`);
    }
    return this.dataKeys.rewrap(this.db, old, active, {
      batchSize,
      onBatch: (trx, count) => recordChange(this.activity, trx, actor, { target: 'encryptionKey', id: old.registered.id, action: 'rewrap', fields: { onto: active.id, dataKeys: count } }, nowIso()),
    });
  }

  /**
   * Step three: the old key's wrapped copies are destroyed and the key unregistered, so its
   * private half opens nothing in the live database. Returns the number of data keys that
   * now rest on the active key alone.
   */
  async retire(id: string, actor: ChangeActor): Promise<number> {
    const retiring = await this.keyring.byId(id);
    const active = await this.keyring.active();
    if (!retiring) throw new Error(`no registered key ${id}`);
    if (!active || active.id === retiring.id) throw new Error('the active key cannot be retired: register its successor first');
    const moved = await this.dataKeys.retire(this.db, retiring, active);
    return this.keyring.remove(retiring.id, actor, active.id, moved);
  }
}
