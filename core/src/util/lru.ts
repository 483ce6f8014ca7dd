/**
 * A bounded least-recently-used map. Unwrapped data keys live only here, so the bound is
 * also the bound on how much key material a process holds.
 *
 * On `lru-cache`, whose recency list lives in typed arrays: moving an entry to the recent end
 * of a `Map` (delete, then set) made V8 rebuild the map's table over and over, and a read by id
 * spent some 1-2 µs in each of its four or five lookups.
 */
import { LRUCache } from 'lru-cache';

export class LruMap<K extends {}, V extends {}> {
  private readonly cache: LRUCache<K, V>;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('LRU capacity must be a positive integer');
    this.cache = new LRUCache<K, V>({ max: capacity });
  }

  get size(): number {
    return this.cache.size;
  }

  get(key: K): V | undefined {
    return this.cache.get(key);
  }

  set(key: K, value: V): void {
    this.cache.set(key, value);
  }

  delete(key: K): boolean {
    return this.cache.delete(key);
  }

  /** Removes every entry the predicate selects (used for crypto-shredding: O(capacity)). */
  deleteWhere(predicate: (value: V, key: K) => boolean): void {
    const doomed: K[] = [];
    for (const [key, value] of this.cache.entries()) if (predicate(value, key)) doomed.push(key);
    for (const key of doomed) this.cache.delete(key);
  }

  clear(): void {
    this.cache.clear();
  }
}
