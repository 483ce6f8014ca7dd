import type { Logger } from 'pino';
import type { LeaseState } from './lease.js';

/**
 * A term is the worker's period as lease holder, an AbortController aborted when the term ends
 * before a stop (see DeliveryWorker.run). Undelivered jobs are then left active, and the next
 * term claims them again, in order; the reason only decides what is logged.
 */

/** Why a term ended before a stop; each asks for its own log line, at its own level. */
export type TermEnd =
  | { reason: 'lease-lost'; state: LeaseState }
  | { reason: 'redis-reconnected' }
  | { reason: 'unheld-jobs'; jobs: string[] }
  | { reason: 'delivery-failed'; err: string }
  | { reason: 'recovery-failed'; err: string };

/** The abort reason of an ended term: an Error, as code handed the term's signal may rethrow it. */
export class TermEnded extends Error {
  constructor(readonly end: TermEnd) {
    super(`delivery term ended: ${end.reason}`);
    this.name = 'TermEnded';
  }
}

/** Says why the term ended, if it did (a stop ends none). */
export function logTermEnd(log: Logger, term: AbortController): void {
  const ended = term.signal.reason;
  if (!(ended instanceof TermEnded)) return;
  const end = ended.end;
  switch (end.reason) {
    case 'lease-lost':
      log.warn(
        { reason: end.reason, state: end.state },
        end.state === 'taken'
          ? 'delivery lease lost to another process; handing undelivered jobs back'
          : 'delivery lease lost: Redis did not confirm it in time; handing undelivered jobs back',
      );
      break;
    case 'redis-reconnected':
      // Not a failure: the next term claims the active jobs in order, ours among them.
      log.info({ reason: end.reason }, 'Redis connection re-established; claiming active jobs again');
      break;
    case 'unheld-jobs':
      log.warn({ reason: end.reason, jobs: end.jobs }, 'active jobs nobody is delivering; claiming every active job again');
      break;
    case 'delivery-failed':
      log.error({ reason: end.reason, err: end.err }, 'unexpected delivery failure; restarting delivery from Redis');
      break;
    case 'recovery-failed':
      log.warn({ reason: end.reason, err: end.err }, 'could not recover abandoned jobs; retrying');
      break;
  }
}
