import test from 'ava';
import { isJsonPointer, parsePointer, resolvePointer } from './json-pointer.js';

const doc = { a: { 'b/c': 1, 'd~e': 2, list: [{ x: 'first' }, { x: 'second' }] }, '': 'empty key', zero: 0, nil: null };

test('resolves RFC 6901 pointers', (t) => {
  t.is(resolvePointer(doc, parsePointer('')), doc);
  t.is(resolvePointer(doc, parsePointer('/a/b~1c')), 1);
  t.is(resolvePointer(doc, parsePointer('/a/d~0e')), 2);
  t.is(resolvePointer(doc, parsePointer('/a/list/1/x')), 'second');
  t.is(resolvePointer(doc, parsePointer('/')), 'empty key');
  t.is(resolvePointer(doc, parsePointer('/zero')), 0);
  t.is(resolvePointer(doc, parsePointer('/nil')), null);
});

test('missing paths resolve to undefined without throwing', (t) => {
  for (const pointer of ['/missing', '/a/list/2', '/a/list/-', '/a/list/01', '/zero/x', '/nil/x', '/a/toString']) {
    t.is(resolvePointer(doc, parsePointer(pointer)), undefined, pointer);
  }
  t.is(resolvePointer('text', parsePointer('/0')), undefined);
});

test('rejects malformed pointers', (t) => {
  t.false(isJsonPointer('a/b'));
  t.false(isJsonPointer('/a~2'));
  t.false(isJsonPointer('/a~'));
  t.true(isJsonPointer('/a~0~1'));
  t.throws(() => parsePointer('email'));
});
