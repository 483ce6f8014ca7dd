/**
 * Forked by `load.ts`: runs autocannon jobs sent over IPC and answers their measurements.
 * Latencies are taken from autocannon's per-response event rather than its histogram, which
 * rounds to whole milliseconds; the reverse-proxy target is about fractions of one.
 */
import autocannon from 'autocannon';
import type { LoadJob, Measurement, RequestSpec } from './load.js';

interface Tally {
  latencies: number[];
  statusCodes: Record<string, number>;
  ok: number;
  non2xx: number;
  errors: number;
  durationSec: number;
}

interface PreparedRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

function runOnce(url: string, job: LoadJob, connections: number, durationSec: number, pool: () => PreparedRequest, tally: Tally | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections,
        duration: durationSec,
        timeout: job.timeoutSec ?? 30,
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
        if (tally) {
          tally.errors += result.errors + result.timeouts;
          tally.durationSec = Math.max(tally.durationSec, result.duration);
        }
        resolve();
      },
    );
    if (tally) {
      instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
        tally.statusCodes[statusCode] = (tally.statusCodes[statusCode] ?? 0) + 1;
        if (statusCode >= 200 && statusCode < 300) {
          tally.ok++;
          tally.latencies.push(responseTime);
        } else {
          tally.non2xx++;
        }
      });
    }
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

async function run(job: LoadJob): Promise<Measurement> {
  // Bodies become buffers once here, not once per request (bulk bodies are hundreds of KB).
  const prepared: PreparedRequest[] = job.pool.map((r: RequestSpec) => ({ ...r, body: r.body === undefined ? undefined : Buffer.from(r.body) }));
  let next = 0;
  // One counter for every connection: consecutive requests walk the pool, so concurrent
  // connections do not all hit the same entity or id at once.
  const pick = () => prepared[next++ % prepared.length];
  const split = (total: number) => job.targets.map((_, i) => Math.floor(total / job.targets.length) + (i < total % job.targets.length ? 1 : 0));
  const perTarget = split(job.connections);
  if (job.warmupSec > 0) {
    await Promise.all(job.targets.map((url, i) => runOnce(url, job, perTarget[i], job.warmupSec, pick, undefined)));
  }
  const tally: Tally = { latencies: [], statusCodes: {}, ok: 0, non2xx: 0, errors: 0, durationSec: 0 };
  await Promise.all(job.targets.map((url, i) => runOnce(url, job, perTarget[i], job.durationSec, pick, tally)));
  const sorted = Float64Array.from(tally.latencies).sort();
  const sum = tally.latencies.reduce((a, b) => a + b, 0);
  const durationSec = tally.durationSec || job.durationSec;
  return {
    ok: tally.ok,
    durationSec,
    rps: tally.ok / durationSec,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    mean: sorted.length ? sum / sorted.length : NaN,
    non2xx: tally.non2xx,
    errors: tally.errors,
    statusCodes: tally.statusCodes,
    connections: job.connections,
  };
}

process.on('message', (msg: { id: number; job: LoadJob }) => {
  run(msg.job).then(
    (result) => process.send!({ id: msg.id, result }),
    (err: Error) => process.send!({ id: msg.id, error: err.message }),
  );
});
process.on('disconnect', () => process.exit(0));
