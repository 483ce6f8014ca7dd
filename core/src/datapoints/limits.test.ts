/**
 * The interface's string limit: "A string value over 1,048,576 characters gives 413", counted
 * as a reader counts characters (an emoji is one), like every other limit in characters.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { MAX_STRING_LENGTH } from '../definitions/schema.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const body of [
    { key: 'BIO', schema: 'string' },
    { key: 'CARD', schema: { motto: 'string' } },
  ]) {
    if ((await v.request('POST', '/attributes', { body })).status !== 201) throw new Error('could not define attributes');
  }
});
test.after.always(async () => v?.close());

const store = (subject: string, data: unknown[]) => v.request('POST', `/entities/${subject}/attributes`, { body: { data }, headers: { 'x-encryption-key': v.keys.publicKey } });
const read = (subject: string, attribute: string) => v.request('GET', `/entities/${subject}/attributes/${attribute}`, { headers: { 'x-decryption-key': v.keys.privateKey } });

// U+1F600: one character, two UTF-16 code units.
const EMOJI = '\u{1F600}';

test('a string of 1,048,576 characters is stored even when its characters are emoji', async (t) => {
  const atLimit = EMOJI.repeat(MAX_STRING_LENGTH);
  const stored = await store('emoji-at-limit', [{ attribute: 'BIO', value: atLimit }]);
  t.is(stored.status, 200, JSON.stringify(stored.body).slice(0, 200));
  t.is((await read('emoji-at-limit', 'BIO')).body.data[0].value, atLimit);

  const inStructure = await store('emoji-at-limit', [{ attribute: 'CARD', value: { motto: atLimit } }]);
  t.is(inStructure.status, 200, JSON.stringify(inStructure.body).slice(0, 200));
});

test('one character more is 413 with the exact message, and stores nothing', async (t) => {
  const over = await store('emoji-over-limit', [{ attribute: 'BIO', value: `${EMOJI.repeat(MAX_STRING_LENGTH)}x` }]);
  t.is(over.status, 413);
  t.is(over.body.message, 'Datapoint values may not exceed 1 MB in size');
  const overInStructure = await store('emoji-over-limit', [{ attribute: 'CARD', value: { motto: 'x'.repeat(MAX_STRING_LENGTH + 1) } }]);
  t.is(overInStructure.status, 413);
  t.is(overInStructure.body.message, 'Datapoint values may not exceed 1 MB in size');
  t.is((await v.request('GET', '/entities/emoji-over-limit')).status, 404);
});
