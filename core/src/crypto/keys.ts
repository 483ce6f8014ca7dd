/**
 * The vault's RSA key registry. The vault knows public keys only; private keys arrive in a
 * request header, are checked against a registered public key, used, and dropped.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, hash, randomBytes, type KeyObject } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { badRequest, conflict } from '../errors.js';
import { nowIso } from '../util/time.js';
import { LruMap } from '../util/lru.js';
import { FreshCache } from '../util/fresh-cache.js';
import { changeRecord, type Change, type ChangeActor } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';

export const INVALID_KEY = 'Encoded key provided is invalid';
const MAX_HEADER_LENGTH = 32 * 1024;

export interface RegisteredKey {
  id: string;
  publicKey: KeyObject;
  status: 'active' | 'retired';
}

export interface KeyPairHeaders {
  /** Base64 of the PEM public key: the X-Encryption-Key header value. */
  publicKey: string;
  /** Base64 of the PEM private key: the X-Decryption-Key header value. */
  privateKey: string;
  publicPem: string;
  privatePem: string;
}

export function generateKeyPair(modulusLength = 3072): KeyPairHeaders {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    publicPem: publicKey,
    privatePem: privateKey,
    publicKey: Buffer.from(publicKey).toString('base64'),
    privateKey: Buffer.from(privateKey).toString('base64'),
  };
}

/**
 * The smallest key the vault wraps data keys under. Below 784 bits RSA-OAEP with SHA-256
 * cannot hold a 32-byte data key at all, and 1024 bits is long broken for new data.
 */
export const MIN_KEY_BITS = 2048;

/** Key id: SHA-256 of the SPKI DER, so PKCS#1 and SPKI spellings of one key agree. */
export function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex');
}

/**
 * One PEM block and nothing else: its BEGIN line, base64, and the END line of the same label.
 * No two neighbouring parts can match the same character (the body has no `-`), so a header
 * of 32 KiB of spaces fails at once: with `\s+` before the body it took half a second.
 */
const PEM_BLOCK = /^-----BEGIN ([A-Z0-9 ]+)-----[A-Za-z0-9+/=\s]+-----END \1-----$/;

function decodeHeader(header: unknown): string {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_HEADER_LENGTH) throw badRequest(INVALID_KEY);
  const text = Buffer.from(header, 'base64').toString('utf8');
  // Clients differ on whether the PEM is base64-wrapped; accept the bare PEM too.
  const pem = (text.includes('-----BEGIN') ? text : header).trim();
  // OpenSSL reads the first block and skips whatever surrounds it, so a header holding a key
  // plus other text, or a second key, was taken as the first key alone.
  if (!PEM_BLOCK.test(pem)) throw badRequest(INVALID_KEY);
  return pem;
}

