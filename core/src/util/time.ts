let lastMs = Number.NaN;
let lastIso = '';

/** ISO 8601 UTC with milliseconds: fixed width, so it sorts as text in both dialects. */
export function nowIso(): string {
  // Formatting a date costs more than most of a read; requests of one millisecond share it.
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/** Data point dates carry an explicit offset, as ViziVault clients parse them. */
export function withOffset(iso: string): string {
  return iso.endsWith('Z') ? `${iso.slice(0, -1)}+00:00` : iso;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether text starts with a `YYYY-MM-DD` that names a day of the calendar. Date.parse takes
 * any day up to 31 in any month and rolls `2024-02-30` over into 1 March, so a record would
 * keep a day nobody sent.
 */
export function startsWithCalendarDate(input: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})/.exec(input);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
}

/** A date and a time of day with no zone designator after it. */
const ZONELESS_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/i;

/**
 * Milliseconds since the epoch of an ISO 8601 text, NaN when unparsable. A date-time without
 * an offset is read as UTC: Date.parse reads it in the process's time zone, so vault processes
 * in two zones (or one restarted with another TZ) would record one input as two instants.
 * A date alone is UTC to Date.parse already.
 */
export function parseIsoMs(input: string): number {
  return Date.parse(ZONELESS_DATE_TIME.test(input) ? `${input}Z` : input);
}

/** Accepts any ISO 8601 form; returns the canonical UTC form, or undefined when unparsable. */
export function parseIsoDate(input: unknown): string | undefined {
  if (typeof input !== 'string' || input.length === 0 || input.length > 64) return undefined;
  if (!startsWithCalendarDate(input)) return undefined;
  const ms = parseIsoMs(input);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
