/**
 * What `vault restore` says about the blind-index key, which a backup never holds: a start
 * refuses a database whose key is not at hand, and the operator should hear it from the
 * restore, while the backup's key can still be fetched, rather than from a failed start.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VaultConfig } from '../config.js';
import { connect, disconnect } from '../db/connect.js';
import { indexKeyDigest } from '../blindindex/key-check.js';

export async function restoredIndexKeyWarning(config: VaultConfig): Promise<string | undefined> {
  const file = join(config.dataDir, 'index.key');
  if (!config.indexKey && !existsSync(file)) {
    return `No blind-index key here (VAULT_INDEX_KEY, or ${file}): put the one kept with the backup in place before starting the vault: a start without it is refused (or, for a backup of an older release, makes a new one, and search finds nothing stored before).`;
  }
  const key = Buffer.from(config.indexKey ?? readFileSync(file, 'utf8').trim(), 'base64');
  const handle = connect({ url: config.db });
  let kept: string | undefined;
  try {
    kept = (await handle.db.selectFrom('index_key_check').select('digest').where('id', '=', 1).executeTakeFirst())?.digest;
  } catch {
    // A backup of a release from before the check says nothing of its key.
  } finally {
    await disconnect(handle);
  }
  if (kept === undefined || kept === indexKeyDigest(key)) return undefined;
  return `The blind-index key here (${config.indexKey ? 'VAULT_INDEX_KEY' : file}) is not the one this backup was indexed with: put the one kept with the backup in place before starting the vault; a start with this one is refused.`;
}
