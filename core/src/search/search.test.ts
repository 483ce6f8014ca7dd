/**
 * Paging parameters of `POST /search` of a type other than a number: the same 400 and message
 * as a number out of range, rather than the schema validator's account of its `anyOf`.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { COUNT_MESSAGE, PAGE_MESSAGE } from './service.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

test('a page or count that is not a number is 400 with the paging message', async (t) => {
  t.is(COUNT_MESSAGE, 'Count must be an integer from 1 to 1000');
  t.is(PAGE_MESSAGE, 'Page must be an integer from 0 to 1000000');
  for (const value of ['5', '', true, [1], { n: 1 }]) {
    const count = await v.request('POST', '/search', { body: { query: {}, count: value } });
    t.is(count.status, 400, `count ${JSON.stringify(value)}`);
    t.is(count.body.message, COUNT_MESSAGE, `count ${JSON.stringify(value)}`);
    const page = await v.request('POST', '/search', { body: { query: {}, page: value } });
    t.is(page.status, 400, `page ${JSON.stringify(value)}`);
    t.is(page.body.message, PAGE_MESSAGE, `page ${JSON.stringify(value)}`);
  }
  // null is "not given": the defaults (nothing stored, so nothing found).
  const defaults = await v.request('POST', '/search', { body: { query: {}, page: null, count: null } });
  t.is(defaults.status, 404);
  t.is(defaults.body.message, 'Data Not Found');
});
