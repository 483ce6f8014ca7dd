/**
 * Data point ids: UUID version 7 (RFC 9562) with a per-process monotonic counter, so ids
 * created in one millisecond still sort in creation order. Reads and search order by
 * `createdDate`, then id, which then is the order the points were stored in, and new rows
 * land at the end of the primary-key index instead of at random pages.
 */
import { randomInto } from '../crypto/random-pool.js';

let lastMs = 0;
let counter = 0;

export function newPointId(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    ms = lastMs;
    counter++;
    if (counter > 0xfff) {
      ms = ++lastMs;
      counter = 0;
    }
  } else {
    lastMs = ms;
    counter = 0;
  }
  const bytes = Buffer.allocUnsafe(16);
  // Pooled: a bulk audit makes thousands of ids.
  randomInto(bytes, 8, 8);
  bytes.writeUIntBE(ms, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
