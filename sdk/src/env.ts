import { VaultClient, type VaultClientOptions } from './client.js';
import { loadKeysFromEnv } from './keys.js';

/**
 * A client configured by the environment: `VAULT_URL` (default http://127.0.0.1:8083),
 * `VAULT_API_KEY` (required), and the keys `loadKeysFromEnv` reads. `overrides` win, except
 * those left undefined.
 */
export async function clientFromEnv(env: NodeJS.ProcessEnv = process.env, overrides: Partial<VaultClientOptions> = {}): Promise<VaultClient> {
  const apiKey = overrides.apiKey ?? env.VAULT_API_KEY;
  if (!apiKey) throw new Error('VAULT_API_KEY is not set');
  const keys = await loadKeysFromEnv(env);
  // An override left undefined (a setting the caller did not set) is no override: spread, it
  // would replace the URL or a key the environment gave.
  const given = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined));
  return new VaultClient({ url: env.VAULT_URL || 'http://127.0.0.1:8083', ...keys, ...given, apiKey });
}
