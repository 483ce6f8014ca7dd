/**
 * The registry: attribute definitions, regulations, tags and entity types.
 */
import type { AttributeDefinition, AttributeDefinitionInput, EntityType, EntityTypeInput, Regulation, RegulationInput, Tag } from '../types.js';
import { KeyedCollection, type CallOptions, type Send } from './call.js';

/** Attribute definitions (`/attributes`): save creates or updates the definition with that key. */
export class DefinitionApi extends KeyedCollection<AttributeDefinition, AttributeDefinitionInput> {
  constructor(send: Send) {
    super(send, '/attributes');
  }
}

/** Regulations (`/regulations`): save creates or updates by key, answering `Regulation created` or `Regulation updated`. */
export class RegulationApi extends KeyedCollection<Regulation, RegulationInput, string> {
  constructor(send: Send) {
    super(send, '/regulations');
  }
}

/** Tags (`/tags`), by name. Deleting one removes it everywhere; 409 when a rule references it. */
export class TagApi extends KeyedCollection<Tag, string> {
  constructor(send: Send) {
    super(send, '/tags', 'name');
  }

  /** Creates the tag, or touches the one with that name. */
  override save(name: string, options: CallOptions = {}): Promise<Tag> {
    return this.send({ method: 'POST', path: '/tags', body: { name }, idempotent: true, signal: options.signal });
  }
}

/** Entity types (`/entitytypes`). */
export class EntityTypeApi extends KeyedCollection<EntityType, EntityTypeInput> {
  constructor(send: Send) {
    super(send, '/entitytypes');
  }
}
