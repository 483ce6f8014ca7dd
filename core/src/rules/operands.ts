/**
 * How a rule reads the names and values it compares. Compiling a rule resolves them once and
 * matching it applies them to the request: both read them here, so the two agree.
 */

/** `KEY.sub` is governed by its definition `KEY`. */
export function rootAttribute(key: string): string {
  const dot = key.indexOf('.');
  return dot === -1 ? key : key.slice(0, dot);
}

/** Decimal notation only: `Number` also reads `0x10`, `0o10` and `0b10`, which no one means as 16, 8 and 2. */
const DECIMAL = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$/;

/** Numbers, and strings that spell one (values arrive as text from many clients). */
export function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value.length > 64 || !DECIMAL.test(value)) return undefined;
  const n = Number(value);
  return Number.isFinite(n) ? n : undefined;
}
