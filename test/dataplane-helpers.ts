/** Shared set-up for the data plane suites: definitions, stores and reads through HTTP. */
import { randomBytes } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import type { Response, TestVault } from '../core/src/testing/harness.js';

/** A fresh, valid attribute key or entity id, so concurrent tests never share state. */
export function uid(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex').toUpperCase()}`;
}

export interface DefinitionSpec {
  key: string;
  schema?: unknown;
  repeatable?: boolean;
  indexed?: boolean;
  tags?: string[];
  regulations?: string[];
  entityTypes?: string[];
}

export async function define(v: TestVault, spec: DefinitionSpec): Promise<string> {
  const res = await v.request('POST', '/attributes', { body: spec });
  if (res.status !== 201) throw new Error(`could not define ${spec.key}: ${res.status} ${JSON.stringify(res.body)}`);
  return spec.key;
}

export interface StoreOptions {
  apiKey?: string;
  form?: 'entities' | 'datasubjects';
  entityType?: string;
  origin?: string;
  key?: string | null;
  headers?: Record<string, string>;
}

export function store(v: TestVault, entityId: string, data: unknown[], options: StoreOptions = {}): Promise<Response> {
  const body: Record<string, unknown> = { data };
  if (options.entityType !== undefined) body.entityType = options.entityType;
  if (options.origin !== undefined) body.origin = options.origin;
  const key = options.key === undefined ? v.keys.publicKey : options.key;
  return v.request('POST', `/${options.form ?? 'entities'}/${encodeURIComponent(entityId)}/attributes`, {
    body,
    apiKey: options.apiKey,
    headers: { ...(key === null ? {} : { 'x-encryption-key': key }), ...options.headers },
  });
}

export interface ReadOptions {
  apiKey?: string;
  key?: string | null;
  query?: Record<string, string>;
}

export function read(v: TestVault, url: string, options: ReadOptions = {}): Promise<Response> {
  const key = options.key === undefined ? v.keys.privateKey : options.key;
  return v.request('GET', url, { apiKey: options.apiKey, headers: key === null ? {} : { 'x-decryption-key': key }, query: options.query });
}

/** Asserts an error answer with its exact status and message. */
export function isError(t: ExecutionContext, res: Response, status: number, message: string, note = ''): void {
  t.is(res.status, status, `${note} ${JSON.stringify(res.body)}`);
  t.is(res.body?.message, message, note);
}

export async function pointCount(v: TestVault, entityId: string): Promise<number> {
  const rows = await v.vault.db.selectFrom('datapoints').select('id').where('entity_id', '=', entityId).execute();
  return rows.length;
}

export async function setLegalHold(v: TestVault, entityId: string, hold: boolean): Promise<void> {
  await v.vault.db.updateTable('entities').set({ legal_hold: hold ? 1 : 0 }).where('id', '=', entityId).execute();
}
