import test from 'ava';
import { checkValue, isCompatibleChange, normalizeSchema, normalizeForIndex, MAX_STRING_LENGTH } from './schema.js';
import { isVaultError } from '../errors.js';

function error(fn: () => unknown): { status: number; message: string } {
  try {
    fn();
  } catch (err) {
    if (isVaultError(err)) return { status: err.status, message: err.message };
    throw err;
  }
  throw new Error('expected an error');
}

test('schemas normalise aliases and reject what is not a schema with the exact messages', (t) => {
  t.is(normalizeSchema('integer'), 'int');
  t.deepEqual(normalizeSchema({ first: 'string', '[phones]': { number: 'string' } }), { first: 'string', '[phones]': { number: 'string' } });
  t.deepEqual(error(() => normalizeSchema(null)), { status: 400, message: 'Schema cannot be null' });
  t.deepEqual(error(() => normalizeSchema(12)), { status: 400, message: 'Schema has unexpected class' });
  t.deepEqual(error(() => normalizeSchema('blob')), { status: 400, message: 'Schema has unexpected class' });
  t.deepEqual(error(() => normalizeSchema(['string'])), { status: 400, message: 'Schema has unexpected class' });
  t.deepEqual(error(() => normalizeSchema({ 'first name': 'string' })), { status: 400, message: 'Sub-attribute key contains unusable characters' });
  t.deepEqual(error(() => normalizeSchema({ a: { 'b.c': 'int' } })), { status: 400, message: 'Sub-attribute key contains unusable characters' });
});

test('values are checked against primitives', (t) => {
  t.deepEqual(checkValue('int', '42', 'AGE'), [{ attribute: 'AGE', value: '42', type: 'int' }]);
  t.is(checkValue('int', 42, 'AGE').length, 1);
  t.is(checkValue('float', '4.5', 'HEIGHT').length, 1);
  t.is(checkValue('boolean', 'true', 'OPT_IN').length, 1);
  t.is(checkValue('date', '2020-01-02', 'BIRTHDAY').length, 1);
  t.deepEqual(error(() => checkValue('int', 'forty', 'AGE')), { status: 422, message: 'Expected int for value of attribute AGE' });
  t.deepEqual(error(() => checkValue('string', { a: 1 }, 'NAME')), { status: 422, message: 'Expected string for value of attribute NAME' });
  t.deepEqual(error(() => checkValue('date', 'soon', 'D')), { status: 422, message: 'Expected date for value of attribute D' });
  t.deepEqual(error(() => checkValue('date', '2023-02-29', 'D')), { status: 422, message: 'Expected date for value of attribute D' });
  t.deepEqual(error(() => checkValue('boolean', 'yes', 'B')), { status: 422, message: 'Expected boolean for value of attribute B' });
});

test('an int is the same set of integers as a number and as a string: every safe integer, no other', (t) => {
  for (const value of [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, '9007199254740991', '-9007199254740991', '1234567890123456', ' 42 ', '-0']) {
    t.is(checkValue('int', value, 'N').length, 1, String(value));
  }
  for (const value of [2 ** 53, '9007199254740992', '12345678901234567890', '1.5', '', '+-1', '0x10', '1e3']) {
    t.deepEqual(error(() => checkValue('int', value, 'N')), { status: 422, message: 'Expected int for value of attribute N' }, String(value));
  }
});

test('the string limit is 1,048,576 characters; file has none', (t) => {
  t.is(checkValue('string', 'x'.repeat(MAX_STRING_LENGTH), 'S').length, 1);
  t.deepEqual(error(() => checkValue('string', 'x'.repeat(MAX_STRING_LENGTH + 1), 'S')), { status: 413, message: 'Datapoint values may not exceed 1 MB in size' });
  t.is(checkValue('file', 'x'.repeat(MAX_STRING_LENGTH + 1), 'F').length, 1);
});

