import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

/**
 * The activity log's write path without a global lock. Requests insert their records,
 * unchained, into `activity_pending` inside their own transactions; a sealer chains them
 * into `activity_log` in large batches. Event-id dedupe moves to its own table, because a
 * record moves from one table to the other and a unique index on either would miss a
 * duplicate that arrives while its twin is moving.
 *
 * Report-only points carry no blind index, no expiry and no structure root: partial indexes
 * leave them out of those three, so an audit event writes three index entries fewer.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const dialect = dialectOf(db);
  let pending = db.schema.createTable('activity_pending');
  // On SQLite an integer primary key is the rowid: no separate index to write.
  pending = dialect === 'postgres' ? pending.addColumn('id', 'bigserial', (c) => c.primaryKey()) : pending.addColumn('id', 'integer', (c) => c.primaryKey());
  await pending
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('recorded_by', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('data_point_id', 'text')
    .addColumn('attribute', 'text')
    .addColumn('application_id', 'text', (c) => c.notNull())
    .addColumn('application_user', 'text')
    .addColumn('data_store_name', 'text')
    .addColumn('data_store_server', 'text')
    .addColumn('data_store_entity_name', 'text')
    .addColumn('country', 'text')
    .addColumn('subdivision', 'text')
    .addColumn('city', 'text')
    .addColumn('report_only', 'integer', (c) => c.notNull())
    .addColumn('event_time', 'text', (c) => c.notNull())
    .addColumn('recorded_date', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .execute();
  // A waiting record is as much the log as a sealed one: the sealer deletes it once chained,
  // nothing edits it.
  if (dialect === 'postgres') {
    await sql`create function activity_pending_no_update() returns trigger language plpgsql as $$
      begin raise exception 'activity_pending is append-only'; end $$`.execute(db);
    await sql`create trigger activity_pending_no_update before update on activity_pending
      for each row execute function activity_pending_no_update()`.execute(db);
  } else {
    await sql`create trigger activity_pending_no_update before update on activity_pending
      begin select raise(abort, 'activity_pending is append-only'); end`.execute(db);
  }

  await db.schema
    .createTable('activity_event_ids')
    .addColumn('recorded_by', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .addPrimaryKeyConstraint('activity_event_ids_pk', ['recorded_by', 'event_id'])
    .execute();
  // Only audit events name their own ids and get answers to repeat; generated ids never recur.
  await sql`insert into activity_event_ids (recorded_by, event_id, summary)
    select recorded_by, event_id, summary from activity_log where summary is not null`.execute(db);
  await db.schema.dropIndex('activity_log_event').execute();

  await db.schema.dropIndex('datapoints_by_value').execute();
  await db.schema
    .createIndex('datapoints_by_value')
    .on('datapoints')
    .columns(['attribute', 'blind_index', 'created_date', 'id'])
    .where(sql.ref('blind_index'), 'is not', null)
    .execute();
  await db.schema.dropIndex('datapoints_by_root').execute();
  await db.schema.createIndex('datapoints_by_root').on('datapoints').column('structure_root_id').where(sql.ref('structure_root_id'), 'is not', null).execute();
  await db.schema.dropIndex('datapoints_by_expiry').execute();
  await db.schema.createIndex('datapoints_by_expiry').on('datapoints').column('expires_at').where(sql.ref('expires_at'), 'is not', null).execute();
}

export async function down(): Promise<void> {
  throw new Error('the activity sealing migration is not reversible');
}
