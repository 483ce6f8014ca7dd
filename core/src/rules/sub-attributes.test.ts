/**
 * Rules may name a part of a structured attribute as `KEY.sub`: the interface's 422 `No such
 * attribute` covers the sub-attribute too, not only its `KEY`, since a rule naming a part its
 * schema does not have would be saved and never match.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
  for (const body of [
    { key: 'EMAIL', schema: 'string' },
    { key: 'CONTACT', schema: { email: 'string', address: { city: 'string' }, '[phones]': 'string' } },
  ]) {
    const res = await v.request('POST', '/attributes', { body });
    if (res.status >= 300) throw new Error(`could not define ${body.key}: ${JSON.stringify(res.body)}`);
  }
});
test.after.always(async () => v?.close());

const alert = { type: 'alert', alertLevel: 'NORMAL', message: 'hello' };
const byAttribute = (name: string) => ({ type: 'attribute', operator: 'any', attributes: ['EMAIL', name] });
const byValue = (name: string) => ({ type: 'user', attribute: name, predicate: 'eq', value: 'x' });
let counter = 0;
const uniqueKey = () => `sub_${++counter}`;

for (const name of ['CONTACT.nope', 'CONTACT.address.zip', 'CONTACT.email.x', 'CONTACT.', 'CONTACT..email', 'EMAIL.sub', 'CONTACT.[phones]', 'NOPE.email']) {
  test(`a constraint naming ${name}, which no schema has, is 422 No such attribute and saves nothing`, async (t) => {
    for (const constraint of [byAttribute(name), byValue(name)]) {
      const key = uniqueKey();
      const res = await v.request('POST', '/rules', { body: { key, constraint, action: alert } });
      t.is(res.status, 422, constraint.type);
      t.is(res.body.message, 'No such attribute', constraint.type);
      t.is((await v.request('GET', `/rules/${key}`)).status, 404, 'nothing was stored');
    }
  });
}

test('a sub-attribute the schema has may be named, at any depth, lists included', async (t) => {
  for (const name of ['CONTACT.email', 'CONTACT.address', 'CONTACT.address.city', 'CONTACT.phones']) {
    for (const constraint of [byAttribute(name), byValue(name)]) {
      const res = await v.request('POST', '/rules', { body: { key: uniqueKey(), constraint, action: alert } });
      t.is(res.status, 201, `${name} ${constraint.type}: ${JSON.stringify(res.body)}`);
    }
  }
});
