import { lookup } from 'node:dns/promises';
import { createServer, type AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ConfigError, describeConfig, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { buildServer } from './http/server.js';
import { drainAndClose } from './http/shutdown.js';
import { Vault } from './vault.js';
import { VAULT_VERSION } from './version.js';

/**
 * After the drain period, how long a stop may take: requests in flight get most of it, closing
 * the database the rest. The process is gone within VAULT_SHUTDOWN_GRACE_MS plus this plus
 * `EXIT_MARGIN_MS`, whatever hangs (a database that stopped answering, a removed data directory).
 */
export const STOP_BUDGET_MS = 8000;
const CLOSE_DATABASE_MS = 3000;
const EXIT_MARGIN_MS = 1000;

/** Starts the vault as configured by the environment and serves until SIGTERM or SIGINT. */
export async function runServer(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Before anything is created (an admin key, a key pair): a host that names no address.
  try {
    await lookup(config.host);
  } catch {
    process.stderr.write(`Invalid configuration: VAULT_HOST "${config.host}" does not resolve to an address\n`);
    process.exit(2);
  }
  // Also before anything is created: a port another process holds, or an address that is not
  // this machine's, failed the listen only after a first start had printed its admin key.
  await canListen(config.host, config.port);
  const logger = createLogger(config.logLevel);
  const vault = await Vault.open({ config, logger });
  const app = await buildServer(vault);
  await app.listen({ host: config.host, port: config.port });
  // What an operator checks first when a deployment misbehaves: which release, set up how,
  // and where it listens (with VAULT_PORT 0, the port it was given).
  const url = listeningUrl(app.server.address() as AddressInfo, config.tls !== undefined);
  logger.info({ version: VAULT_VERSION, node: process.version, dialect: vault.dialect, url, config: describeConfig(config) }, 'vault started');

  let stopping = false;
  // Exit codes: 0 every request and the database closed cleanly; 1 something had to be cut
  // short by the deadline, or a second signal asked to exit now.
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down: draining, then finishing in-flight requests');
    const deadline = Date.now() + config.shutdownGraceMs + STOP_BUDGET_MS;
    setTimeout(() => {
      logger.error('shutdown overran its deadline; exiting');
      process.exit(1);
    }, deadline - Date.now() + EXIT_MARGIN_MS);
    shutdown(app, vault, logger, config.shutdownGraceMs, deadline).then(
      (finished) => process.exit(finished ? 0 : 1),
      (err: Error) => {
        logger.error({ err: err.message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function listeningUrl(address: AddressInfo, tls: boolean): string {
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${tls ? 'https' : 'http'}://${host}:${address.port}`;
}

/** Rejects with the error the server's own listen would meet (`listen EADDRINUSE: …`). */
function canListen(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Drains, finishes requests, closes the database; resolves by `deadline` to whether all of it finished. */
async function shutdown(app: FastifyInstance, vault: Vault, logger: Logger, graceMs: number, deadline: number): Promise<boolean> {
  const unfinished: string[] = [];
  const requestsDone = await drainAndClose(app, graceMs, deadline - CLOSE_DATABASE_MS).catch(() => false);
  if (!requestsDone) unfinished.push('requests in flight');
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    vault.close().then(() => true, (err: Error) => (logger.error({ err: err.message }, 'closing the database failed'), false)),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now())))),
  ]);
  clearTimeout(timer);
  if (!closed) unfinished.push('closing the database');
  if (unfinished.length > 0) {
    // Cut requests were never answered, so nothing acknowledged is lost: an open transaction
    // rolls back, and one that committed just before the cut is like any answer a network lost.
    logger.warn({ unfinished }, 'stopped at the deadline before finishing');
  } else logger.info('stopped');
  return unfinished.length === 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runServer().catch((err: Error) => {
    process.stderr.write(`The vault could not start: ${err.message}\n`);
    process.exit(1);
  });
}
