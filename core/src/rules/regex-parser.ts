/**
 * Patterns as rule authors write them, read into a tree. What the matcher does not run
 * (backreferences, lookaround, word boundaries) is refused here, where the author can be told
 * why, as are groups nested deeper than parsing should recurse and repetition counts that
 * would unroll into an oversized program.
 */

const MAX_REPEAT = 1_000;

export class RegexSyntaxError extends Error {}

export type Test = (c: number) => boolean;

export type Node =
  | { kind: 'char'; test: Test }
  | { kind: 'bol' }
  | { kind: 'eol' }
  | { kind: 'empty' }
  | { kind: 'concat'; items: Node[] }
  | { kind: 'alt'; items: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number };

const isDigit: Test = (c) => c >= 48 && c <= 57;
const isWord: Test = (c) => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
const isSpace: Test = (c) => /\s/u.test(String.fromCodePoint(c));
const isLineEnd = (c: number) => c === 10 || c === 13 || c === 0x2028 || c === 0x2029;

export class Parser {
  private pos = 0;
  private readonly chars: number[];

  constructor(
    pattern: string,
    private readonly ignoreCase: boolean,
  ) {
    this.chars = Array.from(pattern, (ch) => ch.codePointAt(0)!);
  }

  parse(): Node {
    const node = this.alternation(0);
    if (this.pos < this.chars.length) throw new RegexSyntaxError('unbalanced parenthesis');
    return node;
  }

  private peek(offset = 0): number | undefined {
    return this.chars[this.pos + offset];
  }

  private alternation(depth: number): Node {
    if (depth > 32) throw new RegexSyntaxError('groups nested too deeply');
    const items = [this.sequence(depth)];
    while (this.peek() === 0x7c /* | */) {
      this.pos++;
      items.push(this.sequence(depth));
    }
    return items.length === 1 ? items[0] : { kind: 'alt', items };
  }

