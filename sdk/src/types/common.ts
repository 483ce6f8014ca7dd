/** What every resource shares: timestamps, sensitivities and the event types. */

/** ISO 8601 timestamp. Inputs accept any ISO 8601 form (or a Date, serialised as ISO). */
export type Timestamp = string;

export type Sensitivity = 'NORMAL' | 'PERSONAL' | 'SENSITIVE' | 'CONFIDENTIAL';

export type EventType = 'READ' | 'STORE' | 'UPDATE' | 'DELETE';
