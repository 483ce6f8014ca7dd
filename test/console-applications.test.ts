/**
 * An administrator changes an application and rolls its key in the console: the application
 * keeps its id, the new key is shown once, and the old one stops or keeps working as chosen.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Page } from 'playwright-core';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';
import { callVault, runVaultCli } from '../core/src/testing/process.js';
import { generateKeyPair } from '../core/src/crypto/keys.js';

// The one browser global used in a page function (the project's types are Node's).
declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };

let session: ConsoleSession;
let page: Page;

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  await page.goto(`${session.vault.url}/console`);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

/** The applications page, loaded afresh (the same hash again would not reload its list). */
async function openApplications(): Promise<void> {
  await session.go('overview', 'Overview');
  await session.go('applications', 'Applications');
}

const signsIn = async (apiKey: string) => (await fetch(`${session.vault.url}/entitytypes`, { headers: { authorization: `Bearer ${apiKey}` } })).status === 200;

test.serial('an application is changed in place: same id, new attributes', async (t) => {
  const created = await callVault(session.vault, 'POST', '/applications', { name: 'billing', attributes: ['EMAIL'] });
  const { id, apiKey } = created.body.data;
  await openApplications();
  await page.getByRole('button', { name: 'Change billing' }).click();
  const form = page.getByRole('form', { name: 'Change billing' });
  await form.getByLabel('Name').fill('billing desk');
  await form.getByLabel('Attributes').fill('EMAIL, NAME');
  await session.shot('applications-change');
  await form.getByRole('button', { name: 'Save changes' }).click();
  await page.getByRole('status').filter({ hasText: 'billing desk saved.' }).waitFor();
  await page.getByRole('cell', { name: 'billing desk', exact: true }).waitFor();

  const after = await callVault(session.vault, 'GET', `/applications/${id}`);
  t.like(after.body.data, { id, name: 'billing desk', attributes: ['EMAIL', 'NAME'], admin: false });
  t.true(await signsIn(apiKey), 'the key stays');
});

test.serial("the last admin's rights cannot be taken away: the vault's 409 is shown", async (t) => {
  await openApplications();
  await page.getByRole('button', { name: 'Change admin' }).click();
  const form = page.getByRole('form', { name: 'Change admin' });
  await form.getByLabel(/Administrator/).uncheck();
  await form.getByRole('button', { name: 'Save changes' }).click();
  await form.getByRole('alert').filter({ hasText: '409 Cannot demote the last admin application' }).waitFor();
  t.true(await signsIn(session.vault.adminKey));
});

test.serial('a key is rolled; the old one keeps working for the hour chosen, and the new one is shown once', async (t) => {
  const created = await callVault(session.vault, 'POST', '/applications', { name: 'crm', attributes: ['*'] });
  const { id, apiKey: oldKey } = created.body.data;
  await openApplications();
  await page.getByRole('button', { name: 'Change crm' }).click();
  const form = page.getByRole('form', { name: 'Change crm' });
  await form.getByLabel('Does the old key keep working?').selectOption('3600');
  await form.getByRole('button', { name: 'Roll the key of crm' }).click();
  await form.getByRole('button', { name: 'Yes, issue a new key' }).click();

  const keyBox = page.getByLabel('New API key');
  await keyBox.waitFor();
  const newKey = await keyBox.inputValue();
  await page.getByRole('heading', { name: 'Replacement API key of crm' }).waitFor();
  const until = (await callVault(session.vault, 'GET', `/applications/${id}`)).body.data.previousKeyValidUntil;
  await page.getByText(`The key it replaces keeps working until ${until.replace('T', ' ').slice(0, 19)} UTC: move the service over before then.`).waitFor();
  await session.shot('applications-rolled');
  t.not(newKey, oldKey);
  t.true(await signsIn(newKey));
  t.true(await signsIn(oldKey), 'the old key works for the hour chosen');
  t.is((await callVault(session.vault, 'GET', '/applications')).body.data.filter((a: { name: string }) => a.name === 'crm').length, 1, 'still one application');
  await page.getByRole('button', { name: 'I have stored it' }).click();
  t.is(await page.getByLabel('New API key').count(), 0, 'the key is shown once');
  // The list says which applications still accept a replaced key, and until when.
  await page.getByRole('row', { name: /crm/ }).getByText(`old key until ${until.replace("T", " ").slice(0, 19)}`).waitFor();

  // Rolled again with the default: the key just replaced stops at once, and so does the first.
  await page.getByRole('button', { name: 'Change crm' }).click();
  await page.getByRole('form', { name: 'Change crm' }).getByRole('button', { name: 'Roll the key of crm' }).click();
  await page.getByRole('button', { name: 'Yes, issue a new key' }).click();
  await page.getByText('The key it replaces no longer works.').waitFor();
  const third = await page.getByLabel('New API key').inputValue();
  t.false(await signsIn(newKey));
  t.false(await signsIn(oldKey));
  t.true(await signsIn(third));
  t.is((await callVault(session.vault, 'GET', `/applications/${id}`)).body.data.id, id);
});

