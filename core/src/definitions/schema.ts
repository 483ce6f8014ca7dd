/**
 * The attribute schema language and value checking. A schema is a primitive name, or an
 * object from sub-attribute key to schema (nested to any depth); a key written `[name]`
 * holds a list of values of its schema.
 */
import { badRequest, tooLarge, VaultError } from '../errors.js';
import { longerThan } from '../util/characters.js';
import { startsWithCalendarDate } from '../util/time.js';

export const PRIMITIVES = ['string', 'int', 'float', 'boolean', 'date', 'file'] as const;
export type Primitive = (typeof PRIMITIVES)[number];
export interface StructuredSchema {
  [subKey: string]: Schema;
}
export type Schema = Primitive | StructuredSchema;

/** In characters as a reader counts them (an emoji is one), as the interface states the limit. */
export const MAX_STRING_LENGTH = 1_048_576;
const MAX_DEPTH = 32;
/**
 * A sub-point's attribute (`KEY.sub.leaf`) is named in search, activity filters, reads and
 * rules, each of which takes at most 256 characters, and PostgreSQL's btree indexes on it
 * bound an entry (a longer name made the first store of the value a 500 there).
 */
export const MAX_PATH_LENGTH = 256;
export const PATH_TOO_LONG_MESSAGE = `Sub-attribute paths (KEY.sub.leaf) may be at most ${MAX_PATH_LENGTH} characters`;
/**
 * The longest sub-point attribute a store writes. Definitions made before MAX_PATH_LENGTH may
 * have longer paths; those up to this one stored then and still do, while a longer one would
 * overflow PostgreSQL's btree entry on (attribute, blind index, date, id) (2,704 bytes, about
 * 2,580 characters of path), so it is refused on both dialects before anything is written.
 */
export const MAX_STORED_PATH_LENGTH = 2048;

function storedPathTooLong(path: string): VaultError {
  return badRequest(
    `Sub-attribute path ${echoPath(path)} is over ${MAX_STORED_PATH_LENGTH} characters, too long to store: sub-attribute paths may be at most ${MAX_PATH_LENGTH} characters`,
  );
}
/**
 * A path echoed in a message: whole up to the longest a definition may have (as the interface
 * words it), else its first 64 characters, as other messages clip what a caller sent: a key
 * of a megabyte is not sent back, nor written to the logs. Never cut inside a surrogate pair.
 */
function echoPath(path: string): string {
  if (!longerThan(path, MAX_PATH_LENGTH)) return path;
  const head = path.slice(0, 64);
  return `${/[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head}…`;
}

export const ATTRIBUTE_KEY = /^[A-Za-z0-9_]+$/;
const ALIASES: Record<string, Primitive> = { integer: 'int', number: 'float', double: 'float', bool: 'boolean' };

/** Turns a definition's `schema` member into its canonical form, or the interface's 400s. */
export function normalizeSchema(input: unknown, depth = 0): Schema {
  if (input === null) throw badRequest('Schema cannot be null');
  if (typeof input === 'string') {
    const name = (ALIASES[input] ?? input) as Primitive;
    if (!PRIMITIVES.includes(name)) throw badRequest('Schema has unexpected class');
    return name;
  }
  if (typeof input !== 'object' || Array.isArray(input)) throw badRequest('Schema has unexpected class');
  // A bound on the walk, far past any record's shape; a value is checked against it level by level.
  if (depth >= MAX_DEPTH) throw badRequest(`Schema is nested more than ${MAX_DEPTH} levels deep`);
  const entries = Object.entries(input as Record<string, unknown>);
  if (entries.length === 0) throw badRequest('Schema has unexpected class');
  const out: StructuredSchema = {};
  for (const [key, sub] of entries) {
    const name = listName(key) ?? key;
    if (!ATTRIBUTE_KEY.test(name)) throw badRequest('Sub-attribute key contains unusable characters');
    // Values and sub-points name both `name` and `[name]` as `name`: which one a value meant could not be told.
    if (name !== key && Object.hasOwn(input, name)) throw badRequest(`Sub-attribute key is given twice: ${name} and ${key}`);
    out[key] = normalizeSchema(sub, depth + 1);
  }
  return out;
}

/** The length of the longest `.sub.leaf` a value of this schema can have, the root's key not counted. */
export function longestSubPath(schema: Schema): number {
  if (!isStructured(schema)) return 0;
  let longest = 0;
  for (const [key, sub] of Object.entries(schema)) longest = Math.max(longest, 1 + (listName(key) ?? key).length + longestSubPath(sub));
  return longest;
}

/** `[phones]` → `phones`; a plain key → undefined. */
function listName(key: string): string | undefined {
  return key.startsWith('[') && key.endsWith(']') ? key.slice(1, -1) : undefined;
}

export function isStructured(schema: Schema): schema is StructuredSchema {
  return typeof schema === 'object';
}

/**
 * Whether `path` (the sub-attribute keys after the root, as in `KEY.address.city`) names a part
 * of values of this schema, a leaf or a structure; a list `[phones]` is named `phones`.
 */
