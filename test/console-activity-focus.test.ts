/**
 * The activity log's broken-record view, by keyboard: "Show the whole log" takes itself away
 * when pressed, and the focus must not fall to the page's start with it.
 */
import test from 'ava';
import { callVault } from '../core/src/testing/process.js';
import { openConsoleSession, tamperWithRecord, type ConsoleSession } from './console-helpers.js';

// The browser global the page function below uses (the project's types are Node's).
declare const document: { activeElement: { tagName: string; textContent: string | null } | null; body: unknown };

let session: ConsoleSession;
test.before(async () => {
  session = await openConsoleSession();
  const { vault } = session;
  await callVault(vault, 'POST', '/attributes', { key: 'NOTE', schema: 'string' });
  for (const id of ['ada', 'bob', 'cy']) {
    const stored = await callVault(vault, 'POST', `/datasubjects/${id}/attributes`, { data: [{ attribute: 'NOTE', value: `note of ${id}` }] }, { 'x-encryption-key': vault.keys.publicKey });
    if (stored.status >= 300) throw new Error(JSON.stringify(stored.body));
  }
});
test.after.always(async () => session?.close());

test('"Show the whole log", pressed by keyboard, hands the focus to the page heading, not to the page start', async (t) => {
  const { page } = session;
  tamperWithRecord(session, 2);
  await page.goto(`${session.vault.url}/console`);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await session.go('activity', 'Activity log');
  await page.getByRole('button', { name: 'Verify chain' }).click();
  await page.getByRole('button', { name: 'Show record #2' }).click();
  const whole = page.getByRole('button', { name: 'Show the whole log' });
  await whole.focus();
  await page.keyboard.press('Enter');
  await whole.waitFor({ state: 'detached' });
  // The list reloads in steps: the focus is read until it is on the heading, or a while has passed.
  const active = () =>
    page.evaluate(() => (document.activeElement && document.activeElement !== document.body ? `${document.activeElement.tagName} ${document.activeElement.textContent?.trim().slice(0, 40)}` : 'body'));
  let focused = await active();
  for (const until = Date.now() + 10_000; focused !== 'H1 Activity log' && Date.now() < until; focused = await active()) await page.waitForTimeout(50);
  t.is(focused, 'H1 Activity log');
});
