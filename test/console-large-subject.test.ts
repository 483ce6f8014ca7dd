/**
 * A subject whose values exceed `VAULT_READ_LIMIT`: the vault answers its whole read with 413,
 * and the subject page reveals the values one point at a time instead (`GET /data/{id}`), a
 * few at a time, with progress an officer sees and a screen reader hears, a way to cancel,
 * and a point the vault will not read marked in the table rather than failing the reveal.
 * The export (a subject access request's answer) says what it could not include.
 *
 * The limit is set to its least, 64 KiB, which 150 small notes exceed (each point counts 512
 * bytes besides its value). Requests for single points are held back where the test needs to
 * see the reveal in progress.
 */
import { readFileSync } from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import type { Page, Route } from 'playwright-core';
import { callVault } from '../core/src/testing/process.js';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';

// The browser global page.evaluate uses (the project's types are Node's).
declare const document: { activeElement: { textContent: string | null } | null };

let session: ConsoleSession;
let page: Page;

const LIMIT = 64 * 1024;
const NOTES = 150;
const note = (i: number) => `note ${i}`;
const CONTACT = { email: 'ada@example.org', city: 'London' };

async function call(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
  const res = await callVault(session.vault, method, path, body, headers);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** A subject of `NOTES` notes, a structured contact and any `extra` items, too large to read whole. */
async function storeSubject(id: string, extra: unknown[] = []): Promise<void> {
  const notes = Array.from({ length: NOTES }, (_, i) => ({ attribute: 'NOTE', value: note(i) }));
  await call('POST', `/datasubjects/${id}/attributes`, { data: [{ attribute: 'CONTACT', value: CONTACT }, ...notes, ...extra] }, { 'x-encryption-key': session.vault.keys.publicKey });
  const whole = await callVault(session.vault, 'GET', `/datasubjects/${id}/attributes`, undefined, { 'x-decryption-key': session.vault.keys.privateKey });
  if (whole.status !== 413) throw new Error(`the subject should be too large to read whole, got ${whole.status}`);
}

const isPointRead = (url: URL) => /^\/data\/[^/]+$/.test(url.pathname);

/**
 * Lets the first `after` reads of single points through and holds the rest until released,
 * so that the reveal stands still in progress.
 */
async function holdPointReads(after: number) {
  let passed = 0;
  let open = false;
  const held: Array<() => void> = [];
  const handler = async (route: Route) => {
    if (!open && passed >= after) await new Promise<void>((resume) => held.push(resume));
    passed++;
    // A read the console abandoned (Cancel) has no request left to continue.
    await route.continue().catch(() => undefined);
  };
  await page.route(isPointRead, handler);
  return {
    held: () => held.length,
    async release() {
      open = true;
      for (const resume of held.splice(0)) resume();
      await page.unroute(isPointRead, handler);
    },
  };
}

/** Waits, without a fixed sleep's guess, for what the test process learns a moment later. */
async function until(condition: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 30_000; !condition(); ) {
    if (Date.now() > deadline) throw new Error('gave up waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function openSubject(id: string): Promise<void> {
  await page.goto(`${session.vault.url}/console#/not-a-page`);
  await session.go(`subjects/${id}`, `Subject ${id}`);
  await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'CONTACT', exact: true }).waitFor();
}

async function reveal(): Promise<void> {
  await page.getByLabel('Private key file').setInputFiles(session.keyFile);
  await page.getByRole('button', { name: 'Reveal values' }).click();
}

async function exportJson() {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSON' }).click()]);
  return JSON.parse(readFileSync((await download.path())!, 'utf8'));
}

/** The Value cell of every row of the points table whose attribute is `attribute`. */
async function valueCells(attribute: string): Promise<string[]> {
  const rows = page.getByRole('region', { name: 'Data points of the subject' }).getByRole('row').filter({ has: page.getByRole('cell', { name: attribute, exact: true }) });
  return rows.locator('td[data-label="Value"]').allInnerTexts();
}

function assertNotes(t: ExecutionContext, cells: string[]) {
  t.is(cells.length, NOTES);
  t.deepEqual(
    [...cells].sort(),
    Array.from({ length: NOTES }, (_, i) => note(i)).sort(),
  );
}

