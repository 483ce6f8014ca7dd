/**
 * Checks on untrusted JSON that must not themselves recurse: a body nested thousands of
 * levels deep would overflow the stack of any recursive walker (the rule parser,
 * JSON.stringify, the schema checker), so depth is measured on the raw text, iteratively,
 * before anything parses or walks it.
 */

/**
 * The deepest nesting a body may have. Every legitimate shape fits well inside it: rules
 * nest 16 constraints (32 JSON levels), schemas and values 32 sub-attributes (with lists,
 * 64 levels), plus a few levels of envelope.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * True when the JSON text nests objects and arrays deeper than `max`. Strings are skipped
 * with indexOf, so a 16 MiB value costs about a millisecond. Malformed text is not judged
 * here (the parser refuses it).
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j === -1) return false;
        let backslashes = 0;
        while (text.charCodeAt(j - 1 - backslashes) === 0x5c) backslashes++;
        if ((backslashes & 1) === 0) break;
      }
      i = j;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    }
  }
  return false;
}

/** True when a parsed value is nested deeper than `max`; iterative, so any depth is safe to ask about. */
export function valueTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** A UTF-16 surrogate without its partner: no valid Unicode text holds one. */
const LONE_SURROGATE = /\p{Cs}/u;

export type StringDefect = 'nul' | 'surrogate';

/** The first NUL or lone surrogate in any string or key of a parsed value (iteratively). */
export function findStringDefect(value: unknown): StringDefect | undefined {
  const check = (s: string): StringDefect | undefined => (s.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(s) ? 'surrogate' : undefined);
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      const defect = check(v);
      if (defect) return defect;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        const defect = check(key);
        if (defect) return defect;
        stack.push(item);
      }
    }
  }
  return undefined;
}

/** Cheap pretests on the raw text: only a body that could hold a defect is walked. */
export function mayHoldStringDefect(text: string): boolean {
  return text.includes('\\u0000') || /\\u[dD][89a-fA-F]/.test(text);
}
