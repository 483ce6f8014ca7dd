import { ConfigError, loadConfig } from './config.js';
import { RoutesFileError, startSidecar } from './index.js';

/** Beyond the stop's own deadline, the most the process may take to end. */
const exitMarginMs = 1000;

/**
 * CLI entry point: `npm run sidecar`. Configuration comes from the environment only.
 *
 * Exit codes: 0 stopped with everything finished; 1 stopped with something cut short by the
 * deadline (nothing acknowledged is lost: it is in Redis), by a second signal, or a failure
 * to start; 78 invalid configuration.
 */
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
      sidecar.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    sidecar.log.info({ signal }, 'shutting down');
    // The stop bounds itself; this is the backstop should anything still hang.
    setTimeout(() => {
      sidecar.log.error('shutdown overran its deadline; exiting');
      process.exit(1);
    }, sidecar.config.shutdownMs + exitMarginMs);
    sidecar.close().then(
      (report) => process.exit(report.finished ? 0 : 1),
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