test('structured values give one leaf per primitive and list item', (t) => {
  const schema = normalizeSchema({ first: 'string', last: 'string', address: { city: 'string' }, '[phones]': 'string' });
  const leaves = checkValue(schema, { first: 'Ada', address: { city: 'London' }, phones: ['1', '2'] }, 'NAME');
  t.deepEqual(leaves.map((l) => [l.attribute, l.value]), [
    ['NAME.first', 'Ada'],
    ['NAME.address.city', 'London'],
    ['NAME.phones', '1'],
    ['NAME.phones', '2'],
  ]);
  t.deepEqual(error(() => checkValue(schema, { middle: 'B' }, 'NAME')), { status: 400, message: 'Unknown sub-attribute NAME.middle' });
  t.deepEqual(error(() => checkValue(schema, 'Ada', 'NAME')), { status: 422, message: 'Expected object for value of attribute NAME' });
  t.deepEqual(error(() => checkValue(schema, { address: { city: 5 } }, 'NAME')), { status: 422, message: 'Expected string for value of attribute NAME.address.city' });
  t.deepEqual(error(() => checkValue(schema, { middle: 'B' }, 'NAME', { mismatch: 400, unknownSubAttribute: 422 })), { status: 422, message: 'Unknown sub-attribute NAME.middle' });
});

test('an unknown sub-attribute is named as sent up to the longest path a schema can have, and clipped past it', (t) => {
  const schema = normalizeSchema({ first: 'string', address: { city: 'string' } });
  // The longest path a definition may have (256 characters): the interface's wording, whole.
  const key = 'k'.repeat(256 - 'NAME.address.'.length);
  t.deepEqual(error(() => checkValue(schema, { address: { [key]: 'x' } }, 'NAME')), { status: 400, message: `Unknown sub-attribute NAME.address.${key}` });
  // A key of a megabyte is not echoed back whole, into an answer and the logs.
  const huge = error(() => checkValue(schema, { ['x'.repeat(1_000_000)]: 'B' }, 'NAME'));
  t.deepEqual(huge, { status: 400, message: `Unknown sub-attribute NAME.${'x'.repeat(59)}…` });
  // Clipped between characters, never inside an emoji's two UTF-16 halves.
  const emoji = error(() => checkValue(schema, { ['😀'.repeat(300)]: 'B' }, 'NAME')).message;
  t.is(emoji, `Unknown sub-attribute NAME.${'😀'.repeat(29)}…`);
  t.false(/\p{Cs}/u.test(emoji));
});

test('only additive schema changes are compatible', (t) => {
  t.true(isCompatibleChange({ a: 'string' }, { a: 'string', b: 'int' }));
  t.false(isCompatibleChange({ a: 'string', b: 'int' }, { a: 'string' }));
  t.false(isCompatibleChange('string', 'int'));
  t.true(isCompatibleChange('string', 'string'));
});

test('index normalisation folds case, width and surrounding space', (t) => {
  t.is(normalizeForIndex(' Ada@Example.ORG '), 'ada@example.org');
  t.is(normalizeForIndex('ＡＢＣ'), 'abc');
});

test('schemas and values of any depth are refused without recursing past the limit', (t) => {
  const deep = (n: number, leaf: unknown): unknown => {
    let v = leaf;
    for (let i = 0; i < n; i++) v = { a: v };
    return v;
  };
  t.deepEqual(error(() => normalizeSchema(deep(50_000, 'string'))), { status: 400, message: 'Schema is nested more than 32 levels deep' });
  t.deepEqual(error(() => normalizeSchema(deep(33, 'string'))), { status: 400, message: 'Schema is nested more than 32 levels deep' });
  t.notThrows(() => normalizeSchema(deep(32, 'string')));
  t.notThrows(() => normalizeSchema(deep(31, 'string')));
  const schema = normalizeSchema(deep(31, 'string'));
  t.is(checkValue(schema, deep(31, 'x'), 'DEEP').length, 1);
  // A value deeper than its schema stops at the first level that does not fit.
  t.is(error(() => checkValue(schema, deep(50_000, 'x'), 'DEEP')).message, `Expected string for value of attribute DEEP${'.a'.repeat(31)}`);
  t.is(error(() => checkValue('string', deep(50_000, 'x'), 'DEEP')).message, 'Expected string for value of attribute DEEP');
});
