import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { text } from 'node:stream/consumers';
import { ConfigError } from '../config.js';
import { isVaultError } from '../errors.js';
import { commands, type Io } from './commands.js';
import { UsageError } from './secret.js';

const HELP = ['help', '--help', '-h'];

function list(io: Io, names: string[]): void {
  const width = Math.max(...names.map((n) => n.length));
  for (const name of names) io.out(`  ${name.padEnd(width)}  ${commands[name].summary}`);
}

function help(io: Io): void {
  io.out('Usage: vault <command> [options]   (vault <command> --help for its options)\n');
  list(io, Object.keys(commands));
}

/** The commands of a group such as `keys` (`keys list`, `keys register`, ...). */
function groupCommands(group: string | undefined): string[] {
  return group ? Object.keys(commands).filter((n) => n.startsWith(`${group} `)) : [];
}

/** Finds the longest command name the arguments start with: `applications create ...`. */
export async function runCli(argv: string[], io: Io): Promise<number> {
  const name = [argv.slice(0, 2).join(' '), argv[0]].find((n) => n && commands[n]);
  if (!name) {
    const group = groupCommands(argv[0]);
    if (group.length > 0) {
      // `vault keys --help` lists the group; `vault keys` or `vault keys nonsense` is a usage error.
      const asked = argv.length === 2 && HELP.includes(argv[1]);
      if (!asked) io.err(argv.length === 1 ? `${argv[0]} needs a command\n` : `Unknown command: ${argv.join(' ')}\n`);
      io.out(`Usage: vault ${argv[0]} <command> [options]   (vault ${argv[0]} <command> --help for its options)\n`);
      list(io, group);
      return asked ? 0 : 2;
    }
    if (argv.length > 0 && !HELP.includes(argv[0])) io.err(`Unknown command: ${argv.join(' ')}\n`);
    help(io);
    return argv.length === 0 || HELP.includes(argv[0]) ? 0 : 2;
  }
  const command = commands[name];
  const rest = argv.slice(name.split(' ').length);
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(`${command.summary}\n\nUsage: ${command.usage}`);
    return 0;
  }
  try {
    const args = parseArgs({ args: rest, options: command.options ?? {}, allowPositionals: true, strict: true });
    // Ignored, a stray argument hid a mistake: `applications delete A B` deleted A alone, and
    // `activity verify 10500:a41f…` (no --head) checked nothing against that head.
    const stray = args.positionals.slice(command.positionals ?? 0);
    if (stray.length > 0) {
      io.err(`Unexpected argument${stray.length > 1 ? 's' : ''}: ${stray.join(' ')}\nUsage: ${command.usage}`);
      return 2;
    }
    return await command.run(args as Parameters<typeof command.run>[0], io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\nUsage: ${command.usage}`);
      return 2;
    }
    if (err instanceof ConfigError) io.err(`Invalid configuration: ${err.message}`);
    else if (isVaultError(err)) io.err(err.message);
    else if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) io.err(`${(err as Error).message}\nUsage: ${command.usage}`);
    else io.err(`Failed: ${(err as Error).message}`);
    return err instanceof ConfigError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const io: Io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`), env: process.env, in: () => text(process.stdin) };
  runCli(process.argv.slice(2), io).then((code) => {
    if (code !== 0 || process.argv[2] !== 'start') process.exit(code);
  });
}
