import { hash, randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import { isUniqueViolation } from '../db/dialect.js';
import type { ApplicationsTable, Database } from '../db/schema.js';
import { badRequest, conflict, notFound } from '../errors.js';
import { FreshCache } from '../util/fresh-cache.js';
import { nowIso } from '../util/time.js';

export interface Application {
  id: string;
  name: string;
  attributes: string[];
  admin: boolean;
  createdDate: string;
  modifiedDate: string;
}

export interface CreateApplicationInput {
  name: string;
  attributes?: string[];
  admin?: boolean;
  /** Lets a deployment keep a key it already uses; otherwise one is generated. */
  apiKey?: string;
}

const MIN_KEY_LENGTH = 16;
export const API_KEY_CHARACTERS = 'API key must be printable ASCII, without spaces';

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
  return {
    id: row.id,
    name: row.name,
    attributes: JSON.parse(row.attributes) as string[],
    admin: row.admin === 1,
    createdDate: row.created_date,
    modifiedDate: row.modified_date,
  };
}

/** How long an authenticated key is trusted without asking the database again. */
const AUTH_CACHE_MS = 1000;

export class ApplicationService {
  /**
   * Authenticated callers by key hash. A deletion here clears it at once; one made through
   * another process on the same database takes effect within AUTH_CACHE_MS. Unknown keys are
   * never cached, so guessing cannot push real callers out.
   */
  private readonly callers = new FreshCache<string, Caller>(10_000, AUTH_CACHE_MS);

  constructor(private readonly db: Kysely<Database>) {}

  async create(input: CreateApplicationInput): Promise<{ application: Application; apiKey: string }> {
    const name = input.name?.trim();
    if (!name) throw badRequest('Application name is required');
    const attributes = input.attributes ?? ['*'];
    for (const attribute of attributes) {
      if (attribute !== '*' && !/^[A-Za-z0-9_]+$/.test(attribute)) {
        throw badRequest('Application attributes must be attribute keys or "*"');
      }
    }
    const apiKey = input.apiKey ?? generateApiKey();
    if (apiKey.length < MIN_KEY_LENGTH) throw badRequest(`API key must be at least ${MIN_KEY_LENGTH} characters`);
    // HTTP trims a header's spaces and Node reads its bytes as Latin-1: any other key could never sign in.
    if (!/^[\x21-\x7e]+$/.test(apiKey)) throw badRequest(API_KEY_CHARACTERS);
    const keyHash = hashApiKey(apiKey);
    const existing = await this.db.selectFrom('applications').select('id').where('api_key_hash', '=', keyHash).executeTakeFirst();
    if (existing) throw conflict('API key is already in use');
    const now = nowIso();
    const row: ApplicationsTable = {
      id: randomUUID(),
      name,
      api_key_hash: keyHash,
      attributes: JSON.stringify(attributes.includes('*') ? ['*'] : [...new Set(attributes)]),
      admin: input.admin ? 1 : 0,
      created_date: now,
      modified_date: now,
    };
    try {
      await this.db.insertInto('applications').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('API key is already in use');
      throw err;
    }
    return { application: toApplication(row), apiKey };
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

  async delete(id: string): Promise<void> {
    const app = await this.get(id);
    if (app.admin) {
      const admins = await this.db.selectFrom('applications').select('id').where('admin', '=', 1).limit(2).execute();
      if (admins.length < 2) throw conflict('Cannot delete the last admin application');
    }
    await this.db.deleteFrom('applications').where('id', '=', id).execute();
    this.callers.clear();
  }

  async authenticate(apiKey: string): Promise<Caller | undefined> {
    if (apiKey.length < MIN_KEY_LENGTH || apiKey.length > 512) return undefined;
    const keyHash = hashApiKey(apiKey);
    return this.callers.get(keyHash, async () => {
      const row = await this.db.selectFrom('applications').selectAll().where('api_key_hash', '=', keyHash).executeTakeFirst();
      if (!row) return undefined;
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
      try {
        await this.create({ name: 'admin', admin: true, attributes: ['*'], apiKey: configuredKey });
      } catch (err) {
        // Another replica starting at the same moment created it first.
        if (!(await this.authenticate(configuredKey))?.admin) throw err;
      }
      return undefined;
    }
    const anyAdmin = await this.db.selectFrom('applications').select('id').where('admin', '=', 1).executeTakeFirst();
    if (anyAdmin) return undefined;
    const { apiKey } = await this.create({ name: 'admin', admin: true, attributes: ['*'] });
    return apiKey;
  }
}
