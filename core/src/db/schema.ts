/**
 * Table types for Kysely. Booleans are stored as 0/1 integers and timestamps as ISO 8601
 * UTC text in both dialects, so the domain code never branches on the database.
 */
import type { ActivityTables } from '../activity/tables.js';
import type { BlindIndexTables } from '../blindindex/key-check.js';
import type { RulesTables } from '../rules/tables.js';


export type Flag = 0 | 1;

export interface ApplicationsTable {
  id: string;
  name: string;
  api_key_hash: string;
  /** JSON: `["*"]` or a list of attribute keys. */
  attributes: string;
  admin: Flag;
  created_date: string;
  modified_date: string;
  /** The key a roll replaced, still accepted until `previous_key_expires`. */
  previous_key_hash: string | null;
  previous_key_expires: string | null;
}

/** A key out of service (rolled, or its application deleted): never accepted or issued again. */
export interface RetiredApiKeysTable {
  key_hash: string;
  application_id: string;
  retired_date: string;
}

export interface EncryptionKeysTable {
  /** SHA-256 of the SPKI DER, hex. */
  id: string;
  public_key_pem: string;
  /**
   * `active` wraps new data keys; `retired` keys stay readable until retired for good;
   * `destroyed` is a tombstone, so a start with an old key in its environment cannot revive it.
   */
  status: 'active' | 'retired' | 'destroyed';
  created_date: string;
}

export interface EntityTypesTable {
  key: string;
  name: string | null;
  description: string | null;
  system: Flag;
  created_date: string;
  modified_date: string;
}

export interface TagsTable {
  name: string;
  created_date: string;
  modified_date: string;
}

export interface RegulationsTable {
  key: string;
  name: string | null;
  url: string | null;
  builtin: Flag;
  created_date: string;
  modified_date: string;
}

export interface AttributeDefinitionsTable {
  key: string;
  name: string | null;
  hint: string | null;
  /** JSON of the normalised schema. */
  schema: string;
  repeatable: Flag;
  indexed: Flag;
  immutable: Flag;
  created_date: string;
  modified_date: string;
}

export interface DefinitionTagsTable {
  definition_key: string;
  tag: string;
}

export interface DefinitionRegulationsTable {
  definition_key: string;
  regulation: string;
}

export interface DefinitionEntityTypesTable {
  definition_key: string;
  entity_type: string;
}

export interface EntitiesTable {
  id: string;
  type: string;
  legal_hold: Flag;
  created_date: string;
  updated_date: string;


}

export interface EntityTagsTable {
  entity_id: string;
  tag: string;
}

export interface SubjectKeysTable {
  id: string;
  entity_id: string;
  /** Fingerprint of the vault key that wrapped it. */
  encryption_key_id: string;
  /** The subject's data key, RSA-OAEP wrapped; deleting the row shreds the subject's values. */
  wrapped_key: Buffer;
  created_date: string;
}

/** Further wrapped copies of a data key, one per registered key, while a rotation runs. */
export interface SubjectKeyWrapsTable {
  subject_key_id: string;
  encryption_key_id: string;
  wrapped_key: Buffer;
  created_date: string;
}

export interface DatapointsTable {
  id: string;
  entity_id: string;
  /** Full key: `KEY` for a root, `KEY.sub` for a leaf of a structured value. */
  attribute: string;
  /** The definition the point belongs to (`KEY`). */
  definition_key: string;
  structure_root_id: string | null;
  report_only: Flag;
  sensitivity: string;
  subject_key_id: string | null;
  /** AES-256-GCM: nonce, tag and ciphertext. Null for report-only points. */
  ciphertext: Buffer | null;
  /** HMAC of the normalised value, for indexed attributes only. */
  blind_index: string | null;
  country: string | null;
  subdivision: string | null;
  city: string | null;
  expires_at: string | null;
  auto_delete: Flag;
  created_date: string;
  modified_date: string;
}

export interface DatapointTagsTable {
  datapoint_id: string;
  tag: string;
}

export interface DatapointRegulationsTable {
  datapoint_id: string;
  regulation: string;
}

export interface RegistryTables {
  applications: ApplicationsTable;
  retired_api_keys: RetiredApiKeysTable;
  encryption_keys: EncryptionKeysTable;
  entity_types: EntityTypesTable;
  tags: TagsTable;
  regulations: RegulationsTable;
  attribute_definitions: AttributeDefinitionsTable;
  definition_tags: DefinitionTagsTable;
  definition_regulations: DefinitionRegulationsTable;
  definition_entity_types: DefinitionEntityTypesTable;
  entities: EntitiesTable;
  entity_tags: EntityTagsTable;
  subject_keys: SubjectKeysTable;
  subject_key_wraps: SubjectKeyWrapsTable;
  datapoints: DatapointsTable;
  datapoint_tags: DatapointTagsTable;
  datapoint_regulations: DatapointRegulationsTable;
}

/** Each module adds its tables here with one intersection member. */
export type Database = RegistryTables & ActivityTables & RulesTables & BlindIndexTables;