test.before(async () => {
  session = await openConsoleSession({ VAULT_READ_LIMIT: String(LIMIT) });
  page = session.page;
  await call('POST', '/attributes', { key: 'CONTACT', schema: { email: 'string', city: 'string' } });
  await call('POST', '/attributes', { key: 'NOTE', schema: 'string', repeatable: true });
  await call('POST', '/attributes', { key: 'SCRATCH', schema: 'string' });
  await page.goto(`${session.vault.url}/console`);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

test.serial('a subject over the read limit is revealed point by point, with progress, and exported complete', async (t) => {
  await storeSubject('big-subject');
  await openSubject('big-subject');
  const before = session.requests.length;
  const gate = await holdPointReads(20);
  await reveal();

  // Standing still at 20 of 151: what the officer sees, and what a screen reader is told.
  // Named by the words beside it, which say how far it is.
  const progress = page.getByRole('progressbar', { name: 'Revealing 20 of 151 values…' });
  await progress.waitFor();
  t.is(await progress.getAttribute('value'), '20');
  t.is(await progress.getAttribute('max'), '151');
  t.true(await page.getByRole('button', { name: 'Cancel reveal' }).isEnabled());
  await page.getByRole('status').filter({ hasText: /Revealing \d+ of 151 values/ }).waitFor({ state: 'attached' });
  t.true(await page.getByRole('button', { name: 'Export JSON' }).isDisabled(), 'no export of a reveal half done');
  await until(() => gate.held() >= 1);
  const issued = session.requests.slice(before).filter((r) => isPointRead(new URL(r.url))).length;
  t.true(issued <= 20 + 4, `a few reads at a time, not all at once: ${issued} sent by 20 answers`);
  await session.shot('large-subject-progress');

  await gate.release();
  await page.getByRole('status').filter({ hasText: 'Revealed 151 values' }).waitFor();
  t.false(await progress.isVisible(), 'the progress is gone once done');
  assertNotes(t, await valueCells('NOTE'));
  t.deepEqual(await valueCells('CONTACT'), ['email\nada@example.org\ncity\nLondon']);
  await session.shot('large-subject-revealed');

  // The whole read was tried once, then each point was read once, each with the key.
  const sent = session.requests.slice(before).map((r) => ({ url: new URL(r.url), key: r.headers['x-decryption-key'] }));
  t.is(sent.filter((r) => r.url.pathname === '/datasubjects/big-subject/attributes').length, 1);
  const pointReads = sent.filter((r) => isPointRead(r.url));
  t.is(pointReads.length, 151);
  t.is(new Set(pointReads.map((r) => r.url.pathname)).size, 151);
  t.true(pointReads.every((r) => r.key === session.vault.keys.privateKey));

  const report = await exportJson();
  t.true(report.complete);
  t.deepEqual(report.limitations, []);
  const roots = report.dataPoints.filter((p: { structureRootId?: string }) => !p.structureRootId);
  t.is(roots.length, 151);
  t.true(roots.every((p: { value?: unknown }) => p.value !== undefined));
  t.deepEqual(roots.find((p: { attribute: string }) => p.attribute === 'CONTACT').value, CONTACT);
  await page.getByRole('status').filter({ hasText: 'Exported' }).waitFor();
  t.false(await page.getByText('This export is partial').isVisible());
});

test.serial('a reveal point by point can be cancelled: what was read stays, and the export says the rest is missing', async (t) => {
  await openSubject('big-subject');
  const gate = await holdPointReads(10);
  await reveal();
  await page.getByRole('progressbar', { name: 'Revealing 10 of 151 values…' }).waitFor();
  // The pressed Reveal button is disabled while it runs: the focus waits on Cancel, and comes back.
  const focused = () => page.evaluate(() => document.activeElement?.textContent);
  t.is(await focused(), 'Cancel reveal');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Reveal cancelled: 10 of 151 values revealed' }).waitFor();
  t.is(await focused(), 'Reveal values');
  await gate.release();
  t.true(await page.getByRole('button', { name: 'Reveal values' }).isEnabled(), 'the key is still chosen: reveal again, or hide');
  t.true(await page.getByRole('button', { name: 'Export JSON' }).isEnabled());

  const report = await exportJson();
  t.false(report.complete);
  t.deepEqual(report.limitations, ['Values not included for 141 of the 151 stored values: reveal them with the private key first.']);
  const withValues = report.dataPoints.filter((p: { value?: unknown }) => p.value !== undefined);
  t.is(withValues.length, 10, 'reads that answered after the cancel are not kept');
  await page.getByText('This export is partial').waitFor();
});

test.serial('a point the vault will not read is marked in the table, the rest revealed, and the export is partial', async (t) => {
  await storeSubject('one-gone', [{ attribute: 'SCRATCH', value: 'scratch that' }]);
  await openSubject('one-gone');
  await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'SCRATCH', exact: true }).waitFor();
  // Deleted after the page listed it: its read is the vault's 404.
  await call('DELETE', '/datasubjects/one-gone/attributes/SCRATCH');
  await reveal();
  await page.getByRole('status').filter({ hasText: 'Revealed 151 of 152 values. 1 could not be read and is marked in the table.' }).waitFor();
  assertNotes(t, await valueCells('NOTE'));
  t.deepEqual(await valueCells('SCRATCH'), ['Could not be read: 404 Data Not Found']);
  t.is(await page.getByRole('alert').count(), 0, 'one point refused does not fail the reveal');
  await page.getByRole('region', { name: 'Data points of the subject' }).getByText('Could not be read').scrollIntoViewIfNeeded();
  await session.shot('large-subject-refused', { top: false });

  const report = await exportJson();
  t.false(report.complete);
  t.deepEqual(report.limitations, ['Values not included for 1 of the 152 stored values: the vault would not read them (404 Data Not Found); each is marked with valueNotIncluded.']);
  const scratch = report.dataPoints.find((p: { attribute: string }) => p.attribute === 'SCRATCH');
  t.is(scratch.value, undefined);
  t.is(scratch.valueNotIncluded, '404 Data Not Found');
  t.is(report.dataPoints.filter((p: { value?: unknown }) => p.value !== undefined).length, 151);
});
