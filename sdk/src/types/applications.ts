/** Applications and their access; the operations endpoints. */

import type { Timestamp } from './common.js';

// Applications

export interface ApplicationInput {
  name: string;
  /** Attribute keys it may use, or `["*"]` for all (the default). */
  attributes?: string[];
  /** May manage definitions, entity types, regulations, tags, rules and applications. */
  admin?: boolean;
  /** Keep a key the deployment already uses (at least 16 characters); otherwise one is generated. */
  apiKey?: string;
}

/** `applications.update`: what to change; the id, the key and the history stay. */
export interface ApplicationChanges {
  name?: string;
  attributes?: string[];
  admin?: boolean;
}

export interface RollKeyOptions {
  /** The new key, if the deployment chooses it (16 to 512 printable ASCII characters); otherwise one is generated. */
  apiKey?: string;
  /** How long the replaced key still signs in, 0 (the default) to 2,592,000 (30 days). */
  keepPreviousForSeconds?: number;
}

export interface Application {
  id: string;
  name: string;
  attributes: string[];
  admin: boolean;
  createdDate: Timestamp;
  modifiedDate: Timestamp;
  /** Present while the key a roll replaced still signs in. */
  previousKeyValidUntil?: Timestamp;
}

/** The created (or re-keyed) application and its API key, which the vault shows this once. */
export interface CreatedApplication extends Application {
  apiKey: string;
}

// Operations

/** `GET /stats`: what the vault holds, within what the calling application may see. */
export interface VaultStats {
  subjects: number;
  /** Values of the attributes the caller may access; a structure counts once. */
  dataPoints: number;
  definitions: number;
  rules: number;
  /** null for a non-admin key. */
  applications: number | null;
  /** Alerts of the last 24 hours by level; null for a non-admin key. */
  alertsLast24Hours: Record<string, number> | null;
  asOf: string;
}

export interface Readiness {
  ready: boolean;
  status: string;
  reason?: string;
}
