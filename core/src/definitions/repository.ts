import type { Kysely } from 'kysely';
import type { AttributeDefinitionsTable, Database } from '../db/schema.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import type { Schema } from './schema.js';

export interface Definition {
  key: string;
  name: string | null;
  hint: string | null;
  schema: Schema;
  repeatable: boolean;
  indexed: boolean;
  immutable: boolean;
  tags: string[];
  regulations: string[];
  /** Empty means `datasubject` only. */
  entityTypes: string[];
  createdDate: string;
  modifiedDate: string;
}

/** Whether entities of `entityType` may hold this attribute; no types listed means data subjects only. */
export function appliesTo(definition: Definition, entityType: string): boolean {
  return definition.entityTypes.length > 0 ? definition.entityTypes.includes(entityType) : entityType === DATASUBJECT;
}

/** Loads definitions with their tags, regulations and entity types, keyed by definition key. */
export async function findDefinitions(db: Kysely<Database>, keys: readonly string[]): Promise<Map<string, Definition>> {
  const out = new Map<string, Definition>();
  const unique = [...new Set(keys)];
  if (unique.length === 0) return out;
  const rows = await db.selectFrom('attribute_definitions').selectAll().where('key', 'in', unique).execute();
  return assemble(db, rows);
}

export async function findDefinition(db: Kysely<Database>, key: string): Promise<Definition | undefined> {
  return (await findDefinitions(db, [key])).get(key);
}

export async function allDefinitions(db: Kysely<Database>): Promise<Definition[]> {
  const rows = await db.selectFrom('attribute_definitions').selectAll().orderBy('key').execute();
  return [...(await assemble(db, rows)).values()];
}

async function assemble(db: Kysely<Database>, rows: AttributeDefinitionsTable[]): Promise<Map<string, Definition>> {
  const out = new Map<string, Definition>();
  if (rows.length === 0) return out;
  const keys = rows.map((r) => r.key);
  const [tags, regulations, types] = await Promise.all([
    db.selectFrom('definition_tags').selectAll().where('definition_key', 'in', keys).orderBy('tag').execute(),
    db.selectFrom('definition_regulations').selectAll().where('definition_key', 'in', keys).orderBy('regulation').execute(),
    db.selectFrom('definition_entity_types').selectAll().where('definition_key', 'in', keys).orderBy('entity_type').execute(),
  ]);
  for (const row of rows) {
    out.set(row.key, {
      key: row.key,
      name: row.name,
      hint: row.hint,
      schema: JSON.parse(row.schema) as Schema,
      repeatable: row.repeatable === 1,
      indexed: row.indexed === 1,
      immutable: row.immutable === 1,
      tags: tags.filter((t) => t.definition_key === row.key).map((t) => t.tag),
      regulations: regulations.filter((r) => r.definition_key === row.key).map((r) => r.regulation),
      entityTypes: types.filter((t) => t.definition_key === row.key).map((t) => t.entity_type),
      createdDate: row.created_date,
      modifiedDate: row.modified_date,
    });
  }
  return out;
}

/**
 * Marks definitions changed that a tag's or regulation's delete takes a label from. Other
 * processes keep definitions for half a second, and a store confirms the ones it used by
 * `modified_date` before it writes: without this, one would label its points with the label
 * just deleted, and bring a deleted tag back.
 */
export async function touchDefinitions(trx: Kysely<Database>, keys: readonly string[], now: string): Promise<void> {
  if (keys.length === 0) return;
  await trx.updateTable('attribute_definitions').set({ modified_date: now }).where('key', 'in', [...new Set(keys)].sort()).execute();
}
