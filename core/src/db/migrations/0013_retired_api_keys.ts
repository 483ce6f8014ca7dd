import type { Kysely } from 'kysely';

/**
 * Digests of API keys taken out of service: replaced by a roll, or their application deleted.
 * Such a key may be one that leaked, so it never signs in or becomes a key again; above all
 * `VAULT_ADMIN_API_KEY` left at a rolled key would otherwise make it an admin at the next start.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('retired_api_keys')
    .addColumn('key_hash', 'text', (c) => c.primaryKey())
    .addColumn('application_id', 'text', (c) => c.notNull())
    .addColumn('retired_date', 'text', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('the retired API keys migration is not reversible');
}
