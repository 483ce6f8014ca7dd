/**
 * Search must stay fast with a million points: every query shape the interface allows is
 * answered through an index, never by sorting or scanning the whole table.
 *
 * By default the table is seeded with 20,000 points and the SQLite query plans are checked
 * (SQLite plans without statistics, so the plan at this size is the plan at any size).
 * `VAULT_SCALE_POINTS=1000000` seeds a million and logs the time of each query, on either
 * dialect; it is how the figures in the README were measured.
 */
import test from 'ava';
import { CompiledQuery, sql, type Compilable } from 'kysely';
import type { Caller } from '../core/src/access/caller.js';
import { blindIndex } from '../core/src/blindindex/blindindex.js';
import type { DatapointsTable } from '../core/src/db/schema.js';
import { newPointId } from '../core/src/datapoints/ids.js';
import { subjectReadSizes, subjectReads } from '../core/src/datapoints/reads.js';
import { idList } from '../core/src/db/dialect.js';
import type { SearchRequest } from '../core/src/search/service.js';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { define } from './dataplane-helpers.js';

const POINTS = Number(process.env.VAULT_SCALE_POINTS ?? 20_000);
const PER_SUBJECT = 10;
const SUBJECTS = Math.ceil(POINTS / PER_SUBJECT);
const ATTRIBUTES = ['SC_EMAIL', 'SC_GENDER', 'SC_CITY', 'SC_NOTE', 'SC_A', 'SC_B', 'SC_C', 'SC_D', 'SC_E', 'SC_F'];
const admin: Caller = { applicationId: 'scale', name: 'scale', admin: true, attributes: '*' };

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const key of ATTRIBUTES) await define(v, { key, indexed: key !== 'SC_NOTE', repeatable: true });
  await seed();
});
test.after.always(async () => v?.close());

/** Metadata only (ciphertext is not what search reads): subjects of ten points each, in creation order. */
async function seed(): Promise<void> {
  const start = Date.parse('2024-01-01T00:00:00Z');
  const ciphertext = Buffer.alloc(48, 1);
  let batch: DatapointsTable[] = [];
  let regulations: Array<{ datapoint_id: string; regulation: string }> = [];
  const flush = async () => {
    if (batch.length > 0) await v.vault.db.insertInto('datapoints').values(batch).execute();
    if (regulations.length > 0) await v.vault.db.insertInto('datapoint_regulations').values(regulations).execute();
    batch = [];
    regulations = [];
  };
  for (let s = 0; s < SUBJECTS; s++) {
    const entity = `scale-${s}`;
    for (let a = 0; a < PER_SUBJECT; a++) {
      const n = s * PER_SUBJECT + a;
      const attribute = ATTRIBUTES[a];
      const value = attribute === 'SC_EMAIL' ? `user${s}@example.org` : attribute === 'SC_GENDER' ? ['f', 'm', 'x'][s % 3] : attribute === 'SC_CITY' ? `city${s % 1000}` : `v${s % 50}`;
      const date = new Date(start + n * 1000).toISOString();
      const id = newPointId();
      batch.push({
        id,
        entity_id: entity,
        attribute,
        definition_key: attribute,
        structure_root_id: null,
        report_only: 0,
        sensitivity: n % 100 === 0 ? 'CONFIDENTIAL' : n % 3 === 0 ? 'PERSONAL' : 'NORMAL',
        subject_key_id: null,
        ciphertext,
        blind_index: attribute === 'SC_NOTE' ? null : blindIndex(v.vault.indexKey, attribute, value),
        country: s % 97 === 0 ? 'FR' : 'US',
        subdivision: s % 97 === 0 ? 'FR-IDF' : 'US-CA',
        city: null,
        expires_at: null,
        auto_delete: 0,
        created_date: date,
        modified_date: date,
      });
      if (n % 3 === 0) regulations.push({ datapoint_id: id, regulation: 'GDPR' });
      if (batch.length === 500) await flush();
    }
  }
  await flush();
  if (v.vault.dialect === 'postgres') await sql`analyze`.execute(v.vault.db);
}

const mid = Math.floor(SUBJECTS / 2);
const queries: Array<[string, SearchRequest]> = [
  ['one value (unique)', { query: { values: [{ attribute: 'SC_EMAIL', value: `user${mid}@example.org` }] } }],
  ['one value (a third of an attribute)', { query: { values: [{ attribute: 'SC_GENDER', value: 'f' }] } }],
  ['one value, deep page', { query: { values: [{ attribute: 'SC_GENDER', value: 'f' }] }, page: Math.floor(SUBJECTS / 3 / 100 / 2), count: 100 }],
  ['two values', { query: { values: [{ attribute: 'SC_EMAIL', value: `user${mid}@example.org` }, { attribute: 'SC_CITY', value: 'city7' }] } }],
  ['one attribute', { query: { attributes: ['SC_NOTE'] } }],
  ['one attribute, last page', { query: { attributes: ['SC_NOTE'] }, page: Math.floor(SUBJECTS / 1000) - 1, count: 1000 }],
  ['three attributes', { query: { attributes: ['SC_NOTE', 'SC_A', 'SC_B'] } }],
  ['value or attribute', { query: { values: [{ attribute: 'SC_EMAIL', value: `user${mid}@example.org` }], attributes: ['SC_C'] } }],
  ['subjects', { query: { entityId: [`scale-${mid}`, `scale-${mid + 1}`] } }],
  ['value and subject', { query: { values: [{ attribute: 'SC_GENDER', value: ['f', 'm', 'x'][(mid + 1) % 3] }], entityId: [`scale-${mid + 1}`] } }],
  ['regulation only', { query: { regulations: ['GDPR'] } }],
  ['no regulation', { query: { regulations: [''] } }],
  ['attribute and regulation', { query: { attributes: ['SC_A'], regulations: ['GDPR'] } }],
  ['rare sensitivity', { query: { sensitivity: 'CONFIDENTIAL' } }],
  ['rare country', { query: { attributes: ['SC_A'], country: 'FR' } }],
  ['created range', { query: { attributes: ['SC_NOTE'], minCreatedDate: new Date(Date.parse('2024-01-01T00:00:00Z') + POINTS * 500).toISOString() } }],
  ['latest by modification', { query: { minModifiedDate: new Date(Date.parse('2024-01-01T00:00:00Z') + (POINTS - 50) * 1000).toISOString() } }],
];