  private sequence(depth: number): Node {
    const items: Node[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === 0x7c || c === 0x29 /* ) */) break;
      let atom = this.atom(depth);
      atom = this.quantified(atom);
      items.push(atom);
    }
    if (items.length === 0) return { kind: 'empty' };
    return items.length === 1 ? items[0] : { kind: 'concat', items };
  }

  private quantified(atom: Node): Node {
    const bounds = this.quantifier();
    if (!bounds) return atom;
    if (atom.kind === 'bol' || atom.kind === 'eol') throw new RegexSyntaxError('nothing to repeat');
    if (this.peek() === 0x3f) this.pos++; // lazy: the same language, so the same answer
    if (this.quantifier()) throw new RegexSyntaxError('nothing to repeat');
    return { kind: 'repeat', node: atom, min: bounds[0], max: bounds[1] };
  }

  /** Consumes a quantifier if one follows. */
  private quantifier(): [number, number] | undefined {
    const c = this.peek();
    if (c === 0x7b /* { */) return this.braces();
    const bounds: Record<number, [number, number]> = { 0x2a: [0, Infinity], 0x2b: [1, Infinity], 0x3f: [0, 1] };
    if (c === undefined || !bounds[c]) return undefined;
    this.pos++;
    return bounds[c];
  }

  /** `{n}`, `{n,}`, `{n,m}`; anything else leaves `{` a literal, as JavaScript does. */
  private braces(): [number, number] | undefined {
    // Every digit is read, however many: a count above the limit is refused, never taken as text.
    const rest = String.fromCodePoint(...this.chars.slice(this.pos));
    const m = /^\{(\d+)(,(\d*))?\}/.exec(rest);
    if (!m) return undefined;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
    if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) throw new RegexSyntaxError('repetition count too large');
    if (max < min) throw new RegexSyntaxError('numbers out of order in {} quantifier');
    this.pos += m[0].length;
    return [min, max];
  }

  private atom(depth: number): Node {
    const c = this.chars[this.pos++];
    switch (c) {
      case 0x5e /* ^ */:
        return { kind: 'bol' };
      case 0x24 /* $ */:
        return { kind: 'eol' };
      case 0x2e /* . */:
        return { kind: 'char', test: (x) => !isLineEnd(x) };
      case 0x28 /* ( */: {
        if (this.peek() === 0x3f /* ? */) {
          const next = this.peek(1);
          if (next === 0x3a /* : */) this.pos += 2;
          else if (next === 0x3c /* < */ && this.peek(2) !== 0x3d && this.peek(2) !== 0x21) {
            const close = this.chars.indexOf(0x3e /* > */, this.pos);
            if (close === -1) throw new RegexSyntaxError('invalid group name');
            this.pos = close + 1;
          } else throw new RegexSyntaxError('lookaround is not supported');
        }
        const inner = this.alternation(depth + 1);
        if (this.chars[this.pos++] !== 0x29) throw new RegexSyntaxError('unterminated group');
        return inner;
      }
      case 0x29:
        throw new RegexSyntaxError('unmatched )');
      case 0x5b /* [ */:
        return { kind: 'char', test: this.charClass() };
      case 0x5c /* \ */: {
        const escaped = this.escape(false);
        return typeof escaped === 'number' ? this.literal(escaped) : { kind: 'char', test: this.caseless(escaped) };
      }
      case 0x2a:
      case 0x2b:
      case 0x3f:
        throw new RegexSyntaxError('nothing to repeat');
      case 0x7b:
        if (this.braces()) throw new RegexSyntaxError('nothing to repeat');
        return this.literal(c);
      default:
        return this.literal(c);
    }
  }

  private literal(c: number): Node {
    return { kind: 'char', test: this.caseless((x) => x === c) };
  }

  private caseless(test: Test): Test {
    if (!this.ignoreCase) return test;
    return (x) => {
      if (test(x)) return true;
      const s = String.fromCodePoint(x);
      const lower = s.toLowerCase();
      const upper = s.toUpperCase();
      return (lower.length === s.length && test(lower.codePointAt(0)!)) || (upper.length === s.length && test(upper.codePointAt(0)!));
    };
  }

  /** After a backslash: a code point, or a test for a set (`\d`). In a class `\b` is a backspace. */
  private escape(inClass: boolean): number | Test {
    const c = this.chars[this.pos++];
    if (c === undefined) throw new RegexSyntaxError('\\ at end of pattern');
    const ch = String.fromCodePoint(c);
    const sets: Record<string, Test> = {
      d: isDigit,
      D: (x) => !isDigit(x),
      w: isWord,
      W: (x) => !isWord(x),
      s: isSpace,
      S: (x) => !isSpace(x),
    };
    if (sets[ch]) return sets[ch];
    const controls: Record<string, number> = { n: 10, r: 13, t: 9, f: 12, v: 11 };
    if (controls[ch] !== undefined) return controls[ch];
    if (ch === '0') {
      if (this.peek() !== undefined && isDigit(this.peek()!)) throw new RegexSyntaxError('octal escapes are not supported');
      return 0;
    }
    if (ch === 'x' || ch === 'u') {
      const len = ch === 'x' ? 2 : 4;
      const hex = String.fromCodePoint(...this.chars.slice(this.pos, this.pos + len));
      if (!(len === 2 ? /^[0-9A-Fa-f]{2}$/ : /^[0-9A-Fa-f]{4}$/).test(hex)) throw new RegexSyntaxError(`invalid \\${ch} escape`);
      this.pos += len;
      return parseInt(hex, 16);
    }
    if (ch === 'b') {
      if (inClass) return 8;
      throw new RegexSyntaxError('word boundaries are not supported');
    }
    if (/[1-9]/.test(ch)) throw new RegexSyntaxError('backreferences are not supported');
    if (/[A-Za-z]/.test(ch)) throw new RegexSyntaxError(`unknown escape \\${ch}`);
    return c;
  }

  private charClass(): Test {
    let negate = false;
    if (this.peek() === 0x5e) {
      negate = true;
      this.pos++;
    }
    const parts: Test[] = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) throw new RegexSyntaxError('unterminated character class');
      if (c === 0x5d /* ] */ && !first) {
        this.pos++;
        break;
      }
      if (c === 0x5d && first) {
        // `[]` matches nothing and `[^]` anything, as in JavaScript.
        this.pos++;
        return negate ? (x) => x >= 0 : () => false;
      }
      first = false;
      const lo = this.classAtom();
      if (this.peek() === 0x2d /* - */ && this.peek(1) !== undefined && this.peek(1) !== 0x5d) {
        if (typeof lo !== 'number') throw new RegexSyntaxError('invalid character class range');
        this.pos++;
        const hi = this.classAtom();
        if (typeof hi !== 'number') throw new RegexSyntaxError('invalid character class range');
        if (hi < lo) throw new RegexSyntaxError('range out of order in character class');
        parts.push((x) => x >= lo && x <= hi);
      } else {
        parts.push(typeof lo === 'number' ? (x) => x === lo : lo);
      }
    }
    // Case folding applies to the listed characters, before negation, as in JavaScript.
    const test = this.caseless((x) => parts.some((p) => p(x)));
    return negate ? (x) => !test(x) : test;
  }

  /** A code point, or a test for an escape that names a set (`\d`). */
  private classAtom(): number | Test {
    const c = this.chars[this.pos++];
    return c === 0x5c ? this.escape(true) : c;
  }
}