export function hasSubAttribute(schema: Schema, path: readonly string[]): boolean {
  let at = schema;
  for (const key of path) {
    if (!isStructured(at)) return false;
    const next = Object.hasOwn(at, key) && listName(key) === undefined ? at[key] : Object.hasOwn(at, `[${key}]`) ? at[`[${key}]`] : undefined;
    if (next === undefined) return false;
    at = next;
  }
  return true;
}

/** The name the interface's `Expected [type] ...` message uses. */
export function typeName(schema: Schema): string {
  return isStructured(schema) ? 'object' : schema;
}

export interface Leaf {
  /** `KEY.sub.leaf`; list items share their list's name. */
  attribute: string;
  value: string | number | boolean;
  type: Primitive;
}

export interface ValueErrorStatuses {
  /** 422 on store and single audit events, 400 in bulk audit. */
  mismatch: number;
  unknownSubAttribute: number;
}

export const STORE_STATUSES: ValueErrorStatuses = { mismatch: 422, unknownSubAttribute: 400 };

function mismatch(statuses: ValueErrorStatuses, schema: Schema, attribute: string): VaultError {
  return new VaultError(statuses.mismatch, `Expected ${typeName(schema)} for value of attribute ${attribute}`);
}

function checkPrimitive(type: Primitive, value: unknown, attribute: string, statuses: ValueErrorStatuses): void {
  const fail = () => mismatch(statuses, type, attribute);
  switch (type) {
    case 'string':
      if (typeof value !== 'string') throw fail();
      if (longerThan(value, MAX_STRING_LENGTH)) throw tooLarge('Datapoint values may not exceed 1 MB in size');
      return;
    case 'file':
      if (typeof value !== 'string') throw fail();
      return;
    case 'int':
      // A string holds the same integers a number may (every safe one), not only those of 15 digits.
      if (typeof value === 'number' ? !Number.isSafeInteger(value) : typeof value !== 'string' || !/^-?\d{1,16}$/.test(value.trim()) || !Number.isSafeInteger(Number(value))) throw fail();
      return;
    case 'float':
      if (typeof value === 'number' ? !Number.isFinite(value) : typeof value !== 'string' || value.trim() === '' || !Number.isFinite(Number(value))) throw fail();
      return;
    case 'boolean':
      if (typeof value !== 'boolean' && value !== 'true' && value !== 'false') throw fail();
      return;
    case 'date':
      if (typeof value !== 'string' || !startsWithCalendarDate(value) || Number.isNaN(Date.parse(value))) throw fail();
      return;
  }
}

/**
 * Checks a value against its schema and returns its leaves (one per primitive, list items
 * each their own). Throws the interface's errors: `Expected [type] ...`, `Unknown
 * sub-attribute ...`, and 413 for an over-long string.
 */
export function checkValue(schema: Schema, value: unknown, attribute: string, statuses: ValueErrorStatuses = STORE_STATUSES): Leaf[] {
  const leaves: Leaf[] = [];
  walk(schema, value, attribute, statuses, leaves, 0);
  return leaves;
}

function walk(schema: Schema, value: unknown, attribute: string, statuses: ValueErrorStatuses, leaves: Leaf[], depth: number): void {
  if (!isStructured(schema)) {
    checkPrimitive(schema, value, attribute, statuses);
    leaves.push({ attribute, value: value as Leaf['value'], type: schema });
    return;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value) || depth >= MAX_DEPTH) throw mismatch(statuses, schema, attribute);
  const byName = new Map<string, { schema: Schema; list: boolean }>();
  for (const [key, sub] of Object.entries(schema)) {
    const list = listName(key);
    byName.set(list ?? key, { schema: sub, list: list !== undefined });
  }
  for (const [key, sub] of Object.entries(value as Record<string, unknown>)) {
    const path = `${attribute}.${key}`;
    const spec = byName.get(key);
    if (!spec) throw new VaultError(statuses.unknownSubAttribute, `Unknown sub-attribute ${echoPath(path)}`);
    if (sub === null || sub === undefined) continue;
    // Only a definition stored before the limit can have such a path (paths are ASCII).
    if (path.length > MAX_STORED_PATH_LENGTH) throw storedPathTooLong(path);
    if (spec.list) {
      if (!Array.isArray(sub)) throw new VaultError(statuses.mismatch, `Expected list for value of attribute ${path}`);
      for (const item of sub) walk(spec.schema, item, path, statuses, leaves, depth + 1);
    } else {
      walk(spec.schema, sub, path, statuses, leaves, depth + 1);
    }
  }
}

/** Whether replacing `before` by `after` keeps every stored value valid: only additions. */
export function isCompatibleChange(before: Schema, after: Schema): boolean {
  if (!isStructured(before) || !isStructured(after)) return before === after;
  return Object.entries(before).every(([key, sub]) => key in after && isCompatibleChange(sub, after[key]));
}

/** The blind index sees values in one canonical spelling, so `Ada@X.org ` finds `ada@x.org`. */
export function normalizeForIndex(value: Leaf['value']): string {
  return String(value).normalize('NFKC').trim().toLowerCase();
}
