/** Activity that happened outside the vault, reported so it lands in the vault's audit log. */
export const eventTypes = ['READ', 'STORE', 'DELETE', 'UPDATE'] as const;
export type EventType = (typeof eventTypes)[number];

export interface ExternalActivityData {
  attribute?: string;
  value?: unknown;
  dataPointId?: string;
  regulations?: string[];
  tags?: string[];
  sensitivity?: string;
  reportOnly?: boolean;
  accessibility?: string;
}

export interface EventLocation {
  country?: string;
  subdivision?: string;
  city?: string;
}

export interface ExternalActivityEvent {
  eventType: EventType;
  dataPointId?: string;
  subjectId?: string;
  data?: ExternalActivityData;
  /** ISO 8601, or epoch milliseconds as the vault also takes them; stamped as ISO 8601. */
  timestamp?: string | number;
  applicationId: string;
  applicationUser?: string;
  dataStoreName?: string;
  dataStoreServer?: string;
  dataStoreEntityName?: string;
  location?: EventLocation;
  eventId?: string;
}

/** What the queue carries and the vault receives: every event has its identity by then. */
export type StampedEvent = ExternalActivityEvent & { eventId: string; timestamp: string };

/** The event without `data.value` (the same object when it has none). */
export function withoutValue<T extends ExternalActivityEvent>(event: T): T {
  if (event.data === undefined || !('value' in event.data)) return event;
  const { value: _value, ...data } = event.data;
  return { ...event, data };
}
