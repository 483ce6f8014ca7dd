/**
 * What an officer types into the console's forms and filters, typed as a person types it (key
 * by key, not pasted in one go): lists in the rule form, a cleared name in the registry, the
 * activity log's and the alerts' filters, and the overview's way into the alerts.
 */
import test from 'ava';
import type { Page } from 'playwright-core';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';
import { callVault } from '../core/src/testing/process.js';

let session: ConsoleSession;
let page: Page;

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  for (const key of ['EMAIL', 'NAME']) await callVault(session.vault, 'POST', '/attributes', { key, schema: 'string' });
  await page.goto(`${session.vault.url}/console`);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

const ruleJson = async () => JSON.parse(await page.getByLabel('As JSON').inputValue());

test.serial('the rule form keeps a comma-separated list as typed, and the rule gets one item per name', async (t) => {
  await session.go('rules/new', 'New rule');
  await page.getByLabel('Key', { exact: true }).fill('contact-read');
  const attributes = page.getByLabel('Attributes');
  await attributes.pressSequentially('EMAIL, NAME');
  t.is(await attributes.inputValue(), 'EMAIL, NAME');
  t.deepEqual((await ruleJson()).constraint.constraints[0].attributes, ['EMAIL', 'NAME']);

  await page.getByLabel('Action').selectOption('prohibition');
  const prohibitions = page.getByLabel('Prohibitions');
  await prohibitions.pressSequentially('READ, DELETE');
  t.is(await prohibitions.inputValue(), 'READ, DELETE');
  t.deepEqual((await ruleJson()).action.prohibitions, ['READ', 'DELETE']);

  // A list changed in the JSON is what the field shows.
  const rule = await ruleJson();
  rule.constraint.constraints[0].attributes = ['NAME'];
  await page.getByLabel('As JSON').fill(JSON.stringify(rule, null, 2));
  t.is(await attributes.inputValue(), 'NAME');

  await page.getByRole('button', { name: 'Create rule' }).click();
  await page.getByRole('status').filter({ hasText: 'Rule created' }).waitFor();
  const saved = (await callVault(session.vault, 'GET', '/rules/contact-read')).body.data;
  t.deepEqual(saved.constraint.constraints[0].attributes, ['NAME']);
  t.deepEqual(saved.action.prohibitions, ['READ', 'DELETE']);
  await callVault(session.vault, 'DELETE', '/rules/contact-read');
});

test.serial("a definition's cleared name and hint are cleared in the vault", async (t) => {
  await callVault(session.vault, 'POST', '/attributes', { key: 'PHONE', name: 'Phone number', hint: 'With the country code', schema: 'string' });
  await session.go('registry', 'Registry');
  await page.getByRole('button', { name: 'Edit PHONE' }).click();
  await page.getByLabel('Name', { exact: true }).fill('');
  await page.getByLabel('Hint', { exact: true }).fill('');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'saved' }).waitFor();
  await page.getByRole('cell', { name: 'Phone number' }).waitFor({ state: 'detached', timeout: 10_000 });
  const saved = (await callVault(session.vault, 'GET', '/attributes/PHONE')).body.data;
  t.is(saved.name ?? null, null);
  t.is(saved.hint ?? null, null);

  // Saved again unchanged, it stays without them; a name typed in is kept.
  await page.getByRole('button', { name: 'Edit PHONE' }).click();
  t.is(await page.getByLabel('Name', { exact: true }).inputValue(), '');
  await page.getByLabel('Name', { exact: true }).fill('Telephone');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByRole('cell', { name: 'Telephone' }).waitFor();
  t.like((await callVault(session.vault, 'GET', '/attributes/PHONE')).body.data, { name: 'Telephone' });
});

