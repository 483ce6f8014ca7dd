/** Who is calling: an application authenticated by its API key. */
import { forbidden } from '../errors.js';

export interface Caller {
  applicationId: string;
  name: string;
  admin: boolean;
  /** `'*'` for every attribute, else the attribute keys it may touch. */
  attributes: '*' | ReadonlySet<string>;
}

/** Sub-attributes (`NAME.first`) are governed by their root attribute's access. */
export function canAccessAttribute(caller: Caller, attributeKey: string): boolean {
  if (caller.attributes === '*') return true;
  const dot = attributeKey.indexOf('.');
  return caller.attributes.has(dot === -1 ? attributeKey : attributeKey.slice(0, dot));
}

export function requireAdmin(caller: Caller, message = 'Forbidden'): void {
  if (!caller.admin) throw forbidden(message);
}
