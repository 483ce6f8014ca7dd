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
import { ConfigError } from '../config.js';
import { redactUrl } from '../db/connect.js';

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

  sidecar: {
    summary: 'Run the sidecar (same as npm run sidecar)',
    usage: 'vault sidecar  (configured by SIDECAR_* and REDIS_URL, as proxy/README.md lists them)',
    async run() {
      // The sidecar's own entry point: it reads the environment, handles signals and exits by itself.
      await import('@vault/proxy/main.js');
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
    usage: 'vault deadletters [--sidecar URL] [--values] [--offset N] [--limit N] [--replay]  (100 from the oldest unless paged; URL defaults to http://127.0.0.1:$SIDECAR_PORT, else :8084; sends SIDECAR_INGEST_TOKEN when set)',
    options: {
      sidecar: { type: 'string' },
      replay: { type: 'boolean', default: false },
      values: { type: 'boolean', default: false },
      offset: { type: 'string' },
      limit: { type: 'string' },
    },
    async run({ values }, io) {
      const base = (values.sidecar === undefined ? defaultSidecarUrl(io.env) : String(values.sidecar)).replace(/\/$/, '');
      // Messages name the sidecar as `shown`: the URL may carry a credential.
      const shown = redactUrl(base);
      if (/^[^:/?#]*:\/\/[^/?#]*@/.test(base)) {
        // fetch refuses such a URL anyway, quoting it whole in its error.
        // Not named even masked: a token may stand where the user name goes.
        io.err('--sidecar must not hold a user name or password: the sidecar takes the token in SIDECAR_INGEST_TOKEN');
        return 2;
      }
      const token = io.env.SIDECAR_INGEST_TOKEN?.trim();
      const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
      // The sidecar checks offset and limit itself and names what is wrong with them.
      const query = new URLSearchParams();
      if (values.offset !== undefined) query.set('offset', String(values.offset));
      if (values.limit !== undefined) query.set('limit', String(values.limit));
      if (values.values) query.set('values', 'true');
      const url = values.replay ? `${base}/deadletters/replay` : `${base}/deadletters${query.size > 0 ? `?${query}` : ''}`;
      let res: Response;
      try {
        res = values.replay
          ? await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: '{}' })
          : await fetch(url, { headers: auth });
      } catch (err) {
        // fetch says only "fetch failed": the operator needs to know where it looked.
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        const why = cause?.code ?? cause?.message ?? (err as Error).message;
        throw new Error(`could not reach the sidecar at ${shown} (${why}): is it running there? Name its address with --sidecar URL, or its port with SIDECAR_PORT`);
      }
      const text = await res.text();
      let answer: unknown;
      try {
        answer = JSON.parse(text);
      } catch {
        // The likeliest cause is the proxy port, whose answers are the application's.
        const what = text.trim() === '' ? 'an empty body' : 'a body that is not JSON';
        throw new Error(`${redactUrl(url)} answered HTTP ${res.status} with ${what}: is ${shown} the sidecar's own API (SIDECAR_PORT, 8084 by default), not its proxy port or another service?`);
      }
      io.out(JSON.stringify(answer, null, 2));
      return res.ok ? 0 : 1;
    },
  },
};

/** Where the sidecar listens when started from the same environment (proxy/src/config.ts). */
function defaultSidecarUrl(env: NodeJS.ProcessEnv): string {
  const raw = env.SIDECAR_PORT?.trim();
  if (raw === undefined || raw === '') return 'http://127.0.0.1:8084';
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) {
    throw new ConfigError(`SIDECAR_PORT must be an integer from 1 to 65535, got "${raw}" (or name the sidecar with --sidecar URL)`);
  }
  return `http://127.0.0.1:${Number(raw)}`;
}
