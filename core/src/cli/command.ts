/**
 * What every verb of the operator's command line shares: how it reads and writes, how it
 * opens the configured vault, and who the activity log names for what it changes.
 */
import type { ParseArgsConfig } from 'node:util';
import { loadConfig } from '../config.js';
import { createLogger } from '../logger.js';
import { Vault } from '../vault.js';
import { operatorActor } from '../activity/changes.js';

/** Who the activity log names for a change made from the command line. */
export const CLI_ACTOR = operatorActor('vault-cli');

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
  /** Everything on standard input, for a secret that must not be an argument (`--api-key-file -`). */
  in?: () => Promise<string>;
}

export interface Command {
  summary: string;
  usage: string;
  options?: ParseArgsConfig['options'];
  /** How many arguments besides the options it takes (an application's id); none if unset. */
  positionals?: number;
  run(args: { values: Record<string, string | boolean | undefined>; positionals: string[] }, io: Io): Promise<number>;
}

/**
 * Opens the configured vault quietly (warnings only) for one command. Only `migrate` may
 * create or migrate it (`existing: false`); every other verb refuses a vault that is missing,
 * and all but `backup` (`anyRelease`) one not migrated to this release.
 */
export async function withVault<T>(io: Io, fn: (vault: Vault) => Promise<T>, { existing = true, anyRelease = false } = {}): Promise<T> {
  const config = loadConfig(io.env);
  const vault = await Vault.open({ config, logger: createLogger('warn'), announce: io.err, existing, anyRelease });
  try {
    return await fn(vault);
  } finally {
    await vault.close();
  }
}

export const splitList = (list: string) => list.split(',').map((a) => a.trim()).filter(Boolean);

