import type { StampedEvent } from '../ingest/event.js';

/**
 * An event as it goes into a bulk body, serialised once: the batcher measures it to cut
 * batches by bytes, and the vault client joins the same strings into the body, resends included.
 */
const serialised = new WeakMap<StampedEvent, string>();

export function eventJson(event: StampedEvent): string {
  let json = serialised.get(event);
  if (json === undefined) {
    json = JSON.stringify(event);
    serialised.set(event, json);
  }
  return json;
}

/** A bulk body: exactly JSON.stringify(events). */
export function bulkBody(events: StampedEvent[]): string {
  return `[${events.map(eventJson).join(',')}]`;
}
