/**
 * Report-only points as one batch sees them: rows loaded from the database, changed or
 * deleted by the batch's events, and points the batch registers. Nothing is written until
 * `write`, so a refused event leaves the database as it was.
 */
import type { Kysely } from 'kysely';
import { chunks, insertRows } from '../db/insert-rows.js';
import { dialectOf } from '../db/dialect.js';
import type { Database, DatapointsTable } from '../db/schema.js';
import type { CandidatePoint, Location } from '../rules/engine.js';
import { ensureTags, holdTagsAgainstDelete } from '../tags/repository.js';

const CHUNK = 400;

/** A point as this batch sees it: loaded from the database or created by an earlier event. */
export interface PointView {
  id: string;
  entityId: string;
  attribute: string;
  definitionKey: string;
  structureRootId: string | null;
  reportOnly: boolean;
  sensitivity: string;
}

export interface NewPoint extends PointView {
  row: DatapointsTable;
  tags: Set<string>;
  regulations: Set<string>;
  children: string[];
}

export interface NewPointInput {
  id: string;
  entityId: string;
  attribute: string;
  definitionKey: string;
  root: string | null;
  sensitivity: string;
  timestamp: string;
  location?: Location;
  tags: Set<string>;
  regulations: Set<string>;
}

interface DbUpdate {
  modified: string;
  regulations: Set<string>;
  expiresAt?: string;
  autoDelete?: boolean;
}

/** Where the rules' changes to a candidate go. */
export type RuleTarget = { kind: 'new'; point: NewPoint } | { kind: 'db'; id: string } | { kind: 'none' };

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Makes `target` hold what `source` holds: a rule that takes a tag off takes it off the point. */
function sync(target: Set<string>, source: Set<string>): void {
  if (target === source) return;
  for (const t of target) if (!source.has(t)) target.delete(t);
  for (const t of source) target.add(t);
}

export class BatchPoints {
  private readonly dbPoints = new Map<string, PointView>();
  private readonly dbPointMeta = new Map<string, { tags: Set<string>; regulations: Set<string> }>();
  private readonly deletedFromDb = new Set<string>();
  private readonly newPoints = new Map<string, NewPoint>();
  private readonly dbUpdates = new Map<string, DbUpdate>();
  /** Tags put on (true) or taken off (false) points in the database, the last word for each. */
  private readonly dbTagChanges = new Map<string, Map<string, boolean>>();
  /** Sub-points of loaded roots asked for with `withSubPoints`, in the order they were stored. */
  private readonly dbSubPoints = new Map<string, Array<{ id: string; attribute: string }>>();

  constructor(private readonly trx: Kysely<Database>) {}

  /**
   * Loads the points under these ids, the tags and regulations of those in `withMeta` (what
   * an UPDATE's value is shown to the rules with), and the sub-points of the roots in
   * `withSubPoints` (what a resent STORE's summary lists).
   */
  async load(ids: Iterable<string>, withMeta: (point: PointView) => boolean, withSubPoints: (point: PointView) => boolean = () => false): Promise<PointView[]> {
    const loaded: PointView[] = [];
    for (const chunk of chunks([...new Set(ids)], CHUNK)) {
      const rows = await this.trx
        .selectFrom('datapoints')
        .select(['id', 'entity_id', 'attribute', 'definition_key', 'structure_root_id', 'report_only', 'sensitivity'])
        .where('id', 'in', chunk)
        .execute();
      for (const row of rows) {
        const point: PointView = {
          id: row.id,
          entityId: row.entity_id,
          attribute: row.attribute,
          definitionKey: row.definition_key,
          structureRootId: row.structure_root_id,
          reportOnly: Number(row.report_only) === 1,
          sensitivity: row.sensitivity,
        };
        this.dbPoints.set(row.id, point);
        loaded.push(point);
      }
    }
    for (const chunk of chunks(loaded.filter(withMeta).map((p) => p.id), CHUNK)) {
      for (const id of chunk) this.dbPointMeta.set(id, { tags: new Set(), regulations: new Set() });
      const [tags, regs] = await Promise.all([
        this.trx.selectFrom('datapoint_tags').selectAll().where('datapoint_id', 'in', chunk).execute(),
        this.trx.selectFrom('datapoint_regulations').selectAll().where('datapoint_id', 'in', chunk).execute(),
      ]);
      for (const t of tags) this.dbPointMeta.get(t.datapoint_id)?.tags.add(t.tag);
      for (const r of regs) this.dbPointMeta.get(r.datapoint_id)?.regulations.add(r.regulation);
    }
    const roots = loaded.filter((p) => p.structureRootId === null && withSubPoints(p)).map((p) => p.id);
    for (const chunk of chunks(roots, CHUNK)) {
      for (const id of chunk) this.dbSubPoints.set(id, []);
      // Ids are time-ordered: creation date, then id, is the order the STORE listed them in.
      const rows = await this.trx
        .selectFrom('datapoints')
        .select(['id', 'attribute', 'structure_root_id'])
        .where('structure_root_id', 'in', chunk)
        .orderBy('created_date')
        .orderBy('id')
        .execute();
      for (const row of rows) this.dbSubPoints.get(row.structure_root_id!)?.push({ id: row.id, attribute: row.attribute });
    }
    return loaded;
  }

