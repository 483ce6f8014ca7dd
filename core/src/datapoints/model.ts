/**
 * The data point as every endpoint returns it, and the one function that builds it, so a
 * point reads the same from a store, a read, `GET /data/{id}` and search (minus `value`).
 */
import { sql, type Kysely } from 'kysely';
import { compiledQuery } from '../db/compiled.js';
import { jsonList, parseJsonList } from '../db/json-list.js';
import type { Database, DatapointsTable, Flag } from '../db/schema.js';
import { withOffset } from '../util/time.js';

export const SENSITIVITIES = ['NORMAL', 'PERSONAL', 'SENSITIVE', 'CONFIDENTIAL'] as const;
export type Sensitivity = (typeof SENSITIVITIES)[number];
export const SENSITIVITY_MESSAGE = `Sensitivity must be one of ${SENSITIVITIES.join(', ')}`;

export function isSensitivity(value: unknown): value is Sensitivity {
  return typeof value === 'string' && (SENSITIVITIES as readonly string[]).includes(value);
}

export interface DataPoint {
  dataPointId: string;
  entityId: string;
  /** Same as entityId: the ViziVault Java client reads this name. */
  subjectId: string;
  attribute: string;
  createdDate: string;
  modifiedDate: string;
  regulations: string[];
  tags: string[];
  sensitivity: string;
  reportOnly: boolean;
  structureRootId: string | null;
  value?: unknown;
}

/** Everything of a row but the ciphertext, which is loaded only where it is decrypted. */
export type PointRow = Omit<DatapointsTable, 'ciphertext'>;

export const POINT_COLUMNS = [
  'id',
  'entity_id',
  'attribute',
  'definition_key',
  'structure_root_id',
  'report_only',
  'sensitivity',
  'subject_key_id',
  'blind_index',
  'country',
  'subdivision',
  'city',
  'expires_at',
  'auto_delete',
  'created_date',
  'modified_date',
] as const;

/**
 * `report_only` of a vaulted point, for a query that wants only those: a literal in the SQL,
 * not a bound parameter. SQLite can meet a partial index's condition (`datapoints_vaulted_by_entity`
 * holds `report_only = 0`) with a parameter only by its value, so it prepares such a statement
 * without the index and then prepares it again each time the value is bound: a subject read
 * did so at every call (BENCHMARKS.md, item 22). PostgreSQL's generic plan of a prepared
 * statement cannot use the index for a parameter either.
 */
export const VAULTED = sql.lit<Flag>(0);

/**
 * What answering a read needs of a row, and no more: every column a row brings back costs a
 * property on a fresh object, and a subject read builds twenty of them (a third of its
 * select's time went to the columns below that reads never look at).
 */
export const READ_COLUMNS = ['id', 'entity_id', 'attribute', 'structure_root_id', 'report_only', 'sensitivity', 'subject_key_id', 'created_date', 'modified_date'] as const;

/** The columns a point is answered from. */
export type PointView = Pick<PointRow, (typeof READ_COLUMNS)[number]>;

const pointProperties = {
  dataPointId: { type: 'string' },
  entityId: { type: 'string' },
  subjectId: { type: 'string' },
  attribute: { type: 'string' },
  createdDate: { type: 'string', description: 'ISO 8601 with offset' },
  modifiedDate: { type: 'string', description: 'ISO 8601 with offset' },
  regulations: { type: 'array', items: { type: 'string' } },
  tags: { type: 'array', items: { type: 'string' } },
  sensitivity: { type: 'string', enum: [...SENSITIVITIES] },
  reportOnly: { type: 'boolean' },
  structureRootId: { type: 'string', nullable: true },
} as const;

/** Every member but `value` is always there: `required`, so generated clients need not guess. */
const pointRequired = Object.keys(pointProperties);

export const dataPointSchema = {
  type: 'object',
  required: pointRequired,
  properties: { ...pointProperties, value: { description: 'Decrypted value, as stored (string, number, boolean or structure)' } },
} as const;

export const searchResultSchema = { type: 'object', required: pointRequired, properties: pointProperties } as const;

export interface Labels {
  tags: Map<string, string[]>;
  regulations: Map<string, string[]>;
}

const CHUNK = 500;

const labelsOfOne = compiledQuery<[string, string], { kind: string; name: string }>(2, (db, tagsOf, regulationsOf) =>
  db
    .selectFrom('datapoint_tags')
    .select([sql<string>`'t'`.as('kind'), 'tag as name'])
    .where('datapoint_id', '=', tagsOf)
    .unionAll(db.selectFrom('datapoint_regulations').select([sql<string>`'r'`.as('kind'), 'regulation as name']).where('datapoint_id', '=', regulationsOf))
    .orderBy('kind')
    .orderBy('name'),
);

/**
 * A point's tags and regulations as JSON arrays in its own row, so a read is one statement
 * rather than three (each statement costs a read transaction of its own).
 */
export function labelColumns(db: Kysely<Database>) {
  return [
    jsonList(db, { table: 'datapoint_tags', value: 'tag', owner: 'datapoint_id', ownerKey: 'datapoints.id' }).as('tags_json'),
    jsonList(db, { table: 'datapoint_regulations', value: 'regulation', owner: 'datapoint_id', ownerKey: 'datapoints.id' }).as('regulations_json'),
  ] as const;
}

export interface LabelledRow {
  id: string;
  tags_json: unknown;
  regulations_json: unknown;
}

/** The labels carried by rows selected with `labelColumns`. */
export function labelsOf(rows: readonly LabelledRow[]): Labels {
  const list = (value: unknown): string[] => parseJsonList(value).sort();
  return {
    tags: new Map(rows.map((r) => [r.id, list(r.tags_json)])),
    regulations: new Map(rows.map((r) => [r.id, list(r.regulations_json)])),
  };
}

/** Tags and regulations of many points in two queries per chunk (one query for a single point). */
export async function loadLabels(db: Kysely<Database>, ids: readonly string[]): Promise<Labels> {
  const tags = new Map<string, string[]>();
  const regulations = new Map<string, string[]>();
  if (ids.length === 1) {
    for (const row of await labelsOfOne(db, ids[0], ids[0])) push(row.kind === 't' ? tags : regulations, ids[0], row.name);
    return { tags, regulations };
  }
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const [tagRows, regRows] = await Promise.all([
      db.selectFrom('datapoint_tags').select(['datapoint_id', 'tag']).where('datapoint_id', 'in', chunk).orderBy('tag').execute(),
      db.selectFrom('datapoint_regulations').select(['datapoint_id', 'regulation']).where('datapoint_id', 'in', chunk).orderBy('regulation').execute(),
    ]);
    for (const r of tagRows) push(tags, r.datapoint_id, r.tag);
    for (const r of regRows) push(regulations, r.datapoint_id, r.regulation);
  }
  return { tags, regulations };
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export function toDataPoint(row: PointView, labels: Labels, value?: { value: unknown }): DataPoint {
  const point: DataPoint = {
    dataPointId: row.id,
    entityId: row.entity_id,
    subjectId: row.entity_id,
    attribute: row.attribute,
    createdDate: withOffset(row.created_date),
    modifiedDate: withOffset(row.modified_date),
    regulations: labels.regulations.get(row.id) ?? [],
    tags: labels.tags.get(row.id) ?? [],
    sensitivity: row.sensitivity,
    reportOnly: row.report_only === 1,
    structureRootId: row.structure_root_id,
  };
  if (value) point.value = value.value;
  return point;
}
