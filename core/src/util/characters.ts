/**
 * Characters as a reader counts them, and as the JSON schemas' `maxLength` does: an emoji is
 * one, where JavaScript's `length` counts the two halves of its UTF-16 encoding.
 */
export function characters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

/** Over `max` characters as counted above; `length` first, as it can only overcount. */
export function longerThan(text: string, max: number): boolean {
  return text.length > max && characters(text) > max;
}
