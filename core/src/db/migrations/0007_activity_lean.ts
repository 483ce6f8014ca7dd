import { sql, type Kysely } from 'kysely';

/**
 * READ records leave the per-point index. Every record costs one page write per index whose
 * key is random (a point id, a subject id), and reads are most of the log: a subject read
 * wrote 20 entries at 20 places of the point index, against one place of the subject index
 * (its records share a subject and follow each other). Records of a point are still found
 * quickly: every record names the point's subject, the subject index narrows to it, and the
 * partial index keeps the point's STORE, UPDATE and DELETE records, which name the subjects
 * a point ever had once it is gone from `datapoints`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('activity_log_by_point').execute();
  await db.schema
    .createIndex('activity_log_by_point')
    .on('activity_log')
    .columns(['data_point_id', 'sequence'])
    .where(sql<boolean>`event_type <> 'READ'`)
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('the activity log migration is not reversible');
}
