import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { buildServer } from './http/server.js';
import { drainAndClose } from './http/shutdown.js';
import { Vault } from './vault.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
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
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    await drainAndClose(app, config.shutdownGraceMs);
    await vault.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err: Error) => {
  process.stderr.write(`The vault could not start: ${err.message}\n`);
  process.exit(1);
});
