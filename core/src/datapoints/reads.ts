/**
 * Reading values back: the caller proves it holds the private key, each data key it needs is
 * unwrapped once (then served from memory), and every read gets a READ record naming the points
 * it answered, committed before the answer leaves.
 */
import DataLoader from 'dataloader';
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import { canAccessAttribute, type Caller } from '../access/caller.js';
import type { ActivityRecord } from '../activity/log.js';
import type { DecryptionCredential } from '../crypto/keys.js';
import { OpenError, type SealedValue } from '../crypto/opener.js';
import { DATASUBJECT } from '../entitytypes/service.js';
import { badRequest, forbidden, notFound, tooLarge, VaultError } from '../errors.js';
import { compiledQuery } from '../db/compiled.js';
import type { Database } from '../db/schema.js';
import { dialectOf, idList, inIdList } from '../db/dialect.js';
import { prohibitedColumn, refuseIfProhibited } from '../rules/prohibitions.js';
import { nowIso } from '../util/time.js';
import { labelColumns, labelsOf, READ_COLUMNS, toDataPoint, VAULTED, type DataPoint, type LabelledRow, type PointView } from './model.js';
import { MESSAGES, type DataPlaneDeps, type PathForm } from './plane.js';

export interface ReadInput {
  entityId: string;
  /** The X-Decryption-Key header, as received. */
  decryptionKey: unknown;
  form: PathForm;
}

/** The sealed value: hex text from SQLite (see `sealedColumn`), a Buffer from PostgreSQL. */
type ReadRow = PointView & LabelledRow & { ciphertext: Buffer | string | null };

type PointRow = ReadRow & { prohibited: unknown };

/**
 * better-sqlite3 hands back each blob as a Buffer of its own memory, 3.5 µs apiece: twenty
 * were more than the rest of a subject read's select together. As hex text the same bytes
 * cost a string, and decoding it takes a slice of Node's shared buffer pool.
 */
const sealedColumn = (db: Kysely<Database>) => sql<Buffer | string | null>`${dialectOf(db) === 'postgres' ? sql`ciphertext` : sql`hex(ciphertext)`}`.as('ciphertext');

/** A point's row and its labels. */
const readRows = (db: Kysely<Database>) => db.selectFrom('datapoints').select(READ_COLUMNS).select(sealedColumn(db)).select(labelColumns(db));
/** A point's row, its labels, and whether a rule prohibits reading it: one statement. */
const pointRows = (db: Kysely<Database>) => readRows(db).select(prohibitedColumn('datapoints.entity_id', 'READ', 'prohibited'));
const pointById = compiledQuery<[string], PointRow>(1, (db, id) => pointRows(db).where('id', '=', id));
const pointsById = compiledQuery<[unknown], PointRow>(1, (db, ids) => pointRows(db).where(inIdList(db, 'datapoints.id', ids)));
/**
 * An entity's vaulted points, in the order they are answered. Compiled once per shape: a
 * subject read built and compiled its query per request. Lists of keys are one parameter
 * (`idList`), so each shape has one text.
 */
const entityPoints = (db: Kysely<Database>, entityId: string) =>
  readRows(db).where('entity_id', '=', entityId).where('report_only', '=', VAULTED).orderBy('created_date').orderBy('id');
/** The shapes of a subject's read, by what it asks for; the query-plan test checks each. */
export const subjectReads = {
  attribute: (db: Kysely<Database>, entityId: string, attribute: string) => entityPoints(db, entityId).where('attribute', '=', attribute),
  attributes: (db: Kysely<Database>, entityId: string, attributes: unknown) => entityPoints(db, entityId).where(inIdList(db, 'datapoints.attribute', attributes)),
  roots: (db: Kysely<Database>, entityId: string) => entityPoints(db, entityId).where('structure_root_id', 'is', null),
  rootsOfDefinitions: (db: Kysely<Database>, entityId: string, keys: unknown) =>
    entityPoints(db, entityId).where('structure_root_id', 'is', null).where(inIdList(db, 'datapoints.definition_key', keys)),
};
const pointsOfAttribute = compiledQuery<[string, string], ReadRow>(2, subjectReads.attribute);
const pointsOfAttributes = compiledQuery<[string, unknown], ReadRow>(2, subjectReads.attributes);
const rootsOf = compiledQuery<[string], ReadRow>(1, subjectReads.roots);
const rootsOfDefinitions = compiledQuery<[string, unknown], ReadRow>(2, subjectReads.rootsOfDefinitions);

