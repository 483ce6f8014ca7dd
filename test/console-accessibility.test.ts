/**
 * The web console against WCAG 2.1 AA, as far as a machine can tell: axe-core
 * (`axe.source`, evaluated in the page: the console's CSP forbids an inline script tag) on
 * every page and every state an officer meets, from an empty vault to a broken chain, at
 * 1280 px and at 375 px; and by keyboard: every control reached with Tab, no trap, the
 * two-step confirmations and the forms that open in place taking the focus, Escape closing
 * them and the focus coming back to what opened them.
 *
 * Serious and critical violations fail the suite; moderate and minor ones are logged
 * (`t.log`), so that a new one shows without blocking.
 */
import { createRequire } from 'node:module';
import test, { type ExecutionContext } from 'ava';
import type { Page, Route } from 'playwright-core';
import { callVault } from '../core/src/testing/process.js';
import { contrastScript, openConsoleSession, tamperWithRecord, type ConsoleSession } from './console-helpers.js';

// Browser globals for the functions page.evaluate runs in the page (the project's types are Node's).
declare const document: {
  activeElement: BrowserElement | null;
  body: BrowserElement;
  documentElement: { scrollWidth: number; clientWidth: number };
  querySelectorAll(selector: string): ArrayLike<BrowserElement>;
};
declare function getComputedStyle(e: BrowserElement): { visibility: string; display: string; outlineStyle: string; outlineWidth: string; outlineColor: string; backgroundColor: string };
interface BrowserElement {
  id: string;
  tagName: string;
  parentElement: BrowserElement | null;
  textContent: string | null;
  disabled?: boolean;
  closest(selector: string): BrowserElement | null;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { left: number; right: number; top: number; bottom: number; width: number; height: number };
  getClientRects(): ArrayLike<unknown>;
}
interface AxeResult {
  violations: { id: string; impact: string; help: string; nodes: { target: string[]; failureSummary?: string }[] }[];
}
declare const sessionStorage: { clear(): void };
declare const axe: { run(context: unknown, options: unknown): Promise<AxeResult> };

const AXE_SOURCE: string = createRequire(import.meta.url)('axe-core').source;

let session: ConsoleSession;
let page: Page;

test.before(async () => {
  // The least read limit, so that a subject of 150 notes is revealed point by point (the last test).
  session = await openConsoleSession({ VAULT_READ_LIMIT: String(64 * 1024) });
  page = session.page;
});
test.after.always(async () => session?.close());

/** Moderate rules the console once broke and now keeps: they block too. */
const HELD_TO = new Set(['heading-order', 'page-has-heading-one', 'landmark-unique', 'region', 'landmark-one-main']);

/**
 * axe on the page as it stands, WCAG 2.0/2.1 A and AA plus best practices. Serious and
 * critical violations are returned for the test to assert on; the rest are logged.
 */
async function audit(t: ExecutionContext, state: string): Promise<string[]> {
  // Loading states pass in a blink: audit what the page settles on.
  await page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0);
  if (!(await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe !== 'undefined'))) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(() =>
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] }),
  );
  const blocking: string[] = [];
  for (const v of result.violations) {
    const line = `${state}: [${v.impact}] ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(' ')).slice(0, 4).join(', ')}`;
    if (v.impact === 'serious' || v.impact === 'critical' || HELD_TO.has(v.id)) blocking.push(line);
    else t.log(line);
  }
  return blocking;
}

/** Opens `#/<hash>` afresh (by way of another page, so that the same address loads again). */
async function open(hash: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${session.vault.url}/console#/not-a-page`);
  await session.go(hash, heading);
}

