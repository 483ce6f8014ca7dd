/**
 * Builds the publishable package: compiled JavaScript and declarations, its own
 * package.json (pointing at them) and the README. `node build.mjs [--out <dir>]`, default dist.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outFlag = process.argv.indexOf('--out');
const out = resolve(outFlag === -1 ? join(here, 'dist') : process.argv[outFlag + 1]);

rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.build.json'), '--outDir', out], { stdio: 'inherit' });

const source = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));
const manifest = {
  name: source.name,
  version: source.version,
  description: source.description,
  type: 'module',
  main: './index.js',
  types: './index.d.ts',
  exports: { '.': { types: './index.d.ts', default: './index.js' } },
  engines: source.engines,
  dependencies: source.dependencies,
  sideEffects: false,
};
writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
copyFileSync(join(here, 'README.md'), join(out, 'README.md'));
console.log(`built ${source.name}@${source.version} into ${out}`);
