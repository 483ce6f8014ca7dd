/**
 * The registry: attribute definitions, regulations, tags and entity types.
 */
import type { AttributeDefinition, AttributeDefinitionInput, EntityType, EntityTypeInput, Regulation, RegulationInput, Tag } from '../types.js';
import { seg, type CallOptions, type Send } from './call.js';

/** Attribute definitions (`/attributes`). */
export class DefinitionApi {
  constructor(private readonly send: Send) {}

  /** Creates or updates the definition with that key. */
  save(definition: AttributeDefinitionInput, options: CallOptions = {}): Promise<AttributeDefinition> {
    return this.send({ method: 'POST', path: '/attributes', body: definition, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<AttributeDefinition[]> {
    return this.send({ method: 'GET', path: '/attributes', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<AttributeDefinition> {
    return this.send({ method: 'GET', path: `/attributes/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/attributes/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}

export class RegulationApi {
  constructor(private readonly send: Send) {}

  /** Creates or updates by key; answers `Regulation created` or `Regulation updated`. */
  save(regulation: RegulationInput, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'POST', path: '/regulations', body: regulation, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Regulation[]> {
    return this.send({ method: 'GET', path: '/regulations', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<Regulation> {
    return this.send({ method: 'GET', path: `/regulations/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/regulations/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}

export class TagApi {
  constructor(private readonly send: Send) {}

  /** Creates the tag, or touches the one with that name. */
  save(name: string, options: CallOptions = {}): Promise<Tag> {
    return this.send({ method: 'POST', path: '/tags', body: { name }, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Tag[]> {
    return this.send({ method: 'GET', path: '/tags', idempotent: true, signal: options.signal });
  }

  get(name: string, options: CallOptions = {}): Promise<Tag> {
    return this.send({ method: 'GET', path: `/tags/${seg(name)}`, idempotent: true, signal: options.signal });
  }

  /** Removes the tag everywhere; 409 when a rule references it. */
  delete(name: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/tags/${seg(name)}`, idempotent: true, signal: options.signal });
  }
}

export class EntityTypeApi {
  constructor(private readonly send: Send) {}

  save(entityType: EntityTypeInput, options: CallOptions = {}): Promise<EntityType> {
    return this.send({ method: 'POST', path: '/entitytypes', body: entityType, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<EntityType[]> {
    return this.send({ method: 'GET', path: '/entitytypes', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<EntityType> {
    return this.send({ method: 'GET', path: `/entitytypes/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/entitytypes/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}
