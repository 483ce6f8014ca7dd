/**
 * Thompson's construction: the parsed tree becomes the program the Pike VM runs. Counted
 * repetition is unrolled, so the program's size is what bounds the work per character, and it
 * is capped.
 */
import { RegexSyntaxError, type Node, type Test } from './regex-parser.js';

const MAX_PROGRAM = 2_000;

export type Instr =
  | { op: 'char'; test: Test }
  | { op: 'split'; x: number; y: number }
  | { op: 'jmp'; x: number }
  | { op: 'bol' }
  | { op: 'eol' }
  | { op: 'match' };

export function compile(node: Node): Instr[] {
  const prog: Instr[] = [];
  const emit = (instr: Instr): number => {
    if (prog.length >= MAX_PROGRAM) throw new RegexSyntaxError('pattern is too complex');
    prog.push(instr);
    return prog.length - 1;
  };
  const gen = (n: Node): void => {
    switch (n.kind) {
      case 'char':
        emit({ op: 'char', test: n.test });
        return;
      case 'bol':
        emit({ op: 'bol' });
        return;
      case 'eol':
        emit({ op: 'eol' });
        return;
      case 'empty':
        return;
      case 'concat':
        for (const item of n.items) gen(item);
        return;
      case 'alt': {
        const jumps: number[] = [];
        for (let i = 0; i < n.items.length; i++) {
          if (i < n.items.length - 1) {
            const split = emit({ op: 'split', x: 0, y: 0 });
            (prog[split] as { x: number }).x = prog.length;
            gen(n.items[i]);
            jumps.push(emit({ op: 'jmp', x: 0 }));
            (prog[split] as { y: number }).y = prog.length;
          } else gen(n.items[i]);
        }
        for (const j of jumps) (prog[j] as { x: number }).x = prog.length;
        return;
      }
      case 'repeat': {
        for (let i = 0; i < n.min; i++) gen(n.node);
        if (n.max === Infinity) {
          const split = emit({ op: 'split', x: 0, y: 0 });
          (prog[split] as { x: number }).x = prog.length;
          gen(n.node);
          emit({ op: 'jmp', x: split });
          (prog[split] as { y: number }).y = prog.length;
        } else {
          const splits: number[] = [];
          for (let i = n.min; i < n.max; i++) {
            const split = emit({ op: 'split', x: 0, y: 0 });
            (prog[split] as { x: number }).x = prog.length;
            splits.push(split);
            gen(n.node);
          }
          for (const s of splits) (prog[s] as { y: number }).y = prog.length;
        }
        return;
      }
    }
  };
  gen(node);
  emit({ op: 'match' });
  return prog;
}