/**
 * What a point costs an answer besides its value (ids, dates, labels, its entry in the READ
 * record), so that a subject of countless tiny points is bounded too.
 */
export const READ_POINT_ALLOWANCE = 512;

interface AnswerSize {
  points: number | string;
  bytes: number | string | null;
}
/** The same shape's points and the sealed size of their values, without reading a value. */
const sizeOf = (query: SelectQueryBuilder<Database, 'datapoints', object>) =>
  query
    .clearSelect()
    .clearOrderBy()
    .select([sql<number | string>`count(*)`.as('points'), sql<number | string | null>`sum(length(ciphertext))`.as('bytes')]);
/** The size of each shape of `subjectReads`; the query-plan test checks each walks the same index. */
export const subjectReadSizes = {
  attribute: (db: Kysely<Database>, entityId: string, attribute: string) => sizeOf(subjectReads.attribute(db, entityId, attribute)),
  attributes: (db: Kysely<Database>, entityId: string, attributes: unknown) => sizeOf(subjectReads.attributes(db, entityId, attributes)),
  roots: (db: Kysely<Database>, entityId: string) => sizeOf(subjectReads.roots(db, entityId)),
  rootsOfDefinitions: (db: Kysely<Database>, entityId: string, keys: unknown) => sizeOf(subjectReads.rootsOfDefinitions(db, entityId, keys)),
};
const sizeOfAttribute = compiledQuery<[string, string], AnswerSize>(2, subjectReadSizes.attribute);
const sizeOfAttributes = compiledQuery<[string, unknown], AnswerSize>(2, subjectReadSizes.attributes);
const sizeOfRoots = compiledQuery<[string], AnswerSize>(1, subjectReadSizes.roots);
const sizeOfRootsOfDefinitions = compiledQuery<[string, unknown], AnswerSize>(2, subjectReadSizes.rootsOfDefinitions);

export const readTooLargeMessage = (limit: number) =>
  `The values asked for exceed ${limit} bytes (VAULT_READ_LIMIT): ask for fewer attributes, or read one point at a time with GET /data/{dataPointId}`;
const entityById = compiledQuery<[string], { id: string; type: string; prohibited: unknown }>(1, (db, id) =>
  db.selectFrom('entities').select(['id', 'type']).select(prohibitedColumn('entities.id', 'READ', 'prohibited')).where('id', '=', id),
);

/**
 * A read's activity: one record naming every point it answered, rather than a record per
 * point, which cost a subject read of twenty points more than the rest of it together. The
 * points of one read share their subject (and, but for `GET /data/{id}`, are all vaulted);
 * were they ever to differ in either, each kind gets a record of its own.
 */
export function readRecords(applicationId: string, points: readonly DataPoint[], timestamp: string): ActivityRecord[] {
  const [first] = points;
  // Completed by assignment: a literal that opens with a spread and adds fields takes V8's slow
  // path, 2 µs a read (see `bench/spread.mjs`).
  const record: ActivityRecord = { eventType: 'READ', subjectId: first.entityId, applicationId, reportOnly: first.reportOnly, timestamp };
  if (points.length === 1) {
    record.dataPointId = first.dataPointId;
    record.attribute = first.attribute;
    return [record];
  }
  if (points.every((p) => p.entityId === first.entityId && p.reportOnly === first.reportOnly)) {
    record.points = points.map((p) => ({ dataPointId: p.dataPointId, attribute: p.attribute }));
    return [record];
  }
  const kinds = new Map<string, DataPoint[]>();
  for (const p of points) {
    const kind = `${p.reportOnly}\u0000${p.entityId}`;
    kinds.set(kind, [...(kinds.get(kind) ?? []), p]);
  }
  return [...kinds.values()].flatMap((same) => readRecords(applicationId, same, timestamp));
}

