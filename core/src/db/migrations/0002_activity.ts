import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.js';

export async function up(db: Kysely<any>): Promise<void> {
  const dialect = dialectOf(db);
  await db.schema
    .createTable('activity_log')
    // Assigned by the appender, not the database, so the chain's order is the key's order.
    .addColumn('sequence', dialect === 'postgres' ? 'bigint' : 'integer', (c) => c.primaryKey())
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
    .addColumn('hash', 'text', (c) => c.notNull())
    .execute();
  // The dedupe key of audit events: an event id counts once per submitting application.
  await db.schema.createIndex('activity_log_event').on('activity_log').columns(['recorded_by', 'event_id']).unique().execute();
  await db.schema.createIndex('activity_log_by_subject').on('activity_log').columns(['subject_id', 'sequence']).execute();
  await db.schema.createIndex('activity_log_by_point').on('activity_log').columns(['data_point_id', 'sequence']).execute();
  await db.schema.createIndex('activity_log_by_application').on('activity_log').columns(['application_id', 'sequence']).execute();
  await db.schema.createIndex('activity_log_by_time').on('activity_log').columns(['event_time', 'sequence']).execute();

  // Append-only at the database too: the hash chain detects tampering, this stops accidents.
  if (dialect === 'postgres') {
    await sql`create function activity_log_append_only() returns trigger language plpgsql as $$
      begin raise exception 'activity_log is append-only'; end $$`.execute(db);
    await sql`create trigger activity_log_no_update before update or delete on activity_log
      for each row execute function activity_log_append_only()`.execute(db);
  } else {
    await sql`create trigger activity_log_no_update before update on activity_log
      begin select raise(abort, 'activity_log is append-only'); end`.execute(db);
    await sql`create trigger activity_log_no_delete before delete on activity_log
      begin select raise(abort, 'activity_log is append-only'); end`.execute(db);
  }
}

export async function down(): Promise<void> {
  throw new Error('the activity log migration is not reversible');
}