export function parsePublicKeyHeader(header: unknown): KeyObject {
  const pem = decodeHeader(header);
  // Node would derive a public key from a private one; a private key sent for encryption is a client error.
  if (pem.includes('PRIVATE KEY')) throw badRequest(INVALID_KEY);
  try {
    const key = createPublicKey({ key: pem, format: 'pem' });
    if (key.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
    return key;
  } catch {
    throw badRequest(INVALID_KEY);
  }
}

export function parsePrivateKeyHeader(header: unknown): KeyObject {
  const pem = decodeHeader(header);
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
    if (key.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
  } catch {
    // The parser's own message could quote key material; never pass it on.
    throw badRequest(INVALID_KEY);
  }
  if (!holdsFactorisation(key)) throw badRequest(INVALID_KEY);
  return key;
}

function bigint(base64url: string): bigint {
  return BigInt(`0x${Buffer.from(base64url, 'base64url').toString('hex') || '0'}`);
}

/**
 * OpenSSL accepts a "private key" made of the public modulus and exponent plus garbage,
 * and its derived public half then matches the registered key. The primes are the proof
 * of possession: only the key's holder can give two factors of the modulus.
 */
function holdsFactorisation(key: KeyObject): boolean {
  const jwk = key.export({ format: 'jwk' });
  if (!jwk.n || !jwk.p || !jwk.q) return false;
  const p = bigint(jwk.p);
  const q = bigint(jwk.q);
  return p > 1n && q > 1n && p * q === bigint(jwk.n);
}

/** A checked X-Decryption-Key: which registered key it is, and the private key when needed. */
export interface DecryptionCredential {
  registered: RegisteredKey;
  /** Parsed on first use: a read served from cached data keys never parses the header. */
  privateKey(): KeyObject;
}

export class Keyring {
  /** Every registered key (one entry), re-read at most once a second. */
  private readonly snapshot = new FreshCache<'all', RegisteredKey[]>(1, 1000);
  /**
   * Headers already proven to be a registered key's private half, by keyed digest (never
   * the header itself), so repeated reads skip the parse and the proof. The digest key is
   * per process, so the digests mean nothing outside it.
   */
  private verified = new LruMap<string, string>(64);
  /** X-Encryption-Key headers already parsed, by keyed digest, to the key id they name. */
  private publicHeaders = new LruMap<string, string>(64);
  /**
   * The digest key, used as a prefix: a one-shot SHA-256 of prefix and header costs half an
   * HMAC, paid on every read, and nobody sees the digests, so length extension buys nothing.
   */
  private readonly digestPrefix = `${randomBytes(32).toString('hex')}\n`;

  constructor(
    private readonly db: Kysely<Database>,
    /** Where an operator's registration or retirement of a key is recorded. */
    private readonly activity: ActivityLog,
  ) {}

  /**
   * Makes the key known with `status`; an `active` one demotes the active key before it.
   * With an `actor`, each status that really changed is recorded (`CHANGE`, target
   * `encryptionKey`) in the same transaction; replicas starting together register the same
   * key, and only the one whose insert took effect records it.
   */
  async register(publicKey: KeyObject, status: 'active' | 'retired' = 'active', actor?: ChangeActor): Promise<RegisteredKey> {
    const id = keyFingerprint(publicKey);
    await this.db.transaction().execute(async (trx) => {
      const now = nowIso();
      const changes: Change[] = [];
      // Made active again, a retired key would wrap new data keys under a private half the
      // operator was told to destroy, while the readers' key is demoted.
      const destroyed = await trx.selectFrom('encryption_keys').select('id').where('id', '=', id).where('status', '=', 'destroyed').executeTakeFirst();
      if (destroyed) throw conflict(`key ${id} was retired (vault keys retire): it opens nothing and cannot be registered again; register a new key (vault keygen)`);
      if (status === 'active') {
        const demoted = await trx.selectFrom('encryption_keys').select('id').where('status', '=', 'active').where('id', '!=', id).execute();
        if (demoted.length > 0) {
          await trx.updateTable('encryption_keys').set({ status: 'retired' }).where('id', 'in', demoted.map((k) => k.id)).execute();
          for (const k of demoted) changes.push({ target: 'encryptionKey', id: k.id, action: 'update', fields: { status: 'retired' } });
        }
      }
      const inserted = await trx
        .insertInto('encryption_keys')
        .values({ id, public_key_pem: publicKey.export({ type: 'spki', format: 'pem' }) as string, status, created_date: now })
        .onConflict((oc) => oc.column('id').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) {
        changes.push({ target: 'encryptionKey', id, action: 'create', fields: { status } });
      } else {
        const updated = await trx.updateTable('encryption_keys').set({ status }).where('id', '=', id).where('status', '!=', status).executeTakeFirst();
        if (Number(updated.numUpdatedRows) > 0) changes.push({ target: 'encryptionKey', id, action: 'update', fields: { status } });
      }
      if (actor && changes.length > 0) await this.activity.append(trx, changes.map((change) => changeRecord(actor, change, now)));
    });
    this.snapshot.clear();
    this.verified.clear();
    this.publicHeaders.clear();
    return { id, publicKey, status };
  }

  async list(): Promise<RegisteredKey[]> {
    const rows = await this.db.selectFrom('encryption_keys').selectAll().where('status', '!=', 'destroyed').orderBy('created_date').execute();
    return rows.map((r) => ({ id: r.id, publicKey: createPublicKey(r.public_key_pem), status: r.status as RegisteredKey['status'] }));
  }

  /**
   * The key named by the environment at start: registered as the active key the first time
   * it is seen, and left alone after that, so a rotation done meanwhile (or a key destroyed)
   * is not undone by the next restart with the old setting. A vault's first key is its
   * set-up; a new key named later is a rotation, recorded as `actor`'s.
   */
  async adopt(publicKey: KeyObject, actor: ChangeActor): Promise<void> {
    const known = await this.db.selectFrom('encryption_keys').select('id').where('id', '=', keyFingerprint(publicKey)).executeTakeFirst();
    if (known) return;
    const first = (await this.db.selectFrom('encryption_keys').select('id').limit(1).executeTakeFirst()) === undefined;
    await this.register(publicKey, 'active', first ? undefined : actor);
  }

  /**
   * Destroys a key (`vault keys retire`, once no data key rests on it alone): it opens
   * nothing afterwards, in this process at once and in others within a second. Recorded as
   * `actor`'s, with the key the data keys now rest on and how many (`dataKeys`, those it
   * moved, plus the copies stores made meanwhile); returns that number.
   */
  async remove(id: string, actor: ChangeActor, onto: string, dataKeys: number): Promise<number> {
    const swept = await this.db.transaction().execute(async (trx) => {
      await trx.updateTable('encryption_keys').set({ status: 'destroyed' }).where('id', '=', id).execute();
      // Copies that stores made while the retirement ran, their list of keys not yet knowing
      // it: committed by now (a store holds the key's row until it commits, `DataKeys.forStore`),
      // and none can follow.
      const copies = await trx.deleteFrom('subject_key_wraps').where('encryption_key_id', '=', id).executeTakeFirst();
      const late = Number(copies.numDeletedRows);
      await this.activity.append(trx, [changeRecord(actor, { target: 'encryptionKey', id, action: 'delete', fields: { onto, dataKeys: dataKeys + late } }, nowIso())]);
      return late;
    });
    this.snapshot.clear();
    this.verified.clear();
    this.publicHeaders.clear();
    return dataKeys + swept;
  }

  /** The key new data keys are wrapped under. */
  async active(): Promise<RegisteredKey | undefined> {
    return (await this.registered()).find((k) => k.status === 'active');
  }

  /**
   * Every registered key, re-read at most once a second: stores need it on every request,
   * and a key registered through another process is picked up within that second.
   */
  async registered(): Promise<RegisteredKey[]> {
    return (await this.snapshot.get('all', () => this.list()))!;
  }

  /**
   * Looks a key up by id in the snapshot of at most a second ago, so a key retired through
   * another process (`vault keys retire`) stops working here within that second. A miss
   * re-reads the table: another process may have registered the key since.
   */
  async byId(id: string): Promise<RegisteredKey | undefined> {
    const known = (await this.registered()).find((k) => k.id === id);
    if (known) return known;
    const row = await this.db.selectFrom('encryption_keys').select('id').where('id', '=', id).where('status', '!=', 'destroyed').executeTakeFirst();
    if (!row) return undefined;
    this.snapshot.clear();
    return (await this.registered()).find((k) => k.id === id);
  }

  /**
   * An X-Encryption-Key header that is a registered key (any status), or 400. Clients send
   * the same header on every store, and parsing it costs more than the rest of a store's
   * CPU work, so a header already matched to a key is remembered by digest.
   */
  async requirePublicKey(header: unknown): Promise<RegisteredKey> {
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_HEADER_LENGTH) throw badRequest(INVALID_KEY);
    const digest = this.digest(header);
    const knownId = this.publicHeaders.get(digest);
    const key = await this.byId(knownId ?? keyFingerprint(parsePublicKeyHeader(header)));
    if (!key) throw badRequest(INVALID_KEY);
    if (knownId === undefined) this.publicHeaders.set(digest, key.id);
    return key;
  }

  private digest(header: string): string {
    return hash('sha256', this.digestPrefix + header, 'base64');
  }

  /** An X-Decryption-Key header whose public half is registered, or 400. */
  async requirePrivateKey(header: unknown): Promise<{ registered: RegisteredKey; privateKey: KeyObject }> {
    const privateKey = parsePrivateKeyHeader(header);
    const registered = await this.byId(keyFingerprint(createPublicKey(privateKey)));
    if (!registered) throw badRequest(INVALID_KEY);
    return { registered, privateKey };
  }

  /**
   * An X-Decryption-Key header proven to be the private half of a registered key, or 400.
   * Only such a credential may use data keys another request unwrapped.
   */
  async requireDecryptionKey(header: unknown): Promise<DecryptionCredential> {
    if (typeof header !== 'string' || header.length === 0 || header.length > MAX_HEADER_LENGTH) throw badRequest(INVALID_KEY);
    const digest = this.digest(header);
    const knownId = this.verified.get(digest);
    if (knownId !== undefined) {
      const registered = await this.byId(knownId);
      if (registered) {
        let parsed: KeyObject | undefined;
        return { registered, privateKey: () => (parsed ??= parsePrivateKeyHeader(header)) };
      }
    }
    const { registered, privateKey } = await this.requirePrivateKey(header);
    this.verified.set(digest, registered.id);
    return { registered, privateKey: () => privateKey };
  }
}
