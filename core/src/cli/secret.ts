/**
 * An API key given to the command line. `--api-key KEY` stays for scripts that use it, but
 * an argument is readable by every local user (`ps`, /proc/PID/cmdline) and lands in shell
 * history, so `--api-key-file FILE` (or `-`: standard input) takes it from where it is kept.
 * Messages name the option and the file, never what it holds.
 */
import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Io } from './command.js';

/** A mistake in how the command was called: exit code 2, with the message alone. */
export class UsageError extends Error {}

export async function apiKeyOption(values: Record<string, string | boolean | undefined>, io: Io): Promise<string | undefined> {
  const given = values['api-key'];
  const file = values['api-key-file'];
  if (given !== undefined && file !== undefined) throw new UsageError('give --api-key or --api-key-file, not both');
  if (file === undefined) return given === undefined ? undefined : String(given);
  const name = String(file);
  let text: string;
  if (name === '-') {
    if (!io.in) throw new UsageError('--api-key-file -: no standard input to read the key from');
    text = await io.in();
  } else {
    const path = resolve(name);
    const found = await stat(path).catch(() => undefined);
    if (!found) throw new UsageError(`--api-key-file: ${path} does not exist`);
    if (found.isDirectory()) throw new UsageError(`--api-key-file: ${path} is a directory: name the file holding the key`);
    text = await readFile(path, 'utf8');
  }
  // A key has no spaces (the vault's rule): those around it are the file's final newline, or
  // the one `echo` adds on standard input.
  const key = text.trim();
  if (key === '') throw new UsageError(`--api-key-file: ${name === '-' ? 'standard input' : resolve(name)} is empty`);
  return key;
}
