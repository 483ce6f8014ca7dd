import type { Kysely } from 'kysely';

/** The blind-index key's digest (`blindindex/key-check.ts`): one row, written by the first start. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('index_key_check')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('digest', 'text', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('the index key check migration is not reversible');
}