test.serial('the activity log is filtered by an application chosen by name, or by the id of one since deleted', async (t) => {
  const { vault } = session;
  const admin = (await callVault(vault, 'GET', '/applications/me')).body.data;
  const billing = (await callVault(vault, 'POST', '/applications', { name: 'billing', attributes: ['EMAIL'] })).body.data;
  const crm = (await callVault(vault, 'POST', '/applications', { name: 'old-crm', attributes: ['EMAIL'] })).body.data;
  for (const [app, subject] of [[billing, 'kim'], [crm, 'lee']]) {
    const res = await callVault(vault, 'POST', '/auditlogs', { eventType: 'STORE', subjectId: subject, applicationId: app.id, data: { attribute: 'EMAIL' } });
    t.is(res.status, 200);
  }
  await callVault(vault, 'DELETE', `/applications/${crm.id}`);

  await session.go('activity', 'Activity log');
  const table = page.getByRole('region', { name: 'Activity records' });
  const applied = (id: string) => (r: { url(): string }) => {
    const url = new URL(r.url());
    return url.pathname === '/activity' && url.searchParams.get('applicationId') === id;
  };
  const apply = async (id: string) => {
    await Promise.all([page.waitForResponse(applied(id)), page.getByRole('button', { name: 'Apply filters' }).click()]);
    await table.locator('td[data-label="Application"]').first().waitFor();
    // Drawn a moment after the answer arrived.
    await page.waitForTimeout(200);
    // The application's name; a line under it says who reported for it.
    return (await table.locator('td[data-label="Application"]').allInnerTexts()).map((cell) => cell.split('\n')[0]);
  };

  const application = page.getByLabel('Application', { exact: true });
  // The names arrive after the page: until then the filter is a field for an id.
  await application.locator('option', { hasText: 'billing' }).waitFor({ state: 'attached' });
  const names = [admin.name, 'billing'].sort((a, b) => a.localeCompare(b, 'en'));
  t.deepEqual(await application.locator('option').allInnerTexts(), ['(any)', ...names, 'Another, by id…']);
  await application.selectOption({ label: 'billing' });
  t.deepEqual(await apply(billing.id), ['billing']);
  await application.selectOption({ label: admin.name });
  const byAdmin = await apply(admin.id);
  t.true(byAdmin.length > 0 && byAdmin.every((name) => name === admin.name));

  // The deleted application is in the log under its id, and found by it.
  await application.selectOption({ label: 'Another, by id…' });
  await page.getByLabel('Application id').fill(crm.id);
  t.deepEqual(await apply(crm.id), [crm.id]);
  await session.shot('activity-application-filter');

  await page.getByRole('button', { name: 'Clear' }).click();
  t.is(await application.inputValue(), '');
  t.is(await page.getByLabel('Application id').count(), 0);
});

test.serial('the activity log says that an attribute is found by its exact key', async (t) => {
  await session.go('activity', 'Activity log');
  const attribute = page.getByLabel('Attribute', { exact: true });
  t.is(await attribute.getAttribute('aria-describedby'), 'f-attribute-hint');
  t.is(await page.locator('#f-attribute-hint').innerText(), 'Exact key: EMAIL is not email');
});

/** Alerts raised by storing: WARNING ones first, then the one DANGER, so oldest first shows the WARNING ones. */
async function raiseAlerts(): Promise<void> {
  const { vault } = session;
  const rule = (key: string, attribute: string, alertLevel: string) =>
    callVault(vault, 'POST', '/rules', {
      key,
      type: 'data',
      constraint: { type: 'attribute', operator: 'any', attributes: [attribute] },
      action: { type: 'alert', alertLevel, message: `${attribute} stored` },
    });
  t200((await rule('name-stored', 'NAME', 'WARNING')).status);
  t200((await rule('email-stored', 'EMAIL', 'DANGER')).status);
  const encrypt = { 'x-encryption-key': vault.keys.publicKey };
  for (const subject of ['ann', 'bob', 'cy']) t200((await callVault(vault, 'POST', `/entities/${subject}/attributes`, { data: [{ attribute: 'NAME', value: subject }] }, encrypt)).status);
  t200((await callVault(vault, 'POST', '/entities/dee/attributes', { data: [{ attribute: 'EMAIL', value: 'dee@example.org' }] }, encrypt)).status);
}
function t200(status: number): void {
  if (status >= 300) throw new Error(`the vault answered ${status}`);
}