  /** The sub-points the point has as of the events planned so far, as a STORE's summary lists them. */
  subPointsOf(id: string): Array<{ attribute: string; dataPointId: string }> {
    const created = this.newPoints.get(id);
    const children = created
      ? created.children.flatMap((child) => {
          const point = this.newPoints.get(child);
          return point ? [{ id: point.id, attribute: point.attribute }] : [];
        })
      : (this.dbSubPoints.get(id) ?? []).filter((child) => !this.deletedFromDb.has(child.id));
    return children.map((child) => ({ attribute: child.attribute, dataPointId: child.id }));
  }

  /** The point under this id as of the events planned so far. */
  current(id: string): PointView | undefined {
    const created = this.newPoints.get(id);
    if (created) return created;
    const row = this.dbPoints.get(id);
    if (!row || this.deletedFromDb.has(id)) return undefined;
    if (row.structureRootId !== null && this.deletedFromDb.has(row.structureRootId)) return undefined;
    return row;
  }

  /** A point registered by this batch. A database row under its id that the batch deleted is replaced. */
  create(input: NewPointInput): NewPoint {
    const point: NewPoint = {
      id: input.id,
      entityId: input.entityId,
      attribute: input.attribute,
      definitionKey: input.definitionKey,
      structureRootId: input.root,
      reportOnly: true,
      sensitivity: input.sensitivity,
      tags: input.tags,
      regulations: input.regulations,
      children: [],
      row: {
        id: input.id,
        entity_id: input.entityId,
        attribute: input.attribute,
        definition_key: input.definitionKey,
        structure_root_id: input.root,
        report_only: 1,
        sensitivity: input.sensitivity,
        subject_key_id: null,
        ciphertext: null,
        blind_index: null,
        country: input.location?.country ?? null,
        subdivision: input.location?.subdivision ?? null,
        city: input.location?.city ?? null,
        expires_at: null,
        auto_delete: 0,
        created_date: input.timestamp,
        modified_date: input.timestamp,
      },
    };
    this.newPoints.set(input.id, point);
    return point;
  }

  /**
   * An UPDATE moves the modification date forward; the answer says where the rules'
   * changes to its value go and what the point carried before them.
   */
  touch(id: string, timestamp: string): { target: RuleTarget; meta: { tags: Set<string>; regulations: Set<string> } } {
    const created = this.newPoints.get(id);
    if (created) {
      if (timestamp > created.row.modified_date) created.row.modified_date = timestamp;
      return { target: { kind: 'new', point: created }, meta: created };
    }
    const update = this.dbUpdates.get(id) ?? { modified: timestamp, regulations: new Set() };
    if (timestamp > update.modified) update.modified = timestamp;
    this.dbUpdates.set(id, update);
    const meta = this.dbPointMeta.get(id) ?? { tags: new Set<string>(), regulations: new Set<string>() };
    return { target: { kind: 'db', id }, meta };
  }

