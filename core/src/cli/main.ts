import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { isVaultError } from '../errors.js';
import { commands, type Io } from './commands.js';

function help(io: Io): void {
  io.out('Usage: vault <command> [options]   (vault <command> --help for its options)\n');
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  for (const [name, command] of Object.entries(commands)) io.out(`  ${name.padEnd(width)}  ${command.summary}`);
}

/** Finds the longest command name the arguments start with: `applications create ...`. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const name = [argv.slice(0, 2).join(' '), argv[0]].find((n) => n && commands[n]);
  if (!name) {
    if (argv.length > 0 && !['help', '--help', '-h'].includes(argv[0])) io.err(`Unknown command: ${argv.join(' ')}\n`);
    help(io);
    return argv.length === 0 || ['help', '--help', '-h'].includes(argv[0]) ? 0 : 2;
  }
  const command = commands[name];
  const rest = argv.slice(name.split(' ').length);
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(`${command.summary}\n\nUsage: ${command.usage}`);
    return 0;
  }
  try {
    const args = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
    return await command.run(args as Parameters<typeof command.run>[0], io);
  } catch (err) {
    if (err instanceof ConfigError) io.err(`Invalid configuration: ${err.message}`);
    else if (isVaultError(err)) io.err(err.message);
    else if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) io.err(`${(err as Error).message}\nUsage: ${command.usage}`);
    else io.err(`Failed: ${(err as Error).message}`);
    return err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const io: Io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`), env: process.env };
  runCli(process.argv.slice(2), io).then((code) => {
    if (code !== 0 || process.argv[2] !== 'start') process.exit(code);
  });
}
