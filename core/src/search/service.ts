/**
 * Search over data point metadata and blind indexes: nothing is decrypted, and results
 * carry no value.
 *
 * `values` and `attributes` select (a point matching either is in); every other member
 * filters (a point must pass all). A value pair on an attribute that is not indexed is
 * ignored; with selectors given but all ignored, nothing matches.
 */
import { sql, type Expression, type ExpressionBuilder, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { Caller } from '../access/caller.js';
import { blindIndex } from '../blindindex/blindindex.js';
import type { Database } from '../db/schema.js';
import { findDefinitions } from '../definitions/repository.js';
import { isStructured } from '../definitions/schema.js';
import { badRequest, notFound } from '../errors.js';
import { isSensitivity, loadLabels, POINT_COLUMNS, SENSITIVITY_MESSAGE, toDataPoint, type DataPoint } from '../datapoints/model.js';
import { parseIsoDate } from '../util/time.js';

export interface ValuePair {
  attribute: string;
  value: string | number | boolean;
}

/** Members may be null: some clients send every member, unset ones as null. */
export interface SearchQuery {
  values?: ValuePair[] | null;
  attributes?: string[] | null;
  regulations?: string[] | null;
  sensitivity?: string | null;
  entityId?: string[] | string | null;
  subjectId?: string[] | string | null;
  country?: string | null;
  subdivision?: string | null;
  city?: string | null;
  minCreatedDate?: string | null;
  maxCreatedDate?: string | null;
  minModifiedDate?: string | null;
  maxModifiedDate?: string | null;
}

export interface SearchRequest {
  query?: SearchQuery | null;
  page?: number | null;
  count?: number | null;
}

export const DEFAULT_COUNT = 100;
export const MAX_COUNT = 1000;
export const COUNT_MESSAGE = `Count must be an integer from 1 to ${MAX_COUNT}`;
/** Deep offsets cost a scan of everything before them; past this, narrow the query instead. */
export const MAX_PAGE = 1_000_000;
export const PAGE_MESSAGE = `Page must be an integer from 0 to ${MAX_PAGE}`;

type Builder = ExpressionBuilder<Database, 'datapoints'>;
type Selector = (eb: Builder) => Expression<SqlBool>;

/**
 * The column as an expression no index matches (on either dialect), so the planner drives
 * the query from another condition's index.
 */
function unindexed(column: 'attribute' | 'blind_index' | 'created_date'): RawBuilder<string> {
  return sql<string>`(${sql.ref(column)} || '')`;
}

/** Beyond this many selectors, one OR query sorts the matches instead of a union of ordered runs. */
const MAX_BRANCHES = 32;
/**
 * Each branch of the union repeats the lists that filter it (the caller's attributes, the
 * regulations): past this many of their parameters in all, one OR query binds them once, as
 * SQLite takes at most 32,766 parameters a statement and PostgreSQL 65,535.
 */
const MAX_BRANCH_PARAMETERS = 16_000;

/**
 * SQLite parses `a OR b OR c …` one level deep per term and refuses a query more than 1,000
 * levels deep, short of the 2,000 selectors a search may name: nested in pairs, they are 11.
 */
function anyOf(eb: Builder, terms: Expression<SqlBool>[]): Expression<SqlBool> {
  if (terms.length <= 2) return eb.or(terms);
  const half = Math.ceil(terms.length / 2);
  return eb.or([anyOf(eb, terms.slice(0, half)), anyOf(eb, terms.slice(half))]);
}

function list<T>(value: T[] | T | null | undefined): T[] {
  if (value === null || value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

function date(value: string | null | undefined, member: string): string | undefined {
  if (value === null || value === undefined) return undefined;
  const parsed = parseIsoDate(value);
  if (!parsed) throw badRequest(`${member} must be an ISO 8601 date`);
  return parsed;
}

export class SearchService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly indexKey: Buffer,
  ) {}

  async search(caller: Caller, request: SearchRequest): Promise<DataPoint[]> {
    const query = await this.compile(caller, request);
    const rows = query ? await query.execute() : [];
    if (rows.length === 0) throw notFound('Data Not Found');
    const labels = await loadLabels(this.db, rows.map((r) => r.id));
    return rows.map((row) => toDataPoint(row, labels));
  }

  /**
   * The page's query, or undefined when nothing can match. Separate from `search` so tests
   * can look at the plan the database chooses for it.
   */
  async compile(caller: Caller, request: SearchRequest) {
    const count = request.count ?? DEFAULT_COUNT;
    const page = request.page ?? 0;
    if (!Number.isInteger(count) || count < 1 || count > MAX_COUNT) throw badRequest(COUNT_MESSAGE);
    if (!Number.isInteger(page) || page < 0 || page > MAX_PAGE) throw badRequest(PAGE_MESSAGE);
    const q = request.query ?? {};
    if (q.sensitivity !== null && q.sensitivity !== undefined && !isSensitivity(q.sensitivity)) throw badRequest(SENSITIVITY_MESSAGE);
    const created = { min: date(q.minCreatedDate, 'minCreatedDate'), max: date(q.maxCreatedDate, 'maxCreatedDate') };
    const modified = { min: date(q.minModifiedDate, 'minModifiedDate'), max: date(q.maxModifiedDate, 'maxModifiedDate') };

    const pairs = list(q.values);
    const attributes = [...new Set(list(q.attributes))];
    const selecting = pairs.length > 0 || attributes.length > 0;
    const indexed = await this.indexedPairs(pairs);
    if (selecting && indexed.length === 0 && attributes.length === 0) return undefined;
    if (caller.attributes !== '*' && caller.attributes.size === 0) return undefined;

    const entityIds = [...new Set([...list(q.entityId), ...list(q.subjectId)])];
    const regulations = [...new Set(list(q.regulations))];
    // Listed subjects have few points each: find them through the entity index and test the
    // selectors on those rows, rather than walk a selector's index past thousands of others.
    const byEntity = entityIds.length > 0;
    const col = (name: 'attribute' | 'blind_index') => (byEntity ? unindexed(name) : sql.ref(name));
    const selectors: Selector[] = [
      ...indexed.map((p): Selector => (eb) => eb.and([eb(col('attribute'), '=', p.attribute), eb(col('blind_index'), '=', p.index)])),
      ...attributes.map((a): Selector => (eb) => eb(col('attribute'), '=', a)),
    ];

    const byModified = !byEntity && selectors.length === 0 && modified.min !== undefined;
    /** Everything but the selectors: these filter every branch alike. */
    const filtered = (selector?: Selector) => {
      let query = this.db.selectFrom('datapoints').select(POINT_COLUMNS);
      if (selector) query = query.where(selector);
      if (caller.attributes !== '*') query = query.where('definition_key', 'in', [...caller.attributes]);
      if (regulations.length > 0) query = query.where((eb) => this.regulationFilter(eb, regulations));
      if (q.sensitivity) query = query.where('sensitivity', '=', q.sensitivity);
      if (entityIds.length > 0) query = query.where('entity_id', 'in', entityIds);
      if (q.country) query = query.where('country', '=', q.country.toUpperCase());
      if (q.subdivision) query = query.where('subdivision', '=', q.subdivision.toUpperCase());
      if (q.city) query = query.where('city', '=', q.city);
      if (created.min) query = query.where('created_date', '>=', created.min);
      if (created.max) query = query.where('created_date', '<=', created.max);
      if (modified.min) query = query.where('modified_date', '>=', modified.min);
      if (modified.max) query = query.where('modified_date', '<=', modified.max);
      // "Changed since" without a selector: the modification index finds the few recent
      // changes; walking the creation order would pass every older point first.
      return byModified ? query.orderBy(unindexed('created_date')).orderBy('id') : query.orderBy('created_date').orderBy('id');
    };
    const offset = page * count;
    const repeated = (caller.attributes === '*' ? 0 : caller.attributes.size) + regulations.length;
    if (selectors.length <= 1 || selectors.length > MAX_BRANCHES || byEntity || repeated * selectors.length > MAX_BRANCH_PARAMETERS) {
      const any: Selector | undefined = selectors.length === 0 ? undefined : selectors.length === 1 ? selectors[0] : (eb) => anyOf(eb, selectors.map((s) => s(eb)));
      return filtered(any).limit(count).offset(offset);
    }
    // Several selectors: each walks its own index in order and stops after the page, and
    // the union of those short runs is sorted, rather than every match of every selector.
    const branches = selectors.map((selector, i) => this.db.selectFrom(filtered(selector).limit(offset + count).as(`b${i}`)).select(POINT_COLUMNS));
    const union = branches.slice(1).reduce((all, branch) => all.union(branch), branches[0]);
    return this.db.selectFrom(union.as('u')).select(POINT_COLUMNS).orderBy('created_date').orderBy('id').limit(count).offset(offset);
  }

  /** The blind-index entries to look for; pairs on attributes that are not indexed drop out. */
  private async indexedPairs(pairs: ValuePair[]): Promise<Array<{ attribute: string; index: string }>> {
    if (pairs.length === 0) return [];
    const root = (attribute: string) => attribute.split('.')[0];
    const definitions = await findDefinitions(this.db, pairs.map((p) => root(p.attribute)));
    const out: Array<{ attribute: string; index: string }> = [];
    for (const pair of pairs) {
      const definition = definitions.get(root(pair.attribute));
      if (!definition?.indexed) continue;
      // A structured value is indexed per leaf; its root has no entry of its own.
      if (pair.attribute === definition.key && isStructured(definition.schema)) continue;
      out.push({ attribute: pair.attribute, index: blindIndex(this.indexKey, pair.attribute, pair.value) });
    }
    return out;
  }

  /** Any of the listed regulations; `""` stands for "no regulation at all". */
  private regulationFilter(eb: Builder, regulations: string[]): Expression<SqlBool> {
    const named = regulations.filter((r) => r !== '');
    const terms: Expression<SqlBool>[] = [];
    const tagged = (names?: string[]) => {
      let sub = eb.selectFrom('datapoint_regulations').select(sql<number>`1`.as('one')).whereRef('datapoint_regulations.datapoint_id', '=', 'datapoints.id');
      if (names) sub = sub.where('datapoint_regulations.regulation', 'in', names);
      return sub;
    };
    if (named.length > 0) terms.push(eb.exists(tagged(named)));
    if (named.length < regulations.length) terms.push(eb.not(eb.exists(tagged())));
    return eb.or(terms);
  }
}