  /** The point and its sub-points go, whether the batch created it or the database has it. */
  remove(id: string): void {
    const created = this.newPoints.get(id);
    if (created) {
      for (const child of created.children) this.newPoints.delete(child);
      this.newPoints.delete(id);
    }
    // The row in the database (if any) goes too, even when this batch had replaced it.
    if (this.dbPoints.has(id)) this.deletedFromDb.add(id);
    this.dbUpdates.delete(id);
  }

  /**
   * A candidate is planned before any rule runs: it starts from the labels its point has once
   * the batch's earlier events have been judged.
   */
  refreshCandidate(target: RuleTarget | undefined, candidate: CandidatePoint): void {
    if (!target || target.kind === 'none') return;
    const current = target.kind === 'new' ? target.point : this.dbPointMeta.get(target.id);
    if (!current) return;
    sync(candidate.tags, current.tags);
    for (const r of current.regulations) candidate.regulations.add(r);
  }

  /** Tags, regulations and retention that data rules put on the candidate reach the point. */
  applyRuleChanges(target: RuleTarget | undefined, candidate: CandidatePoint): void {
    if (!target || target.kind === 'none') return;
    if (target.kind === 'new') {
      const point = target.point;
      for (const r of candidate.regulations) point.regulations.add(r);
      const rows = [point, ...point.children.map((c) => this.newPoints.get(c)).filter((c): c is NewPoint => c !== undefined)];
      for (const p of rows) {
        sync(p.tags, candidate.tags);
        if (candidate.expiresAt !== undefined) p.row.expires_at = candidate.expiresAt;
        if (candidate.autoDelete !== undefined) p.row.auto_delete = candidate.autoDelete ? 1 : 0;
      }
      return;
    }
    const update = this.dbUpdates.get(target.id);
    if (!update) return;
    // The candidate began with the point's tags as this batch sees them (`touch`).
    for (const t of this.dbPointMeta.get(target.id)?.tags ?? []) if (!candidate.tags.has(t)) this.retag(target.id, t, false);
    for (const t of candidate.tags) this.retag(target.id, t, true);
    for (const r of candidate.regulations) {
      update.regulations.add(r);
      this.dbPointMeta.get(target.id)?.regulations.add(r);
    }
    if (candidate.expiresAt !== undefined) update.expiresAt = candidate.expiresAt;
    if (candidate.autoDelete !== undefined) update.autoDelete = candidate.autoDelete;
  }

  /**
   * An activity rule's tag action on the point an event is about, as the batch holds it: a
   * point it registers is written only after every rule has run.
   */
  retag(id: string, tag: string, status: boolean): void {
    const created = this.newPoints.get(id);
    if (created) {
      // Its set may be its structure's, shared with its root or sub-points: this is about it alone.
      created.tags = new Set(created.tags);
      if (status) created.tags.add(tag);
      else created.tags.delete(tag);
      return;
    }
    if (!this.current(id)) return;
    const changes = this.dbTagChanges.get(id) ?? new Map<string, boolean>();
    changes.set(tag, status);
    this.dbTagChanges.set(id, changes);
    const meta = this.dbPointMeta.get(id);
    if (status) meta?.tags.add(tag);
    else meta?.tags.delete(tag);
  }