test.serial('an officer rolls the very key the console signs in with: the new key is shown, and the console carries on with it', async (t) => {
  const officerKey = (await callVault(session.vault, 'POST', '/applications', { name: 'officer', attributes: ['*'], admin: true })).body.data.apiKey;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').fill(officerKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await openApplications();
  await page.getByRole('button', { name: 'Change officer' }).click();
  // The default: the old key stops at once.
  await page.getByRole('form', { name: 'Change officer' }).getByRole('button', { name: 'Roll the key of officer' }).click();
  await page.getByRole('button', { name: 'Yes, issue a new key' }).click();
  await page.getByText('The key it replaces no longer works.').waitFor();
  await page.getByText('This console signed in with the key it replaces, and now signs in with this one.').waitFor();
  const newKey = await page.getByLabel('New API key').inputValue();
  await session.shot('applications-rolled-own');
  t.false(await signsIn(officerKey));
  t.true(await signsIn(newKey));
  // Still signed in: the list reloads with the new key, and so do other pages.
  await page.getByRole('cell', { name: 'officer', exact: true }).waitFor();
  await session.go('overview', 'Overview');
  await session.go('applications', 'Applications');
  await page.getByRole('cell', { name: 'officer', exact: true }).waitFor();
  t.is(await page.getByLabel('API key').count(), 0, 'no sign-in form');

  // Another application's key rolled by this officer leaves the console's key alone.
  await callVault(session.vault, 'POST', '/applications', { name: 'mailer', attributes: ['*'] });
  await openApplications();
  await page.getByRole('button', { name: 'Change mailer' }).click();
  await page.getByRole('form', { name: 'Change mailer' }).getByRole('button', { name: 'Roll the key of mailer' }).click();
  await page.getByRole('button', { name: 'Yes, issue a new key' }).click();
  await page.getByText('The key it replaces no longer works.').waitFor();
  t.is(await page.getByText('now signs in with this one').count(), 0);
  t.true(await signsIn(newKey));
  await page.getByRole('button', { name: 'I have stored it' }).click();
});

test.serial("an administrator's key limited to some attributes exports a subject as partial, and says why", async (t) => {
  for (const key of ['NOTE', 'PHONE']) t.is((await callVault(session.vault, 'POST', '/attributes', { key, schema: 'string' })).status, 201);
  const stored = await callVault(session.vault, 'POST', '/entities/ann/attributes', { data: [{ attribute: 'NOTE', value: 'Tea' }, { attribute: 'PHONE', value: '555 0100' }] }, { 'x-encryption-key': session.vault.keys.publicKey });
  t.is(stored.status, 200);
  const limitedAdmin = (await callVault(session.vault, 'POST', '/applications', { name: 'auditor', attributes: ['NOTE'], admin: true })).body.data.apiKey;

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByLabel('API key').fill(limitedAdmin);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  await page.getByText('Administrator key').waitFor();
  await session.go('subjects/ann', 'Subject ann');
  await page.getByRole('region', { name: 'Data points of the subject' }).getByRole('cell', { name: 'NOTE', exact: true }).waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export JSON' }).click()]);
  const report = JSON.parse(readFileSync((await download.path())!, 'utf8'));
  t.deepEqual(report.dataPoints.map((p: { attribute: string }) => p.attribute), ['NOTE']);
  t.not(report.activity, null, 'an administrator reads the activity');
  t.false(report.complete, 'PHONE is left out, so the export is no complete answer');
  t.is(report.limitations.length, 2);
  t.regex(report.limitations[0], /^Data points limited to the attributes this API key may read/);
  t.regex(report.limitations[1], /^Values not included/);
  await page.getByRole('status').filter({ hasText: 'This export is partial' }).waitFor();
});

