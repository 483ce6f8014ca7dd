/** The registry: attribute definitions, regulations, tags and entity types. */

import type { Timestamp } from './common.js';

// Attribute definitions

export type PrimitiveSchema = 'string' | 'int' | 'integer' | 'float' | 'boolean' | 'date' | 'file';
/** A primitive, or an object from sub-attribute key to schema; a key written `[name]` holds a list. */
export type AttributeSchema = PrimitiveSchema | { [subAttribute: string]: AttributeSchema };

export interface AttributeDefinitionInput {
  /** Letters, digits and underscores. When only `name` is given, the key is the name. */
  key?: string;
  /** `null` clears it; left out, it is kept. */
  name?: string | null;
  /** `null` clears it; left out, it is kept. */
  hint?: string | null;
  /** Default `string`. */
  schema?: AttributeSchema;
  repeatable?: boolean;
  /** Whether values are blind-indexed for search. */
  indexed?: boolean;
  tags?: string[];
  regulations?: string[];
  /** Entity types the attribute applies to; empty means `datasubject`. */
  entityTypes?: string[];
  immutable?: boolean;
}

export interface AttributeDefinition {
  key: string;
  name: string | null;
  hint: string | null;
  schema: AttributeSchema;
  repeatable: boolean;
  indexed: boolean;
  immutable: boolean;
  tags: string[];
  regulations: string[];
  entityTypes: string[];
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

// Regulations, tags, entity types

export interface RegulationInput {
  key: string;
  /** `null` clears it; left out, it is kept. */
  name?: string | null;
  /** `null` clears it; left out, it is kept. */
  url?: string | null;
}

export interface Regulation {
  key: string;
  name: string | null;
  url: string | null;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

export interface Tag {
  name: string;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}

export interface EntityTypeInput {
  key: string;
  /** `null` clears it; left out, it is kept. */
  name?: string | null;
  /** `null` clears it; left out, it is kept. */
  description?: string | null;
}

export interface EntityType {
  key: string;
  name: string | null;
  description: string | null;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
}