async function signIn(key = session.vault.adminKey): Promise<void> {
  await page.goto(`${session.vault.url}/console`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
}

/** Every violation of the states given, one per line, for one assertion per test. */
async function auditAll(t: ExecutionContext, states: [string, () => Promise<unknown>][]): Promise<void> {
  const found: string[] = [];
  for (const [name, reach] of states) {
    await reach();
    found.push(...(await audit(t, name)));
  }
  t.deepEqual(found, [], found.join('\n'));
}

test.serial('sign-in, its error and an empty vault have no serious or critical violation', async (t) => {
  await auditAll(t, [
    ['sign-in', () => page.goto(`${session.vault.url}/console`).then(() => page.getByLabel('API key').waitFor())],
    [
      'sign-in refused',
      async () => {
        await page.getByLabel('API key').fill('not-a-key-at-all');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('alert').filter({ hasText: '401 Unauthorized' }).waitFor();
      },
    ],
    ['empty overview', () => signIn()],
    ['empty subjects', () => open('subjects', 'Data subjects')],
    ['empty alerts', () => open('alerts', 'Alerts')],
    ['empty rules', () => open('rules', 'Rules')],
    ['new rule', () => open('rules/new', 'New rule')],
    ['registry', () => open('registry', 'Registry')],
    ['no such page', () => page.goto(`${session.vault.url}/console#/no-such-page`).then(() => page.getByText('No such page.').waitFor())],
  ]);
});

const SUBJECT = 'ada-42';

test.serial('the pages with data have no serious or critical violation', async (t) => {
  const vault = session.vault;
  const ok = (answer: { status: number; body: unknown }) => t.true(answer.status < 300, JSON.stringify(answer.body));
  ok(await callVault(vault, 'POST', '/attributes', { key: 'CONTACT', schema: { email: 'string', city: 'string' }, indexed: true, regulations: ['GDPR'] }));
  ok(await callVault(vault, 'POST', '/attributes', { key: 'NOTE', schema: 'string' }));
  const rule = { key: 'contact-stored', name: 'Contact stored', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['CONTACT'] }, action: { type: 'alert', alertLevel: 'WARNING', message: 'Contact stored' } };
  ok(await callVault(vault, 'POST', '/rules', rule));
  const stored = await callVault(
    vault,
    'POST',
    `/entities/${SUBJECT}/attributes`,
    { data: [{ attribute: 'CONTACT', value: { email: 'ada@example.org', city: 'London' }, tags: ['signup'] }, { attribute: 'NOTE', value: 'Prefers post' }] },
    { 'x-encryption-key': vault.keys.publicKey },
  );
  ok(stored);

  await signIn();
  await auditAll(t, [
    ['overview', () => open('overview', 'Overview').then(() => page.getByRole('heading', { name: 'Activity chain' }).waitFor())],
    ['subjects', () => open('subjects', 'Data subjects').then(() => page.getByRole('link', { name: SUBJECT }).waitFor())],
    [
      'search results',
      async () => {
        await page.getByLabel('Attribute').fill('CONTACT.email');
        await page.getByLabel('Value', { exact: true }).fill('ada@example.org');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByRole('heading', { name: 'Matching subjects' }).waitFor();
      },
    ],
    [
      'search refused',
      async () => {
        await page.getByLabel('Attribute').fill('NOTE');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByRole('alert').filter({ hasText: 'not an indexed attribute' }).waitFor();
        // The refusal is the field's: marked invalid, and read out with it.
        const field = page.getByLabel('Attribute');
        t.is(await field.getAttribute('aria-invalid'), 'true');
        t.regex((await field.getAttribute('aria-describedby')) ?? '', /\bsearch-error\b/);
        t.is(await page.locator('#search-error').getAttribute('role'), 'alert');
      },
    ],
    ['subject', () => open(`subjects/${SUBJECT}`, `Subject ${SUBJECT}`).then(() => page.getByRole('cell', { name: 'NOTE', exact: true }).first().waitFor())],
    [
      'subject revealed',
      async () => {
        await page.getByLabel('Private key file').setInputFiles(session.keyFile);
        await page.getByRole('button', { name: 'Reveal values' }).click();
        await page.getByText('Prefers post').waitFor();
      },
    ],
    ['no such subject', () => open('subjects/nobody-here', 'Subject nobody-here').then(() => page.getByText('No data subject has this id').waitFor())],
    ['alerts', () => open('alerts', 'Alerts').then(() => page.getByRole('cell', { name: 'Contact stored', exact: true }).waitFor())],
    ['rules', () => open('rules', 'Rules').then(() => page.getByRole('link', { name: 'contact-stored' }).waitFor())],
    ['rule', () => open('rules/contact-stored', 'Rule contact-stored').then(() => page.getByLabel('As JSON').waitFor())],
    [
      'rule with broken JSON',
      async () => {
        await page.getByLabel('As JSON').fill('{ not json');
        await page.getByText('Not valid JSON').waitFor();
      },
    ],
    ['missing rule', () => open('rules/no-such-rule', 'Rule no-such-rule').then(() => page.getByRole('alert').waitFor())],
    [
      'registry refusal',
      async () => {
        await open('registry', 'Registry');
        // The status region waits in the form, empty: a screen reader announces what comes into
        // a live region it knows, and mostly not one that arrives with its message.
        t.is(await page.getByRole('form', { name: 'New Attribute definition' }).getByRole('status').count(), 1);
        await page.getByLabel('Key', { exact: true }).fill('BAD');
        await page.getByLabel('Regulations').fill('NO_SUCH_LAW');
        await page.getByRole('button', { name: 'Create', exact: true }).click();
        await page.getByRole('alert').filter({ hasText: 'No such regulation' }).waitFor();
      },
    ],
    ...(['Entity types', 'Tags', 'Regulations'] as const).map((tab): [string, () => Promise<void>] => [
      `registry ${tab}`,
      async () => {
        await page.getByRole('tab', { name: tab }).click();
        await page.getByRole('region', { name: `${tab.replace(/s$/, '')}s` }).or(page.locator('.empty')).first().waitFor();
      },
    ]),
  ]);
});

