/**
 * The console with hostile data: ids, names, users and values chosen by untrusted callers
 * to run script, to run as spreadsheet formulas, to hide or reorder what an officer reads, or
 * to push the page wide; and a vault that will not say whether the key is an admin's.
 */
import { readFileSync } from 'node:fs';
import test from 'ava';
import type { Page } from 'playwright-core';
import { callVault } from '../core/src/testing/process.js';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';

// Browser globals, for the functions page.evaluate runs in the page (the project's types are Node's).
declare const document: { documentElement: { scrollWidth: number }; querySelectorAll(selector: string): ArrayLike<{ getAttribute(name: string): string | null; textContent: string | null }>; querySelector(selector: string): { innerText: string } | null };
declare const window: { __pwned?: unknown };
declare const sessionStorage: { length: number };

const RLO = '\u202E';
const XSS = '<img src=x onerror=window.__pwned=1>';
/** Reads as "invoice-exe.pdf" once the override has reversed its end. */
const SPOOFED = `invoice-${RLO}fdp.exe`;
const SPOOFED_SHOWN = 'invoice-⟨U+202E⟩fdp.exe';
const XSS_SUBJECT = `${XSS}\u200B`;
/** The longest subject id and application name the API takes (512 and 256 characters), none of it a space. */
const LONG_ID = `long-${'0123456789'.repeat(51)}-x`.slice(0, 512);
const LONG_NAME = `app-${'abcdefghij'.repeat(26)}`.slice(0, 256);
const HOSTILE_APP = `${XSS}${RLO}lin`;
/** Users a spreadsheet would run as a formula. */
const FORMULAS = ['=HYPERLINK("http://evil.example","click")', '+1+1', '-2+3', '@SUM(A1)'];
/**
 * Users whose leading control a spreadsheet would drop before running the formula: the vault
 * refuses them now (the export still guards records an earlier release took).
 */
const CONTROL_FORMULAS = ['\t=1+1', '\r=1+1', '\n=1+1'];
const VALUE = `${XSS} ${RLO}321 ssecca`;
/** Hebrew letters and digits: no control character, yet they reorder neutral text beside them unless isolated. */
const RTL_ID = 'שלום-2024';
/** A value's own line breaks (a note, an address), CRLF among them. */
const MULTILINE = 'first line\nsecond line\r\nthird line';
/** A real override, and an id that spells its marker out in text: two subjects that must not look alike. */
const REAL_MARK = `report-${RLO}fdp.exe`;
const TYPED_MARK = 'report-⟨U+202E⟩fdp.exe';
/** A literal marker bracket, as the console shows it. */
const BRACKET = (c: 'open' | 'close') => (c === 'open' ? '⟨U+27E8⟩' : '⟨U+27E9⟩');
/** A name that ends in a zero-width space, which `trim()` leaves: an edit must keep it. */
const ZW_NAME = 'ledger\u200B';
const PLAIN_ID = 'ticket-4711.b';
/** What a file name may be made of, whatever the id. */
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,119}$/;

let session: ConsoleSession;
let page: Page;
let hostileApp: string;
let adminName: string;
let zwApp: string;

/**
 * Every hidden character is drawn as a marker: none left raw in the text or in a title; and
 * every `⟨` on the page begins a drawn marker, so none is a caller's text posing as one.
 */
async function nothingHidden(p: Page): Promise<{ text: boolean; titles: string[]; pwned: unknown; images: number; unstyled: number }> {
  return p.evaluate(() => {
    const raw = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF]/;
    const titles = Array.from(document.querySelectorAll('[title], [aria-label]'))
      .map((e) => `${e.getAttribute('title') ?? ''}${e.getAttribute('aria-label') ?? ''}`)
      .filter((t) => raw.test(t));
    const text = document.querySelector('main')?.innerText ?? '';
    // An option holds text only, so its markers are text too; a typed ⟨ is marked there as
    // well (⟨U+27E8⟩), so each one in an option still has to begin a whole marker.
    const inOptions = Array.from(document.querySelectorAll('main option')).reduce((n, o) => n + ((o.textContent ?? '').match(/⟨U\+[0-9A-F]{4,6}⟩/g) ?? []).length, 0);
    const unstyled = (text.match(/⟨/g) ?? []).length - document.querySelectorAll('main .hidden-char').length - inOptions;
    return { text: raw.test(text), titles, pwned: window.__pwned, images: document.querySelectorAll('main img').length, unstyled };
  });
}
const CLEAN = { text: false, titles: [], pwned: undefined, images: 0, unstyled: 0 };

