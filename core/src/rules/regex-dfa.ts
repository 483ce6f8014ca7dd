/**
 * A lazily built DFA over the Pike VM's program. The VM calls every live thread's character
 * test at every character; with the same hundred patterns run on every stored value that was
 * most of a large store's time (tens of µs per value). Here the set of threads is the state,
 * and a state's move on a character is worked out once, with the VM's own tests, then looked
 * up: a warm pattern costs one array read per character of ASCII text.
 *
 * Linear time is kept: a step computes at most one new state (work bounded by the program's
 * size, as a VM step is), and the states a pattern may keep are capped. A text that needs a
 * state past the cap is answered by the Pike VM instead, from its start, so its cost is at
 * most the VM's twice over. Answers are the VM's by construction: a state is exactly the set
 * of threads the VM would hold at that position.
 */
import type { SafeRegex } from './regex.js';
import type { Test } from './regex-parser.js';
import type { Instr } from './regex-program.js';
import { Machine, MAX_SUBJECT_LENGTH } from './regex-vm.js';

/** States a pattern may keep. */
export const MAX_DFA_STATES = 256;
/**
 * And their size, in words: a state takes 128 for its ASCII moves and two per thread (its
 * list and its key), a remembered move on another character 4. About 0.3 MB a pattern at
 * most, however many threads a large program runs.
 */
const MAX_DFA_WORDS = 40_000;
/** Moves on other characters a state remembers; past that they are worked out each time. */
const MAX_WIDE_MOVES = 32;

/** A set of threads between two characters. */
interface State {
  /** The `char` instructions waiting for the next character, in ascending order. */
  readonly chars: Int32Array;
  /** `$` instructions reached: they pass when the text ends here. */
  readonly eols: Int32Array;
  /** A thread reached `match`: the pattern matches, whatever follows. */
  readonly matched: boolean;
  /** Matched, or no thread waits for a character: what follows hardly matters. */
  readonly settles: boolean;
  /** Whether the text ending here makes a match (worked out when first asked). */
  endMatch?: boolean;
  /** Moves on characters below 128, by code point. */
  readonly ascii: Array<State | undefined>;
  wide?: Map<number, State>;
}

export interface DfaOptions {
  /** The state budget (tests use a small one to reach the fallback). */
  maxStates?: number;
}

export class LazyDfa implements SafeRegex {
  private readonly ops: Instr['op'][];
  private readonly tests: Array<Test | undefined>;
  private readonly next: Int32Array;
  private readonly alt: Int32Array;
  private readonly anchored: boolean;
  private readonly maxStates: number;
  private readonly states = new Map<string, State>();
  private words = 0;
  /** Where matching starts at position 0, where `^` holds (kept apart from the interned states). */
  private readonly start: State;
  /** What a fresh thread at a later position reaches: added at every step unless anchored. */
  private readonly restart: { chars: number[]; eols: number[]; matched: boolean };
  private readonly fallback: Machine;
  private readonly mark: Int32Array;
  private generation = 0;

  constructor(prog: Instr[], options: DfaOptions = {}) {
    const n = prog.length;
    this.ops = prog.map((i) => i.op);
    this.tests = prog.map((i) => (i.op === 'char' ? i.test : undefined));
    this.next = Int32Array.from(prog, (i, pc) => (i.op === 'split' || i.op === 'jmp' ? i.x : pc + 1));
    this.alt = Int32Array.from(prog, (i) => (i.op === 'split' ? i.y : -1));
    this.mark = new Int32Array(n).fill(-1);
    this.anchored = prog[0]?.op === 'bol';
    this.maxStates = options.maxStates ?? MAX_DFA_STATES;
    this.fallback = new Machine(prog);
    const first = this.closure([0], true);
    this.start = newState(first.chars, first.eols, first.matched);
    this.restart = this.anchored ? { chars: [], eols: [], matched: false } : this.closure([0], false);
  }