test.serial('the activity log, its chain states and the applications have no serious or critical violation', async (t) => {
  const vault = session.vault;
  const until = Date.now() + 60_000;
  for (;;) {
    const state = await callVault(vault, 'GET', '/activity/verify');
    if (state.body.data.unsealed === 0 && state.body.data.records > 3) break;
    if (Date.now() > until) throw new Error(`records still unsealed: ${JSON.stringify(state.body)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  await auditAll(t, [
    ['activity', () => open('activity', 'Activity log').then(() => page.getByRole('region', { name: 'Activity records' }).waitFor())],
    [
      'chain intact',
      async () => {
        await page.getByRole('button', { name: 'Verify chain' }).click();
        await page.getByText('✓ Chain intact').waitFor();
      },
    ],
    [
      'malformed kept head',
      async () => {
        await page.getByLabel('Kept chain head').fill('nonsense');
        await page.getByRole('button', { name: 'Verify chain' }).click();
        await page.getByRole('alert').filter({ hasText: 'A kept head is' }).waitFor();
        t.is(await page.getByLabel('Kept chain head').getAttribute('aria-invalid'), 'true');
        t.is(await page.getByLabel('Kept chain head').getAttribute('aria-describedby'), 'activity-error');
        await page.getByLabel('Kept chain head').fill('');
      },
    ],
    [
      'chain broken',
      async () => {
        tamperWithRecord(session, 2);
        await page.getByRole('button', { name: 'Verify chain' }).click();
        await page.locator('[data-chain="broken"]').waitFor();
      },
    ],
    [
      'broken record shown',
      async () => {
        await page.getByRole('button', { name: 'Show record #2' }).click();
        await page.locator('tr.highlight').waitFor();
        // Which record is the broken one is said in words, not by the row's colour alone.
        await page.getByRole('status').filter({ hasText: '#2 is the first that does not verify (highlighted), #1 the record before it.' }).waitFor({ timeout: 10_000 });
      },
    ],
    ['overview with a broken chain', () => open('overview', 'Overview').then(() => page.locator('[data-chain="broken"]').waitFor())],
    ['applications', () => open('applications', 'Applications').then(() => page.getByRole('heading', { name: 'New application' }).waitFor())],
    [
      'new application key',
      async () => {
        await page.getByLabel('Name', { exact: true }).fill('billing');
        await page.getByLabel('Attributes').fill('NOTE');
        await page.getByRole('button', { name: 'Create application' }).click();
        await page.getByLabel('New API key').waitFor();
      },
    ],
    [
      'application changed',
      async () => {
        await page.getByRole('button', { name: 'I have stored it' }).click();
        await page.getByRole('button', { name: 'Change billing' }).click();
        await page.getByRole('form', { name: 'Change billing' }).waitFor();
      },
    ],
    [
      'application refused',
      async () => {
        await page.getByRole('button', { name: 'Change admin' }).click();
        const form = page.getByRole('form', { name: 'Change admin' });
        await form.getByLabel(/Administrator/).uncheck();
        await form.getByRole('button', { name: 'Save changes' }).click();
        await page.getByRole('alert').filter({ hasText: '409' }).waitFor();
      },
    ],
  ]);
});

test.serial("an application's key, the vault unsure of it, and a narrow window have no serious or critical violation", async (t) => {
  const created = await callVault(session.vault, 'POST', '/applications', { name: 'support', attributes: ['NOTE'] });
  const supportKey = created.body.data.apiKey as string;
  await auditAll(t, [
    ['limited overview', () => signIn(supportKey)],
    ['limited activity', () => open('activity', 'Activity log').then(() => page.getByRole('alert').first().waitFor())],
    ['limited applications', () => open('applications', 'Applications').then(() => page.getByRole('alert').first().waitFor())],
    [
      'vault unsure of the key',
      async () => {
        await page.route('**/applications/me', (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ message: 'Service Unavailable' }) }));
        await page.reload();
        await page.getByRole('button', { name: 'Try again' }).waitFor();
        await page.unroute('**/applications/me');
      },
    ],
    [
      'narrow overview',
      async () => {
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.setViewportSize({ width: 375, height: 812 });
        await signIn();
      },
    ],
    ['narrow subject', () => open(`subjects/${SUBJECT}`, `Subject ${SUBJECT}`).then(() => page.getByText('NOTE', { exact: true }).first().waitFor())],
    ['narrow activity', () => open('activity', 'Activity log').then(() => page.getByRole('region', { name: 'Activity records' }).waitFor())],
    ['narrow applications', () => open('applications', 'Applications').then(() => page.getByRole('region', { name: 'Applications' }).waitFor())],
  ]);
  await page.setViewportSize({ width: 1280, height: 800 });
});

const RING_CONTRAST = contrastScript('ringContrast', 'outlineColor');

/**
 * Tab from the top of the page until the focus comes round again: every control that can be
 * used is reached, each shows where the focus is, and none holds the focus (a trap would
 * stop the walk short of coming round).
 */
async function tabWalk(t: ExecutionContext, state: string): Promise<void> {
  await page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0);
  await page.evaluate(RING_CONTRAST);
  await page.evaluate(() => {
    for (const e of Array.from(document.querySelectorAll('[data-kb]'))) (e as unknown as { removeAttribute(n: string): void }).removeAttribute('data-kb');
    (document.activeElement as unknown as { blur?(): void })?.blur?.();
  });
  const seen: string[] = [];
  const unmarked: string[] = [];
  let cameRound = false;
  let last = '';
  // A date field takes several presses (day, month, year...): only another control seen before counts.
  for (let i = 0; i < 300 && !cameRound; i++) {
    await page.keyboard.press('Tab');
    const step = await page.evaluate((n) => {
      const e = document.activeElement;
      if (!e || e === document.body) return { body: true as const };
      const mark = e.getAttribute('data-kb');
      if (mark === null) (e as unknown as { setAttribute(n: string, v: string): void }).setAttribute('data-kb', String(n));
      const style = getComputedStyle(e);
      const contrast = (globalThis as unknown as { ringContrast(e: BrowserElement): number }).ringContrast(e);
      // The skip link is drawn over the dark bar, not over its parent's background.
      const shown = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 && (contrast >= 3 || e.closest('.skip') !== null);
      const name = `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} "${(e.getAttribute('aria-label') ?? e.textContent ?? '').trim().slice(0, 30)}"`;
      return { body: false as const, mark: mark ?? String(n), again: mark !== null, shown, name };
    }, i);
    if (step.body) continue;
    if (step.again && step.mark !== last) cameRound = true;
    last = step.mark;
    if (!step.again) {
      seen.push(step.name);
      if (!step.shown) unmarked.push(step.name);
    }
  }
  t.true(cameRound, `${state}: Tab came round to the first control again (${seen.length} reached)`);
  t.deepEqual(unmarked, [], `${state}: no focus ring of 3:1 against the page on ${unmarked.join(', ')}`);
  const missed = await page.evaluate(() =>
    Array.from(document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]'))
      .filter((e) => !e.disabled && e.getAttribute('tabindex') !== '-1' && e.getAttribute('type') !== 'hidden' && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden')
      .filter((e) => e.getAttribute('data-kb') === null)
      .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} "${(e.getAttribute('aria-label') ?? e.textContent ?? '').trim().slice(0, 30)}"`),
  );
  t.deepEqual(missed, [], `${state}: not reached with Tab: ${missed.join(', ')}`);
}

