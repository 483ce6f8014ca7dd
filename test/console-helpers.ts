/**
 * The console suite's browser session: a vault process (SQLite, in its own directory), a
 * headless Chromium page on it, and a record of what the page requested, logged and loaded.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT, spawnVault, type VaultProcess } from '../core/src/testing/process.js';

// The one browser global the helpers' page functions use (the project's types are Node's).
declare function scrollTo(x: number, y: number): void;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface ConsoleSession {
  vault: VaultProcess;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  dataDir: string;
  /** The vault's private key as a PEM file, for the reveal form. */
  keyFile: string;
  /** Every request the console made: URL and headers. */
  requests: { url: string; headers: Record<string, string> }[];
  /** Everything the page wrote to the browser's console, and its uncaught errors. */
  consoleLines: string[];
  /** Every JavaScript response, by URL. */
  scripts: Map<string, Buffer>;
  /** A 1280x800 (or current viewport) screenshot, scrolled to the top unless told. */
  shot(name: string, options?: { top?: boolean }): Promise<void>;
  /** Opens `#/<hash>` and waits for its heading. */
  go(hash: string, heading: string | RegExp): Promise<void>;
  close(): Promise<void>;
}

export async function openConsoleSession(env: Record<string, string> = {}): Promise<ConsoleSession> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-console-'));
  const vault = await spawnVault({ dataDir, env: { VAULT_DB: `sqlite:${join(dataDir, 'vault.db')}`, ...env } });
  const keyFile = join(dataDir, 'officer-private-key.pem');
  writeFileSync(keyFile, vault.keys.privatePem, { mode: 0o600 });
  const shots = process.env.VAULT_CONSOLE_SCREENSHOTS ? resolve(REPO_ROOT, process.env.VAULT_CONSOLE_SCREENSHOTS) : join(dataDir, 'screenshots');
  mkdirSync(shots, { recursive: true });
  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  } catch (err) {
    await vault.dispose();
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`Chromium could not be started from ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH): ${(err as Error).message}`);
  }
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: vault.url });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const session: ConsoleSession = {
    vault,
    browser,
    context,
    page,
    dataDir,
    keyFile,
    requests: [],
    consoleLines: [],
    scripts: new Map(),
    async shot(name, { top = true } = {}) {
      if (top) await page.evaluate(() => scrollTo(0, 0));
      await page.screenshot({ path: join(shots, `${name}.png`), fullPage: false });
    },
    async go(hash, heading) {
      await page.goto(`${vault.url}/console#/${hash}`);
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    },
    async close() {
      await browser.close();
      await vault.dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  page.on('request', (r) => session.requests.push({ url: r.url(), headers: r.headers() }));
  page.on('console', (m) => session.consoleLines.push(m.text()));
  page.on('pageerror', (e) => session.consoleLines.push(`pageerror: ${e.message}`));
  page.on('response', async (r) => {
    if (/javascript/.test(r.headers()['content-type'] ?? '')) session.scripts.set(r.url(), await r.body().catch(() => Buffer.alloc(0)));
  });
  return session;
}

/**
 * A script for `page.evaluate`, as text (tsx would wrap named functions in a helper the page
 * lacks): defines `globalThis.<name>(element)`, the contrast of the element's `property` colour
 * (its border, its focus ring) against the first opaque background behind it. WCAG 1.4.11 asks
 * 3:1 of what shows a control is there.
 */
export function contrastScript(name: string, property: 'borderTopColor' | 'outlineColor'): string {
  return `globalThis.${name} = function (e) {
  var rgb = function (c) { return (c.match(/[\\d.]+/g) || []).map(Number); };
  var lum = function (c) {
    var v = rgb(c).slice(0, 3).map(function (x) { x = x / 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
  };
  var behind = 'rgb(255, 255, 255)';
  for (var p = e.parentElement; p; p = p.parentElement) {
    var bg = getComputedStyle(p).backgroundColor;
    if (rgb(bg)[3] !== 0) { behind = bg; break; }
  }
  var a = lum(getComputedStyle(e).${property}), b = lum(behind);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
};`;
}

/**
 * Rewrites activity record `sequence` in the session's database file behind the vault's back,
 * as someone with access to the file could: the chain no longer verifies from there.
 */
export function tamperWithRecord(session: ConsoleSession, sequence: number): void {
  const db = new Database(join(session.dataDir, 'vault.db'));
  try {
    db.pragma('busy_timeout = 10000');
    db.exec('drop trigger if exists activity_log_no_update');
    db.prepare("update activity_log set application_user = 'someone else' where sequence = ?").run(sequence);
  } finally {
    db.close();
  }
}
