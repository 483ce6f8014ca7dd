/**
 * Characters as a reader counts them, and as the JSON schemas' `maxLength` does: an emoji is
 * one, where JavaScript's `length` counts the two halves of its UTF-16 encoding.
 */
export function characters(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}
