/**
 * The operator's command line. Every verb works on the vault configured by the same
 * environment as the server (VAULT_DATA_DIR, VAULT_DB, ...), directly on its database.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { userInfo } from 'node:os';
import type { ParseArgsConfig } from 'node:util';
import { loadConfig } from '../config.js';
import { generateKeyPair, parsePublicKeyHeader } from '../crypto/keys.js';
import { createLogger } from '../logger.js';
import { ActivityService, parseChainHead, type ChainHead } from '../activity/service.js';
import { conflict } from '../errors.js';
import { Vault } from '../vault.js';
import { redactUrl } from '../db/connect.js';
import type { ChangeActor } from '../activity/changes.js';

/**
 * Who the activity log names for a change made here: the command line, run by this operating
 * system user (it signs in with no API key: it holds the database itself).
 */
const CLI_ACTOR: ChangeActor = { applicationId: 'vault-cli', applicationUser: operatingSystemUser() };

function operatingSystemUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry (some containers run as a bare uid).
    return process.env.USER ?? process.env.LOGNAME;
  }
}

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
}

export interface Command {
  summary: string;
  usage: string;
  options?: ParseArgsConfig['options'];
  run(args: { values: Record<string, string | boolean | undefined>; positionals: string[] }, io: Io): Promise<number>;
}

/**
 * Opens the configured vault quietly (warnings only) for one command. Only `migrate` may
 * create or migrate it (`existing: false`); every other verb refuses a vault that is missing
 * or not migrated to this release.
 */
async function withVault<T>(io: Io, fn: (vault: Vault) => Promise<T>, { existing = true } = {}): Promise<T> {
  const config = loadConfig(io.env);
  const vault = await Vault.open({ config, logger: createLogger('warn'), announce: io.err, existing });
  try {
    return await fn(vault);
  } finally {
    await vault.close();
  }
}

const splitList = (list: string) => list.split(',').map((a) => a.trim()).filter(Boolean);

