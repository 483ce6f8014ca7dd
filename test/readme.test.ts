import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { createPostgresDatabase } from '../core/src/testing/harness.js';
import { vaultListening } from '../core/src/testing/process.js';
import { cleanupRedis, closedPort, freePort, getJson, repoRoot, sharedRedisUrl, uniquePrefix, waitFor } from '../proxy/src/testing/helpers.js';

/**
 * The shell examples of README.md and then proxy/README.md, run as written, in order, by
 * bash against a fresh vault started the way the quick start starts it (the admin key read
 * from what it prints), with a service in front of which the sidecar's reverse proxy runs
 * that holds users from before the sidecar existed.
 *
 * Every fenced block is run (`sh`), written to a file (`<!-- file: NAME -->` above it), or
 * says why it is not run (`<!-- not run: reason -->`). What the test changes in the text:
 * the ports. Each process here has its own: the vault and the service listen on port 0 and
 * are then named by the port they were given; the sidecar's two are picked before it starts,
 * proved its own by its `sidecar listening` line, and all is run again on other ports should
 * another process hold one (test files run side by side). In the shell: `set -euo pipefail`, curl
 * fails on an HTTP error (`--fail-with-body`), and `npm run sidecar` starts the sidecar in
 * the background (stopping the one started before) on this run's Redis prefix.
 * Runs on PostgreSQL with VAULT_TEST_DB=postgres.
 */

interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
  marker?: { kind: 'not run' | 'file'; value: string };
}

export function blocksOf(file: string, markdown: string): Block[] {
  const out: Block[] = [];
  const pattern = /(?:<!-- (not run|file): ([^\n]*?) -->\n)?^```(\w*)\n([\s\S]*?)^```$/gm;
  for (const match of markdown.matchAll(pattern)) {
    const [, kind, value, lang, code] = match;
    out.push({
      file,
      line: markdown.slice(0, match.index).split('\n').length + (kind ? 1 : 0),
      lang,
      code,
      ...(kind ? { marker: { kind: kind as 'not run' | 'file', value } } : {}),
    });
  }
  return out;
}

const docs = ['README.md', 'proxy/README.md'].flatMap((file) => blocksOf(file, readFileSync(join(repoRoot, file), 'utf8')));

test('every fenced block of the READMEs is run, written to a file, or says why it is not run', (t) => {
  t.true(docs.filter((b) => b.lang === 'sh' && !b.marker).length >= 12);
  for (const b of docs) {
    const where = `${b.file}:${b.line}`;
    if (b.marker?.kind === 'not run') t.regex(b.marker.value, /\w{3,}/, `${where}: give the reason`);
    else if (b.marker?.kind === 'file') t.regex(b.marker.value, /^[\w.-]+$/, `${where}: a file name`);
    else t.is(b.lang, 'sh', `${where}: a \`${b.lang}\` block that is neither run nor marked`);
  }
});

test('the block parser reads markers and languages', (t) => {
  const md = 'x\n```sh\na\n```\n<!-- not run: needs a cluster -->\n```sh\nb\n```\n<!-- file: r.json -->\n```json\n{}\n```\n';
  t.deepEqual(blocksOf('f', md), [
    { file: 'f', line: 2, lang: 'sh', code: 'a\n' },
    { file: 'f', line: 6, lang: 'sh', code: 'b\n', marker: { kind: 'not run', value: 'needs a cluster' } },
    { file: 'f', line: 10, lang: 'json', code: '{}\n', marker: { kind: 'file', value: 'r.json' } },
  ]);
});

test('every setting the vault reads is in a table of README.md, as "Every setting comes from the environment" promises', (t) => {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const tableRows = readme.split('\n').filter((line) => line.startsWith('| `'));
  const read = new Set(readFileSync(join(repoRoot, 'core/src/config.ts'), 'utf8').match(/VAULT_[A-Z_]+/g));
  t.true(read.size >= 25);
  for (const name of read) t.true(tableRows.some((row) => row.includes(`\`${name}\``)), `${name} is documented`);
});