test.serial('the alerts and the activity log say so when From is later than To', async (t) => {
  await raiseAlerts();
  for (const [hash, heading, what] of [
    ['alerts', 'Alerts', 'alert'],
    ['activity', 'Activity log', 'record'],
  ]) {
    await session.go(hash, heading);
    await page.getByLabel('From (UTC)').fill('2030-01-02T00:00');
    await page.getByLabel('To (UTC)').fill('2030-01-01T00:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const warning = page.getByRole('status').filter({ hasText: `From is later than To: no ${what} can match.` });
    await warning.waitFor();
    if (hash === 'alerts') await session.shot('alerts-from-after-to');
    await page.getByLabel('To (UTC)').fill('2030-01-03T00:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await warning.waitFor({ state: 'detached' });
    t.pass(hash);
  }
});

test.serial("the overview's count of an alert level opens the alerts of that level", async (t) => {
  await session.go('overview', 'Overview');
  const danger = page.locator('.levels li').filter({ hasText: 'DANGER' }).getByRole('link');
  t.is(await danger.innerText(), '1');
  t.is(await danger.getAttribute('aria-label'), '1 DANGER alerts');
  await danger.click();
  await page.getByRole('heading', { level: 1, name: 'Alerts' }).waitFor();
  t.is(new URL(page.url()).hash, '#/alerts/DANGER');
  t.is(await page.getByLabel('Level').inputValue(), 'DANGER');
  const alerts = page.getByRole('region', { name: 'Alerts' });
  await alerts.getByRole('cell', { name: 'EMAIL stored' }).waitFor();
  t.deepEqual(await alerts.locator('td[data-label="Level"]').allInnerTexts(), ['DANGER']);
  await session.shot('alerts-from-overview');

  // The navigation's Alerts, from there: every level again.
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Alerts' }).click();
  await alerts.getByRole('cell', { name: 'NAME stored' }).first().waitFor();
  t.is(await page.getByLabel('Level').inputValue(), '');
  t.is(await alerts.locator('td[data-label="Level"]').count(), 4);
});

test.serial('a search by value held by more points than it reads says the list is cut, and only then; a missing rule leads back', async (t) => {
  t.is((await callVault(session.vault, 'POST', '/attributes', { key: 'CITY', schema: 'string', indexed: true, repeatable: true })).status, 201);
  const data = Array.from({ length: 1001 }, () => ({ attribute: 'CITY', value: 'Leeds' }));
  t.is((await callVault(session.vault, 'POST', '/entities/many-1/attributes', { data }, { 'x-encryption-key': session.vault.keys.publicKey })).status, 200);
  t.is((await callVault(session.vault, 'POST', '/entities/few-1/attributes', { data: [{ attribute: 'CITY', value: 'York' }] }, { 'x-encryption-key': session.vault.keys.publicKey })).status, 200);
  await session.go('subjects', 'Data subjects');
  const search = async (value: string) => {
    await page.getByLabel('Attribute', { exact: true }).fill('CITY');
    await page.getByLabel('Value', { exact: true }).fill(value);
    await page.getByRole('button', { name: 'Search' }).click();
  };
  await search('Leeds');
  const found = page.getByRole('region', { name: 'Subjects matching the value' });
  await found.getByRole('link', { name: 'many-1' }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Only the first 1000 points holding this value were read: more hold it, and other subjects may too.' }).waitFor();
  await session.shot('search-cut');
  await search('York');
  await found.getByRole('link', { name: 'few-1' }).waitFor();
  t.is(await page.getByText('Only the first 1000 points').count(), 0, 'a whole list says nothing');
  // Exactly as many points as it reads: the list is whole, so nothing is said about more.
  const exact = Array.from({ length: 1000 }, () => ({ attribute: 'CITY', value: 'Hull' }));
  t.is((await callVault(session.vault, 'POST', '/entities/exact-1/attributes', { data: exact }, { 'x-encryption-key': session.vault.keys.publicKey })).status, 200);
  await search('Hull');
  await found.getByRole('link', { name: 'exact-1' }).waitFor();
  t.is(await page.getByText('Only the first 1000 points').count(), 0, 'a list of exactly 1000 points says nothing');

  await session.go('rules/no-such-rule', 'no-such-rule');
  await page.getByRole('alert').filter({ hasText: '404' }).waitFor();
  await page.getByRole('link', { name: '← Rules' }).click();
  await page.getByRole('heading', { level: 1, name: 'Rules' }).waitFor();
});
