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

/** Accepts any ISO 8601 form; returns the canonical UTC form, or undefined when unparsable. */
export function parseIsoDate(input: unknown): string | undefined {
  if (typeof input !== 'string' || input.length === 0 || input.length > 64) return undefined;
  if (!/^\d{4}-\d{2}-\d{2}/.test(input)) return undefined;
  const ms = Date.parse(input);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
