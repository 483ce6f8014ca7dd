/**
 * The attribute definitions every store, search and audit event needs, kept in memory. A
 * change through this process is seen at once; one through another process on the same
 * database within `maxAgeMs`.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { FreshCache } from '../util/fresh-cache.js';
import { allDefinitions, type Definition } from './repository.js';

export class DefinitionCatalog {
  private readonly cache: FreshCache<'all', Map<string, Definition>>;

  constructor(
    private readonly db: Kysely<Database>,
    maxAgeMs = 500,
  ) {
    this.cache = new FreshCache(1, maxAgeMs);
  }

  /**
   * The definitions with these keys (unknown keys are absent from the map). Call it outside
   * a transaction: on SQLite a reload through `db` would wait for the transaction's connection.
   */
  async find(keys: readonly string[]): Promise<Map<string, Definition>> {
    const all = await this.cache.get('all', async () => new Map((await allDefinitions(this.db)).map((d) => [d.key, d])));
    const out = new Map<string, Definition>();
    for (const key of keys) {
      const definition = all!.get(key);
      if (definition) out.set(key, definition);
    }
    return out;
  }

  /** Called after any change to definitions or to the tags and regulations they carry. */
  invalidate(): void {
    this.cache.clear();
  }
}