export class DataPointReader {
  /**
   * On PostgreSQL, reads by id that arrive in the same turn of the event loop share one
   * statement: there a statement's socket write cost the vault more than its rows (a third of
   * a read's CPU was `writev`). Each read still answers from the state the statement saw,
   * checked for its own caller, and nothing is kept between turns. SQLite answers a statement
   * in microseconds in-process, and waiting a turn for company only made the answer later.
   */
  private readonly batched?: DataLoader<string, PointRow | undefined>;

  constructor(private readonly deps: DataPlaneDeps) {
    if (dialectOf(deps.reader) !== 'postgres') return;
    this.batched = new DataLoader(
      async (ids) => {
        const rows = await pointsById(deps.reader, idList(deps.reader, ids));
        const byId = new Map(rows.map((r) => [r.id, r]));
        return ids.map((id) => byId.get(id));
      },
      { cache: false, batchScheduleFn: (run) => setImmediate(run), maxBatchSize: 500 },
    );
  }

  /** `GET .../{entityId}/attributes/{attributeKey}`: every value of one attribute. */
  async readAttribute(caller: Caller, input: ReadInput & { attributeKey: string }): Promise<DataPoint[]> {
    const credential = await this.deps.keyring.requireDecryptionKey(input.decryptionKey);
    if (!canAccessAttribute(caller, input.attributeKey)) throw forbidden();
    await this.readableEntity(input.entityId, input.form);
    this.refuseIfTooLarge(await sizeOfAttribute(this.deps.reader, input.entityId, input.attributeKey));
    const rows = await pointsOfAttribute(this.deps.reader, input.entityId, input.attributeKey);
    return this.answer(caller, rows, credential);
  }

  /**
   * `GET .../{entityId}/attributes[?attributes=A,B]`: the listed attributes (each must be
   * accessible), or every root value the application may access.
   */
  async readAttributes(caller: Caller, input: ReadInput & { attributes?: string[] }): Promise<DataPoint[]> {
    const credential = await this.deps.keyring.requireDecryptionKey(input.decryptionKey);
    const requested = input.attributes
      ?.flatMap((a) => a.split(','))
      .map((a) => a.trim())
      .filter((a) => a.length > 0);
    const listed = requested !== undefined && requested.length > 0;
    if (listed && requested.some((a) => !canAccessAttribute(caller, a))) throw forbidden();
    await this.readableEntity(input.entityId, input.form);
    const reader = this.deps.reader;
    let rows: ReadRow[];
    if (listed) {
      const attributes = [...new Set(requested)];
      this.refuseIfTooLarge(await sizeOfAttributes(reader, input.entityId, idList(reader, attributes)));
      rows = await pointsOfAttributes(reader, input.entityId, idList(reader, attributes));
    } else if (caller.attributes === '*') {
      this.refuseIfTooLarge(await sizeOfRoots(reader, input.entityId));
      rows = await rootsOf(reader, input.entityId);
    } else {
      if (caller.attributes.size === 0) throw notFound(MESSAGES.dataNotFound);
      const keys = [...caller.attributes];
      this.refuseIfTooLarge(await sizeOfRootsOfDefinitions(reader, input.entityId, idList(reader, keys)));
      rows = await rootsOfDefinitions(reader, input.entityId, idList(reader, keys));
    }
    return this.answer(caller, rows, credential);
  }

