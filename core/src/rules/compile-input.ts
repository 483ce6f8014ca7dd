/**
 * What checking the parts of a rule shares: the limits on names, lists and messages, how an
 * optional member may be sent, and how caller text is echoed in a refusal.
 */
import { badRequest } from '../errors.js';
import { longerThan } from '../util/characters.js';

export const MAX_LIST = 1_000;
export const MAX_NAME = 256;
export const MAX_MESSAGE = 4_096;

export type Json = Record<string, unknown>;

export { longerThan };

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Optional members may be sent as null (some clients serialise every field). */
export const absent = (v: unknown) => v === undefined || v === null;

export function checkUnknownMembers(object: Json, allowed: readonly string[], where: string): void {
  for (const member of Object.keys(object)) {
    if (member !== 'type' && !allowed.includes(member)) throw badRequest(`Unknown member ${clip(member)} in ${where}`);
  }
}

/** Caller text echoed in a message is bounded, so a message cannot be made arbitrarily long. */
export function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
