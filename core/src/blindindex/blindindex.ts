/**
 * Blind index: a keyed HMAC of a value's canonical spelling, so search can find equal values
 * without decrypting anything, and a copy of the database (without the index secret, which
 * never enters it) cannot be used to test guesses.
 *
 * The attribute path is part of the MAC input, so equal values of different attributes give
 * unrelated entries and one attribute's index reveals nothing about another's.
 */
import { createHmac } from 'node:crypto';
import { normalizeForIndex, type Leaf } from '../definitions/schema.js';

/** Attribute paths are `[A-Za-z0-9_.]`, so NUL cannot occur in one and separates unambiguously. */
const SEPARATOR = '\u0000';

export function blindIndex(indexKey: Buffer, attributePath: string, value: Leaf['value']): string {
  return createHmac('sha256', indexKey).update(`${attributePath}${SEPARATOR}${normalizeForIndex(value)}`, 'utf8').digest('base64url');
}
