import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { nowIso } from '../util/time.js';

/**
 * Makes the entity's "days since read" policies due now. A sweep that finds an entity held
 * looks at it again only a day later; a hold or a prohibition of deletes being lifted must
 * not leave the points it kept past their retention for that long. Called in the lifting
 * transaction, so the next sweep after its commit checks them.
 */
export async function recheckIdleRetention(trx: Kysely<Database>, entityId: string): Promise<void> {
  const now = nowIso();
  await trx.updateTable('idle_retention').set({ next_check: now }).where('entity_id', '=', entityId).where('next_check', '>', now).execute();
}
