import type { StampedEvent } from '../ingest/event.js';
import { eventJson } from './event-json.js';

/** A BullMQ job this process holds (active, locked with `token`) until all its events are handled. */
export interface HeldJob<J = unknown> {
  id: string;
  job: J;
  token: string;
  events: StampedEvent[];
  /** Each event's size in a bulk body, in bytes. */
  sizes: number[];
  /** Events handed out to batches so far (a job may span several batches). */
  taken: number;
  /** Events the vault recorded or that were dead-lettered. */
  done: number;
  /** When the job became available to this process; drives the batch time limit. */
  heldSince: number;
}

export interface BatchSlice<J = unknown> {
  held: HeldJob<J>;
  from: number;
  to: number;
}

export interface Batch<J = unknown> {
  slices: BatchSlice<J>[];
  events: StampedEvent[];
}

/** An event's bytes in a bulk body, its separating comma included. */
export function eventBytes(event: StampedEvent): number {
  return Buffer.byteLength(eventJson(event)) + 1;
}

/**
 * In-memory order of the jobs this process holds. Jobs are cut into batches strictly in the
 * order they were added, so the vault sees events in queue order; a job larger than a batch is
 * spread over consecutive batches and is only complete when its last event is handled.
 */
export class Batcher<J = unknown> {
  private readonly jobs = new Map<string, HeldJob<J>>();
  /** Jobs with events not yet taken, oldest first. */
  private pending: HeldJob<J>[] = [];
  private unsentCount = 0;
  private unsentByteCount = 0;

  /** Adds a job, or refreshes the token if it is already held (it was re-locked meanwhile). */
  add(id: string, job: J, token: string, events: StampedEvent[], now = Date.now()): HeldJob<J> {
    const existing = this.jobs.get(id);
    if (existing) {
      existing.token = token;
      existing.job = job;
      return existing;
    }
    const sizes = events.map(eventBytes);
    const held: HeldJob<J> = { id, job, token, events, sizes, taken: 0, done: 0, heldSince: now };
    this.jobs.set(id, held);
    if (events.length > 0) {
      this.pending.push(held);
      this.unsentCount += events.length;
      this.unsentByteCount += sum(sizes);
    }
    return held;
  }

  has(id: string): boolean {
    return this.jobs.has(id);
  }

  get unsent(): number {
    return this.unsentCount;
  }

  /** The bulk-body bytes of the events not yet taken. */
  get unsentBytes(): number {
    return this.unsentByteCount;
  }

  /** When the oldest unsent event became available, or undefined when nothing is waiting. */
  get oldestUnsentSince(): number | undefined {
    return this.pending[0]?.heldSince;
  }

  /**
   * The next events in order: at most `max`, and at most `maxBytes` of bulk body, unless the
   * first event alone is larger (it goes alone, for the vault to take or refuse).
   */
  take(max: number, maxBytes = Number.POSITIVE_INFINITY): Batch<J> {
    const batch: Batch<J> = { slices: [], events: [] };
    // The array's brackets; each event's size counts its comma, one more than there are.
    let bytes = 1;
    let full = false;
    while (!full && batch.events.length < max && this.pending.length > 0) {
      const held = this.pending[0];
      const from = held.taken;
      let to = from;
      while (to < held.events.length && batch.events.length < max) {
        if (batch.events.length > 0 && bytes + held.sizes[to] > maxBytes) {
          full = true;
          break;
        }
        bytes += held.sizes[to];
        batch.events.push(held.events[to]);
        to++;
      }
      if (to === from) break;
      batch.slices.push({ held, from, to });
      held.taken = to;
      this.unsentCount -= to - from;
      this.unsentByteCount -= sum(held.sizes, from, to);
      if (held.taken === held.events.length) this.pending.shift();
    }
    return batch;
  }

  /** Records a batch as handled and returns the jobs that are now complete. */
  settle(batch: Batch<J>): HeldJob<J>[] {
    const complete: HeldJob<J>[] = [];
    for (const { held, from, to } of batch.slices) {
      held.done += to - from;
      if (held.done === held.events.length) complete.push(held);
    }
    return complete;
  }

  /**
   * Forgets every held job. Used when this process stops being the delivering one: the jobs
   * stay active in Redis and the next lease holder claims and resends them in order.
   */
  clear(): void {
    this.jobs.clear();
    this.pending = [];
    this.unsentCount = 0;
    this.unsentByteCount = 0;
  }

  release(id: string): void {
    const held = this.jobs.get(id);
    if (!held) return;
    this.jobs.delete(id);
    const i = this.pending.indexOf(held);
    if (i >= 0) {
      this.pending.splice(i, 1);
      this.unsentCount -= held.events.length - held.taken;
      this.unsentByteCount -= sum(held.sizes, held.taken);
    }
  }

  held(): HeldJob<J>[] {
    return [...this.jobs.values()];
  }

  get size(): number {
    return this.jobs.size;
  }
}

function sum(values: number[], from = 0, to = values.length): number {
  let total = 0;
  for (let i = from; i < to; i++) total += values[i];
  return total;
}
