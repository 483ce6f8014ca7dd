/**
 * Where the focus goes after an action, for an officer who works by keyboard or with a screen
 * reader: a control disabled while its work runs, or replaced by what the work changed, must
 * not leave the focus on the page's start (Tab would begin again from the top, and a screen
 * reader would say nothing at all). Also: a refusal tied to its field, and the smallest
 * window WCAG 1.4.10 asks for (320 px) showing every cell whole.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Page } from 'playwright-core';
import { callVault } from '../core/src/testing/process.js';
import { contrastScript, openConsoleSession, type ConsoleSession } from './console-helpers.js';

// Browser globals for the functions page.evaluate runs in the page (the project's types are Node's).
declare function getComputedStyle(e: unknown): { borderTopColor: string };
declare const document: {
  activeElement: { tagName: string; id: string; textContent: string | null; getAttribute(n: string): string | null } | null;
  documentElement: { clientWidth: number; scrollWidth: number };
  querySelectorAll(selector: string): ArrayLike<{ scrollWidth: number; clientWidth: number; textContent: string | null; getAttribute(n: string): string | null }>;
};

let session: ConsoleSession;
let page: Page;
/** Subjects' list pages are 25 long: 27 subjects make a second, shorter page. */
const SUBJECTS = 27;

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  const { vault } = session;
  await callVault(vault, 'POST', '/attributes', { key: 'NOTE', schema: 'string' });
  const rule = { key: 'note-stored', constraint: { type: 'attribute', operator: 'any', attributes: ['NOTE'] }, action: { type: 'alert', alertLevel: 'INFO', message: 'Note stored' } };
  const created = await callVault(vault, 'POST', '/rules', rule);
  if (created.status >= 300) throw new Error(JSON.stringify(created.body));
  for (let i = 0; i < SUBJECTS; i++) {
    const stored = await callVault(vault, 'POST', `/datasubjects/focus-${i}/attributes`, { data: [{ attribute: 'NOTE', value: `note ${i}` }] }, { 'x-encryption-key': vault.keys.publicKey });
    if (stored.status >= 300) throw new Error(JSON.stringify(stored.body));
  }
  await page.goto(`${vault.url}/console`);
  await page.getByLabel('API key').fill(vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

/** What has the focus, as "tag name", once it settles on `wanted` or after a while (for the assertion to show). */
async function focused(wanted: string): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const now = await page.evaluate(() => {
      const e = document.activeElement;
      return `${e?.tagName.toLowerCase()} ${(e?.getAttribute('aria-label') ?? e?.textContent ?? '').trim().slice(0, 60)}`;
    });
    if (now === wanted || Date.now() > until) return now;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Presses a button as a keyboard user does: focused, then Enter. */
async function press(name: string): Promise<void> {
  await page.getByRole('button', { name, exact: true }).focus();
  await page.keyboard.press('Enter');
}

test.serial("a subject's reveal, hide, export and legal hold keep the focus on their control, or on what took its place", async (t) => {
  await session.go('subjects/focus-1', 'Subject focus-1');
  await page.getByLabel('Private key file').setInputFiles(session.keyFile);
  await press('Reveal values');
  await page.getByRole('status').filter({ hasText: 'Revealed 1 value' }).waitFor();
  t.is(await focused('button Reveal values'), 'button Reveal values', 'disabled while it ran, the button has the focus back');

  await press('Hide values');
  await page.getByRole('status').filter({ hasText: 'Values hidden' }).waitFor();
  t.is(await focused('input '), 'input ', 'Hide is gone with the values: the key file it asks for again');
  t.is(await page.evaluate(() => document.activeElement?.id), 'key-file');

  await press('Export JSON');
  await page.getByRole('status').filter({ hasText: 'Exported 1 data point' }).waitFor();
  t.is(await focused('button Export JSON'), 'button Export JSON');

  await press('Set legal hold');
  await page.getByRole('status').filter({ hasText: 'Legal hold set' }).waitFor();
  t.is(await focused('button Lift legal hold'), 'button Lift legal hold', 'the button that took its place');
});

test.serial('a purge leaves the focus on the page heading, and its outcome comes into the live region already there', async (t) => {
  await session.go('subjects/focus-2', 'Subject focus-2');
  // A screen reader announces text put into a live region it knows, not one that arrives with it.
  await page.locator('.notice, [role="status"]').first().evaluate((e) => (e as unknown as { dataset: Record<string, string> }).dataset.before = 'yes');
  await page.getByLabel(/Type the subject id/).fill('focus-2');
  await press('Purge subject');
  const status = page.getByRole('status').filter({ hasText: 'Subject focus-2 purged' });
  await status.waitFor();
  t.is(await focused('h1 Subject focus-2'), 'h1 Subject focus-2');
  t.is(await status.getAttribute('data-before'), 'yes', 'the outcome is said in the region that was there before');
});

test.serial('paging to the last page and back to the first leaves the focus on the pager, and says which page', async (t) => {
  await session.go('subjects', 'Data subjects');
  const pager = page.getByRole('navigation', { name: 'Subject pages' });
  await pager.getByRole('button', { name: 'Next →' }).focus();
  await page.keyboard.press('Enter');
  await pager.getByRole('status').filter({ hasText: /^Page 2, \d+ subjects? shown$/ }).waitFor();
  t.true(await pager.getByRole('button', { name: 'Next →' }).isDisabled());
  t.is(await focused('button ← Previous'), 'button ← Previous', 'Next is disabled on the last page: Previous');
  await page.keyboard.press('Enter');
  await pager.getByRole('status').filter({ hasText: 'Page 1, 25 subjects shown' }).waitFor();
  t.is(await focused('button Next →'), 'button Next →', 'and back on the first: Next');
});

test.serial("removing the rule form's last condition leaves the focus on the condition before it", async (t) => {
  await session.go('rules/new', 'New rule');
  await press('Add condition');
  await press('Remove condition 2');
  await page.getByRole('group', { name: 'Condition 2' }).waitFor({ state: 'detached' });
  t.is(await focused('button Remove condition 1'), 'button Remove condition 1');
  await press('Remove condition 1');
  await page.getByRole('group', { name: 'Condition 1' }).waitFor({ state: 'detached' });
  t.is(await focused('button Add condition'), 'button Add condition', 'none left: the button that adds one');
});

test.serial('a schema that is no JSON marks the Schema field invalid and is read out with it', async (t) => {
  await session.go('registry', 'Registry');
  await page.getByLabel('Key', { exact: true }).fill('BROKEN');
  const schema = page.getByLabel('Schema');
  await schema.fill('{ "email": ');
  await press('Create');
  const alert = page.getByRole('alert').filter({ hasText: 'Schema is not valid JSON' });
  await alert.waitFor();
  t.is(await schema.getAttribute('aria-invalid'), 'true');
  const errorId = await alert.getAttribute('id');
  t.truthy(errorId);
  t.true(((await schema.getAttribute('aria-describedby')) ?? '').split(' ').includes(errorId ?? '-'), 'described by the message');
  t.is((await callVault(session.vault, 'GET', '/attributes/BROKEN')).status, 404, 'nothing was sent');
  await schema.fill('string');
  await press('Create');
  await page.getByRole('status').filter({ hasText: /created/ }).waitFor();
  t.is(await schema.getAttribute('aria-invalid'), null, 'no longer invalid once saved');
});

test.serial("a select's hint is read out with it, as a text field's is", async (t) => {
  await session.go('rules/new', 'New rule');
  const hint = page.getByText('data: on every store; activity: on every audit event');
  const hintId = await hint.getAttribute('id');
  t.truthy(hintId);
  t.is(await page.getByLabel('Rule type').getAttribute('aria-describedby'), hintId);
  t.is(await page.getByLabel('Name', { exact: true }).getAttribute('aria-describedby'), null, 'no hint, nothing to describe it');
});

test.serial('at 320 px every table cell shows its whole text: nothing hides past the edge of its card', async (t) => {
  await page.setViewportSize({ width: 320, height: 640 });
  try {
    for (const [hash, heading] of [
      ['overview', 'Overview'],
      ['subjects', 'Data subjects'],
      ['subjects/focus-3', 'Subject focus-3'],
      ['activity', 'Activity log'],
      ['alerts', 'Alerts'],
      ['rules', 'Rules'],
      ['registry', 'Registry'],
      ['applications', 'Applications'],
    ]) {
      await session.go(hash, heading);
      await page.locator('.table-wrap').first().waitFor();
      await session.shot(`focus-320-${hash.replace(/\W+/g, '-')}`);
      t.is(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, `${hash}: no sideways scrolling`);
      const cut = await page.evaluate(() =>
        Array.from(document.querySelectorAll('.table-wrap'))
          .filter((w) => w.scrollWidth > w.clientWidth)
          .map((w) => `${w.getAttribute('aria-label')}: ${w.scrollWidth - w.clientWidth}px out of sight`),
      );
      t.deepEqual(cut, [], `${hash}: cut off at 320 px`);
    }
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

test.serial('a search by value says how many subjects hold the value, in a live region there before it', async (t) => {
  const { vault } = session;
  await callVault(vault, 'POST', '/attributes', { key: 'EMAIL', schema: 'string', indexed: true });
  const stored = await callVault(vault, 'POST', '/datasubjects/focus-5/attributes', { data: [{ attribute: 'EMAIL', value: 'five@example.org' }] }, { 'x-encryption-key': vault.keys.publicKey });
  t.true(stored.status < 300, JSON.stringify(stored.body));
  await session.go('subjects', 'Data subjects');
  const live = page.getByRole('form', { name: 'Find by value' }).getByRole('status');
  t.is(await live.count(), 1, 'waiting, empty, in the form');
  t.is((await live.textContent())?.trim(), '');
  await page.getByLabel('Attribute').fill('EMAIL');
  await page.getByLabel('Value', { exact: true }).fill('five@example.org');
  await press('Search');
  await page.getByRole('heading', { name: 'Matching subjects' }).waitFor();
  t.is((await live.textContent())?.trim(), '1 subject holds this value.');
  await page.getByLabel('Value', { exact: true }).fill('nobody@example.org');
  await press('Search');
  await page.getByText('No subject holds that value').waitFor();
  t.is((await live.textContent())?.trim(), 'No subject holds this value (or you may not see the attribute).');
});

test.serial('filtering the activity log or the alerts says how many are shown, beside the page number', async (t) => {
  await session.go('activity', 'Activity log');
  const pages = page.getByRole('navigation', { name: 'Activity pages' }).getByRole('status');
  await pages.filter({ hasText: /^Page 1, \d+ records shown$/ }).waitFor();
  await page.getByLabel('Subject', { exact: true }).fill('focus-4');
  await press('Apply filters');
  await pages.filter({ hasText: /^Page 1, 1 record shown$/ }).waitFor();
  t.pass();
  await session.go('alerts', 'Alerts');
  const alertPages = page.getByRole('navigation', { name: 'Alert pages' }).getByRole('status');
  await alertPages.filter({ hasText: /^Page 1, 27 alerts shown$/ }).waitFor();
  await page.getByLabel('Level').selectOption('DANGER');
  await press('Apply filters');
  await page.getByText('No alerts match these filters.').waitFor();
  t.is(await alertPages.textContent(), 'Page 1, no alerts shown', 'none: said too');
});

const BORDER_CONTRAST = contrastScript('borderContrast', 'borderTopColor');

test.serial("every field's border stands out 3:1 against the card it is on", async (t) => {
  for (const [hash, heading] of [
    ['subjects', 'Data subjects'],
    ['activity', 'Activity log'],
    ['registry', 'Registry'],
    ['rules/new', 'New rule'],
  ]) {
    await session.go(hash, heading);
    await page.evaluate(BORDER_CONTRAST);
    const faint = await page.evaluate(() =>
      Array.from(document.querySelectorAll('main input:not([type="checkbox"]):not([type="file"]), main select, main textarea'))
        .map((e) => ({ id: (e as unknown as { id: string }).id, contrast: (globalThis as unknown as { borderContrast(e: unknown): number }).borderContrast(e) }))
        .filter((f) => f.contrast < 3)
        .map((f) => `${f.id} ${f.contrast.toFixed(2)}:1`),
    );
    t.deepEqual(faint, [], `${hash}: fields whose border is too faint to find`);
  }
});

test.serial('a refused sign-in by keyboard leaves the focus on the Sign in button, and the refusal is said', async (t) => {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').fill('not-a-key');
  await press('Sign in');
  await page.getByRole('alert').filter({ hasText: '401' }).waitFor();
  t.is(await focused('button Sign in'), 'button Sign in', 'disabled while it checked, the button has the focus back');
  // The refusal is the key's: the field is marked invalid and described by it.
  const keyField = page.getByLabel('API key');
  t.is(await keyField.getAttribute('aria-invalid'), 'true');
  const describedBy = (await keyField.getAttribute('aria-describedby')) ?? '';
  t.true(describedBy.split(' ').includes((await page.getByRole('alert').filter({ hasText: '401' }).getAttribute('id')) ?? '-'), describedBy);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await press('Sign in');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  t.is(await focused('h1 Overview'), 'h1 Overview');
});

test.serial('Verify chain says the chain is intact in a live region that was there before the press', async (t) => {
  await session.go('activity', 'Activity log');
  // Every live region the page holds before the press is marked: the answer must come into one of them.
  await page.locator('[role="status"]').evaluateAll((all) => all.forEach((e) => ((e as unknown as { dataset: Record<string, string> }).dataset.before = 'yes')));
  await press('Verify chain');
  const intact = page.locator('[data-chain="valid"]');
  await intact.waitFor();
  t.is(await intact.locator('xpath=ancestor-or-self::*[@role="status"][1]').getAttribute('data-before'), 'yes');
  t.is(await focused('button Verify chain'), 'button Verify chain');
  // Pressed again, it is said again: the region is emptied first, then filled.
  await press('Verify chain');
  await intact.waitFor();
  t.is(await intact.locator('xpath=ancestor-or-self::*[@role="status"][1]').getAttribute('data-before'), 'yes');
});

declare const window: { inserted: string[] };
/** From now on, every status region put into the page, with the text it came with. */
async function watchStatusInsertions(): Promise<void> {
  await page.evaluate(() => {
    window.inserted = [];
    type Node = { nodeType: number; textContent: string | null; getAttribute(n: string): string | null; querySelectorAll(s: string): ArrayLike<Node> };
    new (globalThis as unknown as { MutationObserver: new (f: (ms: { addedNodes: ArrayLike<Node> }[]) => void) => { observe(n: unknown, o: unknown): void } }).MutationObserver((changes) => {
      for (const change of changes)
        for (const node of Array.from(change.addedNodes))
          if (node.nodeType === 1) for (const e of [node, ...Array.from(node.querySelectorAll('[role="status"]'))]) if (e.getAttribute('role') === 'status') window.inserted.push(e.textContent ?? '');
    }).observe(document, { childList: true, subtree: true });
  });
}
/** The status regions that arrived already holding their message: a screen reader mostly says nothing of them. */
const arrivedWithText = async () => (await page.evaluate(() => window.inserted)).filter((text) => text.trim() !== '');

test.serial("a rule created is said on the new rule's page, in a live region that arrives empty", async (t) => {
  await session.go('rules/new', 'New rule');
  await watchStatusInsertions();
  await page.getByLabel('Key', { exact: true }).fill('focus-created');
  await press('Create rule');
  await page.getByRole('heading', { level: 1, name: 'Rule focus-created' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Rule created' }).waitFor();
  t.is(await focused('h1 Rule focus-created'), 'h1 Rule focus-created');
  t.deepEqual(await arrivedWithText(), [], 'no live region arrived with its message');
});

test.serial('a filter From later than To says so in a live region that was there before', async (t) => {
  for (const [hash, heading, from, to] of [
    ['alerts', 'Alerts', 'From (UTC)', 'To (UTC)'],
    ['activity', 'Activity log', 'From (UTC)', 'To (UTC)'],
  ]) {
    await session.go(hash, heading);
    await page.locator('.table-wrap').first().waitFor();
    await watchStatusInsertions();
    await page.getByLabel(from).fill('2030-01-02T00:00');
    await page.getByLabel(to).fill('2030-01-01T00:00');
    await press('Apply filters');
    await page.getByRole('status').filter({ hasText: 'From is later than To' }).waitFor();
    t.deepEqual(await arrivedWithText(), [], `${hash}: no live region arrived with its message`);
  }
});

test.serial('signed out, or the key no longer accepted, the focus is on the API key field and the reason is read out with it', async (t) => {
  await session.go('subjects', 'Data subjects');
  await press('Sign out');
  await page.getByLabel('API key').waitFor();
  t.is(await page.evaluate(() => document.activeElement?.id), 'api-key');
  const reason = async () => {
    const ids = ((await page.getByLabel('API key').getAttribute('aria-describedby')) ?? '').split(' ').filter(Boolean);
    return (await Promise.all(ids.map((id) => page.locator(`[id="${id}"]`).textContent()))).join(' ').trim();
  };
  t.is(await reason(), 'Signed out.');

  await page.getByLabel('API key').fill(session.vault.adminKey);
  await press('Sign in');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  // The key revoked while the officer works: the next request is refused.
  await page.route('**/datasubjects?*', (route) => route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ message: 'Unauthorized' }) }));
  try {
    await page.getByRole('link', { name: 'Data subjects' }).first().focus();
    await page.keyboard.press('Enter');
    await page.getByLabel('API key').waitFor();
    t.is(await page.evaluate(() => document.activeElement?.id), 'api-key');
    t.is(await reason(), 'The vault no longer accepts this API key. Sign in again.');
  } finally {
    await page.unroute('**/datasubjects?*');
  }
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await press('Sign in');
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});

test.serial('in forced colours (Windows High Contrast) only the selected registry tab is underlined, and the current page stands out', async (t) => {
  await page.emulateMedia({ forcedColors: 'active' });
  try {
    await session.go('registry', 'Registry');
    const underline = (name: string) =>
      page.getByRole('tab', { name }).evaluate((e) => {
        const style = getComputedStyle(e) as unknown as { borderBottomColor: string; borderBottomWidth: string; backgroundColor: string };
        // What is behind the tab: its own background, or the page's.
        const behind = getComputedStyle((e as unknown as { parentElement: unknown }).parentElement) as unknown as { backgroundColor: string };
        const back = /rgba\(.*, 0\)|transparent/.test(style.backgroundColor) ? behind.backgroundColor : style.backgroundColor;
        return parseFloat(style.borderBottomWidth) > 0 && style.borderBottomColor !== back && !/rgba\(.*, 0\)/.test(style.borderBottomColor);
      });
    t.true(await underline('Attribute definitions'), 'the selected tab');
    t.deepEqual(await Promise.all(['Entity types', 'Tags', 'Regulations'].map(underline)), [false, false, false], 'no other');
    const current = await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Registry' }).evaluate((e) => {
      const style = getComputedStyle(e) as unknown as { textDecorationLine: string; outlineStyle: string; borderLeftStyle: string };
      return style.textDecorationLine.includes('underline') || style.outlineStyle !== 'none' || style.borderLeftStyle !== 'none';
    });
    t.true(current, 'the current page is marked by more than its weight');
  } finally {
    await page.emulateMedia({ forcedColors: 'none' });
  }
});

test.serial('a key file that is no private key marks the file field invalid and is read out with it', async (t) => {
  await session.go('subjects/focus-6', 'Subject focus-6');
  const file = join(session.dataDir, 'public.pem');
  writeFileSync(file, session.vault.keys.publicPem);
  await page.getByLabel('Private key file').setInputFiles(file);
  await press('Reveal values');
  const alert = page.getByRole('alert').filter({ hasText: 'This is a public key' });
  await alert.waitFor();
  const field = page.getByLabel('Private key file');
  t.is(await field.getAttribute('aria-invalid'), 'true');
  t.true(((await field.getAttribute('aria-describedby')) ?? '').split(' ').includes((await alert.getAttribute('id')) ?? '-'));
  await field.setInputFiles(session.keyFile);
  await press('Reveal values');
  await page.getByRole('status').filter({ hasText: 'Revealed 1 value' }).waitFor();
  t.is(await field.getAttribute('aria-invalid'), null, 'the right key: no longer invalid');
});
