/**
 * The published shape: `npm run build` output imports under plain Node (no TypeScript
 * loader), and its declarations type-check a consumer strictly, discriminated unions included.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import test from 'ava';

const run = promisify(execFile);
const sdk = fileURLToPath(new URL('..', import.meta.url));
// Inside the repository, so the build's `undici` import resolves as it would when installed.
const out = join(sdk, '.tmp', `pkg-${randomBytes(4).toString('hex')}`);

test.before(async () => {
  await run(process.execPath, [join(sdk, 'build.mjs'), '--out', out], { cwd: sdk });
});
test.after.always(() => rmSync(out, { recursive: true, force: true }));

test('the package has its manifest, README, JavaScript and declarations, and no tests', (t) => {
  const manifest = JSON.parse(readFileSync(join(out, 'package.json'), 'utf8'));
  t.like(manifest, { name: '@sensitive-data-vault/sdk', type: 'module', exports: { '.': { types: './index.d.ts', default: './index.js' } } });
  t.deepEqual(Object.keys(manifest.dependencies), ['undici']);
  for (const file of ['index.js', 'index.d.ts', 'client.d.ts', 'types.d.ts', 'README.md']) t.true(existsSync(join(out, file)), file);
  t.false(existsSync(join(out, 'testing')));
  t.false(existsSync(join(out, 'examples.test.js')));
  t.is(readFileSync(join(out, 'README.md'), 'utf8'), readFileSync(join(sdk, 'README.md'), 'utf8'));
});

test('npm pack makes the tarball the README says to install', async (t) => {
  const dest = join(out, 'packed');
  mkdirSync(dest);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const { stdout } = await run(npm, ['pack', out, '--json', '--pack-destination', dest], { cwd: sdk });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[')));
  t.is(packed.name, '@sensitive-data-vault/sdk');
  t.true(existsSync(join(dest, packed.filename)));
  const readme = readFileSync(join(sdk, 'README.md'), 'utf8');
  t.true(readme.includes(`npm pack ./sdk/dist                        # → ${packed.filename}`), 'the README names the tarball');
  t.true(readme.includes(`npm install /path/to/${packed.filename}`));
  t.false(/npm install @sensitive-data-vault\/sdk/.test(readme), 'no install from a registry that does not have it');
});

test('the built JavaScript runs under plain node', async (t) => {
  const script = `
    const sdk = await import(${JSON.stringify(join(out, 'index.js'))});
    const pair = await sdk.generateKeyPair({ modulusLength: 1024 });
    const client = new sdk.VaultClient({ url: 'http://127.0.0.1:1', apiKey: 'k'.repeat(20), encryptionKey: pair.publicKey, retry: false });
    let failure;
    try { await client.tags.list(); } catch (err) { failure = err; }
    await client.close();
    console.log(JSON.stringify({
      exports: Object.keys(sdk).sort(),
      network: failure instanceof sdk.VaultNetworkError,
      code: failure?.code,
      header: pair.publicKey === sdk.toHeaderValue(pair.publicPem),
    }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: sdk, env: { PATH: process.env.PATH ?? '' } });
  const result = JSON.parse(stdout);
  t.true(result.network);
  t.is(result.code, 'ECONNREFUSED');
  t.true(result.header);
  for (const name of ['VaultClient', 'VaultApiError', 'VaultNetworkError', 'VaultAbortError', 'Reporter', 'generateKeyPair', 'loadKeyFiles', 'loadKeysFromEnv', 'clientFromEnv']) {
    t.true(result.exports.includes(name), name);
  }
});

test('the declarations type-check a strict consumer, and reject what the vault would refuse', async (t) => {
  const consumer = join(out, 'consumer.ts');
  writeFileSync(
    consumer,
    `
import { VaultClient, VaultApiError, type Rule, type RuleInput, type DataPoint, type ExternalActivityEvent, type SearchResult } from './index.js';

const vault = new VaultClient({ url: 'http://127.0.0.1:8083', apiKey: 'key', headersTimeout: 5000, keepAlive: { timeout: 1000 } });

export async function use(): Promise<void> {
  const points: DataPoint<string>[] = await vault.dataSubjects.getAttribute<string>('alice', 'EMAIL');
  const value: string | undefined = points[0].value;
  for await (const hit of vault.searchAll({ attributes: ['EMAIL'], minCreatedDate: new Date() })) {
    const r: SearchResult = hit;
    void r.dataPointId;
  }
  const rule: RuleInput = { key: 'r', type: 'activity', constraint: { type: 'eventType', eventTypes: ['READ'] }, action: { type: 'block' } };
  await vault.rules.save(rule);
  const rules: Rule[] = await vault.rules.list();
  const event: ExternalActivityEvent = { eventType: 'STORE', subjectId: 's', data: { attribute: 'EMAIL' }, applicationId: 'a' };
  await vault.audit.logBulk([event]);
  try { await vault.tags.get('x'); } catch (err) { if (err instanceof VaultApiError) { const s: number = err.status; void s; } }
  void value; void rules;

  // @ts-expect-error: an activity rule cannot use a data-only constraint
  const bad1: RuleInput = { key: 'r', type: 'activity', constraint: { type: 'sentiment', threshold: 0 }, action: { type: 'block' } };
  // @ts-expect-error: a tag constraint names its list 'tags'
  const bad2: RuleInput = { key: 'r', constraint: { type: 'tag', operator: 'any', attributes: ['x'] }, action: { type: 'block' } };
  // @ts-expect-error: a STORE event needs a subject
  const bad3: ExternalActivityEvent = { eventType: 'STORE', data: { attribute: 'EMAIL' }, applicationId: 'a' };
  // @ts-expect-error: a READ event needs a data point id
  const bad4: ExternalActivityEvent = { eventType: 'READ', applicationId: 'a' };
  // @ts-expect-error: an unknown alert level
  const bad5: RuleInput = { key: 'r', constraint: { type: 'attribute', operator: 'any', attributes: ['A'] }, action: { type: 'alert', alertLevel: 'LOUD' } };
  void bad1; void bad2; void bad3; void bad4; void bad5;
}
`,
  );
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const args = [tsc, '--noEmit', '--strict', '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022', '--types', 'node', consumer];
  const result = await run(process.execPath, args, { cwd: out }).then(
    () => ({ ok: true, output: '' }),
    (err: { stdout: string }) => ({ ok: false, output: err.stdout }),
  );
  t.true(result.ok, result.output);
});