  test(input: string): boolean {
    const text = input.length > MAX_SUBJECT_LENGTH ? input.slice(0, MAX_SUBJECT_LENGTH) : input;
    // A cut value's end is not the text's: `$` never holds there (as in the VM).
    const cut = text.length !== input.length;
    const length = text.length;
    let state = this.start;
    let pos = 0;
    while (!state.matched) {
      if (pos >= length) return !cut && this.matchesAtEnd(state, pos === 0);
      if (state.chars.length === 0) {
        // No thread waits for a character: every later state is the restart alone (or
        // nothing, anchored), so only the end of the text can still decide.
        const rest = state.ascii[0] ?? (state.ascii[0] = this.move(state, 0));
        if (rest === undefined) break;
        return rest.matched || (!cut && this.matchesAtEnd(rest, false));
      }
      let c = text.charCodeAt(pos);
      // The common case in a tight loop: ASCII text, moves already known, ordinary states.
      while (c < 128) {
        const known = state.ascii[c];
        if (known === undefined || known.settles) break;
        state = known;
        if (++pos === length) break;
        c = text.charCodeAt(pos);
      }
      if (pos === length) continue;
      let target: State | undefined;
      if (c < 128) {
        target = state.ascii[c] ?? (state.ascii[c] = this.move(state, c));
        pos++;
      } else {
        const cp = text.codePointAt(pos)!;
        target = state.wide?.get(cp);
        if (target === undefined) {
          target = this.move(state, cp);
          if (target !== undefined && (state.wide?.size ?? 0) < MAX_WIDE_MOVES && this.words + 4 <= MAX_DFA_WORDS) {
            (state.wide ??= new Map()).set(cp, target);
            this.words += 4;
          }
        }
        pos += cp > 0xffff ? 2 : 1;
      }
      if (target === undefined) break;
      state = target;
    }
    if (state.matched) return true;
    // Out of states: the VM answers, in linear time too.
    return this.fallback.test(input);
  }

  /** The state after `state` reads `c`; undefined when it would be one state too many. */
  private move(state: State, c: number): State | undefined {
    const from: number[] = [];
    for (const pc of state.chars) if (this.tests[pc]!(c)) from.push(pc + 1);
    const stepped = this.closure(from, false);
    const chars = new Set(stepped.chars);
    const eols = new Set(stepped.eols);
    for (const pc of this.restart.chars) chars.add(pc);
    for (const pc of this.restart.eols) eols.add(pc);
    const matched = stepped.matched || this.restart.matched;
    const sortedChars = Int32Array.from(chars).sort();
    const sortedEols = Int32Array.from(eols).sort();
    // Once matched, nothing else about a state matters: one state stands for them all.
    const key = matched ? 'M' : `${sortedChars.join(',')}|${sortedEols.join(',')}`;
    let target = this.states.get(key);
    if (target === undefined) {
      const words = 128 + 2 * (sortedChars.length + sortedEols.length);
      if (this.states.size >= this.maxStates || this.words + words > MAX_DFA_WORDS) return undefined;
      this.words += words;
      target = newState(sortedChars, sortedEols, matched);
      this.states.set(key, target);
    }
    return target;
  }

  /** The threads `pcs` reach without reading a character, `^` holding only at the text's start. */
  private closure(pcs: number[], atStart: boolean, atEnd = false): { chars: number[]; eols: number[]; matched: boolean } {
    if (++this.generation > 0x3fff_ffff) {
      this.mark.fill(-1);
      this.generation = 1;
    }
    const generation = this.generation;
    const chars: number[] = [];
    const eols: number[] = [];
    const stack = pcs.slice().reverse();
    while (stack.length > 0) {
      const pc = stack.pop()!;
      if (this.mark[pc] === generation) continue;
      this.mark[pc] = generation;
      switch (this.ops[pc]) {
        case 'match':
          return { chars, eols, matched: true };
        case 'char':
          chars.push(pc);
          break;
        case 'bol':
          if (atStart) stack.push(pc + 1);
          break;
        case 'eol':
          if (atEnd) stack.push(pc + 1);
          else eols.push(pc);
          break;
        case 'split':
          stack.push(this.alt[pc], this.next[pc]);
          break;
        default:
          stack.push(this.next[pc]);
      }
    }
    return { chars, eols, matched: false };
  }

  /** Whether the `$`s a state waits on lead to a match when the text ends here. */
  private matchesAtEnd(state: State, atStart: boolean): boolean {
    if (state.eols.length === 0) return false;
    // The start state is never interned, so caching on it is safe whatever `atStart` is.
    state.endMatch ??= this.closure(Array.from(state.eols, (pc) => pc + 1), atStart, true).matched;
    return state.endMatch;
  }
}

function newState(chars: ArrayLike<number>, eols: ArrayLike<number>, matched: boolean): State {
  // Every member from the start: states keep one shape, and the loop that reads them stays fast.
  return { chars: Int32Array.from(chars), eols: Int32Array.from(eols), matched, settles: matched || chars.length === 0, endMatch: undefined, ascii: new Array<State | undefined>(128).fill(undefined), wide: undefined };
}
