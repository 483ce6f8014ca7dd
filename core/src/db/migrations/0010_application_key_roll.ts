import type { Kysely } from 'kysely';

/**
 * An application's key can be rolled without changing the application: its id is what the
 * activity log names and what the sidecar's deliveries are deduplicated by, so a new
 * application for a new key split one caller's history in two and recorded again whatever a
 * sidecar redelivered under it. The key it replaces may stay valid for a while, so clients
 * move to the new one at their own pace.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('applications').addColumn('previous_key_hash', 'text').execute();
  await db.schema.alterTable('applications').addColumn('previous_key_expires', 'text').execute();
  await db.schema.createIndex('applications_previous_key').on('applications').column('previous_key_hash').unique().execute();
}

export async function down(): Promise<void> {
  throw new Error('the application key roll migration is not reversible');
}
