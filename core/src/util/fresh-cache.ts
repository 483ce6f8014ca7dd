import { LruMap } from './lru.js';

/**
 * A bounded cache whose entries are re-read once they are older than `maxAgeMs`. Changes
 * made by this process invalidate what they touch at once; changes made by another process
 * on the same database show within `maxAgeMs`.
 */
export class FreshCache<K, V> {
  private readonly entries: LruMap<K, { value: V; until: number }>;
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;

  constructor(
    capacity: number,
    private readonly maxAgeMs: number,
  ) {
    this.entries = new LruMap(capacity);
  }

  /** The cached value, or what `load` returns; `undefined` results are never cached. */
  async get(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return hit.value;
    const generation = this.generation;
    const value = await load();
    if (value === undefined) this.entries.delete(key);
    else if (generation === this.generation) this.entries.set(key, { value, until: now + this.maxAgeMs });
    return value;
  }

  delete(key: K): void {
    this.generation += 1;
    this.entries.delete(key);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }
}
