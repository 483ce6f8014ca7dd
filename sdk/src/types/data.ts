/** Entities, the values stored for them, and search. */

import type { Sensitivity, Timestamp } from './common.js';

// Entities

export interface Entity {
  id: string;
  /** Entity type key; `datasubject` by default. */
  type: string;
  tags: string[];
  /** While true, nonrepeatable values cannot be overwritten and the subject's data cannot be purged. */
  legalHold: boolean;
  created: Timestamp;
  updated: Timestamp;
}

export interface EntityInput {
  id: string;
  /** Defaults to `datasubject`; taken as `datasubject` on the `/datasubjects` form. */
  type?: string;
  tags?: string[];
  /** Admin applications only. */
  legalHold?: boolean;
}

// Attribute values and data points

export type AttributeValue = string | number | boolean | StructuredValue | AttributeValue[];
export interface StructuredValue {
  [subAttribute: string]: AttributeValue | null | undefined;
}

/** One attribute value in a storage request (or the `data` of an audit event). */
export interface AttributeInput<V = AttributeValue> {
  /** Attribute key (a definition's key). */
  attribute: string;
  /** A string, or an object for a structured attribute; must match the definition's schema. */
  value?: V;
  dataPointId?: string;
  regulations?: string[];
  tags?: string[];
  sensitivity?: Sensitivity;
  reportOnly?: boolean;
  accessibility?: string;
}

export interface StorageRequest {
  data: AttributeInput[];
  /** Type of the entity to create when it does not exist; default `datasubject`. */
  entityType?: string;
  namespace?: string;
  /** Where the data comes from (an address or a country code), used by geolocation rules. */
  origin?: string;
}

export interface DataPoint<V = AttributeValue> {
  /** Attribute key; `<ATTRIBUTE>.<sub_attribute>` for a sub-point of a structured value. */
  attribute: string;
  dataPointId: string;
  entityId: string;
  /** Same as `entityId` (ViziVault clients read this one). */
  subjectId: string;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
  regulations: string[];
  tags: string[];
  sensitivity: Sensitivity;
  reportOnly: boolean;
  /** Root point of the structure this sub-point belongs to; null otherwise. */
  structureRootId: string | null;
  /** Present in store and read answers; absent from search results. */
  value?: V;
}

/** A search result: a data point without its value. */
export type SearchResult = Omit<DataPoint, 'value'>;

// Search

export interface SearchValue {
  attribute: string;
  value: string | number | boolean;
}

export interface SearchQuery {
  /** Blind-indexed value matches (indexed attributes only). */
  values?: SearchValue[];
  attributes?: string[];
  /** Points with any of these regulations; `""` matches points with none. */
  regulations?: string[];
  sensitivity?: Sensitivity;
  entityId?: string[];
  /** Alias of `entityId`. */
  subjectId?: string[];
  country?: string;
  subdivision?: string;
  city?: string;
  minCreatedDate?: Timestamp | Date;
  maxCreatedDate?: Timestamp | Date;
  minModifiedDate?: Timestamp | Date;
  maxModifiedDate?: Timestamp | Date;
}

export interface SearchRequest {
  query: SearchQuery;
  /** 0-based page number; default 0. */
  page?: number;
  /** Results per page, 1 to 1000; default 100. */
  count?: number;
}
