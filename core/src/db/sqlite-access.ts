/**
 * Why the vault cannot write its SQLite database, said with the file and the cause. SQLite
 * opens a file it may not write read-only without a word and later fails the first write
 * with `attempt to write a readonly database`; a directory it cannot create the write-ahead
 * log in, or a full disk, gives `unable to open database file` or `disk I/O error`: none of
 * them names the file, nor what the operator has to change.
 */
import { accessSync, constants, existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';

/** SQLite's codes for a database it could not open, create files beside, or write. */
const FILE_SYSTEM_CODES = /^SQLITE_(CANTOPEN|READONLY|IOERR|FULL|PERM)/;

export function isFileSystemFailure(err: unknown): boolean {
  return FILE_SYSTEM_CODES.test(String((err as { code?: unknown }).code ?? ''));
}

/** Why this process may not write a file or directory (`EACCES`, `EROFS`), if it may not. */
function denied(target: string): string | undefined {
  try {
    accessSync(target, constants.W_OK);
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'not writable';
  }
}

/** Stops on an existing database file this process may not write. */
export function requireWritableFile(path: string): void {
  if (existsSync(path) && denied(path)) throw cannotWrite(path, new Error('attempt to write a readonly database'));
}

/** The error to stop on, explained if the file system explains it; else `err` itself. */
export function cannotWrite(path: string, err: Error): Error {
  const dir = dirname(path);
  const advice = `give the user it runs as write access to it and to ${dir}, where it writes the database's -wal and -shm files`;
  const file = existsSync(path) ? denied(path) : undefined;
  const folder = denied(dir);
  const readOnly = `${dir} is on a read-only file system: mount it read-write, or give the vault a data directory it can write`;
  if (file === 'EROFS' || folder === 'EROFS') return new Error(`the vault cannot write its database ${path}: ${readOnly}`, { cause: err });
  if (file) return new Error(`the vault cannot write its database ${path} (${file}): ${advice}`, { cause: err });
  if (folder) return new Error(`the vault cannot write in ${dir} (${folder}) beside its database ${path}: ${advice}`, { cause: err });
  let full = false;
  try {
    full = statfsSync(dir).bavail === 0;
  } catch {
    // Nothing more to say than SQLite's own error.
  }
  if (full) return new Error(`the vault cannot write its database ${path}: the file system holding ${dir} is full (${err.message}); free space there`, { cause: err });
  return err;
}