test.serial('keyboard: Tab reaches every control of every page, shows the focus and comes round', async (t) => {
  await page.goto(`${session.vault.url}/console`);
  await page.evaluate(() => sessionStorage.clear());
  await page.reload();
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await tabWalk(t, 'sign-in');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await page.getByRole('heading', { name: 'Activity chain' }).waitFor();
  await tabWalk(t, 'overview');
  for (const [hash, heading] of [
    ['subjects', 'Data subjects'],
    [`subjects/${SUBJECT}`, `Subject ${SUBJECT}`],
    ['activity', 'Activity log'],
    ['alerts', 'Alerts'],
    ['rules', 'Rules'],
    ['rules/contact-stored', 'Rule contact-stored'],
    ['registry', 'Registry'],
    ['applications', 'Applications'],
  ]) {
    await open(hash, heading);
    await tabWalk(t, hash);
  }
});

declare const location: { hash: string };
/**
 * What has the focus, once it settles on something that matches `wanted` (Preact moves the
 * focus in an effect, just after the paint) or after a while, for the assertion to show.
 */
async function settle(read: () => Promise<string>, wanted: string | RegExp): Promise<string> {
  const until = Date.now() + 10_000;
  for (;;) {
    const now = await read();
    if ((typeof wanted === 'string' ? now === wanted : wanted.test(now)) || Date.now() > until) return now;
    await new Promise((r) => setTimeout(r, 50));
  }
}
const focused = (wanted: string | RegExp) =>
  settle(() => page.evaluate(() => `${document.activeElement?.tagName.toLowerCase()} ${(document.activeElement?.getAttribute('aria-label') ?? document.activeElement?.textContent ?? '').trim()}`), wanted);
