import type { Kysely } from 'kysely';

/**
 * Administrative changes (an application's access or key, a legal hold, a rule) are recorded
 * in the activity log as `CHANGE` records, chained with the data events (`activity/changes.ts`).
 * The column is nullable: the records before it, and every data event, have none.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['activity_log', 'activity_pending']) {
    await db.schema.alterTable(table).addColumn('change', 'text').execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('the activity log migration is not reversible');
}
