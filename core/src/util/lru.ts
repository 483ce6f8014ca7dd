/**
 * A bounded least-recently-used map. Unwrapped data keys live only here, so the bound is
 * also the bound on how much key material a process holds.
 */
export class LruMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error('LRU capacity must be a positive integer');
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    // Map keeps insertion order: re-inserting moves the entry to the most recent end.
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as K;
      this.map.delete(oldest);
    }
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** Removes every entry the predicate selects (used for crypto-shredding: O(capacity)). */
  deleteWhere(predicate: (value: V, key: K) => boolean): void {
    for (const [key, value] of this.map) if (predicate(value, key)) this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
