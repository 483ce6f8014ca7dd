/**
 * Forked by `load.ts`: runs autocannon jobs sent over IPC and answers their measurements.
 * Latencies are taken from autocannon's per-response event rather than its histogram, which
 * rounds to whole milliseconds; the reverse-proxy target is about fractions of one.
 */
import autocannon, { type Instance } from 'autocannon';
import type { LoadJob, Measurement, RequestSpec } from './load.js';
import { summarize } from './measurement.js';

interface Tally {
  latencies: number[];
  statusCodes: Record<string, number>;
  ok: number;
  non2xx: number;
  errors: number;
  /** performance.now() when the warm-up ends and counting starts. */
  measureFrom: number;
  endedAt: number;
}

interface PreparedRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

/**
 * One autocannon run of warm-up + measured duration. Only responses that arrive after the
 * warm-up count; running both phases in one go means the measured phase does not start with
 * a server still chewing on requests the warm-up abandoned.
 */
function runOnce(url: string, job: LoadJob, connections: number, pool: () => PreparedRequest, tally: Tally, started: (i: Instance) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections,
        // An upper bound: run() stops it once the duration is over and enough answers came.
        duration: job.warmupSec + job.durationSec * MAX_STRETCH + 30,
        timeout: job.timeoutSec ?? 120,
        requests: [
          {
            setupRequest: (defaults) => {
              const spec = pool();
              return { ...defaults, method: spec.method, path: spec.path, headers: { ...defaults.headers, ...spec.headers }, body: spec.body ?? defaults.body };
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        // Errors are not timestamped by autocannon; count them all, warm-up included.
        tally.errors += result.errors + result.timeouts;
        tally.endedAt = Math.max(tally.endedAt, performance.now());
        resolve();
      },
    );
    started(instance);
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (performance.now() < tally.measureFrom) return;
      tally.statusCodes[statusCode] = (tally.statusCodes[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) {
        tally.ok++;
        tally.latencies.push(responseTime);
      } else {
        tally.non2xx++;
      }
    });
  });
}

/**
 * A measured phase lasts its duration, and longer (up to MAX_STRETCH times) until at least
 * MIN_ANSWERS answers came: at 64 connections a slow scenario (1000-event bulks, a loaded
 * machine) can otherwise end a short quick-mode run before its first answer.
 */
const MAX_STRETCH = 10;
const MIN_ANSWERS = 16;

async function run(job: LoadJob): Promise<Measurement> {
  // Bodies become buffers once here, not once per request (bulk bodies are hundreds of KB).
  const prepared: PreparedRequest[] = job.pool.map((r: RequestSpec) => ({ ...r, body: r.body === undefined ? undefined : Buffer.from(r.body) }));
  let next = 0;
  // One counter for every connection: consecutive requests walk the pool, so concurrent
  // connections do not all hit the same entity or id at once.
  const pick = () => prepared[next++ % prepared.length];
  const split = (total: number) => job.targets.map((_, i) => Math.floor(total / job.targets.length) + (i < total % job.targets.length ? 1 : 0));
  const perTarget = split(job.connections);
  const tally: Tally = { latencies: [], statusCodes: {}, ok: 0, non2xx: 0, errors: 0, measureFrom: performance.now() + job.warmupSec * 1000, endedAt: 0 };
  const instances: Instance[] = [];
  const minEnd = tally.measureFrom + job.durationSec * 1000;
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped || performance.now() < minEnd || tally.ok + tally.non2xx < MIN_ANSWERS) return;
    stopped = true;
    for (const i of instances) i.stop();
  }, 20);
  try {
    await Promise.all(job.targets.map((url, i) => runOnce(url, job, perTarget[i], pick, tally, (inst) => instances.push(inst))));
  } finally {
    clearInterval(timer);
  }
  const durationSec = Math.max(0.001, (tally.endedAt - tally.measureFrom) / 1000);
  const measurement = summarize(
    { ok: tally.ok, durationSec, non2xx: tally.non2xx, errors: tally.errors, statusCodes: tally.statusCodes, connections: job.connections },
    tally.latencies,
  );
  return job.latencies ? { ...measurement, latencies: tally.latencies } : measurement;
}

process.on('message', (msg: { id: number; job: LoadJob }) => {
  run(msg.job).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: Error) => process.send!({ id: msg.id, error: err.message }),
  );
});
process.on('disconnect', () => process.exit(0));
