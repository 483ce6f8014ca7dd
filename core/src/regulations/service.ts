import { sql, type Kysely } from 'kysely';
import { committed } from '../db/after-commit.js';
import { forUpdateOnPostgres, isUniqueViolation, toNumber, type DialectName } from '../db/dialect.js';
import type { Database, RegulationsTable } from '../db/schema.js';
import { badRequest, conflict, notFound, paymentRequired } from '../errors.js';
import type { RulesEngine } from '../rules/engine.js';
import { recordChange, recordUpsert, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import { nowIso } from '../util/time.js';
import { touchDefinitions } from '../definitions/repository.js';

export interface Regulation {
  key: string;
  name: string | null;
  url: string | null;
  createdDate: string;
  modifiedDate: string;
}

export interface RegulationInput {
  key?: unknown;
  name?: string | null;
  url?: string | null;
}

export const REGULATION_KEY = /^[A-Za-z0-9_-]{1,128}$/;
const NAME_MAX = 1024;
const NAME_MESSAGE = `Regulation name must be a string of at most ${NAME_MAX} characters, without control characters`;

/** Shipped with the vault; they never count against the licence's custom regulations. */
export const BUILTIN_REGULATIONS: ReadonlyArray<{ key: string; name: string; url: string }> = [
  { key: 'GDPR', name: 'General Data Protection Regulation', url: 'https://eur-lex.europa.eu/eli/reg/2016/679/oj' },
  { key: 'CCPA', name: 'California Consumer Privacy Act', url: 'https://oag.ca.gov/privacy/ccpa' },
  { key: 'HIPAA', name: 'Health Insurance Portability and Accountability Act', url: 'https://www.hhs.gov/hipaa/index.html' },
  { key: 'PCI_DSS', name: 'Payment Card Industry Data Security Standard', url: 'https://www.pcisecuritystandards.org/' },
  {
    key: 'COPPA',
    name: "Children's Online Privacy Protection Act",
    url: 'https://www.ftc.gov/legal-library/browse/rules/childrens-online-privacy-protection-rule-coppa',
  },
  { key: 'LGPD', name: 'Lei Geral de Proteção de Dados Pessoais', url: 'https://www.planalto.gov.br/ccivil_03/_ato2015-2018/2018/lei/l13709.htm' },
  {
    key: 'PIPEDA',
    name: 'Personal Information Protection and Electronic Documents Act',
    url: 'https://www.priv.gc.ca/en/privacy-topics/privacy-laws-in-canada/the-personal-information-protection-and-electronic-documents-act-pipeda/',
  },
];

const BUILTIN_KEYS = new Set(BUILTIN_REGULATIONS.map((r) => r.key));

/** Serialises custom-regulation creation across PostgreSQL connections (see `upsert`). */
const CUSTOM_REGULATION_LOCK = 0x7265_6775_6c61;

function toRegulation(row: RegulationsTable): Regulation {
  return { key: row.key, name: row.name, url: row.url, createdDate: row.created_date, modifiedDate: row.modified_date };
}

export class RegulationService {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
    /** Undefined: unlimited. */
    private readonly maxCustom: () => number | undefined,
    private readonly rules: () => RulesEngine,
    /** Every change is recorded (`CHANGE`) in its transaction; the built-ins' seeding is not. */
    private readonly activity: ActivityLog,
    /** Told when definitions lose a regulation (their cached copies are stale). */
    private readonly onDefinitionsChanged: () => void = () => {},
  ) {}

  /** Idempotent, and safe when several processes start at once. */
  async seed(): Promise<void> {
    const now = nowIso();
    await this.db
      .insertInto('regulations')
      .values(BUILTIN_REGULATIONS.map((r) => ({ ...r, builtin: 1 as const, created_date: now, modified_date: now })))
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
  }

  async upsert(actor: ChangeActor, input: RegulationInput): Promise<'created' | 'updated'> {
    if (input.key === undefined || input.key === null || input.key === '') throw badRequest('Regulation key is required');
    if (typeof input.key !== 'string' || !REGULATION_KEY.test(input.key)) {
      throw badRequest('Regulation key must contain only alphanumeric characters, hyphens and underscores');
    }
    const key = input.key;
    if (input.name !== undefined && input.name !== null && (typeof input.name !== 'string' || longerThan(input.name, NAME_MAX))) throw badRequest(NAME_MESSAGE);
    // An update changes what the body names: a client making sure a regulation exists, with
    // its key alone, does not wipe a built-in's name and address. `null` clears.
    const changes = {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.url !== undefined && { url: input.url }),
    };
    const attempt = () =>
      committed(this.db, async (trx) => {
        const max = this.maxCustom();
        // Count-then-insert must not interleave, or two creates at the limit both pass. SQLite
        // runs one write transaction at a time; PostgreSQL needs the lock.
        if (max !== undefined && this.dialect === 'postgres') {
          await sql`select pg_advisory_xact_lock(${CUSTOM_REGULATION_LOCK}::bigint)`.execute(trx);
        }
        const now = nowIso();
        // Locked on PostgreSQL: concurrent updates (through any process) take turns, each
        // comparing against what the one before it committed, so a change sent twice is recorded once.
        const existing = await forUpdateOnPostgres(this.dialect, trx.selectFrom('regulations').select(['key', 'name', 'url']).where('key', '=', key)).executeTakeFirst();
        // Control characters only as the name already stored: ViziVault clients post back the
        // whole regulation they read, and one named before this check must stay editable.
        if (typeof changes.name === 'string' && hasControlCharacter(changes.name) && changes.name !== existing?.name) throw badRequest(NAME_MESSAGE);
        if (existing) {
          await trx.updateTable('regulations').set({ ...changes, modified_date: now }).where('key', '=', key).execute();
          await recordUpsert(this.activity, trx, actor, { target: 'regulation', id: key, before: existing, after: { ...existing, ...changes }, keys: ['name', 'url'] }, now);
          return 'updated' as const;
        }
        // A built-in deleted and created again is still one the vault ships with.
        const builtin = BUILTIN_KEYS.has(key);
        if (max !== undefined && !builtin) {
          const { count } = await trx
            .selectFrom('regulations')
            .select((eb) => eb.fn.countAll().as('count'))
            .where('builtin', '=', 0)
            .executeTakeFirstOrThrow();
          if (toNumber(count) >= max) throw paymentRequired(`Your current subscription is limited to ${max} custom regulations`);
        }
        await trx
          .insertInto('regulations')
          .values({ key, name: null, url: null, ...changes, builtin: builtin ? 1 : 0, created_date: now, modified_date: now })
          .execute();
        await recordUpsert(this.activity, trx, actor, { target: 'regulation', id: key, before: undefined, after: { name: null, url: null, ...changes }, keys: ['name', 'url'] }, now);
        return 'created' as const;
      });
    try {
      return await attempt();
    } catch (err) {
      // Lost a race to create the same key: it exists now, so this becomes an update.
      if (isUniqueViolation(err)) return attempt();
      throw err;
    }
  }

  async list(): Promise<Regulation[]> {
    const rows = await this.db.selectFrom('regulations').selectAll().orderBy('key').execute();
    return rows.map(toRegulation);
  }

  async find(key: string): Promise<Regulation | undefined> {
    if (!REGULATION_KEY.test(key)) return undefined;
    const row = await this.db.selectFrom('regulations').selectAll().where('key', '=', key).executeTakeFirst();
    return row && toRegulation(row);
  }

  async get(key: string): Promise<Regulation> {
    const found = await this.find(key);
    if (!found) throw notFound('No such regulation');
    return found;
  }

  /** The keys among `keys` that are not regulations (for callers that must refuse them). */
  async missing(db: Kysely<Database>, keys: readonly string[]): Promise<string[]> {
    const unique = [...new Set(keys)];
    if (unique.length === 0) return [];
    const valid = unique.filter((k) => REGULATION_KEY.test(k));
    const found = valid.length === 0 ? [] : await db.selectFrom('regulations').select('key').where('key', 'in', valid).execute();
    const known = new Set(found.map((r) => r.key));
    return unique.filter((k) => !known.has(k));
  }

  /** Deletes the regulation and removes it from definitions and data points, all or nothing. */
  async delete(actor: ChangeActor, key: string): Promise<void> {
    if (!(await this.find(key))) throw notFound('Regulation not found');
    await committed(this.db, async (trx) => {
      if ((await this.rules().findReferencingRule(trx, 'regulation', key)) !== undefined) {
        throw conflict('Cannot delete regulation, because it is referenced by rule');
      }
      const now = nowIso();
      // The definitions losing the regulation change before its row is locked: a store holds
      // its definitions' rows while it waits for the regulations it names.
      const regulated = await trx.selectFrom('definition_regulations').select('definition_key').where('regulation', '=', key).execute();
      const touched = regulated.map((r) => r.definition_key);
      await touchDefinitions(trx, touched, now);
      const deleted = await trx.deleteFrom('regulations').where('key', '=', key).executeTakeFirst();
      if (Number(deleted.numDeletedRows) === 0) throw notFound('Regulation not found');
      const unregulated = await trx.deleteFrom('definition_regulations').where('regulation', '=', key).returning('definition_key').execute();
      await touchDefinitions(trx, unregulated.map((r) => r.definition_key).filter((k) => !touched.includes(k)), now);
      await trx.deleteFrom('datapoint_regulations').where('regulation', '=', key).execute();
      await recordChange(this.activity, trx, actor, { target: 'regulation', id: key, action: 'delete' }, now);
    });
    this.onDefinitionsChanged();
  }
}
