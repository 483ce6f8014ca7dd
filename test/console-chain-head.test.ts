/**
 * A privacy officer checks the activity log against the chain head kept outside the database,
 * in the console: a match says so; a head the log no longer holds (records cut off the end) is
 * reported, though every record left still verifies.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import test from 'ava';
import type { Page } from 'playwright-core';
import { openConsoleSession, type ConsoleSession } from './console-helpers.js';
import { callVault } from '../core/src/testing/process.js';

let session: ConsoleSession;
let page: Page;

test.before(async () => {
  session = await openConsoleSession();
  page = session.page;
  await callVault(session.vault, 'POST', '/attributes', { key: 'NOTE', schema: 'string' });
  for (const subject of ['ann', 'bob', 'cy']) {
    await callVault(session.vault, 'POST', `/entities/${subject}/attributes`, { data: [{ attribute: 'NOTE', value: `note of ${subject}` }] }, { 'x-encryption-key': session.vault.keys.publicKey });
  }
  await page.goto(`${session.vault.url}/console`);
  await page.getByLabel('API key').fill(session.vault.adminKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
});
test.after.always(async () => session?.close());

async function verifyWith(head: string): Promise<void> {
  await session.go('activity', 'Activity log');
  await page.getByLabel('Kept chain head').fill(head);
  await page.getByRole('button', { name: 'Verify chain' }).click();
}

test.serial('a kept head the log still holds is confirmed', async (t) => {
  const kept = (await callVault(session.vault, 'GET', '/activity/head')).body.data;
  t.true(kept.sequence >= 3);
  await verifyWith(`${kept.sequence}:${kept.hash}`);
  const state = page.locator('[data-chain="valid"]');
  await state.getByText('✓ The kept head matches').waitFor();
  await session.shot('chain-head-matches');
  t.pass();
});

test.serial('a kept head copied back in upper case, with spaces around it, is confirmed', async (t) => {
  const kept = (await callVault(session.vault, 'GET', '/activity/head')).body.data;
  await verifyWith(`  ${kept.sequence}:${kept.hash.toUpperCase()} `);
  await page.locator('[data-chain="valid"]').getByText('✓ The kept head matches').waitFor();
  t.is(await page.getByRole('alert').count(), 0);
});

test.serial('a malformed head is explained in words, without asking the vault', async (t) => {
  const kept = (await callVault(session.vault, 'GET', '/activity/head')).body.data;
  for (const head of ['not-a-head', `${kept.sequence}:${kept.hash.slice(1)}`, `#${kept.sequence}:${kept.hash}`]) {
    const before = session.requests.length;
    await verifyWith(head);
    const alert = page.getByRole('alert').filter({ hasText: 'A kept head is the sequence, a colon and 64 hex digits, as “vault activity head” prints it' });
    await alert.waitFor();
    t.notRegex(await alert.innerText(), /400|querystring|pattern/);
    t.false(
      session.requests.slice(before).some((r) => new URL(r.url).pathname === '/activity/verify'),
      head,
    );
  }
  await session.shot('chain-head-malformed');
});

test.serial('a head whose record was cut off the end is reported, though the rest verifies', async (t) => {
  const kept = (await callVault(session.vault, 'GET', '/activity/head')).body.data;
  // Someone with the database file drops the guard and removes the newest record: the shorter
  // chain still verifies.
  const db = new Database(join(session.dataDir, 'vault.db'));
  db.pragma('busy_timeout = 10000');
  db.exec('drop trigger activity_log_no_delete');
  db.prepare('DELETE FROM activity_log WHERE sequence = ?').run(kept.sequence);
  db.close();
  const plain = (await callVault(session.vault, 'GET', '/activity/verify')).body.data;
  t.true(plain.valid, 'without the kept head nothing shows');

  await verifyWith(`${kept.sequence}:${kept.hash}`);
  const alert = page.getByRole('alert').filter({ hasText: '✗ The kept head does not match' });
  await alert.waitFor();
  t.regex(await alert.innerText(), new RegExp(`The ${plain.records} sealed records verify`));
  await session.shot('chain-head-mismatch');
});

test.serial('a break before the kept head is reported with what became of the head: still there, or not', async (t) => {
  // After the test before: the log ends one record short of the head kept there.
  const cutHead = (await callVault(session.vault, 'GET', '/activity/head')).body.data;
  const db = new Database(join(session.dataDir, 'vault.db'));
  db.pragma('busy_timeout = 10000');
  const [last] = db.prepare('SELECT sequence, hash FROM activity_log ORDER BY sequence DESC LIMIT 1').all() as Array<{ sequence: number }>;
  t.is(last.sequence, cutHead.sequence);
  db.exec('drop trigger activity_log_no_update');
  db.prepare("UPDATE activity_log SET application_user = 'someone else' WHERE sequence = 1").run();
  db.close();

  await verifyWith(`${cutHead.sequence}:${cutHead.hash}`);
  const broken = page.locator('[data-chain="broken"]');
  await broken.getByText('✗ Chain broken').waitFor();
  await broken.locator('[data-head="matches"]').getByText('✓ The kept head matches').waitFor();
  t.regex(await broken.innerText(), /The first record that does not verify is #1\b/);
  await session.shot('chain-broken-head-matches');

  // A head that was cut off the end as well.
  await verifyWith(`${cutHead.sequence + 1}:${'a'.repeat(64)}`);
  await page.locator('[data-chain="broken"] [data-head="mismatch"]').getByText('✗ The kept head does not match either').waitFor();
  t.is(await page.locator('[data-head="matches"]').count(), 0);
  await session.shot('chain-broken-head-mismatch');
});
