/**
 * The operator's command line. Every verb works on the vault configured by the same
 * environment as the server (VAULT_DATA_DIR, VAULT_DB, ...), directly on its database.
 * `vault --help` lists them in this order.
 */
import { withVault, type Command } from './command.js';
import { applicationCommands } from './applications.js';
import { keyCommands } from './keys.js';
import { activityCommands } from './activity.js';
import { backupCommands } from './backup.js';

export type { Command, Io } from './command.js';

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

  migrate: {
    summary: 'Apply every pending database migration (the server also does this on start)',
    usage: 'vault migrate',
    async run(_args, io) {
      await withVault(io, async () => undefined, { existing: false });
      io.out('Database is up to date');
      return 0;
    },
  },

  ...applicationCommands,
  ...keyCommands,
  ...activityCommands,
  ...backupCommands,

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
  },};
