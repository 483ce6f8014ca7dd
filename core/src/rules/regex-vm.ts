/**
 * Matching: every thread of the program advances together one character at a time, so no
 * pattern can make a value cost more than its length times the program's size; the length is
 * bounded too.
 */
import type { SafeRegex } from './regex.js';
import type { Test } from './regex-parser.js';
import type { Instr } from './regex-program.js';

/** Values are matched on their first 64 KiB: bounds the worst case at a few tens of ms. */
export const MAX_SUBJECT_LENGTH = 65_536;

const OP_CHAR = 0;
const OP_SPLIT = 1;
const OP_JMP = 2;
const OP_BOL = 3;
const OP_EOL = 4;
const OP_MATCH = 5;

/**
 * The Pike VM. Instructions are flattened into typed arrays and the thread lists, the
 * epsilon-closure stack and the visited marks are allocated once per pattern: matching
 * allocates nothing. Evaluation is synchronous, so one set of buffers per pattern is safe.
 */
export class Machine implements SafeRegex {
  private readonly op: Uint8Array;
  private readonly x: Int32Array;
  private readonly y: Int32Array;
  private readonly tests: Array<Test | undefined>;
  private current: Int32Array;
  private next: Int32Array;
  private readonly stack: Int32Array;
  private readonly mark: Int32Array;
  private generation = 0;
  /** A pattern starting with `^` can only match from position 0. */
  private readonly anchored: boolean;

  constructor(prog: Instr[]) {
    const n = prog.length;
    this.op = new Uint8Array(n);
    this.x = new Int32Array(n);
    this.y = new Int32Array(n);
    this.tests = new Array<Test | undefined>(n);
    prog.forEach((instr, i) => {
      switch (instr.op) {
        case 'char':
          this.op[i] = OP_CHAR;
          this.tests[i] = instr.test;
          break;
        case 'split':
          this.op[i] = OP_SPLIT;
          this.x[i] = instr.x;
          this.y[i] = instr.y;
          break;
        case 'jmp':
          this.op[i] = OP_JMP;
          this.x[i] = instr.x;
          break;
        case 'bol':
          this.op[i] = OP_BOL;
          break;
        case 'eol':
          this.op[i] = OP_EOL;
          break;
        case 'match':
          this.op[i] = OP_MATCH;
          break;
      }
    });
    this.current = new Int32Array(n);
    this.next = new Int32Array(n);
    // Each instruction is pushed at most once per closure (marks), a split pushing two.
    this.stack = new Int32Array(2 * n + 2);
    this.mark = new Int32Array(n).fill(-1);
    this.anchored = prog[0]?.op === 'bol';
  }

  /** Adds the epsilon closure of `pc` at `pos` to `list`; true when it reaches a match. */
  private add(list: Int32Array, size: { n: number }, pc: number, pos: number, end: number): boolean {
    const { op, x, y, stack, mark } = this;
    const generation = this.generation;
    let top = 0;
    stack[top++] = pc;
    while (top > 0) {
      const p = stack[--top];
      if (mark[p] === generation) continue;
      mark[p] = generation;
      switch (op[p]) {
        case OP_JMP:
          stack[top++] = x[p];
          break;
        case OP_SPLIT:
          stack[top++] = y[p];
          stack[top++] = x[p];
          break;
        case OP_BOL:
          if (pos === 0) stack[top++] = p + 1;
          break;
        case OP_EOL:
          if (pos === end) stack[top++] = p + 1;
          break;
        case OP_MATCH:
          return true;
        default:
          list[size.n++] = p;
      }
    }
    return false;
  }

  test(input: string): boolean {
    const text = input.length > MAX_SUBJECT_LENGTH ? input.slice(0, MAX_SUBJECT_LENGTH) : input;
    // When the value was cut, its end is not where the cut is: `$` must not match there.
    const length = text.length;
    const end = length === input.length ? length : -1;
    const tests = this.tests;
    let current = this.current;
    let next = this.next;
    const cur = { n: 0 };
    const nxt = { n: 0 };
    // Marks compare against a counter that grows by one per character matched, process-wide.
    if (this.generation > 0x3fff_ffff) {
      this.mark.fill(-1);
      this.generation = 0;
    }
    this.generation++;
    // Positions are UTF-16 offsets; a surrogate pair is one step, as code points are matched.
    for (let pos = 0; ; ) {
      if ((pos === 0 || !this.anchored) && this.add(current, cur, 0, pos, end)) return true;
      if (pos >= length || cur.n === 0) {
        if (pos >= length || this.anchored) return false;
      }
      const c = text.codePointAt(pos)!;
      const width = c > 0xffff ? 2 : 1;
      this.generation++;
      nxt.n = 0;
      for (let i = 0; i < cur.n; i++) {
        const pc = current[i];
        if (tests[pc]!(c) && this.add(next, nxt, pc + 1, pos + width, end)) return true;
      }
      [current, next] = [next, current];
      cur.n = nxt.n;
      pos += width;
    }
  }
}
