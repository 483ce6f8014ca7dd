import { LruMap } from './lru.js';

/**
 * A bounded cache whose entries are re-read once they are older than `maxAgeMs`. Changes
 * made by this process invalidate what they touch at once; changes made by another process
 * on the same database show within `maxAgeMs`.
 */
export class FreshCache<K extends {}, V> {
  private readonly entries: LruMap<K, { value: V; until: number }>;
  /** Bumped by every invalidation, so a load that raced one is not cached. */
  private generation = 0;
  /**
   * Loads under way. When an entry expires under load, every request in flight misses at
   * once: they share one load instead of sending the database one query each.
   */
  private readonly loading = new Map<K, Promise<V | undefined>>();

  constructor(
    capacity: number,
    private readonly maxAgeMs: number,
  ) {
    this.entries = new LruMap(capacity);
  }

  /** The cached value, or what `load` returns; `undefined` results are never cached. */
  get(key: K, load: () => Promise<V | undefined>): Promise<V | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.until > now) return Promise.resolve(hit.value);
    const joined = this.loading.get(key);
    if (joined) return joined;
    const pending = this.load(key, load, now).finally(() => {
      // An invalidation meanwhile may have let a newer load take the key's place.
      if (this.loading.get(key) === pending) this.loading.delete(key);
    });
    this.loading.set(key, pending);
    return pending;
  }

  private async load(key: K, load: () => Promise<V | undefined>, now: number): Promise<V | undefined> {
    const generation = this.generation;
    const value = await load();
    if (value === undefined) this.entries.delete(key);
    else if (generation === this.generation) this.entries.set(key, { value, until: now + this.maxAgeMs });
    return value;
  }

  /** Also forgets loads under way: a request after an invalidation reads afresh. */
  delete(key: K): void {
    this.generation += 1;
    this.entries.delete(key);
    this.loading.delete(key);
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
    this.loading.clear();
  }
}
