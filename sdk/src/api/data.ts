/**
 * Subjects and their values: `/entities`, `/datasubjects` and `/data/{id}`.
 */
import type { AttributeInput, DataPoint, Entity, EntityInput, StorageRequest } from '../types.js';
import { seg, refusePrivateKey, pages, type CallOptions, type StoreOptions, type ReadOptions, type Send } from './call.js';

/** `/entities` and `/datasubjects`: the same operations under two path forms. */
export class EntityApi {
  // An ES private field, so that logging the group does not show the private key.
  readonly #keys: { encryptionKey?: string; decryptionKey?: string };

  constructor(
    private readonly send: Send,
    private readonly base: '/entities' | '/datasubjects',
    keys: { encryptionKey?: string; decryptionKey?: string },
  ) {
    this.#keys = keys;
  }

  /** Creates the entity or updates its metadata (tags, legal hold). */
  save(entity: EntityInput, options: CallOptions = {}): Promise<Entity> {
    // Create-or-update by id: sending it twice leaves the same entity.
    return this.send({ method: 'POST', path: this.base, body: entity, idempotent: true, signal: options.signal });
  }

  /** All entities (all data subjects on `/datasubjects`), ordered by id; one page when `page` or `count` is given. */
  list(options: CallOptions & { page?: number; count?: number } = {}): Promise<Entity[]> {
    return this.send({ method: 'GET', path: this.base, query: { page: options.page, count: options.count }, idempotent: true, signal: options.signal });
  }

  /**
   * Every entity, a page of `pageSize` (default 100) per request. The vault pages by offset
   * and offers no cursor: deleting (or purging) entities inside the loop skips others, and
   * entities others create meanwhile can repeat one. To delete, collect the ids first, then
   * delete them.
   */
  all(options: CallOptions & { pageSize?: number } = {}): AsyncGenerator<Entity, void, undefined> {
    return pages(options.pageSize ?? 100, (page, count) => this.list({ page, count, signal: options.signal }));
  }

  /** 404 `Not found` when absent; on `/datasubjects`, 400 `Entity is not a data subject`. */
  async get(entityId: string, options: CallOptions = {}): Promise<Entity> {
    return this.send({ method: 'GET', path: `${this.base}/${seg(entityId, 'entityId')}`, idempotent: true, signal: options.signal });
  }

  /**
   * Stores attribute values, encrypted under the public key. Retried only when the
   * connection was refused (nothing was sent): a repeatable attribute stored twice holds two values.
   */
  async storeAttributes(entityId: string, request: StorageRequest | AttributeInput[], options: StoreOptions = {}): Promise<DataPoint[]> {
    const body: StorageRequest = Array.isArray(request) ? { data: request } : request;
    const encryptionKey = options.encryptionKey ?? this.#keys.encryptionKey;
    refusePrivateKey(encryptionKey);
    return this.send({
      method: 'POST',
      path: `${this.base}/${seg(entityId, 'entityId')}/attributes`,
      body,
      headers: { 'x-encryption-key': encryptionKey },
      idempotent: false,
      signal: options.signal,
    });
  }

  /** The values of one attribute, decrypted. 404 `Data Not Found` when there are none. */
  async getAttribute<V = DataPoint['value']>(entityId: string, attributeKey: string, options: ReadOptions = {}): Promise<DataPoint<V>[]> {
    return this.send({
      method: 'GET',
      path: `${this.base}/${seg(entityId, 'entityId')}/attributes/${seg(attributeKey, 'attributeKey')}`,
      headers: { 'x-decryption-key': options.decryptionKey ?? this.#keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Every attribute the application may read (or only `attributes`, which must name one), decrypted. */
  async getAttributes(entityId: string, options: ReadOptions & { attributes?: string[] } = {}): Promise<DataPoint[]> {
    // The vault takes an empty list (`?attributes=`) as no list: every attribute, decrypted.
    if (options.attributes && !options.attributes.some((key) => key.trim() !== '')) {
      throw new TypeError('attributes must list at least one attribute key; leave it out to read every attribute');
    }
    return this.send({
      method: 'GET',
      path: `${this.base}/${seg(entityId, 'entityId')}/attributes`,
      query: { attributes: options.attributes?.join(',') },
      headers: { 'x-decryption-key': options.decryptionKey ?? this.#keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Deletes every value of the attribute. */
  async deleteAttribute(entityId: string, attributeKey: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `${this.base}/${seg(entityId, 'entityId')}/attributes/${seg(attributeKey, 'attributeKey')}`, idempotent: true, signal: options.signal });
  }

  /** Deletes all data of the entity and the entity itself; its activity history stays. */
  async purge(entityId: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `${this.base}/${seg(entityId, 'entityId')}/data`, idempotent: true, signal: options.signal });
  }
}

/** Data points by id (`/data/{dataPointId}`). */
export class DataPointApi {
  // An ES private field, so that logging the group does not show the private key.
  readonly #keys: { decryptionKey?: string };

  constructor(
    private readonly send: Send,
    keys: { decryptionKey?: string },
  ) {
    this.#keys = keys;
  }

  async get<V = DataPoint['value']>(dataPointId: string, options: ReadOptions = {}): Promise<DataPoint<V>> {
    return this.send({
      method: 'GET',
      path: `/data/${seg(dataPointId, 'dataPointId')}`,
      headers: { 'x-decryption-key': options.decryptionKey ?? this.#keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  async delete(dataPointId: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/data/${seg(dataPointId, 'dataPointId')}`, idempotent: true, signal: options.signal });
  }
}
