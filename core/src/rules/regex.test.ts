import test from 'ava';
import fc from 'fast-check';
import { compileSafeRegex, MAX_PATTERN_LENGTH } from './regex.js';
import { RegexSyntaxError } from './regex-parser.js';

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

/**
 * Beyond ASCII and with `(?i)`: the engine matches code points, as RegExp does with the `u`
 * flag, so that is the oracle here. Letters whose case folding differs between the two (the
 * Kelvin sign, the long s) are left out: the engine folds with toLowerCase/toUpperCase.
 */
const wideLiteral = fc.constantFrom('a', 'A', 'b', 'é', 'É', '😀', '.', '[ab]', '[^a]', '[é-ë]', '[^😀]', '[😀-😂]', '\\w', '\\W', '\\s', '\\S', '\\d', '\\u00e9', '(?:)');
const widePattern = fc
  .tuple(
    fc.boolean(),
    fc.constantFrom('', '^'),
    fc.array(fc.array(fc.tuple(wideLiteral, quantifier).map(([a, q]) => (a === '(?:)' ? a : `${a}${q}`)), { maxLength: 4 }).map((a) => a.join('')), { minLength: 1, maxLength: 3 }),
    fc.constantFrom('', '$'),
  )
  .map(([caseless, b, alternatives, e]) => ({ caseless, source: `${b}(?:${alternatives.join('|')})${e}` }));
const wideSubject = fc.string({ unit: fc.constantFrom('a', 'A', 'b', 'é', 'É', 'ë', '😀', '😁', '\n', '\u2028', ' ', '1', '_'), maxLength: 12 });

test('(?i) and characters beyond ASCII: answers as RegExp with the u flag does, text after text', (t) => {
  fc.assert(
    fc.property(widePattern, fc.array(wideSubject, { minLength: 1, maxLength: 6 }), ({ caseless, source }, texts) => {
      // One compiled pattern for several texts, as a rule runs on every value of a store.
      const re = compileSafeRegex(caseless ? `(?i)${source}` : source);
      const oracle = new RegExp(source, caseless ? 'ui' : 'u');
      return texts.every((s) => re.test(s) === oracle.test(s));
    }),
    { numRuns: 2000 },
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

// A backtracking engine takes exponential time on these: it would never answer, and the
// test would fail at ava's timeout. No time is asserted, only that an answer comes.
test('patterns that make backtracking engines explode are answered', (t) => {
  const evil = ['(a+)+$', '(a|a)*b', '(a*)*b', '^(.*a){12}$', '^(\\w+\\s?)*$'];
  const text = `${'a'.repeat(30_000)}!`;
  for (const p of evil) t.false(compileSafeRegex(p).test(text), p);
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

/** Counts on both sides of the limit, from small to far past what fits in a number. */
const count = fc.oneof(
  fc.integer({ min: 0, max: 12 }),
  fc.integer({ min: 990, max: 1010 }),
  fc.integer({ min: 1011, max: 10_000_000 }),
  fc.bigInt({ min: 10n ** 15n, max: 10n ** 30n }),
);
const countedAtom = fc.constantFrom('a', '.', '[ab]', '(?:ab)', '(a|b)', '\\d');
const counted = fc.oneof(
  fc.tuple(countedAtom, count).map(([a, n]) => ({ pattern: `${a}{${n}}`, counts: [n] })),
  fc.tuple(countedAtom, count).map(([a, n]) => ({ pattern: `${a}{${n},}`, counts: [n] })),
  fc.tuple(countedAtom, count, count).map(([a, n, m]) => ({ pattern: `${a}{${n},${m}}`, counts: [n, m] })),
);

test('repeat counts: above the limit always refused, below it answered as RegExp does', (t) => {
  fc.assert(
    fc.property(counted, fc.constantFrom('', 'x'), fc.constantFrom('', '$'), subject, ({ pattern, counts }, before, after, s) => {
      const p = `${before}${pattern}${after}`;
      const tooLarge = counts.some((n) => BigInt(n) > 1000n);
      const outOfOrder = counts.length === 2 && BigInt(counts[1]) < BigInt(counts[0]);
      let re;
      try {
        re = compileSafeRegex(p);
      } catch (err) {
        if (!(err instanceof RegexSyntaxError)) throw err;
        if (tooLarge) return err.message === 'repetition count too large';
        if (outOfOrder) return /out of order/.test(err.message);
        // A program too big to run in linear time is the engine's own limit.
        return /too complex/.test(err.message);
      }
      if (tooLarge || outOfOrder) return false;
      return re.test(s) === new RegExp(p).test(s);
    }),
    { numRuns: 2000 },
  );
  t.pass();
});

test('a count of any length is a count, never literal text', (t) => {
  for (const p of ['.{0,99999}', 'a{1000000}', 'a{1001}', 'a{0,1001}', 'a{1001,}', `a{${'9'.repeat(40)}}`]) {
    t.throws(() => compileSafeRegex(p), { instanceOf: RegexSyntaxError, message: 'repetition count too large' }, p);
  }
  t.true(compileSafeRegex('^a{1000}$').test('a'.repeat(1000)));
  // Braces that are not a quantifier stay literal, as in JavaScript.
  t.true(compileSafeRegex('^a{,5}$').test('a{,5}'));
  t.true(compileSafeRegex('^a{x}$').test('a{x}'));
});
