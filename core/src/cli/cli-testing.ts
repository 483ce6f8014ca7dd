/** What the command line's tests share: a captured Io, and a data directory of its own. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function io(env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env: { ...env } }, out, err };
}

export function dataDir(t: { teardown: (fn: () => void) => void }): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'vault-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { VAULT_DATA_DIR: dir, VAULT_ADMIN_API_KEY: 'cli-test-admin-key-0000' };
}