/** The service in front of which the reverse proxy runs: user u-1 was there before the sidecar. */
async function startCrm(): Promise<{ server: Server; port: number }> {
  const users = new Map<string, Record<string, unknown>>([['u-1', { id: 'u-1', email: 'old@example.org', phone: '+44 20 7946 0001' }]]);
  let next = 2;
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const id = /^\/users\/([^/?]+)/.exec(req.url ?? '')?.[1];
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/users') {
      const user = { id: `u-${next++}`, ...JSON.parse(body) };
      users.set(user.id, user);
      res.writeHead(201).end(JSON.stringify(user));
    } else if (id !== undefined && users.has(id) && req.method === 'GET') {
      res.writeHead(200).end(JSON.stringify(users.get(id)));
    } else if (id !== undefined && users.has(id) && (req.method === 'PUT' || req.method === 'PATCH')) {
      users.set(id, { ...users.get(id), ...JSON.parse(body) });
      res.writeHead(200).end(JSON.stringify(users.get(id)));
    } else if (id !== undefined && users.has(id) && req.method === 'DELETE') {
      users.delete(id);
      res.writeHead(204).end();
    } else {
      res.writeHead(404).end('{"message":"no such user"}');
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

/**
 * The shell around the examples; see the file's comment. The sidecar is the run's own once its
 * `sidecar listening` line is in the log after this start: it then holds both ports, where a
 * health check would be answered as well by another process's server on a port taken from
 * under it. If one is taken, the sidecar cannot listen, and the run ends with PORT_TAKEN.
 */
function prelude(repo: string, ports: Record<string, number>, prefix: string): string {
  return `
set -euo pipefail
curl() { command curl --fail-with-body "$@"; }
start_sidecar() {
  if [[ -s sidecar.pid ]]; then
    local old; old=$(cat sidecar.pid)
    kill -TERM "$old" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
  fi
  local routes=\${SIDECAR_ROUTES:-}
  if [[ -n $routes && $routes != /* ]]; then routes=$PWD/$routes; fi
  touch sidecar.log
  local from=$(( $(wc -l < sidecar.log) + 1 ))
  ( cd ${repo} && exec env \${routes:+SIDECAR_ROUTES=$routes} SIDECAR_PORT=${ports.sidecar} SIDECAR_PROXY_PORT=${ports.proxy} \\
      SIDECAR_VAULT_URL=http://127.0.0.1:${ports.vault} SIDECAR_PREFIX=${prefix} REDIS_URL=${sharedRedisUrl} \\
      SIDECAR_BATCH_MS=20 SIDECAR_RETRY_BASE_MS=20 SIDECAR_RETRY_MAX_MS=500 SIDECAR_LOG_LEVEL=info \\
      node --import tsx proxy/src/main.ts ) >>sidecar.log 2>&1 &
  echo $! > sidecar.pid
  for _ in $(seq 1 600); do
    tail -n +$from sidecar.log | grep -q '"sidecar listening"' && return 0
    if ! kill -0 "$(cat sidecar.pid)" 2>/dev/null; then
      if tail -n +$from sidecar.log | grep -q EADDRINUSE; then
        echo "a port given to the sidecar is held by another process:" >&2; tail -n +$from sidecar.log >&2; exit ${PORT_TAKEN}
      fi
      echo "the sidecar exited:" >&2; tail -n +$from sidecar.log | tail -20 >&2; return 1
    fi
    sleep 0.1
  done
  echo "the sidecar did not start" >&2; return 1
}
npm() {
  if [[ "$*" == "run sidecar" ]]; then start_sidecar; else echo "npm $* is not part of the README test" >&2; return 1; fi
}
`;
}

/** What examples.sh exits with when a port given to the sidecar is held by another process. */
const PORT_TAKEN = 75;

/**
 * Runs `work`/examples.sh with bash. Not spawnSync: the service the proxy fronts runs in this
 * process and must keep answering.
 */
async function runScript(work: string, env: Record<string, string>, timeoutMs: number) {
  const shell = spawn('bash', ['-x', 'examples.sh'], { cwd: work, env: { PATH: process.env.PATH ?? '', HOME: work, ...env } });
  const run = { stdout: '', stderr: '', status: null as number | null };
  shell.stdout.on('data', (chunk) => (run.stdout += chunk));
  shell.stderr.on('data', (chunk) => (run.stderr += chunk));
  const timer = setTimeout(() => shell.kill('SIGKILL'), timeoutMs);
  [run.status] = (await once(shell, 'exit')) as [number | null];
  clearTimeout(timer);
  return run;
}

/** Stops the sidecar examples.sh left running in `work`, if any. */
async function stopSidecar(work: string): Promise<void> {
  const pidFile = join(work, 'sidecar.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
    await waitFor(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, { timeoutMs: 20_000, message: 'the sidecar to stop' });
  } catch {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
}

test('a sidecar the examples start where another process listens ends the run as "port taken", and is never taken for theirs', async (t) => {
  const work = mkdtempSync(join(tmpdir(), 'readme-taken-'));
  const prefix = uniquePrefix('readme-taken');
  // Answers the sidecar's health check as a sidecar would: another test's, say.
  const foreign = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}'));
  foreign.listen(0, '127.0.0.1');
  await once(foreign, 'listening');
  t.teardown(async () => {
    await stopSidecar(work);
    foreign.closeAllConnections();
    foreign.close();
    await cleanupRedis(prefix);
    rmSync(work, { recursive: true, force: true });
  });
  const ports = { vault: await closedPort(), sidecar: (foreign.address() as AddressInfo).port, proxy: await closedPort(), crm: await closedPort() };
  writeFileSync(join(work, 'examples.sh'), `${prelude(repoRoot, ports, prefix)}\nSIDECAR_API_KEY=${'k'.repeat(32)} npm run sidecar\necho 'the examples went on'\n`);
  const run = await runScript(work, {}, 120_000);
  t.is(run.status, PORT_TAKEN, run.stderr.slice(-3000));
  t.false(run.stdout.includes('the examples went on'));
});

function withPorts(code: string, ports: Record<string, number>): string {
  const map: Record<string, number> = { '8083': ports.vault, '8084': ports.sidecar, '8085': ports.proxy, '3000': ports.crm };
  return code.replace(/\b(127\.0\.0\.1|localhost):(8083|8084|8085|3000)\b/g, (_all, host: string, port: string) => `${host}:${map[port]}`);
}

interface ExamplesRun {
  status: number | null;
  stdout: string;
  stderr: string;
  sidecarLog: string;
  adminKey: string;
  vaultUrl: string;
  sidecarUrl: string;
  /** Stops what the run started and removes what it made; also done at the test's end. */
  cleanup: () => Promise<void>;
}

/** Starts a fresh vault and service, and runs the examples against them. */
async function runExamples(t: ExecutionContext): Promise<ExamplesRun> {
  const work = mkdtempSync(join(tmpdir(), 'readme-'));
  const crm = await startCrm();
  const prefix = uniquePrefix('readme');
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let vault: ChildProcess | undefined;
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      await stopSidecar(work);
      if (vault && vault.exitCode === null) {
        const exited = once(vault, 'exit');
        vault.kill('SIGTERM');
        await exited;
      }
      crm.server.closeAllConnections();
      crm.server.close();
      await cleanupRedis(prefix);
      await database?.drop();
      rmSync(work, { recursive: true, force: true });
    })());
  t.teardown(cleanup);
  if (process.env.VAULT_TEST_DB === 'postgres') database = await createPostgresDatabase();

  // The quick start: a fresh data directory; the admin key is printed once. On port 0, and
  // the port it was given read from its `vault started` line, so no other server answers.
  mkdirSync(join(work, 'data'));
  let output = '';
  vault = spawn(process.execPath, ['--import', 'tsx', 'core/src/main.ts'], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH ?? '',
      VAULT_PORT: '0',
      VAULT_DATA_DIR: join(work, 'data'),
      VAULT_LOG_LEVEL: 'info',
      ...(database ? { VAULT_DB: database.url } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  vault.stdout!.on('data', (chunk) => (output += chunk));
  vault.stderr!.on('data', (chunk) => (output += chunk));
  const vaultExited = new Promise((resolve) => vault!.once('exit', resolve));
  const vaultUrl = await vaultListening(() => output, vaultExited);
  await waitFor(async () => {
    if (vault!.exitCode !== null) throw new Error(`the vault exited: ${output}`);
    return (await fetch(`${vaultUrl}/readyz`)).status === 200;
  }, { timeoutMs: 60_000, intervalMs: 200, message: 'the vault to be ready' });
  const adminKey = /Admin API key \(shown once, store it safely\): (\S+)/.exec(output)?.[1];
  t.truthy(adminKey, 'the vault printed its admin key');

  // The sidecar's ports are written into the examples before it starts, as a user's are fixed.
  const ports = { vault: Number(new URL(vaultUrl).port), sidecar: await freePort(), proxy: await freePort(), crm: crm.port };
  for (const b of docs) if (b.marker?.kind === 'file') writeFileSync(join(work, b.marker.value), b.code);
  const script = docs
    .filter((b) => b.lang === 'sh' && !b.marker)
    .map((b) => `echo '### ${b.file}:${b.line}' >&2\n${withPorts(b.code, ports)}`)
    .join('\n');
  writeFileSync(join(work, 'examples.sh'), `${prelude(repoRoot, ports, prefix)}\n${script}\n`);
  const run = await runScript(work, { ADMIN_KEY: adminKey! }, 240_000);
  const sidecarLog = existsSync(join(work, 'sidecar.log')) ? readFileSync(join(work, 'sidecar.log'), 'utf8') : '';
  return { ...run, sidecarLog, adminKey: adminKey!, vaultUrl, sidecarUrl: `http://127.0.0.1:${ports.sidecar}`, cleanup };
}

test('the READMEs’ examples run in order on a fresh vault; the service’s users from before the sidecar leave no dead letter', async (t) => {
  t.timeout(600_000, 'a run, and up to two more should a port given to the sidecar be taken');
  let run = await runExamples(t);
  // Another test's server took a port between its pick and the sidecar's start: all again,
  // from a fresh vault and service, on other ports (the examples are not run twice on one).
  for (let attempt = 2; run.status === PORT_TAKEN && attempt <= 3; attempt++) {
    await run.cleanup();
    run = await runExamples(t);
  }
  const { adminKey, vaultUrl, sidecarUrl, sidecarLog } = run;
  t.is(run.status, 0, `the examples failed:\n${run.stderr.slice(-6000)}\n--- stdout ---\n${run.stdout.slice(-3000)}\n--- sidecar ---\n${sidecarLog.slice(-2000)}`);
  if (run.status !== 0) return;

  const admin = { authorization: `Bearer ${adminKey}` };
  const activity = async (query: string) => (await getJson(`${vaultUrl}/activity?${query}`, { headers: admin })).body.data as any[];

  // The audit walk-through: a STORE with its sub-points, a bulk about it and about a point
  // the vault had never seen, then the sidecar's report of another read of that point.
  const cust42 = await waitFor(async () => {
    const list = await activity('subjectId=cust-42');
    return list.length >= 5 ? list : undefined;
  }, { timeoutMs: 60_000, message: 'the audit examples’ records' });
  t.deepEqual(cust42.map((r) => [r.eventType, r.dataPointId, r.attribute, r.applicationUser]), [
    ['STORE', 'crm/cust-42/name', 'NAME', undefined],
    ['READ', 'crm/cust-42/name', 'NAME', 'alice'],
    ['READ', 'crm/cust-42/email', 'EMAIL', 'alice'],
    ['DELETE', 'crm/cust-42/name', 'NAME', undefined],
    ['READ', 'crm/cust-42/email', 'EMAIL', undefined],
  ]);

  // proxy/README.md: the reverse proxy in front of a service whose user u-1 predates it.
  const u1 = await waitFor(async () => {
    const list = await activity('subjectId=u-1');
    return list.length >= 2 ? list : undefined;
  }, { timeoutMs: 60_000, message: 'the READs of u-1' });
  t.deepEqual(u1.map((r) => [r.eventType, r.dataPointId, r.attribute, r.applicationId, r.applicationUser]), [
    ['READ', 'crm/u-1/email', 'email', 'crm', 'alice'],
    ['READ', 'crm/u-1/phone', 'phone', 'crm', 'alice'],
  ]);
  const u2 = await waitFor(async () => {
    const list = await activity('subjectId=u-2');
    return list.length >= 2 ? list : undefined;
  }, { timeoutMs: 60_000, message: 'the STOREs of u-2' });
  t.deepEqual(u2.map((r) => [r.eventType, r.dataPointId]), [['STORE', 'crm/u-2/email'], ['STORE', 'crm/u-2/phone']]);
  const queue = await waitFor(async () => {
    const text = await (await fetch(`${sidecarUrl}/metrics`)).text();
    return /sidecar_queue_jobs\{state="waiting"\} 0/.test(text) && /sidecar_queue_jobs\{state="active"\} 0/.test(text) ? text : undefined;
  }, { timeoutMs: 60_000, message: 'an empty queue' });
  t.truthy(queue);
  const dead = await getJson(`${sidecarUrl}/deadletters`);
  t.is(dead.body.total, 0, `nothing dead-lettered: ${JSON.stringify(dead.body.items?.map((i: any) => i.reason))}`);
  const verify = await getJson(`${vaultUrl}/activity/verify`, { headers: admin });
  t.true(verify.body.data.valid);
});
