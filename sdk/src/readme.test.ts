/**
 * The README's code is the tested code: every TypeScript block of sdk/README.md sits under an
 * `<!-- example: name -->` marker and equals the region `name` of examples.test.ts, every
 * region is shown in the README, and the blocks pasted in order into one file compile.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import ts from 'typescript';

const examples = readFileSync(new URL('./examples.test.ts', import.meta.url), 'utf8');
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** Region name → its lines, without the indentation of its start marker. */
function regions(source: string): Map<string, string> {
  const out = new Map<string, string>();
  const pattern = /^([ \t]*)\/\/ example:start (\S+)\n([\s\S]*?)^[ \t]*\/\/ example:end$/gm;
  for (const [, indent, name, body] of source.matchAll(pattern)) {
    if (out.has(name)) throw new Error(`region ${name} appears twice`);
    const lines = body.replace(/\n$/, '').split('\n');
    out.set(name, lines.map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())).join('\n'));
  }
  return out;
}

/** Every fenced TypeScript block, with the example marker just above it (if any). */
function blocks(markdown: string): Array<{ name: string | undefined; code: string; line: number }> {
  const out: Array<{ name: string | undefined; code: string; line: number }> = [];
  const pattern = /(?:<!-- example: (\S+) -->\n)?```(?:ts|typescript)\n([\s\S]*?)```/g;
  for (const match of markdown.matchAll(pattern)) {
    out.push({ name: match[1], code: match[2].replace(/\n$/, ''), line: markdown.slice(0, match.index).split('\n').length });
  }
  return out;
}

test('the examples file has regions for every group of endpoints', (t) => {
  t.deepEqual(
    [...regions(examples).keys()],
    ['imports', 'connect', 'keys', 'definitions', 'entities', 'store-and-read', 'search', 'registry', 'rules-and-alerts', 'audit-logs', 'errors', 'activity', 'reporter', 'applications'],
  );
});

test('every TypeScript block of the README is a tested example, verbatim', (t) => {
  const known = regions(examples);
  const shown = blocks(readme);
  t.true(shown.length > 0);
  for (const block of shown) {
    t.truthy(block.name, `README line ${block.line}: a TypeScript block without an <!-- example: name --> marker`);
    if (!block.name) continue;
    t.true(known.has(block.name), `README line ${block.line}: no region ${block.name} in examples.test.ts`);
    t.is(block.code, known.get(block.name) ?? '(missing)', `README line ${block.line}: block ${block.name} differs from examples.test.ts`);
  }
});

test('every example region is shown in the README', (t) => {
  const shown = new Set(blocks(readme).map((b) => b.name));
  for (const name of regions(examples).keys()) t.true(shown.has(name), `region ${name} is not in the README`);
});

/** TypeScript's complaints about `code` as a module of sdk/src, `line: message` each. */
function compile(code: string): string[] {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const { config } = ts.readConfigFile(`${root}tsconfig.json`, ts.sys.readFile);
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, root);
  const file = fileURLToPath(new URL('./readme-examples.ts', import.meta.url));
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) => (name === file ? ts.createSourceFile(name, code, language) : getSourceFile.call(host, name, language, ...rest));
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? code : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? `${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

test('the README\'s examples, pasted in order into one file, compile', (t) => {
  const code = blocks(readme)
    .map((b) => b.code)
    .join('\n\n');
  t.deepEqual(compile(code), []);
});

test('the compile check reports what does not compile', (t) => {
  t.deepEqual(compile('const a: string = 1;\nexport {};'), ["1: Type 'number' is not assignable to type 'string'."]);
});

test('the region parser finds indented regions and refuses duplicates', (t) => {
  const source = ['x', '  // example:start a', '  const a = 1;', '    nested();', '  // example:end', 'y'].join('\n');
  t.deepEqual([...regions(source)], [['a', 'const a = 1;\n  nested();']]);
  t.throws(() => regions(`${source}\n${source}`), { message: 'region a appears twice' });
  t.deepEqual(blocks('<!-- example: a -->\n```ts\nconst a = 1;\n```\n\n```ts\nloose();\n```\n'), [
    { name: 'a', code: 'const a = 1;', line: 1 },
    { name: undefined, code: 'loose();', line: 6 },
  ]);
});
