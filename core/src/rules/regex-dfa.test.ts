import test from 'ava';
import fc from 'fast-check';
import { LazyDfa, MAX_DFA_STATES } from './regex-dfa.js';
import { Parser, RegexSyntaxError } from './regex-parser.js';
import { compile, type Instr } from './regex-program.js';
import { Machine } from './regex-vm.js';

/**
 * The DFA must answer exactly as the Pike VM it caches, on every text and in any order of
 * texts (a state worked out for one text is reused by the next). The VM is the oracle here,
 * so the patterns can use what RegExp reads differently (case folding of odd letters, code
 * points rather than UTF-16 units), and the texts hold what trips a cache: astral characters,
 * lone surrogates, line terminators, letters whose case changes their length or script.
 */
const atom = fc.constantFrom(
  'a', 'b', 'A', 'é', 'É', 'ß', 'k', 'K', 's', 'ſ', '😀', '.', '[ab]', '[^a]', '[a-cé]', '[^😀]', '[😀-😂]', '\\d', '\\w', '\\W', '\\s', '\\S', '\\u00e9', '\\n', '[]', '[^]', '^', '$', '(?:)',
);
const quantifier = fc.constantFrom('', '', '', '*', '+', '?', '{2}', '{0,2}', '{1,}', '*?');
const piece: fc.Arbitrary<string> = fc.letrec((tie) => ({
  piece: fc.oneof({ depthSize: 'small', maxDepth: 3 }, fc.tuple(atom, quantifier).map(([a, q]) => (a === '^' || a === '$' ? a : `${a}${q}`)), tie('group')),
  group: fc.tuple(tie('alt'), quantifier, fc.boolean()).map(([inner, q, capture]) => `${capture ? '(' : '(?:'}${inner})${q}`),
  seq: fc.array(tie('piece'), { maxLength: 4 }).map((p) => (p as string[]).join('')),
  alt: fc.array(tie('seq'), { minLength: 1, maxLength: 3 }).map((s) => (s as string[]).join('|')),
})).alt as fc.Arbitrary<string>;
const pattern = fc.tuple(fc.boolean(), piece).map(([caseless, p]) => ({ caseless, source: p }));
const subject = fc.string({ unit: fc.constantFrom('a', 'b', 'A', 'é', 'É', 'ß', 'k', 'K', 'ſ', 'S', '😀', '😁', '\uD83D', '\uDE00', '\n', '\u2028', ' ', '1', '_', 'x'), maxLength: 16 });

function program(source: string, caseless: boolean): Instr[] | undefined {
  try {
    return compile(new Parser(source, caseless).parse());
  } catch (err) {
    if (err instanceof RegexSyntaxError) return undefined;
    throw err;
  }
}

for (const maxStates of [undefined, 3, 1]) {
  test(`answers as the Pike VM does, text after text${maxStates ? ` (budget of ${maxStates} states: the VM takes over)` : ''}`, (t) => {
    fc.assert(
      fc.property(pattern, fc.array(subject, { minLength: 1, maxLength: 12 }), ({ source, caseless }, texts) => {
        const prog = program(source, caseless);
        fc.pre(prog !== undefined);
        const vm = new Machine(prog!);
        const dfa = new LazyDfa(prog!, { maxStates });
        // Twice over: the second pass runs on states the first one built.
        for (const text of [...texts, ...texts]) {
          if (dfa.test(text) !== vm.test(text)) return false;
        }
        return true;
      }),
      { numRuns: maxStates === undefined ? 3000 : 1000 },
    );
    t.pass();
  });
}

test('anchors and empty matches, each on a fresh pattern and a warm one', (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['', '', true],
    ['', 'abc', true],
    ['^$', '', true],
    ['^$', 'a', false],
    ['$^', '', true],
    ['a$^', 'a', false],
    ['^a|b$', 'xa', false],
    ['^a|b$', 'ax', true],
    ['^a|b$', 'xb', true],
    ['^a|b$', 'bx', false],
    ['x(?:$|y)', 'zx', true],
    ['x(?:$|y)', 'xz', false],
    ['(?:^|,)id', 'a,id', true],
    ['(?:^|,)id', 'aid', false],
    ['a*', 'bbb', true],
    ['^a*$', 'aab', false],
    ['[]', 'abc', false],
    ['[^]', '\n', true],
    ['^.$', '😀', true],
    ['^..$', '😀', false],
    ['^.$', '\n', false],
    ['^.$', '\u2028', false],
    ['^\\s$', '\u2028', true],
    ['(?i)^ÉTÉ$', 'été', true],
    ['(?i)[^a]', 'A', false],
    ['(?i)^[a-c]+$', 'AbC', true],
    ['^[😀-😂]+$', '😁😂', true],
    ['^\\uD83D$', '\uD83D', true],
    ['end$', 'the end', true],
    ['end$', 'the end\n', false],
  ];
  for (const [source, text, expected] of cases) {
    const caseless = source.startsWith('(?i)');
    const prog = program(caseless ? source.slice(4) : source, caseless)!;
    const dfa = new LazyDfa(prog);
    t.is(dfa.test(text), expected, `${source} on ${JSON.stringify(text)}, fresh`);
    for (const other of ['', 'x', 'ab', 'the end', text]) dfa.test(other);
    t.is(dfa.test(text), expected, `${source} on ${JSON.stringify(text)}, warm`);
    t.is(new Machine(prog).test(text), expected, `${source} on ${JSON.stringify(text)}, by the VM`);
  }
});

