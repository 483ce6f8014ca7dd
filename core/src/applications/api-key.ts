/**
 * The API keys the vault can authenticate, whoever chooses one: an application created with
 * its own key, or VAULT_ADMIN_API_KEY. A key outside them would make an application no one
 * can ever sign in as.
 */
export const MIN_API_KEY_LENGTH = 16;
/** The longest key a request may carry. */
export const MAX_API_KEY_LENGTH = 512;

/** HTTP trims a header's spaces and Node reads its bytes as Latin-1: any other key could never sign in. */
export function isPrintableAscii(key: string): boolean {
  return /^[\x21-\x7e]+$/.test(key);
}

/** Whether a request could ever sign in with `key`. */
export function isUsableApiKey(key: string): boolean {
  return key.length >= MIN_API_KEY_LENGTH && key.length <= MAX_API_KEY_LENGTH && isPrintableAscii(key);
}
