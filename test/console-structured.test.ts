/**
 * A structured value as the console shows it once revealed: each member under its name at
 * every depth, each list item as an item of a list, text with its own line breaks, never a
 * compact JSON string an officer has to read through quotes and braces.
 */
import test from 'ava';
import type { Page } from 'playwright-core';
import { callVault } from '../core/src/testing/process.js';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';

let session: ConsoleSession;
let page: Page;

const SCHEMA = {
  email: 'string',
  age: 'int',
  vip: 'boolean',
  address: { city: 'string', '[lines]': 'string' },
  '[phones]': { number: 'string', kind: 'string' },
  '[nicknames]': 'string',
};
const VALUE = {
  email: 'ada@example.org',
  age: 36,
  vip: false,
  address: { city: 'London', lines: ["12 St James's Square", 'Flat 3\nsecond bell'] },
  phones: [{ number: '+44 20 7946 0000', kind: 'home' }, { number: '+44 20 7946 0001' }],
  nicknames: [],
};

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  const { vault } = session;
  const call = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
    const res = await callVault(vault, method, path, body, headers);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  await call('POST', '/attributes', { key: 'CONTACT', schema: SCHEMA });
  await call('POST', '/datasubjects/ada/attributes', { data: [{ attribute: 'CONTACT', value: VALUE }] }, { 'x-encryption-key': vault.keys.publicKey });
  await page.goto(`${vault.url}/console`);
  await page.getByLabel('API key').fill(vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

test.serial('a revealed structured value shows every member by name, lists as items, at any depth', async (t) => {
  await session.go('subjects/ada', 'Subject ada');
  const points = page.getByRole('region', { name: 'Data points of the subject' });
  await points.getByRole('cell', { name: 'CONTACT', exact: true }).waitFor();
  await page.getByLabel('Private key file').setInputFiles(session.keyFile);
  await page.getByRole('button', { name: 'Reveal values' }).click();
  const value = points.locator('dl.value').first();
  await value.waitFor();
  await session.shot('structured-value');

  const text = await value.innerText();
  t.false(/[{}"]/.test(text), `no JSON in what is shown: ${text}`);
  /** The description of the member `name` directly inside `within`. */
  const member = (within: ReturnType<Page['locator']>, name: string) => within.locator(':scope > div').filter({ has: page.locator(':scope > dt', { hasText: new RegExp(`^${name}$`) }) }).locator(':scope > dd');
  t.is(await member(value, 'email').innerText(), 'ada@example.org');
  t.is(await member(value, 'age').innerText(), '36');
  t.is(await member(value, 'vip').innerText(), 'false');

  const address = member(value, 'address').locator(':scope > dl');
  t.is(await member(address, 'city').innerText(), 'London');
  const lines = member(address, 'lines').getByRole('listitem');
  t.deepEqual(await lines.allInnerTexts(), ["12 St James's Square", 'Flat 3\nsecond bell']);
  t.is(await lines.nth(1).locator('br').count(), 1, "a nested string's line break is drawn as a break");

  const phones = member(value, 'phones').locator(':scope > ol > li');
  t.is(await phones.count(), 2, 'one item per phone, in stored order');
  t.is(await member(phones.nth(0).locator(':scope > dl'), 'number').innerText(), '+44 20 7946 0000');
  t.is(await member(phones.nth(0).locator(':scope > dl'), 'kind').innerText(), 'home');
  t.is(await member(phones.nth(1).locator(':scope > dl'), 'number').innerText(), '+44 20 7946 0001');
  t.is(await member(value, 'nicknames').innerText(), 'empty list');
  t.is(await value.locator('.hidden-char').count(), 0);
});
