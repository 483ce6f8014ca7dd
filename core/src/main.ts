import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { buildServer } from './http/server.js';
import { drainAndClose } from './http/shutdown.js';
import { Vault } from './vault.js';

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
  const logger = createLogger(config.logLevel);
  const vault = await Vault.open({ config, logger });
  const app = await buildServer(vault);
  await app.listen({ host: config.host, port: config.port });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: draining, then finishing in-flight requests');
    await drainAndClose(app, config.shutdownGraceMs);
    await vault.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runServer().catch((err: Error) => {
    process.stderr.write(`The vault could not start: ${err.message}\n`);
    process.exit(1);
  });
}
