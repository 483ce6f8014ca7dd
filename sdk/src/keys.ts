/**
 * The vault's key headers carry the base64 of a PEM RSA key: the public key in
 * `X-Encryption-Key` (stores), the private key in `X-Decryption-Key` (value reads only).
 * These helpers make, convert and load keys in that form.
 */
import { createPrivateKey, createPublicKey, generateKeyPair as generateRsa } from 'node:crypto';
import { promisify } from 'node:util';
import { readFile, writeFile } from 'node:fs/promises';
import { VaultKeyError } from './errors.js';

const generateRsaAsync = promisify(generateRsa);

export interface KeyPair {
  /** `X-Encryption-Key` header value: base64 of the PEM (SPKI) public key. */
  publicKey: string;
  /** `X-Decryption-Key` header value: base64 of the PEM (PKCS#8) private key. */
  privateKey: string;
  publicPem: string;
  privatePem: string;
}

/** A new RSA key pair in the header format. 3072 bits unless told otherwise. */
export async function generateKeyPair(options: { modulusLength?: number } = {}): Promise<KeyPair> {
  const { publicKey, privateKey } = await generateRsaAsync('rsa', {
    modulusLength: options.modulusLength ?? 3072,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey: toHeaderValue(publicKey), privateKey: toHeaderValue(privateKey), publicPem: publicKey, privatePem: privateKey };
}

/**
 * One PEM block and nothing else but whitespace: what the vault takes (core/src/crypto/keys.ts).
 * OpenSSL would read the first block of a file with text around it, or with a second key, and
 * the vault refuses such a header, so the SDK refuses it where it is given rather than at the
 * first request. Each quantified part is followed by a character it cannot match (`-`), so it
 * cannot backtrack catastrophically however long or hostile the input.
 */
const PEM_BLOCK = /^-----BEGIN ([A-Z0-9 ]+)-----[A-Za-z0-9+/=\s]+-----END \1-----$/;

/**
 * The PEM inside `key` (a PEM, or base64 of one), undefined when it holds none; a
 * `VaultKeyError` naming `source` when the PEM is not one block alone.
 */
function pemIn(key: string, source: string): string | undefined {
  const text = key.trim();
  // Text before the PEM (OpenSSL's "Bag Attributes") still makes it a PEM, refused below.
  const pem = text.includes('-----BEGIN') ? `${text}\n` : Buffer.from(text, 'base64').toString('utf8');
  if (!pem.includes('-----BEGIN')) return undefined;
  if (!PEM_BLOCK.test(pem.trim())) {
    // Never quote the input: it may be key material.
    throw new VaultKeyError({ source, message: `${source} holds more than one PEM block: text before or after the key, or a second key, which the vault refuses` });
  }
  return pem;
}

/**
 * The header value of a key given to the client: base64 of the PEM it holds, whether it came
 * as a PEM or as base64 wrapped over lines (`base64 key.pem`), neither of which can go in a
 * header as it is. Refuses a key the vault would refuse for its form, so the caller learns
 * where the key is given rather than from the first request. A value that is no PEM at all
 * is the vault's to refuse (400), as before.
 */
export function headerForm(key: string, source: string): string;
export function headerForm(key: string | undefined, source: string): string | undefined;
export function headerForm(key: string | undefined, source: string): string | undefined {
  if (key === undefined) return undefined;
  const pem = pemIn(key, source);
  return pem === undefined ? key : Buffer.from(pem, 'utf8').toString('base64');
}

/**
 * The PEM text inside a header value, a PEM, or base64 of a PEM. A `VaultKeyError` when it is
 * none of these, or when the PEM has text around it or a second key.
 */
export function toPem(key: string): string {
  const pem = pemIn(key, 'Key');
  if (pem === undefined) throw new VaultKeyError({ source: 'Key', message: 'Key is neither PEM nor base64 of a PEM' });
  return pem;
}

/** The header form (base64 of the PEM) of a PEM or of a value already in header form. */
export function toHeaderValue(key: string): string {
  return Buffer.from(toPem(key), 'utf8').toString('base64');
}

/**
 * Whether a key (PEM or header form) is private. Node derives a public key from a private
 * PEM without complaint, so "it parses as a public key" is not enough to send it on a store.
 */
export function isPrivateKey(key: string): boolean {
  try {
    return /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(toPem(key));
  } catch {
    return false;
  }
}

function checked(kind: 'public' | 'private', key: string, source: string): string {
  const pem = pemIn(key, source);
  try {
    if (pem === undefined) throw new Error('no PEM');
    if (kind === 'public' && isPrivateKey(pem)) throw new Error('private');
    const parsed = kind === 'public' ? createPublicKey(pem) : createPrivateKey(pem);
    if (parsed.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
  } catch {
    // Never quote the input: it may be key material.
    throw new VaultKeyError({ source, message: `${source} does not hold an RSA ${kind} key in PEM (or base64 of PEM)` });
  }
  return Buffer.from(pem, 'utf8').toString('base64');
}

export interface LoadedKeys {
  /** `X-Encryption-Key` header value. */
  encryptionKey?: string;
  /** `X-Decryption-Key` header value. */
  decryptionKey?: string;
}

/** Reads a PEM (or base64 of PEM) public and/or private key from files. */
export async function loadKeyFiles(files: { publicKeyFile?: string; privateKeyFile?: string }): Promise<LoadedKeys> {
  const out: LoadedKeys = {};
  if (files.publicKeyFile) out.encryptionKey = checked('public', await readFile(files.publicKeyFile, 'utf8'), files.publicKeyFile);
  if (files.privateKeyFile) out.decryptionKey = checked('private', await readFile(files.privateKeyFile, 'utf8'), files.privateKeyFile);
  return out;
}

/**
 * Keys from the environment: `VAULT_ENCRYPTION_KEY` / `VAULT_DECRYPTION_KEY` hold a key
 * (PEM or base64 of PEM); `VAULT_ENCRYPTION_KEY_FILE` / `VAULT_DECRYPTION_KEY_FILE` name a
 * file holding one. A service that only stores should have no private key in its
 * environment at all.
 */
export async function loadKeysFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<LoadedKeys> {
  const out: LoadedKeys = {};
  if (env.VAULT_ENCRYPTION_KEY) out.encryptionKey = checked('public', env.VAULT_ENCRYPTION_KEY, 'VAULT_ENCRYPTION_KEY');
  else if (env.VAULT_ENCRYPTION_KEY_FILE) Object.assign(out, await loadKeyFiles({ publicKeyFile: env.VAULT_ENCRYPTION_KEY_FILE }));
  if (env.VAULT_DECRYPTION_KEY) out.decryptionKey = checked('private', env.VAULT_DECRYPTION_KEY, 'VAULT_DECRYPTION_KEY');
  else if (env.VAULT_DECRYPTION_KEY_FILE) Object.assign(out, await loadKeyFiles({ privateKeyFile: env.VAULT_DECRYPTION_KEY_FILE }));
  return out;
}

/** Writes a pair as PEM files; the private one readable by its owner only. */
export async function saveKeyPair(pair: Pick<KeyPair, 'publicPem' | 'privatePem'>, files: { publicKeyFile: string; privateKeyFile: string }): Promise<void> {
  await writeFile(files.privateKeyFile, pair.privatePem, { mode: 0o600, flag: 'wx' });
  await writeFile(files.publicKeyFile, pair.publicPem, { mode: 0o644, flag: 'wx' });
}
