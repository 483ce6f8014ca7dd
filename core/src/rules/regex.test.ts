import test from 'ava';
import fc from 'fast-check';
import { compileSafeRegex, MAX_PATTERN_LENGTH, RegexSyntaxError } from './regex.js';

/**
 * Patterns over a small alphabet, built from the syntax the engine supports. The oracle is
 * JavaScript's backtracking RegExp, which can itself take exponential time on nested
 * quantifiers: a quantified group here holds only unquantified atoms (unquantified groups
 * nest freely), which keeps the oracle fast while still exercising every construct.
 */
const literal = fc.constantFrom('a', 'b', 'c', '.', '[ab]', '[^a]', '[a-c]', '\\d', '\\w', '\\s', '\\.', '1', ' ');
const quantifier = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '+?');
const flatGroup = fc
  .tuple(fc.array(fc.array(literal, { minLength: 1, maxLength: 3 }).map((a) => a.join('')), { minLength: 1, maxLength: 3 }), fc.boolean())
  .map(([alternatives, capture]) => `${capture ? '(' : '(?:'}${alternatives.join('|')})`);
const quantified = fc.tuple(fc.oneof(literal, flatGroup), quantifier).map(([atom, q]) => `${atom}${q}`);
const pattern = fc.letrec((tie) => ({
  piece: fc.oneof({ depthSize: 'small', maxDepth: 2 }, quantified, tie('group')),
  group: tie('alt').map((inner) => `(?:${inner})`),
  seq: fc.array(tie('piece'), { minLength: 1, maxLength: 4 }).map((p) => (p as string[]).join('')),
  alt: fc.array(tie('seq'), { minLength: 1, maxLength: 3 }).map((s) => (s as string[]).join('|')),
  top: fc.tuple(fc.constantFrom('', '^'), tie('alt'), fc.constantFrom('', '$')).map(([b, p, e]) => `${b}${p}${e}`),
})).top as fc.Arbitrary<string>;

const subject = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '1', ' ', '.', '\n', 'A'), maxLength: 12 });

test('answers as JavaScript RegExp does, on generated patterns and texts', (t) => {
  fc.assert(
    fc.property(pattern, subject, (p, s) => {
      let re;
      try {
        re = compileSafeRegex(p);
      } catch (err) {
        // Size limits are the engine's own; every other refusal would be a difference.
        fc.pre(!(err instanceof RegexSyntaxError && /too long|too complex/.test(err.message)));
        throw err;
      }
      return re.test(s) === new RegExp(p).test(s);
    }),
    { numRuns: 3000 },
  );
  t.pass();
});

test('(?i) makes the match case-insensitive, classes included', (t) => {
  const re = compileSafeRegex('(?i)^[a-c]+x$');
  t.true(re.test('ABCx'));
  t.true(re.test('abX'));
  t.false(re.test('abd'));
  t.false(compileSafeRegex('(?i)[^a]').test('A'));
  t.false(compileSafeRegex('^[a-c]+$').test('ABC'));
});

test('patterns that make backtracking engines explode run in linear time', (t) => {
  const evil = ['(a+)+$', '(a|a)*b', '(a*)*b', '^(.*a){12}$', '^(\\w+\\s?)*$'];
  const text = `${'a'.repeat(30_000)}!`;
  for (const p of evil) {
    const started = process.hrtime.bigint();
    t.false(compileSafeRegex(p).test(text), p);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    t.true(ms < 2_000, `${p} took ${ms} ms`);
  }
});

test('what needs backtracking, or is malformed or too big, is refused', (t) => {
  for (const p of ['(?=a)', '(?!a)', '(?<=a)b', '\\1', '(a)\\1', '\\bword', '(a', 'a)', '*a', 'a**', '[b-a]', 'a{5,2}', 'a{2000}', '\\q', 'x'.repeat(MAX_PATTERN_LENGTH + 1)]) {
    t.throws(() => compileSafeRegex(p), { instanceOf: RegexSyntaxError }, p);
  }
});

test('a value longer than the matching window is matched on its start, and $ does not match at the cut', (t) => {
  const long = `${'x'.repeat(70_000)}`;
  t.true(compileSafeRegex('^x+').test(long));
  t.false(compileSafeRegex('x$').test(long));
  t.true(compileSafeRegex('x$').test('xx'));
});
