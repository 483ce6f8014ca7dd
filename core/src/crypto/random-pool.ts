/**
 * Random bytes drawn many at a time, as `crypto.randomUUID` draws its own: a CSPRNG call per
 * 12-byte nonce cost more than the rest of sealing a value (a structured store seals seven).
 * Every byte is handed out once. Only for values that become public anyway (nonces): never
 * for keys.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(16 * 1024);
let used = pool.length;

/** Fills `target[offset .. offset + length)` with fresh random bytes. */
export function randomInto(target: Buffer, offset: number, length: number): void {
  if (length > pool.length) throw new RangeError('too many random bytes for the pool');
  if (used + length > pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  pool.copy(target, offset, used, used + length);
  used += length;
}
