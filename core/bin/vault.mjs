#!/usr/bin/env node
// The installed `vault` command: TypeScript sources run through tsx, as `npm run dev` does
// (`npm start` runs the compiled build).
import { text } from 'node:stream/consumers';
import { register } from 'tsx/esm/api';
register();
const { runCli } = await import('../src/cli/main.ts');
const io = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`), env: process.env, in: () => text(process.stdin) };
const code = await runCli(process.argv.slice(2), io);
if (code !== 0 || process.argv[2] !== 'start') process.exit(code);
