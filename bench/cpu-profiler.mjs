// Preloaded into vault processes by `npm run bench -- --cpu-prof <dir>` (through NODE_OPTIONS,
// which refuses --cpu-prof itself): profiles the whole process and writes
// <dir>/vault-<pid>.cpuprofile when it exits normally (SIGTERM goes through the vault's drain).
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.BENCH_CPU_PROF_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 200 });
  session.post('Profiler.start');
  process.on('exit', () => {
    // The in-process session answers synchronously, so this completes inside the exit handler.
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(join(dir, `vault-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