export const commands: Record<string, Command> = {
  start: {
    summary: 'Run the vault server (same as npm start)',
    usage: 'vault start',
    async run(_args, io) {
      const { runServer } = await import('../main.js');
      await runServer(io.env);
      return new Promise<number>(() => {});
    },
  },

  keygen: {
    summary: 'Generate an RSA key pair in the vault header format',
    usage: 'vault keygen [--bits 3072] [--out DIR]',
    options: { bits: { type: 'string', default: '3072' }, out: { type: 'string' } },
    async run({ values }, io) {
      const bits = Number(values.bits);
      if (![2048, 3072, 4096].includes(bits)) {
        io.err('--bits must be 2048, 3072 or 4096');
        return 2;
      }
      const pair = generateKeyPair(bits);
      if (values.out) {
        const dir = resolve(String(values.out));
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, 'private-key.pem'), pair.privatePem, { mode: 0o600 });
        writeFileSync(join(dir, 'public-key.pem'), pair.publicPem);
        io.out(`Wrote ${join(dir, 'private-key.pem')} (mode 0600) and ${join(dir, 'public-key.pem')}`);
      } else {
        io.err('No --out given: printing the private key header to stdout. Keep it secret.');
        io.out(`X-Decryption-Key: ${pair.privateKey}`);
      }
      io.out(`VAULT_ENCRYPTION_PUBLIC_KEY=${pair.publicKey}`);
      return 0;
    },
  },

  'applications create': {
    summary: 'Create an application and print its API key once',
    usage: 'vault applications create --name NAME [--attributes A,B|*] [--admin] [--api-key KEY]',
    options: { name: { type: 'string' }, attributes: { type: 'string', default: '*' }, admin: { type: 'boolean', default: false }, 'api-key': { type: 'string' } },
    async run({ values }, io) {
      if (!values.name) {
        io.err('--name is required');
        return 2;
      }
      const { application, apiKey } = await withVault(io, (vault) =>
        vault.applications.create(CLI_ACTOR, {
          name: String(values.name),
          attributes: splitList(String(values.attributes)),
          admin: Boolean(values.admin),
          apiKey: values['api-key'] as string | undefined,
        }),
      );
      io.out(`Created application ${application.id} (${application.name}). API key (shown once): ${apiKey}`);
      return 0;
    },
  },

  'applications list': {
    summary: 'List applications',
    usage: 'vault applications list',
    async run(_args, io) {
      const apps = await withVault(io, (vault) => vault.applications.list());
      for (const a of apps) io.out(`${a.id}\t${a.name}\t${a.admin ? 'admin' : '-'}\t${a.attributes.join(',')}`);
      return 0;
    },
  },

  'applications update': {
    summary: 'Change an application in place (its id, key and history stay)',
    usage: 'vault applications update ID [--name NAME] [--attributes A,B|*] [--admin | --no-admin]',
    options: { name: { type: 'string' }, attributes: { type: 'string' }, admin: { type: 'boolean' }, 'no-admin': { type: 'boolean' } },
    async run({ values, positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      if (values.admin && values['no-admin']) {
        io.err('give --admin or --no-admin, not both');
        return 2;
      }
      const changes = {
        ...(values.name === undefined ? {} : { name: String(values.name) }),
        ...(values.attributes === undefined ? {} : { attributes: splitList(String(values.attributes)) }),
        ...(values.admin ? { admin: true } : values['no-admin'] ? { admin: false } : {}),
      };
      if (Object.keys(changes).length === 0) {
        io.err('nothing to change: give --name, --attributes, --admin or --no-admin');
        return 2;
      }
      const application = await withVault(io, (vault) => vault.applications.update(CLI_ACTOR, id, changes));
      io.out(`Updated application ${application.id}\t${application.name}\t${application.admin ? 'admin' : '-'}\t${application.attributes.join(',')}`);
      return 0;
    },
  },

  'applications roll-key': {
    summary: "Give an application a new API key, printed once; the old one stops, or stays valid for --keep-previous seconds",
    usage: 'vault applications roll-key ID [--keep-previous SECONDS] [--api-key KEY]',
    options: { 'keep-previous': { type: 'string', default: '0' }, 'api-key': { type: 'string' } },
    async run({ values, positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      const keep = String(values['keep-previous']);
      if (!/^\d+$/.test(keep)) {
        io.err('--keep-previous must be a whole number of seconds');
        return 2;
      }
      const { application, apiKey } = await withVault(io, (vault) =>
        vault.applications.rollKey(CLI_ACTOR, id, { keepPreviousForSeconds: Number(keep), apiKey: values['api-key'] as string | undefined }),
      );
      const previous = application.previousKeyValidUntil ? `; the previous key is valid until ${application.previousKeyValidUntil}` : '; the previous key no longer works';
      io.out(`Rolled the key of application ${application.id} (${application.name}). API key (shown once): ${apiKey}${previous}`);
      return 0;
    },
  },

  'applications delete': {
    summary: 'Delete an application (its key stops working at once)',
    usage: 'vault applications delete ID',
    async run({ positionals }, io) {
      const id = positionals[0];
      if (!id) {
        io.err('the application id is required');
        return 2;
      }
      await withVault(io, (vault) => vault.applications.delete(CLI_ACTOR, id));
      io.out(`Deleted application ${id}`);
      return 0;
    },
  },

  migrate: {
    summary: 'Apply every pending database migration (the server also does this on start)',
    usage: 'vault migrate',
    async run(_args, io) {
      await withVault(io, async () => undefined, { existing: false });
      io.out('Database is up to date');
      return 0;
    },
  },

  'keys list': {
    summary: "List the vault's registered encryption keys",
    usage: 'vault keys list',
    async run(_args, io) {
      const keys = await withVault(io, (vault) => vault.keyring.list());
      for (const k of keys) io.out(`${k.id}\t${k.status}`);
      return 0;
    },
  },

  'activity verify': {
    summary: 'Seal pending records, recompute the activity log hash chain and report the first broken record',
    usage: 'vault activity verify [--head SEQUENCE:HASH]   (a head printed earlier by `vault activity head`)',
    options: { head: { type: 'string' } },
    async run({ values }, io) {
      let head: ChainHead | undefined;
      if (values.head !== undefined) {
        head = parseChainHead(String(values.head));
        if (!head) {
          io.err('--head must be SEQUENCE:HASH as `vault activity head` prints it');
          return 2;
        }
      }
      const result = await withVault(io, (vault) => new ActivityService(vault.db, vault.sealer).verify(head));
      const pending = result.unsealed > 0 ? ` (${result.unsealed} not yet sealed)` : '';
      if (result.firstBrokenSequence !== undefined) {
        io.out(`Activity log BROKEN at sequence ${result.firstBrokenSequence} (event ${result.firstBrokenEventId}) after ${result.records} records`);
        return 1;
      }
      if (head && !result.headMatches) {
        io.out(`Activity log does not hold the expected head ${head.sequence}:${head.hash} (it has ${result.records} records): records were removed or rewritten`);
        return 1;
      }
      io.out(`Activity log intact: ${result.records} records${pending}`);
      return 0;
    },
  },

  'activity head': {
    summary: 'Seal pending records and print the chain head (SEQUENCE:HASH) to keep outside the database',
    usage: 'vault activity head',
    async run(_args, io) {
      const head = await withVault(io, (vault) => new ActivityService(vault.db, vault.sealer).head());
      io.out(`${head.sequence}:${head.hash}`);
      return 0;
    },
  },

  'keys register': {
    summary: 'Register a new public key as the active one (new data keys are wrapped under it)',
    usage: 'vault keys register --public-key FILE',
    options: { 'public-key': { type: 'string' } },
    async run({ values }, io) {
      const file = values['public-key'];
      if (!file || !existsSync(String(file))) {
        io.err('--public-key must name a PEM public key file');
        return 2;
      }
      const key = await withVault(io, (vault) => vault.keyring.register(parsePublicKeyHeader(readFileSync(String(file), 'utf8')), 'active'));
      io.out(`Registered ${key.id} as the active key. The previous key stays readable until retired.`);
      return 0;
    },
  },

  'keys rewrap': {
    summary: 'Give every data key under an old key a copy under the active key (the vault keeps serving)',
    usage: 'vault keys rewrap --old-private-key FILE',
    options: { 'old-private-key': { type: 'string' } },
    async run({ values }, io) {
      const file = values['old-private-key'];
      if (!file || !existsSync(String(file))) {
        io.err('--old-private-key must name the PEM private key of the key being replaced');
        return 2;
      }
      const count = await withVault(io, async (vault) => {
        const old = await vault.keyring.requireDecryptionKey(Buffer.from(readFileSync(String(file))).toString('base64'));
        const active = await vault.keyring.active();
        if (!active) throw new Error('register the new key first (vault keys register)');
        if (active.id === old.registered.id) {
          throw new Error(`--old-private-key is the active key's own (${active.id}): give the private key of the key being replaced, or register the new key first (vault keys register)`);
        }
        return vault.datapoints.dataKeys.rewrap(vault.db, old, active);
      });
      io.out(`Re-wrapped ${count} data keys under the active key. Both private keys read everything until the old key is retired.`);
      return 0;
    },
  },

  'keys retire': {
    summary: "Destroy an old key's wrapped copies and unregister it (after rewrap)",
    usage: 'vault keys retire --key-id ID',
    options: { 'key-id': { type: 'string' } },
    async run({ values }, io) {
      const id = values['key-id'];
      if (!id) {
        io.err('--key-id is required (see vault keys list)');
        return 2;
      }
      const moved = await withVault(io, async (vault) => {
        const retiring = await vault.keyring.byId(String(id));
        const active = await vault.keyring.active();
        if (!retiring) throw new Error(`no registered key ${id}`);
        if (!active || active.id === retiring.id) throw new Error('the active key cannot be retired: register its successor first');
        const count = await vault.datapoints.dataKeys.retire(vault.db, retiring, active);
        await vault.keyring.remove(retiring.id);
        return count;
      });
      io.out(`Retired ${id}: ${moved} data keys now rest on the active key alone. Destroy the old private key.`);
      return 0;
    },
  },

  backup: {
    summary: 'Online backup of the database to a file (SQLite), or pg_dump (PostgreSQL)',
    usage: 'vault backup --to FILE',
    options: { to: { type: 'string' } },
    async run({ values }, io) {
      if (!values.to) {
        io.err('--to is required');
        return 2;
      }
      const target = resolve(String(values.to));
      await withVault(io, (vault) => backupDatabase(vault, target, io.env));
      io.out(`Backed up to ${target}. The blind-index key (VAULT_INDEX_KEY or index.key) is not in it: keep it with the backup, apart from the private key.`);
      return 0;
    },
  },

  restore: {
    summary: 'Restore a backup made by `vault backup` (stop the vault first)',
    usage: 'vault restore --from FILE',
    options: { from: { type: 'string' } },
    async run({ values }, io) {
      if (!values.from || !existsSync(String(values.from))) {
        io.err('--from must name an existing backup file');
        return 2;
      }
      const config = loadConfig(io.env);
      await restoreDatabase(config.db, resolve(String(values.from)), io.env);
      io.out(`Restored ${values.from}`);
      // A start without the backup's blind-index key would make a new one, and search would
      // then find nothing stored before.
      if (!config.indexKey && !existsSync(join(config.dataDir, 'index.key'))) {
        io.err(`No blind-index key here (VAULT_INDEX_KEY, or ${join(config.dataDir, 'index.key')}): put the one kept with the backup in place before starting the vault, or a new one is made and search finds nothing stored before.`);
      }
      return 0;
    },
  },

  deadletters: {
    summary: "List a sidecar's dead letters, or replay them",
    usage: 'vault deadletters [--sidecar URL] [--values] [--replay]  (sends SIDECAR_INGEST_TOKEN when set)',
    options: {
      sidecar: { type: 'string', default: 'http://127.0.0.1:8084' },
      replay: { type: 'boolean', default: false },
      values: { type: 'boolean', default: false },
    },
    async run({ values }, io) {
      const base = String(values.sidecar).replace(/\/$/, '');
      const token = io.env.SIDECAR_INGEST_TOKEN?.trim();
      const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      const res = values.replay
        ? await fetch(`${base}/deadletters/replay`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: '{}' })
        : await fetch(`${base}/deadletters${values.values ? '?values=true' : ''}`, { headers: auth });
      io.out(JSON.stringify(await res.json(), null, 2));
      return res.ok ? 0 : 1;
    },
  },
};

