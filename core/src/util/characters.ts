/**
 * Characters as a reader counts them, and as the JSON schemas' `maxLength` does: an emoji is
 * one, where JavaScript's `length` counts the two halves of its UTF-16 encoding.
 */
export function characters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/**
 * C0 controls, DEL and the C1 controls (U+0080-U+009F, among them NEL, U+0085, which some
 * log viewers and terminals take for a line break): never part of a name or an id.
 */
const CONTROL = /\p{Cc}/u;

export function hasControlCharacter(text: string): boolean {
  return CONTROL.test(text);
}

/**
 * Control characters written as `\uXXXX`, for text bound for a terminal: a name stored
 * before they were refused must not clear the screen or rewrite the line it is printed on.
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Over `max` characters as counted above; `length` first, as it can only overcount. */
export function longerThan(text: string, max: number): boolean {
  return text.length > max && characters(text) > max;
}
