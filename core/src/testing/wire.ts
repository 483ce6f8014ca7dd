/**
 * What a test can see of the traffic to PostgreSQL: how many socket writes the process made
 * (every socket's, so run it where only the code under test writes) while `during` ran.
 */
import { Socket } from 'node:net';

export async function countSocketWrites<T>(during: () => Promise<T>): Promise<{ result: T; writes: number }> {
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
  const originals = { _write: proto._write, _writev: proto._writev };
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    proto[name] = function (this: Socket, ...args: unknown[]) {
      writes++;
      return originals[name].apply(this, args);
    };
  }
  try {
    return { result: await during(), writes };
  } finally {
    Object.assign(proto, originals);
  }
}
