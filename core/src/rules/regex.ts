/**
 * Regular expressions written by rule authors run against every stored value, so a
 * backtracking engine would let one careless (or hostile) pattern stall the vault. Patterns are
 * read by regex-parser, compiled to a Thompson NFA by regex-program and run by a Pike VM
 * without captures in regex-vm, whose steps regex-dfa caches as a lazily built DFA: time is
 * linear in the input for a given pattern, whatever the pattern. It supports the usual
 * JavaScript syntax for matching — literals, `.`, classes, escapes, anchors, groups,
 * alternation, greedy and lazy quantifiers and a leading `(?i)` — and refuses what needs
 * backtracking (backreferences, lookaround).
 */
import { Parser, RegexSyntaxError } from './regex-parser.js';
import { compile } from './regex-program.js';
import { LazyDfa } from './regex-dfa.js';

export const MAX_PATTERN_LENGTH = 256;

export interface SafeRegex {
  /** Whether the pattern matches anywhere in the text (like `RegExp.prototype.test`). */
  test(text: string): boolean;
}

/** Compiles a pattern, or throws RegexSyntaxError for what this engine refuses. */
export function compileSafeRegex(pattern: string): SafeRegex {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new RegexSyntaxError('pattern is too long');
  let source = pattern;
  let ignoreCase = false;
  if (source.startsWith('(?i)')) {
    ignoreCase = true;
    source = source.slice(4);
  }
  return new LazyDfa(compile(new Parser(source, ignoreCase).parse()));
}