const focusedId = (wanted: string) => settle(() => page.evaluate(() => document.activeElement?.id ?? ''), wanted);

test.serial('keyboard: a two-step confirmation takes the focus, and Escape or Cancel gives it back', async (t) => {
  await open('registry', 'Registry');
  await page.getByRole('tab', { name: 'Tags' }).click();
  await page.getByRole('button', { name: 'Delete signup' }).focus();
  await page.keyboard.press('Enter');
  t.regex(await focused(/^button Yes, delete signup/), /^button Yes, delete signup/, 'the confirmation has the focus');
  await page.keyboard.press('Escape');
  t.is(await focused('button Delete signup'), 'button Delete signup', 'Escape asks no more and gives the focus back');
  await page.keyboard.press('Enter');
  t.regex(await focused(/^button Yes, delete signup/), /^button Yes, delete signup/);
  await page.keyboard.press('Tab');
  t.is(await focused('button Cancel'), 'button Cancel');
  await page.keyboard.press('Enter');
  t.is(await focused('button Delete signup'), 'button Delete signup', 'so does Cancel');
});

test.serial('keyboard: a form opened in place takes the focus; Escape or Close returns it to what opened it', async (t) => {
  await open('applications', 'Applications');
  await page.getByRole('button', { name: 'Change billing' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('form', { name: 'Change billing' }).waitFor();
  t.is(await focusedId('edit-app-name'), 'edit-app-name', 'the form opens on its first field');
  await page.keyboard.press('Escape');
  await page.getByRole('form', { name: 'Change billing' }).waitFor({ state: 'detached' });
  t.is(await focused('button Change billing'), 'button Change billing', 'Escape closes it and gives the focus back');
  await page.keyboard.press('Enter');
  t.is(await focusedId('edit-app-name'), 'edit-app-name');
  await page.getByRole('form', { name: 'Change billing' }).getByRole('button', { name: 'Close' }).click();
  t.is(await focused('button Change billing'), 'button Change billing', 'so does Close');

  // A registry row's Edit fills the form below: the focus follows, Cancel brings it back.
  await open('registry', 'Registry');
  await page.getByRole('button', { name: 'Edit NOTE' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('form', { name: 'Edit Attribute definition' }).waitFor();
  t.is(await focusedId('def-name'), 'def-name', 'the first field that can be changed');
  await page.keyboard.press('Escape');
  await page.getByRole('form', { name: 'New Attribute definition' }).waitFor();
  t.is(await focused('button Edit NOTE'), 'button Edit NOTE');
});

test.serial('keyboard: the one-time key takes the focus, and leaving it returns the focus to the form', async (t) => {
  await open('applications', 'Applications');
  await page.getByLabel('Name', { exact: true }).fill('mailer');
  await page.getByLabel('Name', { exact: true }).press('Enter');
  await page.getByLabel('New API key').waitFor();
  t.is(await focusedId('new-api-key'), 'new-api-key', 'the key, selected, ready to copy');
  await page.getByRole('button', { name: 'I have stored it' }).focus();
  await page.keyboard.press('Enter');
  await page.getByLabel('New API key').waitFor({ state: 'detached' });
  t.is(await focusedId('app-name'), 'app-name', 'back to the form that asked for it');
  t.is(await page.evaluate(() => location.hash), '#/applications');
});

test.serial('a 375 px window cuts nothing off: no sideways scrolling, every control on screen', async (t) => {
  await page.setViewportSize({ width: 375, height: 812 });
  try {
    for (const [hash, heading] of [
      ['overview', 'Overview'],
      ['subjects', 'Data subjects'],
      [`subjects/${SUBJECT}`, `Subject ${SUBJECT}`],
      ['activity', 'Activity log'],
      ['alerts', 'Alerts'],
      ['rules/contact-stored', 'Rule contact-stored'],
      ['registry', 'Registry'],
      ['applications', 'Applications'],
    ]) {
      await open(hash, heading);
      await page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0);
      await session.shot(`a11y-375-${hash.replace(/\W+/g, '-')}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      t.true(overflow <= 0, `${hash}: no sideways scrolling (${overflow}px too wide)`);
      // A control cut by the window's edge or by its own box (a table wrapper's scroll aside).
      const cut = await page.evaluate(() =>
        Array.from(document.querySelectorAll('button, input, select, textarea, a[href]'))
          .filter((e) => e.getClientRects().length > 0 && !e.closest('.table-wrap') && !e.closest('.skip'))
          .filter((e) => {
            const r = e.getBoundingClientRect();
            return r.left < 0 || r.right > document.documentElement.clientWidth + 0.5;
          })
          .map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''} "${(e.textContent ?? '').trim().slice(0, 30)}"`),
      );
      t.deepEqual(cut, [], `${hash}: controls cut off at 375 px`);
    }
    // The one-time key is read off the screen when the clipboard is refused: all of it in sight.
    await page.getByLabel('Name', { exact: true }).fill('narrow');
    await page.getByRole('button', { name: 'Create application' }).click();
    const key = page.getByLabel('New API key');
    await key.waitFor();
    await session.shot('a11y-375-new-key');
    const hidden = await key.evaluate((e) => {
      const box = e as unknown as { scrollWidth: number; clientWidth: number; scrollHeight: number; clientHeight: number };
      return { wide: box.scrollWidth - box.clientWidth, tall: box.scrollHeight - box.clientHeight };
    });
    t.deepEqual(hidden, { wide: 0, tall: 0 }, 'the new key is shown whole at 375 px');
    await page.getByRole('button', { name: 'I have stored it' }).click();
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

test.serial('every page has its own title, which says where the officer is (WCAG 2.4.2)', async (t) => {
  for (const [hash, heading] of [
    ['overview', 'Overview'],
    ['subjects', 'Data subjects'],
    [`subjects/${SUBJECT}`, `Subject ${SUBJECT}`],
    ['activity', 'Activity log'],
    ['rules/new', 'New rule'],
    ['registry', 'Registry'],
  ]) {
    await open(hash, heading);
    const until = Date.now() + 10_000;
    while ((await page.title()) !== `${heading} – Vault console` && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    t.is(await page.title(), `${heading} – Vault console`);
  }
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  t.is(await page.title(), 'Sign in – Vault console');
});

test.serial('keyboard: a confirmed delete that takes the focused row away leaves the focus beside it, not at the page start', async (t) => {
  const vault = session.vault;
  const ok = (answer: { status: number; body: unknown }) => t.true(answer.status < 300, JSON.stringify(answer.body));
  for (const key of ['focus_a', 'focus_b', 'focus_c']) ok(await callVault(vault, 'POST', '/entitytypes', { key }));
  for (const key of ['FOCUS_ONE', 'FOCUS_TWO']) ok(await callVault(vault, 'POST', '/attributes', { key, schema: 'string' }));
  const data = [{ attribute: 'FOCUS_ONE', value: 'one', tags: ['focus-tag'] }, { attribute: 'FOCUS_TWO', value: 'two' }];
  ok(await callVault(vault, 'POST', '/entities/focus-subject/attributes', { data }, { 'x-encryption-key': vault.keys.publicKey }));
  const rule = { key: 'focus-rule', constraint: { type: 'attribute', operator: 'any', attributes: ['FOCUS_ONE'] }, action: { type: 'alert', message: 'x' } };
  ok(await callVault(vault, 'POST', '/rules', rule));
  /** Asks and confirms by keyboard, as a keyboard user does, and waits for the control to go. */
  const confirmDelete = async (control: string, confirmation: RegExp) => {
    await page.getByRole('button', { name: control, exact: true }).focus();
    await page.keyboard.press('Enter');
    t.regex(await focused(confirmation), confirmation);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: control, exact: true }).waitFor({ state: 'detached' });
  };
  await signIn();
  await open('registry', 'Registry');
  await page.getByRole('tab', { name: 'Entity types' }).click();
  await confirmDelete('Delete focus_b', /^button Yes, delete focus_b/);
  t.is(await focused('button Delete focus_c'), 'button Delete focus_c', "the next row's same control");
  await confirmDelete('Delete focus_c', /^button Yes, delete focus_c/);
  t.is(await focused('button Delete focus_a'), 'button Delete focus_a', "the last row gone: the previous row's");
  await confirmDelete('Delete focus_a', /^button Yes, delete focus_a/);
  t.is(await focused('div Entity types'), 'div Entity types', 'no row left to act on (datasubject is the vault’s): the list');
  // Every tag deleted, the last one too: the list gives way to its "nothing here", which takes the focus.
  await page.getByRole('tab', { name: 'Tags' }).click();
  const tagDeletes = page.getByRole('table', { name: 'Tags' }).getByRole('button', { name: /^Delete / });
  await tagDeletes.first().waitFor();
  for (let left = await tagDeletes.count(); left > 0; left = await tagDeletes.count()) {
    const name = (await tagDeletes.first().getAttribute('aria-label')) ?? '';
    await confirmDelete(name, new RegExp(`^button Yes, ${name.replace('Delete', 'delete').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  }
  t.is(await focused('p No tags yet.'), 'p No tags yet.');

  await open('subjects/focus-subject', 'Subject focus-subject');
  await confirmDelete('Delete FOCUS_TWO', /^button Delete every FOCUS_TWO value/);
  t.is(await focused('button Delete FOCUS_ONE'), 'button Delete FOCUS_ONE', "a subject's attributes: the previous one");
  await confirmDelete('Delete FOCUS_ONE', /^button Delete every FOCUS_ONE value/);
  t.is(await focused('h2 Legal hold and erasure'), 'h2 Legal hold and erasure', 'the list gone: its section’s heading');

  await open('rules/focus-rule', 'Rule focus-rule');
  await confirmDelete('Delete rule', /^button Delete this rule/);
  t.is(await focused('h1 Rule focus-rule'), 'h1 Rule focus-rule', 'the rule gone with its form: the page heading');
});

test.serial('a reveal point by point, in progress and done with a value refused, has no serious or critical violation', async (t) => {
  const vault = session.vault;
  const ok = (answer: { status: number; body: unknown }) => t.true(answer.status < 300, JSON.stringify(answer.body));
  ok(await callVault(vault, 'POST', '/attributes', { key: 'MANY', schema: 'string', repeatable: true }));
  ok(await callVault(vault, 'POST', '/attributes', { key: 'GONE', schema: 'string' }));
  const data = [...Array.from({ length: 150 }, (_, i) => ({ attribute: 'MANY', value: `note ${i}` })), { attribute: 'GONE', value: 'deleted meanwhile' }];
  ok(await callVault(vault, 'POST', '/datasubjects/many-values/attributes', { data }, { 'x-encryption-key': vault.keys.publicKey }));
  // Reads of single points past the tenth wait, so that the progress stands still to be audited.
  const isPointRead = (url: URL) => url.pathname.startsWith('/data/');
  const held: Array<() => void> = [];
  let passed = 0;
  const hold = async (route: Route) => {
    if (passed++ >= 10) await new Promise<void>((resume) => held.push(resume));
    await route.continue().catch(() => undefined);
  };
  await signIn();
  await auditAll(t, [
    [
      'subject revealing point by point',
      async () => {
        await open('subjects/many-values', 'Subject many-values');
        await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'GONE', exact: true }).waitFor();
        ok(await callVault(vault, 'DELETE', '/datasubjects/many-values/attributes/GONE'));
        await page.route(isPointRead, hold);
        await page.getByLabel('Private key file').setInputFiles(session.keyFile);
        await page.getByRole('button', { name: 'Reveal values' }).click();
        await page.getByRole('progressbar', { name: 'Revealing 10 of 151 values…' }).waitFor();
      },
    ],
    [
      'subject revealed point by point, one value refused',
      async () => {
        passed = -Infinity;
        for (const resume of held.splice(0)) resume();
        await page.getByRole('status').filter({ hasText: 'Revealed 150 of 151 values' }).waitFor();
        await page.unroute(isPointRead, hold);
      },
    ],
  ]);
});