test('every query shape finds its rows through an index', async (t) => {
  for (const [name, request] of queries) {
    const started = performance.now();
    const points = await v.vault.search.search(admin, request).catch((err) => {
      if (err?.status === 404) return [];
      throw err;
    });
    const ms = performance.now() - started;
    t.log(`${name}: ${points.length} results in ${ms.toFixed(1)} ms (${POINTS} points, ${v.vault.dialect})`);
    t.true(points.length > 0, name);
    if (v.vault.dialect === 'sqlite') {
      const plan = await sqlitePlan((await v.vault.search.compile(admin, request))!);
      const fullScan = plan.some((line) => /^SCAN datapoints$/.test(line) || /^SCAN datapoints USING (?!INDEX datapoints_by_created)/.test(line));
      if (process.env.VAULT_SCALE_PLANS) t.log(`  ${plan.join(' | ')}`);
      t.false(fullScan, `${name}: ${plan.join(' | ')}`);
      // One selector walks its index in order: no sort of the matches at all.
      if (/^one (value|attribute)/.test(name) || name === 'created range') t.false(plan.some((line) => line.includes('TEMP B-TREE')), `${name}: ${plan.join(' | ')}`);
      // Generous (a busy two-core machine): a sort of the whole table takes several seconds.
      if (POINTS > 100_000) t.true(ms < 2000, `${name} took ${ms.toFixed(0)} ms`);
    }
  }
});

/**
 * A subject read walks the subject's vaulted points in the order it answers them. Audit events
 * add report-only points to a subject, and a read that had to look past each of them grew
 * slower with every event a sidecar reported. SQLite plans from the schema alone; PostgreSQL
 * from its statistics (see migration 0009), so only SQLite's plan is fixed enough to check.
 * It is checked as prepared, before any value is bound: a plan that needs a bound value to
 * meet the index's condition (`report_only = ?` rather than `= 0`) makes SQLite prepare the
 * statement again every time the value is bound, at every read.
 */
(process.env.VAULT_TEST_DB === 'postgres' ? test.skip : test)('a subject read walks only its vaulted points, already in order', async (t) => {
  const db = v.vault.db;
  const entity = `scale-${mid}`;
  const shapes = {
    'every root value': subjectReads.roots(db, entity),
    'one attribute': subjectReads.attribute(db, entity, 'SC_A'),
    'listed attributes': subjectReads.attributes(db, entity, idList(db, ['SC_A', 'SC_B'])),
    'the roots of some definitions': subjectReads.rootsOfDefinitions(db, entity, idList(db, ['SC_A', 'SC_B'])),
    // Each read first sizes its answer (VAULT_READ_LIMIT), over the same points.
    'size of every root value': subjectReadSizes.roots(db, entity),
    'size of one attribute': subjectReadSizes.attribute(db, entity, 'SC_A'),
    'size of listed attributes': subjectReadSizes.attributes(db, entity, idList(db, ['SC_A', 'SC_B'])),
    'size of the roots of some definitions': subjectReadSizes.rootsOfDefinitions(db, entity, idList(db, ['SC_A', 'SC_B'])),
  };
  for (const [name, query] of Object.entries(shapes)) {
    const plan = await sqlitePlan(query, { unknownValues: true });
    t.log(`${name}: ${plan.join(' | ')}`);
    // A size needs no order: for some definitions SQLite seeks them in `datapoints_by_entity`.
    const index = name === 'size of the roots of some definitions' ? 'datapoints_by_entity (entity_id=? AND definition_key=?)' : 'datapoints_vaulted_by_entity (entity_id=?)';
    t.true(plan.some((line) => line.startsWith(`SEARCH datapoints USING INDEX ${index}`)), `${name}: ${plan.join(' | ')}`);
    t.false(plan.some((line) => line.includes('TEMP B-TREE')), `${name}: ${plan.join(' | ')}`);
  }
});

/**
 * SQLite's plan for a query, one line per step, with its values bound as the vault binds them;
 * or, with `unknownValues`, with every value NULL, which meets no partial index's condition:
 * the plan SQLite prepares the statement with before any value is bound.
 */
async function sqlitePlan(query: Compilable<unknown>, { unknownValues = false } = {}): Promise<string[]> {
  const compiled = query.compile();
  const parameters = unknownValues ? compiled.parameters.map(() => null) : [...compiled.parameters];
  const explained = await v.vault.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${compiled.sql}`, parameters));
  return explained.rows.map((r) => r.detail);
}
