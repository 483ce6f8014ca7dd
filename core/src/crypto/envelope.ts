/**
 * Envelope encryption of data point values.
 *
 * - A value is sealed with AES-256-GCM under a per-subject data key, with a fresh random
 *   96-bit nonce, and with the data point id and attribute as additional authenticated data,
 *   so a ciphertext copied onto another row (or another attribute) fails to open.
 * - Data keys are wrapped with RSA-OAEP (SHA-256) under the vault's registered public key.
 *   The vault never holds the private key, so it can wrap but not unwrap on its own.
 *
 * Sealed layout: version (1 byte) | nonce (12) | GCM tag (16) | ciphertext.
 */
import { constants, createCipheriv, createDecipheriv, privateDecrypt, publicEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import { randomInto } from './random-pool.js';

export const DATA_KEY_BYTES = 32;
const VERSION = 1;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + NONCE_BYTES + TAG_BYTES;

export class EnvelopeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnvelopeError';
  }
}

export function generateDataKey(): Buffer {
  return randomBytes(DATA_KEY_BYTES);
}

export function wrapDataKey(publicKey: KeyObject, dataKey: Buffer): Buffer {
  return publicEncrypt({ key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, dataKey);
}

/** Throws EnvelopeError (never the driver's message) when the key does not open it. */
export function unwrapDataKey(privateKey: KeyObject, wrapped: Buffer): Buffer {
  let key: Buffer;
  try {
    key = privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' }, wrapped);
  } catch {
    throw new EnvelopeError('data key cannot be unwrapped with this key');
  }
  if (key.length !== DATA_KEY_BYTES) throw new EnvelopeError('unwrapped data key has the wrong length');
  return key;
}

/** AAD binding a ciphertext to its row: the id and attribute, length-prefixed so no two pairs collide. */
export function pointAad(dataPointId: string, attribute: string): Buffer {
  const idBytes = Buffer.byteLength(dataPointId, 'utf8');
  const attributeBytes = Buffer.byteLength(attribute, 'utf8');
  // Every byte is written below; one allocation, as a read opens twenty of these.
  const out = Buffer.allocUnsafe(8 + idBytes + attributeBytes);
  out.writeUInt32BE(idBytes, 0);
  out.write(dataPointId, 4, idBytes, 'utf8');
  out.writeUInt32BE(attributeBytes, 4 + idBytes);
  out.write(attribute, 8 + idBytes, attributeBytes, 'utf8');
  return out;
}

export function seal(dataKey: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const nonce = Buffer.allocUnsafe(NONCE_BYTES);
  randomInto(nonce, 0, NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', dataKey, nonce);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), nonce, cipher.getAuthTag(), body]);
}

export function open(dataKey: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < HEADER_BYTES || sealed[0] !== VERSION) throw new EnvelopeError('unknown ciphertext format');
  const nonce = sealed.subarray(1, 1 + NONCE_BYTES);
  const tag = sealed.subarray(1 + NONCE_BYTES, HEADER_BYTES);
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, nonce);
    decipher.setAAD(aad);
    decipher.setAuthTag(tag);
    const plaintext = decipher.update(sealed.subarray(HEADER_BYTES));
    // GCM's final() yields no bytes; it is where the tag is checked, so it must run.
    decipher.final();
    return plaintext;
  } catch {
    throw new EnvelopeError('ciphertext does not authenticate');
  }
}

/** Values are JSON so numbers, booleans and structures come back as they were stored. */
export function sealValue(dataKey: Buffer, value: unknown, dataPointId: string, attribute: string): Buffer {
  return seal(dataKey, Buffer.from(JSON.stringify(value), 'utf8'), pointAad(dataPointId, attribute));
}

export function openValue(dataKey: Buffer, sealed: Buffer, dataPointId: string, attribute: string): unknown {
  return JSON.parse(open(dataKey, sealed, pointAad(dataPointId, attribute)).toString('utf8'));
}
