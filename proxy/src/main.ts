import { ConfigError, loadConfig } from './config.js';
import { RoutesFileError, startSidecar } from './index.js';

/** CLI entry point: `npm run sidecar`. Configuration comes from the environment only. */
async function main(): Promise<void> {
  let sidecar: Awaited<ReturnType<typeof startSidecar>>;
  try {
    sidecar = await startSidecar(loadConfig(process.env));
  } catch (err) {
    if (err instanceof ConfigError || err instanceof RoutesFileError) {
      process.stderr.write(`vault-sidecar: ${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    process.stderr.write(`vault-sidecar: cannot start: ${(err as Error).message}\n`);
    process.exit(1);
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal means "now": whatever was not delivered stays in Redis.
      sidecar.log.warn({ signal }, 'forced exit');
      process.exit(1);
    }
    stopping = true;
    sidecar.log.info({ signal }, 'shutting down');
    sidecar.close().then(
      () => process.exit(0),
      (err) => {
        sidecar.log.error({ err: (err as Error).message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main();
