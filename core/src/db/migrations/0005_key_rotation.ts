import type { Kysely } from 'kysely';
import { blobType, dialectOf } from '../dialect.js';

/** Extra wrapped copies of data keys, so two key pairs read the same data during a rotation. */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('subject_key_wraps')
    .addColumn('subject_key_id', 'text', (c) => c.notNull())
    .addColumn('encryption_key_id', 'text', (c) => c.notNull())
    .addColumn('wrapped_key', blobType(dialectOf(db)), (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('subject_key_wraps_pk', ['subject_key_id', 'encryption_key_id'])
    .execute();
  await db.schema.createIndex('subject_key_wraps_by_key').on('subject_key_wraps').column('encryption_key_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('subject_key_wraps').execute();
}
