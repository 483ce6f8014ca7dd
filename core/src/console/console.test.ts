/** The console's files as the vault serves them; the browser suite (test/console.test.ts) drives the pages. */
import test from 'ava';
import { startTestVault, type TestVault } from '../testing/harness.js';
import { readdirSync } from 'node:fs';
import { sep } from 'node:path';
import { CONSOLE_CSP, CONSOLE_ROOT } from './plugin.js';

let v: TestVault;
test.before(async () => {
  v = await startTestVault();
});
test.after.always(async () => v?.close());

test('/console is an HTML page without an API key, under a strict Content-Security-Policy', async (t) => {
  for (const url of ['/console', '/console/']) {
    const res = await v.request('GET', url, { apiKey: null });
    t.is(res.status, 200, url);
    t.regex(String(res.headers['content-type']), /^text\/html/);
    t.is(res.headers['content-security-policy'], CONSOLE_CSP);
    t.is(res.headers['referrer-policy'], 'no-referrer');
  }
  t.regex(CONSOLE_CSP, /(^|; )default-src 'self'(;|$)/);
  t.regex(CONSOLE_CSP, /(^|; )script-src 'self'(;|$)/);
  t.notRegex(CONSOLE_CSP, /unsafe-inline|unsafe-eval|\*|https?:/);
});

test('the page loads no inline script and nothing from another origin', async (t) => {
  const page = (await v.app.inject({ method: 'GET', url: '/console' })).body;
  const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  t.true(scripts.length > 0);
  for (const [, attributes, body] of scripts) {
    t.is(body.trim(), '', 'no inline script');
    t.regex(attributes, /src="\/console\//);
  }
  t.notRegex(page, /(src|href)="(https?:)?\/\//);
});

test('the console modules and Preact are served as JavaScript from the vault', async (t) => {
  for (const url of ['/console/app/main.js', '/console/app/pages/subject.js', '/console/vendor/preact.js', '/console/vendor/hooks.js', '/console/vendor/htm.js']) {
    const res = await v.app.inject({ method: 'GET', url });
    t.is(res.statusCode, 200, url);
    t.regex(String(res.headers['content-type']), /javascript/, url);
    t.is(res.headers['content-security-policy'], CONSOLE_CSP);
    // Every import is a path on this origin: no bare specifier is left for an import map.
    for (const [, spec] of res.body.matchAll(/\bfrom\s*["']([^"']+)["']/g)) t.regex(spec, /^(\.{1,2}\/|\/console\/)/, `${url} imports ${spec}`);
  }
  t.is((await v.app.inject({ method: 'GET', url: '/console/app/console.css' })).statusCode, 200);
});

test('the page preloads every module of the console, so none loads late', async (t) => {
  const page = (await v.app.inject({ method: 'GET', url: '/console' })).body;
  const preloaded = [...page.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((m) => m[1]);
  const modules = readdirSync(CONSOLE_ROOT, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js') && f !== 'main.js')
    .map((f) => `/console/app/${f.split(sep).join('/')}`);
  t.deepEqual([...preloaded].sort(), [...modules, '/console/vendor/preact.js', '/console/vendor/hooks.js', '/console/vendor/htm.js'].sort());
  for (const url of preloaded) t.is((await v.app.inject({ method: 'GET', url })).statusCode, 200, url);
});

test('nothing outside the console folder is served, and unknown files are 404', async (t) => {
  t.is((await v.app.inject({ method: 'GET', url: '/console/vendor/react.js' })).statusCode, 404);
  t.is((await v.app.inject({ method: 'GET', url: '/console/app/nothing.js' })).statusCode, 404);
  for (const url of ['/console/app/../../package.json', '/console/app/%2e%2e/%2e%2e/package.json', '/console/app/..%2f..%2fsrc%2fvault.ts']) {
    const res = await v.app.inject({ method: 'GET', url });
    t.true([403, 404].includes(res.statusCode), `${url}: ${res.statusCode}`);
    t.false(res.body.includes('"workspaces"') || res.body.includes('class Vault'), url);
  }
});

test('the API keeps its own headers: no console CSP outside /console', async (t) => {
  const res = await v.request('GET', '/stats');
  t.is(res.status, 200);
  t.is(res.headers['content-security-policy'], undefined);
});

test('the console is not in the OpenAPI document', async (t) => {
  const doc = (await v.request('GET', '/openapi.json', { apiKey: null })).body;
  t.false(Object.keys(doc.paths).some((p) => p.startsWith('/console')));
  t.truthy(doc.paths['/stats']);
});