test.serial('on a phone-wide window the applications, their actions and a kept old key fit', async (t) => {
  await page.setViewportSize({ width: 390, height: 844 });
  t.teardown(() => page.setViewportSize({ width: 1280, height: 800 }));
  const { id } = (await callVault(session.vault, 'POST', '/applications', { name: 'warehouse', attributes: ['NOTE', 'PHONE'] })).body.data;
  t.is((await callVault(session.vault, 'POST', `/applications/${id}/key`, { keepPreviousForSeconds: 86400 })).status, 200);
  await openApplications();
  await page.getByText(/^old key until/).waitFor();
  await session.shot('applications-narrow');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.is(overflow, 0, 'the page is no wider than the window');
});

test.serial('the activity log says in words who changed an application, rolled its key, lifted a hold and changed an attribute', async (t) => {
  const { id } = (await callVault(session.vault, 'POST', '/applications', { name: 'ledger', attributes: ['NOTE'] })).body.data;
  t.is((await callVault(session.vault, 'PATCH', `/applications/${id}`, { attributes: ['NOTE', 'PHONE'], admin: false })).status, 200);
  t.is((await callVault(session.vault, 'POST', `/applications/${id}/key`, {})).status, 200);
  t.is((await callVault(session.vault, 'POST', '/datasubjects', { id: 'held-subject', legalHold: true })).status, 201);
  t.is((await callVault(session.vault, 'POST', '/datasubjects', { id: 'held-subject', legalHold: false })).status, 200);
  t.is((await callVault(session.vault, 'POST', '/attributes', { key: 'SALARY', schema: 'string' })).status, 201);
  t.is((await callVault(session.vault, 'POST', '/attributes', { key: 'SALARY', schema: 'string', indexed: true, regulations: ['GDPR'] })).status, 201);
  await session.go('activity', 'Activity log');
  await page.getByLabel('Event type').selectOption('CHANGE');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  const table = page.getByRole('table', { name: 'Activity records' });
  for (const text of ['Created application ledger: attributes NOTE; admin no', 'Changed application ledger: attributes NOTE, PHONE', 'Rolled the key of application ledger: old key stopped', 'Legal hold put on', 'Legal hold lifted', 'Created attribute SALARY', 'Changed attribute SALARY: indexed yes; regulations GDPR']) {
    await table.getByText(text, { exact: true }).waitFor();
  }
  await session.shot('activity-changes');
  // The list says who: the admin that made them, by its name.
  t.is(await table.getByRole('row').filter({ hasText: 'Created application ledger' }).getByText('admin', { exact: true }).count(), 1);
});

test.serial('the activity log says in words who changed a subject’s tags and who rotated the encryption key, from the command line', async (t) => {
  t.is((await callVault(session.vault, 'POST', '/datasubjects', { id: 'tagged-subject', tags: ['monitored'] })).status, 201);
  const next = generateKeyPair(2048);
  const files = join(session.dataDir, 'rotation');
  mkdirSync(files);
  writeFileSync(join(files, 'new-public.pem'), next.publicPem);
  writeFileSync(join(files, 'old-private.pem'), session.vault.keys.privatePem, { mode: 0o600 });
  runVaultCli(['keys', 'register', '--public-key', join(files, 'new-public.pem')], session.vault.env);
  runVaultCli(['keys', 'rewrap', '--old-private-key', join(files, 'old-private.pem')], session.vault.env);
  await session.go('activity', 'Activity log');
  await page.getByLabel('Event type').selectOption('CHANGE');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  const table = page.getByRole('table', { name: 'Activity records' });
  await table.getByText('Tags now monitored', { exact: true }).waitFor();
  const registered = table.getByRole('row').filter({ hasText: /^.*Registered encryption key [0-9a-f]{12}… as the active key/ });
  await registered.waitFor();
  await table.getByText(/^Encryption key [0-9a-f]{12}… is no longer the active key$/).waitFor();
  await table.getByText(/^Re-wrapped \d+ data keys? of encryption key [0-9a-f]{12}… under [0-9a-f]{12}…$/).waitFor();
  await session.shot('activity-key-rotation');
  // Made on the vault's machine, not through the API: the command line is named, with its user.
  t.is(await registered.getByText('vault-cli', { exact: true }).count(), 1);
});
