// Preloaded into vault processes by `npm run bench -- --cpu-prof <dir>` (through NODE_OPTIONS,
// which refuses --cpu-prof itself). SIGUSR2 starts a CPU profile; the next SIGUSR2 stops it
// and writes <dir>/vault-<pid>-<n>.cpuprofile. The harness signals around each measured load
// run, so a profile holds that scenario's work and nothing of seeding or start-up.
import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 250 });
  let running = false;
  let n = 0;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.start');
      return;
    }
    running = false;
    const file = join(dir, `vault-${process.pid}-${++n}.cpuprofile`);
    session.post('Profiler.stop', (err, result) => {
      if (err) return;
      // Written aside and renamed, so the harness never reads half a file.
      writeFileSync(`${file}.tmp`, JSON.stringify(result.profile));
      renameSync(`${file}.tmp`, file);
    });
  });
}
