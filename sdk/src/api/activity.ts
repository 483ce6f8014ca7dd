/**
 * The activity log: report-only audit events in, records and their chain out.
 */
import type { ActivityFilter, ActivityHead, ActivityRecord, ActivitySummary, ActivityVerification, ExternalActivityEvent } from '../types.js';
import type { Request } from '../transport.js';
import { pages, type CallOptions, type Send } from './call.js';

const hasEventId = (event: ExternalActivityEvent) => typeof event.eventId === 'string' && event.eventId.length > 0;

/** Report-only audit logs: activity on data kept outside the vault. */
export class AuditApi {
  constructor(private readonly rawSend: <T>(request: Request) => Promise<T>) {}

  /**
   * Records one event and answers its summary. Retried on connection errors when the event
   * carries an `eventId` (the vault records an id once), otherwise only when the connection
   * was refused (nothing was sent).
   */
  log(event: ExternalActivityEvent, options: CallOptions = {}): Promise<ActivitySummary> {
    return this.rawSend({ method: 'POST', path: '/auditlogs', body: event, idempotent: hasEventId(event), signal: options.signal });
  }

  /**
   * Records events atomically: on the first failing event nothing is recorded and the
   * VaultApiError's `index` names it. Retried on connection errors when every event carries an
   * `eventId`, otherwise only when the connection was refused.
   */
  logBulk(events: ExternalActivityEvent[], options: CallOptions = {}): Promise<ActivitySummary[]> {
    return this.rawSend({ method: 'POST', path: '/auditlogs/bulk', body: events, idempotent: events.every(hasEventId), signal: options.signal });
  }
}

export class ActivityApi {
  constructor(private readonly send: Send) {}

  /** One page of the activity log, oldest first unless `order: 'newest'`. */
  list(filter: ActivityFilter = {}, options: CallOptions = {}): Promise<ActivityRecord[]> {
    return this.send({ method: 'GET', path: '/activity', query: { ...filter }, idempotent: true, signal: options.signal });
  }

  /**
   * Every matching record sealed when the walk starts (`head()` seals what is pending), each
   * once, walking the pages. Records added meanwhile, including the READs the loop's own
   * reads append, are left for the next walk (`fromSequence`: the last `sequence` seen + 1).
   */
  all(filter: Omit<ActivityFilter, 'page'> = {}, options: CallOptions = {}): AsyncGenerator<ActivityRecord, void, undefined> {
    return this.walkSnapshot(filter, options);
  }

  private async *walkSnapshot(filter: Omit<ActivityFilter, 'page'>, options: CallOptions): AsyncGenerator<ActivityRecord, void, undefined> {
    // Offset paging over a growing log never meets a short page when every read adds a
    // record, and repeats entries under `newest`. The sealed range up to the head never changes.
    const head = await this.head(options);
    const toSequence = Math.min(filter.toSequence ?? head.sequence, head.sequence);
    if (toSequence < 1 || toSequence < (filter.fromSequence ?? 1)) return;
    yield* pages(filter.count ?? 100, (page, count) => this.list({ ...filter, toSequence, page, count }, options));
  }

  /**
   * Recomputes the log's hash chain and reports the first broken record. Given a head kept
   * from `head()` (the object, or `SEQUENCE:HASH`), also whether the log still holds that
   * record unchanged (`headMatches`, answered even when the chain breaks before it; `valid`
   * is false when it does not).
   */
  verify(head?: ActivityHead | string, options: CallOptions = {}): Promise<ActivityVerification> {
    const query = head === undefined ? undefined : { head: typeof head === 'string' ? head : `${head.sequence}:${head.hash}` };
    return this.send({ method: 'GET', path: '/activity/verify', query, idempotent: true, signal: options.signal });
  }

  /** The chain head (after sealing pending records): keep it outside the database. */
  head(options: CallOptions = {}): Promise<ActivityHead> {
    return this.send({ method: 'GET', path: '/activity/head', idempotent: true, signal: options.signal });
  }
}