  /**
   * `GET /data/{dataPointId}`. A point of an attribute the caller may not access is answered
   * exactly like an id that does not exist, so ids cannot be probed. A report-only point has
   * no value to return.
   */
  async readPoint(caller: Caller, dataPointId: string, decryptionKey: unknown): Promise<DataPoint> {
    const credential = await this.deps.keyring.requireDecryptionKey(decryptionKey);
    const row = this.batched ? await this.batched.load(dataPointId) : (await pointById(this.deps.reader, dataPointId))[0];
    if (!row || !canAccessAttribute(caller, row.attribute)) throw notFound(MESSAGES.dataNotFound);
    refuseIfProhibited(row.prohibited);
    const [point] = await this.answer(caller, [row], credential);
    return point;
  }

  /**
   * An answer is built whole (rows, opened values, its JSON), so the vault holds it several
   * times over: one of several points is refused, before any value is read, when it would
   * exceed `VAULT_READ_LIMIT`. A single value is always answered, however large.
   */
  private refuseIfTooLarge([size]: AnswerSize[]): void {
    const points = Number(size?.points ?? 0);
    if (points > 1 && Number(size.bytes ?? 0) + points * READ_POINT_ALLOWANCE > this.deps.readLimit) throw tooLarge(readTooLargeMessage(this.deps.readLimit));
  }

  private async readableEntity(entityId: string, form: PathForm): Promise<void> {
    const [entity] = await entityById(this.deps.reader, entityId);
    if (!entity) throw notFound(MESSAGES.dataNotFound);
    if (form === 'datasubjects' && entity.type !== DATASUBJECT) throw badRequest(MESSAGES.notDataSubject);
    refuseIfProhibited(entity.prohibited);
  }

  /** Opens the rows, records the reads, and answers them (404 when nothing is left to answer). */
  private async answer(caller: Caller, rows: ReadRow[], credential: DecryptionCredential): Promise<DataPoint[]> {
    const points = await this.decrypt(rows, credential);
    if (points.length === 0) throw notFound(MESSAGES.dataNotFound);
    await this.deps.activity().record(readRecords(caller.applicationId, points, nowIso()));
    return points;
  }

  /**
   * Opens the rows' values: one RSA decryption per data key not yet in memory, none for the
   * rest. Rows whose data key is gone (purged meanwhile) are left out.
   */
  private async decrypt(rows: ReadRow[], credential: DecryptionCredential): Promise<DataPoint[]> {
    if (rows.length === 0) return [];
    const keyIds = rows.filter((r) => r.ciphertext && r.subject_key_id).map((r) => r.subject_key_id!);
    const keys = await this.deps.dataKeys.forRead(this.deps.reader, keyIds, credential);
    const sealed: SealedValue[] = [];
    /** Each answered row, with the position of its value among `sealed` when it has one. */
    const answered: Array<{ row: ReadRow; sealedAt?: number }> = [];
    for (const row of rows) {
      if (!row.ciphertext || !row.subject_key_id) {
        answered.push({ row });
        continue;
      }
      const dataKey = keys.get(row.subject_key_id);
      if (!dataKey) continue;
      answered.push({ row, sealedAt: sealed.length });
      sealed.push({ dataKey, sealed: row.ciphertext, dataPointId: row.id, attribute: row.attribute });
    }
    let values: unknown[];
    try {
      values = await this.deps.opener.open(sealed);
    } catch (err) {
      if (!(err instanceof OpenError)) throw err;
      this.deps.logger.error({ dataPointId: sealed[err.index].dataPointId }, 'a stored ciphertext failed authentication');
      throw new VaultError(500, MESSAGES.integrity);
    }
    const labels = labelsOf(answered.map((a) => a.row));
    return answered.map(({ row, sealedAt }) => (sealedAt === undefined ? toDataPoint(row, labels) : toDataPoint(row, labels, { value: values[sealedAt] })));
  }
}
