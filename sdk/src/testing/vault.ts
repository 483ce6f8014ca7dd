/**
 * Test support: one real vault process per test file, clients on it, and an assertion for
 * the vault's exact errors. Not part of the published package.
 */
import { randomBytes } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { spawnVault, type SpawnVaultOptions, type VaultProcess } from '../../../core/src/testing/process.js';
import { VaultClient, type VaultClientOptions } from '../client.js';
import { VaultApiError } from '../errors.js';

export interface SdkTestVault {
  /** The running process (tests that restart it put the new one here). */
  proc: VaultProcess;
  /** The key pair the vault holds (header values). */
  keys: { publicKey: string; privateKey: string };
  /** Admin client holding both keys. */
  admin: VaultClient;
  /** A client with these options on top of the admin's. */
  client(options?: Partial<VaultClientOptions>): VaultClient;
  /** Creates an application and answers a client for it (with both keys). */
  appClient(attributes: string[], admin?: boolean): Promise<{ client: VaultClient; id: string; apiKey: string }>;
  dispose(): Promise<void>;
}

export interface StartOptions extends SpawnVaultOptions {
  /** The vault's key pair (header values); default the core test pair. */
  keys?: { publicKey: string; privateKey: string };
}

export async function startSdkVault(options: StartOptions = {}): Promise<SdkTestVault> {
  const { keys: pair, ...spawnOptions } = options;
  const proc = await spawnVault(pair ? { ...spawnOptions, env: { ...spawnOptions.env, VAULT_ENCRYPTION_PUBLIC_KEY: pair.publicKey } } : spawnOptions);
  const keys = pair ?? proc.keys;
  const clients: VaultClient[] = [];
  const client = (extra: Partial<VaultClientOptions> = {}) => {
    const c = new VaultClient({ url: proc.url, apiKey: proc.adminKey, encryptionKey: keys.publicKey, decryptionKey: keys.privateKey, ...extra });
    clients.push(c);
    return c;
  };
  const admin = client();
  const self: SdkTestVault = {
    proc,
    keys,
    admin,
    client,
    async appClient(attributes, isAdmin = false) {
      const created = await admin.applications.create({ name: `app-${randomBytes(4).toString('hex')}`, attributes, admin: isAdmin });
      return { client: client({ apiKey: created.apiKey }), id: created.id, apiKey: created.apiKey };
    },
    async dispose() {
      await Promise.allSettled(clients.map((c) => c.close()));
      // A test may have restarted the vault: stop the current process, then remove the data.
      await self.proc.stop('SIGKILL');
      await proc.dispose();
    },
  };
  return self;
}

/** Asserts the promise fails with a VaultApiError of exactly this status and message. */
export async function apiError(t: ExecutionContext, promise: Promise<unknown>, status: number, message: string): Promise<VaultApiError> {
  const err = await t.throwsAsync(promise, { instanceOf: VaultApiError });
  t.is(err?.message, message);
  t.is(err?.status, status);
  return err as VaultApiError;
}

/** A name no other test in the run uses. */
export function unique(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}