  /**
   * Writes what the batch changed. Points are inserted plainly: a concurrent request that
   * registered the same id first makes this insert fail on the primary key, and the
   * service runs the whole batch again, which then finds that point.
   */
  async write(): Promise<void> {
    const trx = this.trx;
    // Before the labels of deleted points are touched: this batch may create tags after it.
    if (this.deletedFromDb.size > 0) await holdTagsAgainstDelete(trx);
    for (const chunk of chunks([...this.deletedFromDb], CHUNK)) {
      const doomed = trx.selectFrom('datapoints').select('id').where((eb) => eb.or([eb('id', 'in', chunk), eb('structure_root_id', 'in', chunk)]));
      await trx.deleteFrom('datapoint_tags').where('datapoint_id', 'in', doomed).execute();
      await trx.deleteFrom('datapoint_regulations').where('datapoint_id', 'in', doomed).execute();
      await trx.deleteFrom('datapoints').where((eb) => eb.or([eb('id', 'in', chunk), eb('structure_root_id', 'in', chunk)])).execute();
    }

    const points = [...this.newPoints.values()].sort(byId);
    const tagRows: { datapoint_id: string; tag: string }[] = [];
    const regulationRows: { datapoint_id: string; regulation: string }[] = [];
    for (const p of points) {
      for (const tag of p.tags) tagRows.push({ datapoint_id: p.id, tag });
      for (const regulation of p.regulations) regulationRows.push({ datapoint_id: p.id, regulation });
    }
    const updates = [...this.dbUpdates].filter(([id]) => !this.deletedFromDb.has(id));
    for (const [id, u] of updates) {
      for (const regulation of u.regulations) regulationRows.push({ datapoint_id: id, regulation });
    }
    // A point the batch deleted, or replaced under its id, keeps none of its rows' changes.
    const untagged = new Map<string, string[]>();
    for (const [id, changes] of this.dbTagChanges) {
      if (this.current(id) !== this.dbPoints.get(id)) continue;
      for (const [tag, status] of changes) {
        if (status) tagRows.push({ datapoint_id: id, tag });
        else untagged.set(tag, [...(untagged.get(tag) ?? []), id]);
      }
    }
    if (untagged.size > 0) await holdTagsAgainstDelete(trx);
    for (const [tag, ids] of untagged) {
      for (const chunk of chunks(ids, CHUNK)) await trx.deleteFrom('datapoint_tags').where('tag', '=', tag).where('datapoint_id', 'in', chunk).execute();
    }
    for (const chunk of chunks([...new Set(tagRows.map((r) => r.tag))], CHUNK)) await ensureTags(trx, chunk);
    // Every row has every column, in one order (`create`): a bulk of 1000 new points spent
    // more in Kysely's builder than in SQLite.
    await insertRows(trx, dialectOf(trx), 'datapoints', points.map((p) => p.row));
    for (const chunk of chunks(tagRows, CHUNK)) {
      await trx.insertInto('datapoint_tags').values(chunk).onConflict((oc) => oc.columns(['datapoint_id', 'tag']).doNothing()).execute();
    }
    for (const chunk of chunks(regulationRows, CHUNK)) {
      await trx
        .insertInto('datapoint_regulations')
        .values(chunk)
        .onConflict((oc) => oc.columns(['datapoint_id', 'regulation']).doNothing())
        .execute();
    }

    // One statement per distinct event time: reported events of one moment share it.
    const byTime = new Map<string, string[]>();
    for (const [id, u] of updates) byTime.set(u.modified, [...(byTime.get(u.modified) ?? []), id]);
    for (const [modified, ids] of byTime) {
      for (const chunk of chunks(ids, CHUNK)) {
        // A late-arriving older event does not move the modification date backwards. An
        // update of a structured point is one of its leaves too: they move with it.
        await trx
          .updateTable('datapoints')
          .set({ modified_date: modified })
          .where((eb) => eb.or([eb('id', 'in', chunk), eb('structure_root_id', 'in', chunk)]))
          .where('modified_date', '<', modified)
          .execute();
      }
    }
    for (const [id, u] of updates) {
      if (u.expiresAt === undefined && u.autoDelete === undefined) continue;
      const retention: { expires_at?: string; auto_delete?: 0 | 1 } = {};
      if (u.expiresAt !== undefined) retention.expires_at = u.expiresAt;
      if (u.autoDelete !== undefined) retention.auto_delete = u.autoDelete ? 1 : 0;
      await trx.updateTable('datapoints').set(retention).where('id', '=', id).execute();
    }
  }
}
