/**
 * The README's code is the tested code: every TypeScript block of sdk/README.md sits under an
 * `<!-- example: name -->` marker and equals the region `name` of examples.test.ts, and
 * every region is shown in the README.
 */
import { readFileSync } from 'node:fs';
import test from 'ava';

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

test('the region parser finds indented regions and refuses duplicates', (t) => {
  const source = ['x', '  // example:start a', '  const a = 1;', '    nested();', '  // example:end', 'y'].join('\n');
  t.deepEqual([...regions(source)], [['a', 'const a = 1;\n  nested();']]);
  t.throws(() => regions(`${source}\n${source}`), { message: 'region a appears twice' });
  t.deepEqual(blocks('<!-- example: a -->\n```ts\nconst a = 1;\n```\n\n```ts\nloose();\n```\n'), [
    { name: 'a', code: 'const a = 1;', line: 1 },
    { name: undefined, code: 'loose();', line: 6 },
  ]);
});
