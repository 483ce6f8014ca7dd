import type { Kysely } from 'kysely';
import { blobType, dialectOf } from '../dialect.js';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('applications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('api_key_hash', 'text', (c) => c.notNull().unique())
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('encryption_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('public_key_pem', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('entity_types')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .addColumn('description', 'text')
    .addColumn('system', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('tags')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('regulations')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .addColumn('url', 'text')
    .addColumn('builtin', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('attribute_definitions')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text')
    .addColumn('hint', 'text')
    .addColumn('schema', 'text', (c) => c.notNull())
    .addColumn('repeatable', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('indexed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('immutable', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();

  for (const [table, column] of [
    ['definition_tags', 'tag'],
    ['definition_regulations', 'regulation'],
    ['definition_entity_types', 'entity_type'],
  ] as const) {
    await db.schema
      .createTable(table)
      .addColumn('definition_key', 'text', (c) => c.notNull())
      .addColumn(column, 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ['definition_key', column])
      .execute();
    await db.schema.createIndex(`${table}_by_${column}`).on(table).column(column).execute();
  }

  await db.schema
    .createTable('entities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('legal_hold', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('updated_date', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('entities_by_type').on('entities').columns(['type', 'created_date']).execute();

  await db.schema
    .createTable('entity_tags')
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('tag', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('entity_tags_pk', ['entity_id', 'tag'])
    .execute();
  await db.schema.createIndex('entity_tags_by_tag').on('entity_tags').column('tag').execute();

  await createDataPlane(db);
}

/** Data points live beside the registry because tag, regulation and definition deletes reach into them. */
async function createDataPlane(db: Kysely<any>): Promise<void> {
  const blob = blobType(dialectOf(db));
  await db.schema
    .createTable('subject_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('encryption_key_id', 'text', (c) => c.notNull())
    .addColumn('wrapped_key', blob, (c) => c.notNull())
    .addColumn('created_date', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('subject_keys_by_entity').on('subject_keys').column('entity_id').execute();

  await db.schema
    .createTable('datapoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('entity_id', 'text', (c) => c.notNull())
    .addColumn('attribute', 'text', (c) => c.notNull())
    .addColumn('definition_key', 'text', (c) => c.notNull())
    .addColumn('structure_root_id', 'text')
    .addColumn('report_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('sensitivity', 'text', (c) => c.notNull())
    .addColumn('subject_key_id', 'text')
    .addColumn('ciphertext', blob)
    .addColumn('blind_index', 'text')
    .addColumn('country', 'text')
    .addColumn('subdivision', 'text')
    .addColumn('city', 'text')
    .addColumn('expires_at', 'text')
    .addColumn('auto_delete', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_date', 'text', (c) => c.notNull())
    .addColumn('modified_date', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('datapoints_by_entity').on('datapoints').columns(['entity_id', 'definition_key']).execute();
  await db.schema.createIndex('datapoints_by_index').on('datapoints').columns(['attribute', 'blind_index']).execute();
  await db.schema.createIndex('datapoints_by_definition').on('datapoints').column('definition_key').execute();
  await db.schema.createIndex('datapoints_by_created').on('datapoints').columns(['created_date', 'id']).execute();
  await db.schema.createIndex('datapoints_by_root').on('datapoints').column('structure_root_id').execute();
  await db.schema.createIndex('datapoints_by_expiry').on('datapoints').column('expires_at').execute();

  for (const [table, column] of [
    ['datapoint_tags', 'tag'],
    ['datapoint_regulations', 'regulation'],
  ] as const) {
    await db.schema
      .createTable(table)
      .addColumn('datapoint_id', 'text', (c) => c.notNull())
      .addColumn(column, 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ['datapoint_id', column])
      .execute();
    await db.schema.createIndex(`${table}_by_${column}`).on(table).column(column).execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('the registry migration is not reversible');
}
