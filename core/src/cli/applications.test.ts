/** `vault applications ...` given options out of range: named as the operator typed them. */
import test from 'ava';
import { runCli } from './main.js';
import { dataDir, io } from './cli-testing.js';
import { commands } from './commands.js';

test('roll-key --keep-previous past 30 days is a usage error naming the option, and the key in use stays', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const created = io(env);
  t.is(await runCli(['applications', 'create', '--name', 'reports'], created.io), 0);
  const [, id] = /Created application (\S+) /.exec(created.out.join('\n'))!;
  const usage = `Usage: ${commands['applications roll-key'].usage}`;
  for (const keep of ['2592001', '99999999999999999999']) {
    const { io: x, out, err } = io(env);
    t.is(await runCli(['applications', 'roll-key', id, '--keep-previous', keep], x), 2, keep);
    t.deepEqual(err, [`--keep-previous must be a whole number of seconds from 0 to 2592000 (30 days)\n${usage}`], keep);
    t.deepEqual(out, []);
  }
  const kept = io(env);
  t.is(await runCli(['applications', 'roll-key', id, '--keep-previous', '2592000'], kept.io), 0);
  t.regex(kept.out.join('\n'), /the previous key is valid until /);
});
