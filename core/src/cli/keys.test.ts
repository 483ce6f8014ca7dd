/** `vault keys register` as an operator may get it wrong: a key too weak, or one already retired. */
import test from 'ava';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair } from '../crypto/keys.js';
import { runCli } from './main.js';
import { dataDir, io } from './cli-testing.js';

async function keys(env: Record<string, string>): Promise<string[]> {
  const listed = io(env);
  await runCli(['keys', 'list'], listed.io);
  return listed.out;
}

test('a public key under 2048 bits is not registered: a 512-bit one cannot even wrap a data key, so every store would fail', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const before = await keys(env);
  for (const bits of [512, 1024]) {
    const file = join(env.VAULT_DATA_DIR, `weak-${bits}.pem`);
    writeFileSync(file, generateKeyPairSync('rsa', { modulusLength: bits }).publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const { io: x, err, out } = io(env);
    t.is(await runCli(['keys', 'register', '--public-key', file], x), 1, `${bits} bits`);
    t.deepEqual(err, [`Failed: --public-key: ${file} is a ${bits}-bit RSA key: register one of at least 2048 bits (vault keygen makes them)`]);
    t.deepEqual(out, []);
  }
  t.deepEqual(await keys(env), before, 'nothing was registered');
});

test('a key retired with `keys retire` is not registered again: its wrapped copies are gone and its private half was to be destroyed', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const [first] = (await keys(env)).map((line) => line.split('\t')[0]);
  const next = generateKeyPair(2048);
  const nextFile = join(env.VAULT_DATA_DIR, 'next-public.pem');
  writeFileSync(nextFile, next.publicPem);
  t.is(await runCli(['keys', 'register', '--public-key', nextFile], io(env).io), 0);
  t.is(await runCli(['keys', 'retire', '--key-id', first], io(env).io), 0);
  const after = await keys(env);
  t.is(after.length, 1);
  t.regex(after[0], /\tactive$/);

  // The vault's first public key is still in its data directory, beside the new one.
  const { io: x, err, out } = io(env);
  t.is(await runCli(['keys', 'register', '--public-key', join(env.VAULT_DATA_DIR, 'vault-public-key.pem')], x), 1);
  t.deepEqual(err, [`key ${first} was retired (vault keys retire): it opens nothing and cannot be registered again; register a new key (vault keygen)`]);
  t.deepEqual(out, []);
  t.deepEqual(await keys(env), after, 'the active key stays active, the retired one stays retired');
});

test('registering the key that is already active says so, and records nothing', async (t) => {
  const env = dataDir(t);
  t.is(await runCli(['migrate'], io(env).io), 0);
  const [active] = (await keys(env)).map((line) => line.split('\t')[0]);
  const head = io(env);
  await runCli(['activity', 'head'], head.io);
  const { io: x, out, err } = io(env);
  t.is(await runCli(['keys', 'register', '--public-key', join(env.VAULT_DATA_DIR, 'vault-public-key.pem')], x), 0);
  t.deepEqual(out, [`${active} is the active key already: nothing changed.`]);
  t.deepEqual(err, []);
  const after = io(env);
  await runCli(['activity', 'head'], after.io);
  t.deepEqual(after.out, head.out, 'no record was added');
});
