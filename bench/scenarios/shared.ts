/**
 * Set-up steps several scenario groups share: attribute definitions, a non-admin
 * application to call with, deterministic values, and checks that seeding did its job.
 */
import { Api } from '../api.js';
import type { VaultProcess } from '../../core/src/testing/process.js';

export interface Definition {
  key: string;
  schema: unknown;
  repeatable?: boolean;
  indexed?: boolean;
}

export function adminApi(vault: VaultProcess): Api {
  return new Api(vault.url, { authorization: `Bearer ${vault.adminKey}` });
}

export async function defineAttributes(vault: VaultProcess, definitions: Definition[]): Promise<void> {
  const admin = adminApi(vault);
  for (const d of definitions) await admin.ok('POST', '/attributes', { repeatable: false, indexed: false, ...d });
}

/**
 * The caller of the measured requests: an ordinary application with access to the listed
 * attributes, as production callers are (not the admin key, which skips per-attribute checks).
 */
export async function createApplication(vault: VaultProcess, attributes: string[]): Promise<{ id: string; apiKey: string }> {
  const body = await adminApi(vault).ok('POST', '/applications', { name: `bench-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, attributes, admin: false });
  return { id: body.data.id, apiKey: body.data.apiKey };
}

/** A string of exactly `length` characters, distinct for each `i`. */
export function textValue(i: number, length = 100, prefix = 'v'): string {
  const head = `${prefix}${i.toString(36).padStart(8, '0')}-`;
  return (head + 'lorem ipsum dolor sit amet consectetur adipiscing elit '.repeat(Math.ceil(length / 50))).slice(0, length);
}

/** The structured attribute of the structured-store scenario: 6 leaves over two levels. */
export const PROFILE_SCHEMA = {
  name: { first: 'string', last: 'string' },
  address: { street: 'string', city: 'string', postcode: 'string' },
  birthYear: 'int',
};

export function profileValue(i: number): unknown {
  return {
    name: { first: `First${i}`, last: `Last${i}` },
    address: { street: `${i} Long Street`, city: 'Springfield', postcode: `${10000 + (i % 89999)}` },
    birthYear: 1950 + (i % 60),
  };
}

export function storeHeaders(apiKey: string, vault: VaultProcess): Record<string, string> {
  return { authorization: `Bearer ${apiKey}`, 'x-encryption-key': vault.keys.publicKey };
}

export function readHeaders(apiKey: string, vault: VaultProcess): Record<string, string> {
  return { authorization: `Bearer ${apiKey}`, 'x-decryption-key': vault.keys.privateKey };
}

/** Stops the run when seeding did not produce what the scenario is meant to measure. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`benchmark set-up: ${message}`);
}
