/**
 * What every resource group shares: per-call options, the send function the client hands
 * each group, and paging.
 */
import type { Request } from '../transport.js';
import { VaultKeyError } from '../errors.js';
import { isPrivateKey } from '../keys.js';

export interface CallOptions {
  signal?: AbortSignal;
}

export interface StoreOptions extends CallOptions {
  /** Overrides the client's encryption key for this call. */
  encryptionKey?: string;
}

export interface ReadOptions extends CallOptions {
  /** Overrides the client's decryption key for this call. */
  decryptionKey?: string;
}

/**
 * A caller's id or key as one path segment. An empty one would spell another endpoint's path
 * (`/entities/` is the list, `/entities/alice/attributes/` every attribute), so it is refused.
 */
export function seg(value: string, name: string): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${name} must be a non-empty string`);
  return encodeURIComponent(value);
}

/** The encryption key travels on every store: it must never be the private half. */
export function refusePrivateKey(encryptionKey: string | undefined): void {
  if (encryptionKey !== undefined && isPrivateKey(encryptionKey)) {
    throw new VaultKeyError({ source: 'encryptionKey', message: 'encryptionKey holds a private key; stores take the public key, and the private key is only sent on reads' });
  }
}

export type Send = <T>(request: Request) => Promise<T>;

/** Iterates pages until a short or empty page; `fetchPage` returns `[]` for "no more". */
export async function* pages<T>(pageSize: number, fetchPage: (page: number, count: number) => Promise<T[]>): AsyncGenerator<T, void, undefined> {
  for (let page = 0; ; page++) {
    const items = await fetchPage(page, pageSize);
    yield* items;
    if (items.length < pageSize) return;
  }
}

/**
 * A collection kept by key (or name): save creates or updates, and list, get and delete
 * answer the same way for each. Every verb is retried on connection errors: a resent save
 * leaves the same item (answered as an update if the first had landed), a resent delete the
 * same absence.
 */
export class KeyedCollection<Item, Input = Item, Saved = Item> {
  constructor(
    protected readonly send: Send,
    private readonly path: string,
    /** What the path segment is called in errors. */
    private readonly keyName = 'key',
  ) {}

  save(input: Input, options: CallOptions = {}): Promise<Saved> {
    return this.send({ method: 'POST', path: this.path, body: input, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Item[]> {
    return this.send({ method: 'GET', path: this.path, idempotent: true, signal: options.signal });
  }

  async get(key: string, options: CallOptions = {}): Promise<Item> {
    return this.send({ method: 'GET', path: `${this.path}/${seg(key, this.keyName)}`, idempotent: true, signal: options.signal });
  }

  /** Answers the vault's confirmation text. */
  async delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `${this.path}/${seg(key, this.keyName)}`, idempotent: true, signal: options.signal });
  }
}
