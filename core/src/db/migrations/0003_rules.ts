import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('rules')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('definition', 'text', (c) => c.notNull())
    .addColumn('execution_order', 'integer', (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rules_by_name').on('rules').column('name').execute();

  await db.schema
    .createTable('rules_version')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .execute();
  await db.insertInto('rules_version').values({ id: 1, version: 0 }).execute();

  await db.schema
    .createTable('entity_prohibitions')
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('rule_key', 'text', (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('entity_prohibitions_pk', ['entity_id', 'operation'])
    .execute();

  await db.schema
    .createTable('idle_retention')
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('definition_key', 'text', (c) => c.notNull())
    .addColumn('days', 'integer', (c) => c.notNull())
    .addColumn('next_check', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('idle_retention_pk', ['entity_id', 'definition_key'])
    .execute();
  await db.schema.createIndex('idle_retention_by_check').on('idle_retention').column('next_check').execute();

  await db.schema
    .createTable('alerts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('rule_key', 'text', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('entity_id', 'text')
    .addColumn('attribute', 'text')
    .addColumn('datapoint_id', 'text')
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('alerts_by_time').on('alerts').columns(['created_date', 'id']).execute();
  await db.schema.createIndex('alerts_by_rule').on('alerts').columns(['rule_key', 'created_date']).execute();
}

export async function down(): Promise<void> {
  throw new Error('the rules migration is not reversible');
}