test('a value longer than the matching window: matched on its start, and `$` does not hold at the cut', (t) => {
  const long = 'x'.repeat(70_000);
  const cases: Array<[string, string, boolean]> = [
    ['^x+', long, true],
    ['x$', long, false],
    ['$', long, false],
    ['(?:y|$)', long, false],
    ['$', 'x'.repeat(100), true],
    ['x$', 'x'.repeat(100), true],
  ];
  for (const [source, text, expected] of cases) {
    const prog = program(source, false)!;
    const dfa = new LazyDfa(prog);
    t.is(dfa.test(text), expected, `${source} on ${text.length} characters`);
    t.is(dfa.test(text), expected, `${source} on ${text.length} characters, warm`);
    t.is(new Machine(prog).test(text), expected, `${source} on ${text.length} characters, by the VM`);
  }
});

test('a warm pattern does not run its character tests again: a state’s moves are looked up', (t) => {
  let calls = 0;
  const x: Instr = { op: 'char', test: (c) => (calls++, c === 0x78) };
  // `x` unanchored: the start state, then one state that every other letter comes back to.
  const dfa = new LazyDfa([x, { op: 'match' }]);
  const text = 'a'.repeat(10_000);
  t.false(dfa.test(text));
  const cold = calls;
  t.true(cold <= 4, `${cold} tests for one distinct character`);
  t.false(dfa.test(text));
  t.false(dfa.test(`${text}é`));
  t.true(dfa.test(`${text}x`));
  t.true(calls <= cold + 4, `${calls - cold} tests on warm states`);
});

test('patterns that explode a DFA, or a backtracking engine, still answer, and as the VM does', (t) => {
  // `(a|b)*a(a|b){12}` needs a state per set of 13 last letters, far past the budget.
  const tail = (first: string) => `${first}${'b'.repeat(12)}`;
  const cases: Array<[string, string, boolean]> = [
    ['(a|b)*a(a|b){12}', `${'ab'.repeat(15_000)}${tail('a')}`, true],
    ['(a|b)*a(a|b){12}', `${'b'.repeat(30_000)}${'a'.repeat(12)}`, false],
    ['^(a|b)*a(a|b){12}$', `${'ba'.repeat(15_000)}${tail('a')}`, true],
    ['^(a|b)*a(a|b){12}$', `${'ba'.repeat(15_000)}${tail('b')}`, false],
    ['a.{0,20}b', `${'a'.repeat(30_000)}`, false],
    ['a.{0,20}b', `${'a'.repeat(30_000)}b`, true],
    ['(a*)*b', 'a'.repeat(30_000), false],
    ['(a*)*b', `${'a'.repeat(30_000)}b`, true],
    ['(a|a)*c', `${'a'.repeat(30_000)}!`, false],
    ['(a|a)*c', `${'a'.repeat(30_000)}c`, true],
    ['^(.*a){12}$', `${'a'.repeat(30_000)}!`, false],
    ['^(.*a){12}$', 'a'.repeat(30_000), true],
  ];
  for (const [source, text, expected] of cases) {
    const prog = program(source, false)!;
    const dfa = new LazyDfa(prog);
    t.is(dfa.test(text), expected, `${source} on ${text.length} characters`);
    t.is(dfa.test(text), expected, `${source} on ${text.length} characters, again`);
    t.is(new Machine(prog).test(text), expected, `${source} on ${text.length} characters, by the VM`);
  }
});

test('a large program runs out of room before it runs out of states, and the VM answers', (t) => {
  // Every state of `.{0,900}x` on text without x holds up to 900 threads: a hundred or so fill
  // the size budget before the count budget does.
  const prog = program('(?:.{0,900}x|y$)', false)!;
  const dfa = new LazyDfa(prog);
  const text = 'a'.repeat(5_000);
  for (const [s, expected] of [[text, false], [`${text}x`, true], [`${text}y`, true], [`${text}yz`, false]] as const) {
    t.is(dfa.test(s), expected);
    t.is(new Machine(prog).test(s), expected);
  }
  const kept = (dfa as unknown as { states: Map<string, unknown> }).states.size;
  t.true(kept < MAX_DFA_STATES, `${kept} states: the size budget, not the count, stopped them`);
});