const pageWidth = (p: Page) => p.evaluate(() => document.documentElement.scrollWidth);

/** RFC 4180: quoted cells may hold commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') throw new Error(`unquoted cell at ${i}: ${JSON.stringify(text.slice(i, i + 40))}`);
    let cell = '';
    for (i++; ; i++) {
      if (i >= text.length) throw new Error('unterminated cell');
      if (text[i] === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (text[i] === '"') break;
      else cell += text[i];
    }
    row.push(cell);
    i++;
    if (text[i] === ',') i++;
    else if (text.startsWith('\r\n', i)) (rows.push(row), (row = []), (i += 2));
    else throw new Error(`cell not followed by , or CRLF at ${i}`);
  }
  return rows;
}

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  const { vault } = session;
  const call = async (method: string, path: string, body?: unknown, headers?: Record<string, string>) => {
    const res = await callVault(vault, method, path, body, headers);
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body?.data;
  };
  adminName = (await call('GET', '/applications/me')).name;
  await call('POST', '/attributes', { key: 'NOTE', schema: 'string' });
  hostileApp = (await call('POST', '/applications', { name: HOSTILE_APP, attributes: ['NOTE'] })).id;
  await call('POST', '/applications', { name: LONG_NAME, attributes: ['NOTE'] });
  zwApp = (await call('POST', '/applications', { name: ZW_NAME, attributes: ['NOTE'] })).id;
  const encrypt = { 'x-encryption-key': vault.keys.publicKey };
  for (const id of [SPOOFED, XSS_SUBJECT, LONG_ID, REAL_MARK, TYPED_MARK, PLAIN_ID]) await call('POST', `/entities/${encodeURIComponent(id)}/attributes`, { data: [{ attribute: 'NOTE', value: VALUE }] }, encrypt);
  await call('POST', `/entities/${encodeURIComponent(RTL_ID)}/attributes`, { data: [{ attribute: 'NOTE', value: MULTILINE }] }, encrypt);
  // Reported by the admin on the hostile application's behalf, as a sidecar would.
  for (const user of FORMULAS) {
    await call('POST', '/auditlogs', { eventType: 'STORE', subjectId: `a"b,c${RLO}`, applicationId: hostileApp, applicationUser: user, data: { attribute: 'NOTE' } });
  }
  await call('POST', '/auditlogs', { eventType: 'STORE', subjectId: LONG_ID, applicationId: hostileApp, applicationUser: `${XSS}\u2066`, data: { attribute: 'NOTE' } });
  for (const user of CONTROL_FORMULAS) {
    const refused = await callVault(vault, 'POST', '/auditlogs', { eventType: 'STORE', subjectId: 'formula', applicationId: hostileApp, applicationUser: user, data: { attribute: 'NOTE' } });
    if (refused.status !== 400) throw new Error(`applicationUser ${JSON.stringify(user)} was taken: ${refused.status}`);
  }

  await page.goto(`${vault.url}/console`);
  await page.getByLabel('API key').fill(vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

test.serial('every page shows hidden characters as markers, runs no injected markup and fits 1280 px', async (t) => {
  for (const [hash, heading] of [
    ['overview', 'Overview'],
    ['subjects', 'Data subjects'],
    ['activity', 'Activity log'],
    ['applications', 'Applications'],
    ['registry', 'Registry'],
    ['alerts', 'Alerts'],
    ['rules', 'Rules'],
  ]) {
    await session.go(hash, heading);
    await page.locator('main [aria-busy]').first().waitFor({ state: 'detached' });
    t.deepEqual(await nothingHidden(page), CLEAN, hash);
    t.true((await pageWidth(page)) <= 1280, `${hash} is ${await pageWidth(page)} px wide`);
  }
  // Text from the templates themselves is never marked: only data carries hidden characters.
  await session.go('registry', 'Registry');
  t.is(await page.locator('.hidden-char').count(), 0);
});

test.serial('the activity log marks hidden characters, says who reported for whom and keeps long ids in their cells', async (t) => {
  await session.go('activity', 'Activity log');
  const table = page.getByRole('region', { name: 'Activity records' });
  // The STORE reported for the hostile application (the subject's own store is the admin's).
  const row = table.getByRole('row').filter({ hasText: LONG_ID.slice(0, 30) }).filter({ hasText: 'reported by' });
  await row.waitFor();
  // The application by its name, markup shown as text, then who sent the record.
  await row.getByText(`${XSS}⟨U+202E⟩lin`, { exact: true }).waitFor();
  await row.getByText(`reported by ${adminName}`, { exact: true }).waitFor();
  t.is(await row.getByText(`${XSS}⟨U+2066⟩`, { exact: true }).count(), 1, 'the user, its isolate marked');
  t.is(await row.locator('.hidden-char').first().innerText(), '⟨U+202E⟩');
  // The markers are drawn, not only present.
  t.true(await row.locator('.hidden-char').first().isVisible());
  // The Application filter names it as the table does, its override marked as text.
  t.true((await page.getByLabel('Application', { exact: true }).locator('option').allInnerTexts()).includes(`${XSS}⟨U+202E⟩lin`));
  const link = row.getByRole('link', { name: LONG_ID });
  t.is(await link.getAttribute('title'), LONG_ID);
  t.deepEqual(await nothingHidden(page), CLEAN);
  t.true((await pageWidth(page)) <= 1280);
  const overflow = await table.evaluate((wrap: any) => wrap.scrollWidth - wrap.clientWidth);
  t.true(overflow <= 0, `the activity table fits its frame (${overflow}px too wide)`);
  const spoofed = table.getByRole('row').filter({ hasText: 'a"b,c⟨U+202E⟩' });
  t.is(await spoofed.count(), FORMULAS.length);
  await session.shot('hostile-activity');
});

test.serial('a marker typed by a caller as text is told apart from a real one, on the page and in titles and names', async (t) => {
  const typedShown = `report-${BRACKET('open')}U+202E${BRACKET('close')}fdp.exe`;
  const realShown = 'report-⟨U+202E⟩fdp.exe';
  const heading = page.getByRole('heading', { level: 1 });
  const markers = () => heading.locator('.hidden-char').allInnerTexts();

  await session.go(`subjects/${encodeURIComponent(TYPED_MARK)}`, `Subject ${typedShown}`);
  t.is(await heading.innerText(), `Subject ${typedShown}`);
  t.deepEqual(await markers(), [BRACKET('open'), BRACKET('close')], 'its brackets are the markers, not its "U+202E"');
  t.is(await heading.getAttribute('title'), typedShown);
  t.deepEqual(await nothingHidden(page), CLEAN);
  await session.shot('hostile-typed-marker');
  // The id as it is, or as shown, confirms its purge; the real override's id does not.
  const typed = page.getByLabel(/Type the subject id/);
  const purge = page.getByRole('button', { name: 'Purge subject' });
  await typed.fill(typedShown);
  t.false(await purge.isDisabled());
  await typed.fill(REAL_MARK);
  t.true(await purge.isDisabled());

  await session.go(`subjects/${encodeURIComponent(REAL_MARK)}`, `Subject ${realShown}`);
  t.deepEqual(await markers(), ['⟨U+202E⟩']);
  t.is(await heading.getAttribute('title'), realShown);

  // Side by side in the activity log: different text, titles and accessible names.
  await session.go('activity', 'Activity log');
  const table = page.getByRole('region', { name: 'Activity records' });
  const real = table.getByRole('link', { name: realShown, exact: true });
  const spoof = table.getByRole('link', { name: typedShown, exact: true });
  await real.first().waitFor();
  t.is(await spoof.count(), await real.count());
  t.is(await real.first().getAttribute('title'), realShown);
  t.is(await spoof.first().getAttribute('title'), typedShown);
  t.deepEqual(await nothingHidden(page), CLEAN);
});

test.serial("right-to-left text is isolated from the words around it; a value's line breaks are drawn as breaks", async (t) => {
  await session.go(`subjects/${encodeURIComponent(RTL_ID)}`, `Subject ${RTL_ID}`);
  t.is(await page.getByRole('heading', { level: 1 }).locator('bdi').innerText(), RTL_ID);
  const points = page.getByRole('region', { name: 'Data points of the subject' });
  await points.getByRole('cell', { name: 'NOTE', exact: true }).waitFor();
  await page.getByLabel('Private key file').setInputFiles(session.keyFile);
  await page.getByRole('button', { name: 'Reveal values' }).click();
  const value = points.locator('.value');
  await value.waitFor();
  t.is(await value.innerText(), 'first line\nsecond line\nthird line');
  t.is(await value.locator('br').count(), 2);
  t.is(await value.locator('.hidden-char').count(), 0);
  await session.go('activity', 'Activity log');
  const link = page.getByRole('region', { name: 'Activity records' }).getByRole('link', { name: RTL_ID }).first();
  t.is(await link.locator('bdi').innerText(), RTL_ID);
  // Text written left to right is left as it is.
  t.is(await page.locator('main bdi').filter({ hasNotText: RTL_ID }).count(), 0);
});

test.serial('the CSV export quotes every cell and keeps formulas from running', async (t) => {
  await session.go('activity', 'Activity log');
  await page.getByRole('region', { name: 'Activity records' }).waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  const text = readFileSync((await download.path())!, 'utf8');
  const [header, ...rows] = parseCsv(text); // throws on any unquoted cell
  t.is(header.join(','), 'sequence,part,eventId,eventType,timestamp,recordedDate,subjectId,dataPointId,attribute,applicationId,applicationUser,recordedBy,reportOnly,sealed,hash,change');
  const column = (name: string) => rows.map((r) => r[header.indexOf(name)]);
  const users = column('applicationUser');
  for (const user of FORMULAS) t.true(users.includes(`'${user}`), `${JSON.stringify(user)} is prefixed`);
  t.false(users.some((u) => /^[=+\-@\t\r\n]/.test(u)), 'no cell starts as a formula');
  // The data as it is, hidden characters and all: the file is evidence, not a display.
  t.true(column('subjectId').includes(`a"b,c${RLO}`));
  t.true(column('subjectId').includes(LONG_ID));
  t.true(rows.every((r) => r.length === header.length));
});

test.serial('exports are named with letters, digits, dots, dashes and underscores only; their content keeps the raw ids', async (t) => {
  const exportOf = async (id: string, shown: string) => {
    await session.go(`subjects/${encodeURIComponent(id)}`, `Subject ${shown}`);
    await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'NOTE', exact: true }).first().waitFor();
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSON' }).click()]);
    const report = JSON.parse(readFileSync((await file.path())!, 'utf8'));
    return { name: file.suggestedFilename(), subject: report.subject.id };
  };
  const names = new Set<string>();
  for (const [id, shown] of [
    [REAL_MARK, 'report-⟨U+202E⟩fdp.exe'],
    [TYPED_MARK, `report-${BRACKET('open')}U+202E${BRACKET('close')}fdp.exe`],
    [XSS_SUBJECT, `${XSS}⟨U+200B⟩`],
    [RTL_ID, RTL_ID],
    [LONG_ID, LONG_ID],
  ]) {
    const { name, subject } = await exportOf(id, shown);
    t.regex(name, SAFE_NAME, `${JSON.stringify(id.slice(0, 40))} exports as ${name}`);
    t.true(name.startsWith('subject-') && name.endsWith('.json'), name);
    t.is(subject, id, 'the file holds the id as it is');
    names.add(name);
  }
  t.is(names.size, 5, 'ids made alike by the replacement still get names of their own');
  t.is((await exportOf(PLAIN_ID, PLAIN_ID)).name, `subject-${PLAIN_ID}.json`, 'an id that needs nothing replaced is kept as it is');

  // The activity log filtered by a subject names its CSV after it, made safe the same way.
  await session.go(`activity/${encodeURIComponent(REAL_MARK)}`, 'Activity log');
  await page.getByRole('region', { name: 'Activity records' }).waitFor();
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  t.regex(csv.suggestedFilename(), /^activity-\d{4}-\d\d-\d\dT\d{6}-subject-report-_fdp\.exe-[0-9a-f]{8}\.csv$/);
  t.true(readFileSync((await csv.path())!, 'utf8').includes(`"${REAL_MARK}"`), 'the CSV keeps the raw id');
  await session.go(`activity/${encodeURIComponent(LONG_ID)}`, 'Activity log');
  await page.getByRole('region', { name: 'Activity records' }).waitFor();
  const [long] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
  t.regex(long.suggestedFilename(), SAFE_NAME);
});

test.serial('a subject page with a spoofed id shows it marked, and the purge takes the id as shown', async (t) => {
  await session.go(`subjects/${encodeURIComponent(SPOOFED)}`, `Subject ${SPOOFED_SHOWN}`);
  const points = page.getByRole('region', { name: 'Data points of the subject' });
  await points.getByRole('cell', { name: 'NOTE', exact: true }).waitFor();
  await page.getByLabel('Private key file').setInputFiles(session.keyFile);
  await page.getByRole('button', { name: 'Reveal values' }).click();
  await points.getByText(`${XSS} ⟨U+202E⟩321 ssecca`).waitFor();
  await page.getByText(`Type the subject id ${SPOOFED_SHOWN} to confirm`).waitFor();
  t.deepEqual(await nothingHidden(page), CLEAN);
  t.true((await pageWidth(page)) <= 1280);
  await session.shot('hostile-subject');

  const purge = page.getByRole('button', { name: 'Purge subject' });
  const typed = page.getByLabel(/Type the subject id/);
  await typed.fill(SPOOFED);
  t.false(await purge.isDisabled(), 'the raw id, pasted, arms it');
  await typed.fill('invoice-fdp.exe');
  t.true(await purge.isDisabled(), 'what the override made it look like does not');
  await typed.fill(SPOOFED_SHOWN);
  t.false(await purge.isDisabled(), 'the id as shown arms it');
  await purge.click();
  await page.getByText(`Subject ${SPOOFED_SHOWN} purged`).waitFor();
  t.is((await callVault(session.vault, 'GET', `/datasubjects/${encodeURIComponent(SPOOFED)}`)).status, 404);
});

test.serial('markup in a subject id stays text, and the longest ids and names keep the pages 1280 px wide', async (t) => {
  await session.go(`subjects/${encodeURIComponent(XSS_SUBJECT)}`, `Subject ${XSS}⟨U+200B⟩`);
  await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'NOTE', exact: true }).waitFor();
  t.deepEqual(await nothingHidden(page), CLEAN);

  await session.go(`subjects/${encodeURIComponent(LONG_ID)}`, `Subject ${LONG_ID}`);
  await page.getByRole('region', { name: 'Activity of the subject' }).getByRole('row').nth(1).waitFor();
  t.is(await page.getByRole('heading', { level: 1 }).getAttribute('title'), LONG_ID);
  t.true((await pageWidth(page)) <= 1280, `the subject page is ${await pageWidth(page)} px wide`);
  await session.shot('hostile-long-subject');

  await session.go('applications', 'Applications');
  const name = page.getByRole('region', { name: 'Applications' }).getByText(LONG_NAME, { exact: true });
  await name.waitFor();
  t.is(await name.getAttribute('title'), LONG_NAME, 'cut to a few lines, whole in its title');
  t.true((await name.boundingBox())!.height < 100);
  t.true((await pageWidth(page)) <= 1280, `the applications page is ${await pageWidth(page)} px wide`);
  await page.getByRole('button', { name: `Change ${LONG_NAME}` }).click();
  const heading = page.getByRole('heading', { name: `Change ${LONG_NAME}` });
  await heading.waitFor();
  t.true((await pageWidth(page)) <= 1280, 'and with its form open');
  t.is(await heading.getAttribute('title'), LONG_NAME, "the form's heading is cut too, whole in its title");
  t.true((await heading.boundingBox())!.height < 100, `the heading is ${(await heading.boundingBox())!.height} px high`);
  t.is(await page.getByLabel('Name', { exact: true }).first().inputValue(), LONG_NAME, 'the field holds all of it');
  await session.shot('hostile-applications');
  // The replacement key's heading as well: the key and its copy button stay in sight.
  await page.getByRole('button', { name: `Roll the key of ${LONG_NAME}` }).click();
  await page.getByRole('button', { name: 'Yes, issue a new key' }).click();
  const keyHeading = page.getByRole('heading', { name: `Replacement API key of ${LONG_NAME}` });
  await keyHeading.waitFor();
  t.true((await keyHeading.boundingBox())!.height < 100);
  t.is(await keyHeading.getAttribute('title'), LONG_NAME);
  await session.shot('hostile-new-key');
  await page.getByRole('button', { name: 'I have stored it' }).click();
});

test.serial("an application's name field keeps the name as it is and says what it does not show", async (t) => {
  await session.go('applications', 'Applications');
  // In a narrow cell a marker moves to the next line whole, rather than split in two.
  const cellMarker = page.getByRole('region', { name: 'Applications' }).locator('.hidden-char').first();
  t.true((await cellMarker.boundingBox())!.height < 30, `the marker is ${(await cellMarker.boundingBox())!.height} px high`);
  await page.getByRole('button', { name: `Change ${XSS}⟨U+202E⟩lin`, exact: true }).click();
  const field = page.locator('#edit-app-name');
  t.is(await field.inputValue(), HOSTILE_APP, 'the value is the raw name, to be edited as it is');
  const note = page.locator('#edit-app-name-marked');
  t.regex(await note.innerText(), /^Holds characters this field does not show: ⟨U\+202E⟩\.\s+Marked, it reads: /);
  t.deepEqual(await note.locator('.hidden-char').allInnerTexts(), ['⟨U+202E⟩', '⟨U+202E⟩']);
  t.true((await field.getAttribute('aria-describedby'))!.split(' ').includes('edit-app-name-marked'), "a screen reader hears it with the field");
  t.deepEqual(await nothingHidden(page), CLEAN);
  await session.shot('hostile-name-field');

  // Edited, the note follows the field: a marker bracket typed as text is named for what it is...
  await field.fill('billing-⟨U+202E⟩');
  t.regex(await note.innerText(), /^Holds marker brackets typed as text: ⟨U\+27E8⟩ ⟨U\+27E9⟩\./);
  // ...and a plain name has nothing to say.
  await field.fill('billing');
  t.is(await note.count(), 0);
  t.is(await field.getAttribute('aria-describedby'), null);
  await page.getByRole('button', { name: 'Close' }).click();

  // The creation form says it too, before the name is stored.
  await page.locator('#app-name').fill(`new${RLO}app`);
  t.deepEqual(await page.locator('#app-name-marked .hidden-char').allInnerTexts(), ['⟨U+202E⟩', '⟨U+202E⟩']);
  await page.locator('#app-name').fill('');

  // Saved with only its attributes changed, the name stays exactly as it was.
  await page.getByRole('button', { name: 'Change ledger⟨U+200B⟩', exact: true }).click();
  t.is(await field.inputValue(), ZW_NAME);
  t.deepEqual(await note.locator('.hidden-char').allInnerTexts(), ['⟨U+200B⟩', '⟨U+200B⟩']);
  await page.locator('#edit-app-attributes').fill('*');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: 'saved.' }).waitFor();
  const apps = (await callVault(session.vault, 'GET', '/applications')).body.data as { id: string; name: string; attributes: string[] }[];
  const saved = apps.find((a) => a.id === zwApp);
  t.deepEqual(saved?.attributes, ['*'], 'the change was saved');
  t.is(saved?.name, ZW_NAME, 'and the name, its hidden character with it, was left alone');
});

test.serial('a vault that will not say what the key may do gets "Try again", not a non-admin console', async (t) => {
  const busy = (status: number) => page.route('**/applications/me', (route) => route.fulfill({ status, contentType: 'application/json', body: JSON.stringify({ message: status === 429 ? 'Too Many Requests' : 'Service Unavailable' }) }));
  // A reload asks again, and is told to slow down.
  await busy(429);
  await page.reload();
  const alert = page.getByRole('alert').filter({ hasText: 'The vault could not check this API key' });
  await alert.waitFor();
  t.regex(await alert.innerText(), /429 Too Many Requests/);
  t.is(await page.getByText('Application key (limited)').count(), 0, 'not labelled a non-admin');
  await session.shot('hostile-who-unknown');
  await page.unroute('**/applications/me');
  await page.getByRole('button', { name: 'Try again' }).click();
  await page.getByText('Administrator key').waitFor();

  // Signing in while the vault is unavailable: the same choice, and Sign out forgets the key.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await busy(503);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: '503 Service Unavailable' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').waitFor();
  t.is(await page.evaluate(() => sessionStorage.length), 0);
  await page.unroute('**/applications/me');

  // A key the vault refuses is still the sign-in form's own error.
  await page.getByLabel('API key').fill('not-a-key-at-all');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: '401 Unauthorized' }).waitFor();
  t.is(await page.getByRole('button', { name: 'Try again' }).count(), 0);
});
