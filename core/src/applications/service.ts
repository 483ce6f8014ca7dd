import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import { committed } from '../db/after-commit.js';
import { dialectOf, forUpdateOnPostgres, isUniqueViolation, lockForTransaction } from '../db/dialect.js';
import type { ApplicationsTable, Database } from '../db/schema.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import { FreshCache } from '../util/fresh-cache.js';
import { nowIso } from '../util/time.js';
import { recordChange, recordUpsert, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { isPrintableAscii, MAX_API_KEY_LENGTH, MIN_API_KEY_LENGTH } from './api-key.js';

export interface Application {
  id: string;
  name: string;
  attributes: string[];
  admin: boolean;
  createdDate: string;
  modifiedDate: string;
  /** Until when the key a roll replaced is still accepted; absent once it is not. */
  previousKeyValidUntil?: string;
}

export interface CreateApplicationInput {
  name: string;
  attributes?: string[];
  admin?: boolean;
  /** Lets a deployment keep a key it already uses; otherwise one is generated. */
  apiKey?: string;
}

export interface UpdateApplicationInput {
  name?: string;
  attributes?: string[];
  admin?: boolean;
}

export interface RollKeyInput {
  /** Lets a deployment choose the new key; otherwise one is generated. */
  apiKey?: string;
  /** How long the replaced key is still accepted (0, the default: not at all). */
  keepPreviousForSeconds?: number;
}

export const API_KEY_CHARACTERS = 'API key must be printable ASCII, without spaces';
export const KEY_IN_USE = 'API key is already in use';
/** The longest a replaced key may stay valid: long enough for a release cycle, short enough to end. */
export const MAX_KEEP_PREVIOUS_SECONDS = 30 * 24 * 3600;

const NAME_MAX = 256;
const NAME_MESSAGE = `Application name must be at most ${NAME_MAX} characters, without control characters`;

/** Control characters are checked apart (`checkNewName`): a name stored before may be kept. */
function checkName(name: string | undefined): string {
  const trimmed = name?.trim();
  if (!trimmed) throw badRequest('Application name is required');
  // The routes' schemas stop longer ones; the command line reaches here directly.
  if (longerThan(trimmed, NAME_MAX)) throw badRequest(NAME_MESSAGE);
  return trimmed;
}

function checkNewName(name: string | undefined, stored?: string): void {
  if (name !== undefined && name !== stored && hasControlCharacter(name)) throw badRequest(NAME_MESSAGE);
}

function storedAttributes(attributes: string[]): string {
  for (const attribute of attributes) {
    if (attribute !== '*' && !/^[A-Za-z0-9_]+$/.test(attribute)) {
      throw badRequest('Application attributes must be attribute keys or "*"');
    }
  }
  return JSON.stringify(attributes.includes('*') ? ['*'] : [...new Set(attributes)]);
}

function checkApiKey(apiKey: string): void {
  if (apiKey.length < MIN_API_KEY_LENGTH) throw badRequest(`API key must be at least ${MIN_API_KEY_LENGTH} characters`);
  // The routes' schemas stop longer ones; the command line reaches here directly.
  if (apiKey.length > MAX_API_KEY_LENGTH) throw badRequest(`API key must be at most ${MAX_API_KEY_LENGTH} characters`);
  if (!isPrintableAscii(apiKey)) throw badRequest(API_KEY_CHARACTERS);
}

/**
 * API keys are stored as SHA-256 only. Generated keys carry 256 bits of entropy, so an
 * unsalted fast hash is enough and keeps authentication to one indexed lookup.
 */
export function hashApiKey(apiKey: string): string {
  return hash('sha256', apiKey, 'hex');
}

export function generateApiKey(): string {
  return `vk_${randomBytes(32).toString('base64url')}`;
}

function toApplication(row: ApplicationsTable): Application {
  const application: Application = {
    id: row.id,
    name: row.name,
    attributes: JSON.parse(row.attributes) as string[],
    admin: row.admin === 1,
    createdDate: row.created_date,
    modifiedDate: row.modified_date,
  };
  if (row.previous_key_hash && row.previous_key_expires && row.previous_key_expires > nowIso()) application.previousKeyValidUntil = row.previous_key_expires;
  return application;
}

/** What an application's CHANGE records compare and carry: never its key. */
const APPLICATION_FIELDS = ['name', 'attributes', 'admin'] as const;

/**
 * Taken, on PostgreSQL, before a delete or a demotion locks its application's row: two of them
 * would otherwise each hold their own row while waiting for the other's in the count of admins
 * (a deadlock the database ends with an error, a 500).
 */
const ADMINS_LOCK = 0x6164_6d69_6e73;

/** How long an authenticated key is trusted without asking the database again. */
const AUTH_CACHE_MS = 1000;

export class ApplicationService {
  /**
   * Authenticated callers by key hash. A deletion here clears it at once; one made through
   * another process on the same database takes effect within AUTH_CACHE_MS. Unknown keys are
   * never cached, so guessing cannot push real callers out.
   */
  private readonly callers = new FreshCache<string, Caller>(10_000, AUTH_CACHE_MS);

  constructor(
    private readonly db: Kysely<Database>,
    /** Every change is recorded (`CHANGE`) in the transaction that makes it. */
    private readonly activity: ActivityLog,
  ) {}

  /** `actor` undefined: the vault's own first admin, which is not recorded (a fresh vault's log is empty). */
  async create(actor: ChangeActor | undefined, input: CreateApplicationInput): Promise<{ application: Application; apiKey: string }> {
    const name = checkName(input.name);
    checkNewName(name);
    const attributes = storedAttributes(input.attributes ?? ['*']);
    const apiKey = input.apiKey ?? generateApiKey();
    checkApiKey(apiKey);
    const keyHash = hashApiKey(apiKey);
    await this.refuseKeyInUse(keyHash);
    const now = nowIso();
    const row: ApplicationsTable = {
      id: randomUUID(),
      name,
      api_key_hash: keyHash,
      attributes,
      admin: input.admin ? 1 : 0,
      created_date: now,
      modified_date: now,
      previous_key_hash: null,
      previous_key_expires: null,
    };
    const application = toApplication(row);
    try {
      await committed(this.db, async (trx) => {
        await trx.insertInto('applications').values(row).execute();
        const subject = { target: 'application' as const, id: row.id, before: undefined, after: application, keys: APPLICATION_FIELDS };
        if (actor) await recordUpsert(this.activity, trx, actor, subject, now);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(KEY_IN_USE);
      throw err;
    }
    return { application, apiKey };
  }

  /**
   * Changes an application in place: its id, and so its history in the activity log, stays.
   * Every process sees the change within AUTH_CACHE_MS.
   */
  async update(actor: ChangeActor, id: string, input: UpdateApplicationInput): Promise<Application> {
    const changes: Partial<ApplicationsTable> = {};
    if (input.name !== undefined) changes.name = checkName(input.name);
    if (input.attributes !== undefined) changes.attributes = storedAttributes(input.attributes);
    if (input.admin !== undefined) changes.admin = input.admin ? 1 : 0;
    const row = await committed(this.db, async (trx) => {
      if (changes.admin === 0) await lockForTransaction(trx, ADMINS_LOCK);
      const current = await this.lockedApplication(trx, id);
      // The console sends the name with every change: one stored before the check is kept.
      checkNewName(changes.name, current.name);
      if (current.admin === 1 && changes.admin === 0) await this.refuseLastAdmin(trx, 'Cannot demote the last admin application');
      const updated = { ...current, ...changes, modified_date: nowIso() };
      await trx.updateTable('applications').set({ ...changes, modified_date: updated.modified_date }).where('id', '=', id).execute();
      const subject = { target: 'application' as const, id, before: toApplication(current), after: toApplication(updated), keys: APPLICATION_FIELDS };
      await recordUpsert(this.activity, trx, actor, subject, updated.modified_date);
      return updated;
    });
    this.callers.clear();
    return toApplication(row);
  }

  /**
   * Gives an application a new key. The old one stops at once, or stays valid for
   * `keepPreviousForSeconds` so that clients move over without a failed request; a second
   * roll ends the key before it at once. Authentication caches in other processes drop the
   * old key within AUTH_CACHE_MS.
   */
  async rollKey(actor: ChangeActor, id: string, input: RollKeyInput = {}): Promise<{ application: Application; apiKey: string }> {
    const keep = input.keepPreviousForSeconds ?? 0;
    if (!Number.isInteger(keep) || keep < 0 || keep > MAX_KEEP_PREVIOUS_SECONDS) {
      throw badRequest(`keepPreviousForSeconds must be a whole number from 0 to ${MAX_KEEP_PREVIOUS_SECONDS}`);
    }
    const apiKey = input.apiKey ?? generateApiKey();
    checkApiKey(apiKey);
    const keyHash = hashApiKey(apiKey);
    await this.refuseKeyInUse(keyHash);
    const now = Date.now();
    try {
      const row = await committed(this.db, async (trx) => {
        const current = await this.lockedApplication(trx, id);
        const changes = {
          api_key_hash: keyHash,
          previous_key_hash: keep > 0 ? current.api_key_hash : null,
          previous_key_expires: keep > 0 ? new Date(now + keep * 1000).toISOString() : null,
          modified_date: new Date(now).toISOString(),
        };
        await trx.updateTable('applications').set(changes).where('id', '=', id).execute();
        // Out of service from now on, even while kept valid for a while: it may be the key that leaked.
        await retireKeys(trx, id, [current.api_key_hash], changes.modified_date);
        // The keys are never recorded, only until when the old one still works.
        const fields = { keepPreviousForSeconds: keep, ...(changes.previous_key_expires ? { previousKeyValidUntil: changes.previous_key_expires } : {}) };
        await recordChange(this.activity, trx, actor, { target: 'application', id, action: 'rollKey', fields }, changes.modified_date);
        return { ...current, ...changes };
      });
      this.callers.clear();
      return { application: toApplication(row), apiKey };
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(KEY_IN_USE);
      throw err;
    }
  }

  /**
   * A key is one caller's: neither an application's current key nor one a roll kept valid; and
   * never again a key taken out of service, which may be one that leaked.
   */
  private async refuseKeyInUse(keyHash: string): Promise<void> {
    const existing = await this.db
      .selectFrom('applications')
      .select('id')
      .where((eb) => eb.or([eb('api_key_hash', '=', keyHash), eb('previous_key_hash', '=', keyHash)]))
      .executeTakeFirst();
    if (existing || (await this.isRetired(keyHash))) throw conflict(KEY_IN_USE);
  }

  private async isRetired(keyHash: string): Promise<boolean> {
    return (await this.db.selectFrom('retired_api_keys').select('key_hash').where('key_hash', '=', keyHash).executeTakeFirst()) !== undefined;
  }

  /** The application's row, held against concurrent changes on PostgreSQL (SQLite's transactions already run one at a time). */
  private async lockedApplication(trx: Kysely<Database>, id: string): Promise<ApplicationsTable> {
    const row = await forUpdateOnPostgres(dialectOf(trx), trx.selectFrom('applications').selectAll().where('id', '=', id)).executeTakeFirst();
    if (!row) throw notFound('Application not found');
    return row;
  }

  /**
   * Refuses to take away the last admin. The caller holds ADMINS_LOCK, and the admins are
   * locked too, so that two processes each demoting or deleting one of the last two cannot
   * both go ahead: the second re-reads them once the first commits, and finds one.
   */
  private async refuseLastAdmin(trx: Kysely<Database>, message: string): Promise<void> {
    const admins = await forUpdateOnPostgres(dialectOf(trx), trx.selectFrom('applications').select('id').where('admin', '=', 1)).execute();
    if (admins.length < 2) throw conflict(message);
  }

  async list(): Promise<Application[]> {
    const rows = await this.db.selectFrom('applications').selectAll().orderBy('created_date').orderBy('id').execute();
    return rows.map(toApplication);
  }

  async get(id: string): Promise<Application> {
    const row = await this.db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound('Application not found');
    return toApplication(row);
  }

  async delete(actor: ChangeActor, id: string): Promise<void> {
    await committed(this.db, async (trx) => {
      await lockForTransaction(trx, ADMINS_LOCK);
      const app = await this.lockedApplication(trx, id);
      if (app.admin === 1) await this.refuseLastAdmin(trx, 'Cannot delete the last admin application');
      await trx.deleteFrom('applications').where('id', '=', id).execute();
      await retireKeys(trx, id, [app.api_key_hash, app.previous_key_hash], nowIso());
      // Its name, for a reader of the log once the application is gone.
      await recordChange(this.activity, trx, actor, { target: 'application', id, action: 'delete', fields: { name: app.name } }, nowIso());
    });
    this.callers.clear();
  }

  async authenticate(apiKey: string): Promise<Caller | undefined> {
    if (apiKey.length < MIN_API_KEY_LENGTH || apiKey.length > MAX_API_KEY_LENGTH) return undefined;
    const keyHash = hashApiKey(apiKey);
    return this.callers.get(keyHash, async () => {
      const row = await this.db
        .selectFrom('applications')
        .selectAll()
        .where((eb) => eb.or([eb('api_key_hash', '=', keyHash), eb('previous_key_hash', '=', keyHash)]))
        .executeTakeFirst();
      if (!row) return undefined;
      if (row.api_key_hash !== keyHash && !(row.previous_key_expires && row.previous_key_expires > nowIso())) return undefined;
      const attributes = JSON.parse(row.attributes) as string[];
      return {
        applicationId: row.id,
        name: row.name,
        admin: row.admin === 1,
        attributes: attributes.includes('*') ? '*' : new Set(attributes),
      };
    });
  }

  /**
   * Start-up: make sure an operator can get in. Returns a key only when one was generated,
   * so the caller prints it exactly once.
   */
  async bootstrapAdmin(configuredKey: string | undefined): Promise<string | undefined> {
    if (configuredKey !== undefined) {
      const known = await this.authenticate(configuredKey);
      if (known?.admin) return undefined;
      if (known) throw new Error('VAULT_ADMIN_API_KEY belongs to an application that is not an admin');
      // Made an admin again, a key rolled or deleted because it leaked would be back in service.
      if (await this.isRetired(hashApiKey(configuredKey))) {
        throw new Error(
          'VAULT_ADMIN_API_KEY is a key taken out of service (its application rolled its key or was deleted): set it to the admin key in use, or unset it',
        );
      }
      try {
        await this.create(undefined, { name: 'admin', admin: true, attributes: ['*'], apiKey: configuredKey });
      } catch (err) {
        // Another replica starting at the same moment created it first.
        if (!(await this.authenticate(configuredKey))?.admin) throw err;
      }
      return undefined;
    }
    const anyAdmin = await this.db.selectFrom('applications').select('id').where('admin', '=', 1).executeTakeFirst();
    if (anyAdmin) return undefined;
    const { apiKey } = await this.create(undefined, { name: 'admin', admin: true, attributes: ['*'] });
    return apiKey;
  }
}

/** Records keys as out of service; one already there keeps the date it was first retired. */
async function retireKeys(trx: Kysely<Database>, applicationId: string, keyHashes: Array<string | null>, when: string): Promise<void> {
  const rows = keyHashes.filter((h): h is string => h !== null).map((key_hash) => ({ key_hash, application_id: applicationId, retired_date: when }));
  if (rows.length === 0) return;
  await trx
    .insertInto('retired_api_keys')
    .values(rows)
    .onConflict((oc) => oc.column('key_hash').doNothing())
    .execute();
}