export async function backupDatabase(vault: Vault, target: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (vault.handle.sqlite) {
    const live = vault.config.db.slice('sqlite:'.length);
    // Renaming the copy over the live file would swap it out from under every running vault,
    // whose next writes land in a deleted file: the database is lost.
    if (isSameFile(target, live) || ['-wal', '-shm', '-journal'].some((s) => isSameFile(target, live + s))) {
      throw conflict(`--to names the vault's own database (${live}): back up to another file`);
    }
    await backupSqlite(vault.handle.sqlite, target);
    return;
  }
  // Beside the target, as on SQLite: a pg_dump that fails (or is missing) must not have
  // emptied a good backup of the same name.
  await writeBeside(target, (partial) => runPgTool('pg_dump', ['--format=custom', '--no-owner', `--file=${partial}`], vault.config.db, env));
}

/**
 * Has `write` fill a new file beside the target, readable by its owner only, and gives it the
 * target's name once synced: a failed backup never leaves a partial file, or an emptied one,
 * under that name.
 */
async function writeBeside(target: string, write: (partial: string) => void | Promise<void>): Promise<void> {
  const partial = `${target}.partial-${randomBytes(6).toString('hex')}`;
  try {
    // Created empty first, for its mode: a backup is as private as the database.
    closeSync(openSync(partial, 'wx', 0o600));
    await write(partial);
    const fd = openSync(partial, 'r+');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, target);
  } finally {
    rmSync(partial, { force: true });
  }
}

/** Whether two paths name one file, through symbolic links and `..`, existing or not. */
function isSameFile(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      // Not there yet: its directory may still be reached through a link.
      try {
        return join(realpathSync(dirname(p)), basename(p));
      } catch {
        return resolve(p);
      }
    }
  };
  return real(resolve(a)) === real(resolve(b));
}

/**
 * Runs pg_dump or pg_restore against the vault's database without its password on the command
 * line (where `ps` shows it) or in an error: the URL goes without it, the password in
 * PGPASSWORD, which libpq reads.
 */
async function runPgTool(tool: 'pg_dump' | 'pg_restore', args: string[], dbUrl: string, env: NodeJS.ProcessEnv): Promise<void> {
  const url = new URL(dbUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  const { execFileSync } = await import('node:child_process');
  try {
    execFileSync(tool, [...args, `--dbname=${url.toString()}`], { stdio: 'inherit', env: { ...process.env, ...env, ...(password ? { PGPASSWORD: password } : {}) } });
  } catch (err) {
    const { status, code } = err as { status?: number; code?: string };
    throw new Error(code === 'ENOENT' ? `${tool} is not installed (it comes with the PostgreSQL client tools)` : `${tool} failed (exit code ${status}); its own message is above`);
  }
}

/**
 * One consistent snapshot, copied in a single read transaction (`VACUUM INTO`) while the vault
 * goes on writing beside it. SQLite's page-by-page backup, used before, starts over whenever
 * another process writes, and a serving vault writes on every read: under load it never
 * finished (a 100 MB file, 45 s, against reads from 8 connections). Only live content is
 * copied, so pages freed by deletions (a purge's destroyed data keys among them) stay behind.
 * The copy is written beside the target (`writeBeside`).
 */
function backupSqlite(sqlite: Database.Database, target: string): Promise<void> {
  return writeBeside(target, (partial) => {
    sqlite.prepare('vacuum into ?').run(partial);
  });
}

/**
 * Whether another connection has the SQLite file open. Restoring under a running vault would
 * delete its write-ahead log, commits not yet copied into the file with it, and replace the
 * file beneath it. An exclusive lock is refused while any other connection holds the file.
 */
function openElsewhere(path: string): boolean {
  if (!existsSync(path)) return false;
  const probe = new Database(path, { timeout: 0 });
  try {
    probe.pragma('locking_mode = exclusive');
    probe.exec('begin exclusive');
    probe.exec('rollback');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw err;
  } finally {
    probe.close();
  }
}

/** Whether the file is a vault's SQLite database: checked before it replaces the one in use. */
function isVaultDatabase(path: string): boolean {
  let probe: Database.Database | undefined;
  try {
    probe = new Database(path, { readonly: true, fileMustExist: true });
    const tables = probe.prepare("select name from sqlite_master where type = 'table' and name in ('kysely_migration', 'activity_log', 'datapoints')").pluck().all();
    return tables.length === 3;
  } catch {
    return false;
  } finally {
    probe?.close();
  }
}

export async function restoreDatabase(dbUrl: string, source: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (dbUrl.startsWith('sqlite:')) {
    const path = dbUrl.slice('sqlite:'.length);
    if (isSameFile(source, path)) throw conflict(`--from names the vault's own database (${path})`);
    if (!isVaultDatabase(source)) throw conflict(`${source} is not a vault database made by \`vault backup\`: nothing was changed`);
    if (openElsewhere(path)) throw conflict(`${path} is open in another process (a running vault?): stop it before restoring`);
    // A stale write-ahead log would be replayed over the restored file.
    for (const suffix of ['-wal', '-shm']) rmSync(path + suffix, { force: true });
    copyFileSync(source, path);
    // As private as a new database, whatever the backup file's mode was.
    chmodSync(path, 0o600);
    return;
  }
  if (!(await isVaultDump(source, env))) throw conflict(`${source} is not a vault database made by \`vault backup\`: nothing was changed`);
  await dropVaultSchema(dbUrl);
  try {
    await runPgTool('pg_restore', ['--no-owner', '--single-transaction', '--exit-on-error', source], dbUrl, env);
  } catch (err) {
    throw new Error(`${(err as Error).message}. The database's vault tables were dropped before it: restore again once the cause is fixed`);
  }
}

/** Whether a file is a pg_dump archive holding a vault (its migration table), asked of pg_restore. */
async function isVaultDump(source: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  const { execFileSync } = await import('node:child_process');
  let contents: string;
  try {
    contents = execFileSync('pg_restore', ['--list', source], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('pg_restore is not installed (it comes with the PostgreSQL client tools)');
    return false;
  }
  return /^\d+; \d+ \d+ TABLE \S+ kysely_migration /m.test(contents);
}

/**
 * Empties the vault's schema of every table, view, sequence and function, so the restored
 * database is the backup's and nothing else. `pg_restore --clean` drops only what the dump
 * holds: tables a newer release added stayed while the migration table went back, and the
 * next start failed re-creating them. A schema holding tables but no vault is refused, so a
 * VAULT_DB naming the wrong database loses nothing. Objects of extensions are left alone.
 */
async function dropVaultSchema(dbUrl: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: dbUrl });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('begin');
    const objects = await client.query<{ kind: string; name: string }>(
      `select case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end as kind,
              format('%I.%I', n.nspname, c.relname) as name
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm', 'S')
          and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype in ('e', 'a', 'i'))
       union all
       select 'function', format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))
         from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = current_schema()
          and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`,
    );
    const tables = objects.rows.filter((o) => o.kind === 'table');
    if (tables.length > 0 && !tables.some((o) => /^"?[^.]+"?\.kysely_migration$/.test(o.name))) {
      throw conflict(`${redactUrl(dbUrl)} holds tables but no vault: nothing was changed (restore into the vault's own database)`);
    }
    for (const { kind, name } of objects.rows) await client.query(`drop ${kind} if exists ${name} cascade`);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    await client.end().catch(() => {});
  }
}
