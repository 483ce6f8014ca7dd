/**
 * Values opened on the decryption thread must be exactly the values opened on the event loop,
 * fail exactly as they would there, and never be lost to the thread stopping.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { createLogger } from '../logger.js';
import { generateDataKey, sealValue } from './envelope.js';
import { OpenError, ValueOpener, type SealedValue } from './opener.js';

const VALUES: unknown[] = [
  'plain',
  'quotes " and \\ and a line\nbreak',
  'separators \u2028\u2029 and é, 漢字, 🙂',
  0,
  -1.5e300,
  true,
  false,
  null,
  { nested: { list: [1, 'two', { three: 3 }] }, empty: {} },
  [],
  ['a', 2, null],
  '',
];

function sealed(values: unknown[], keys = [generateDataKey(), generateDataKey()]): SealedValue[] {
  return values.map((value, i) => {
    const dataKey = keys[i % keys.length];
    const dataPointId = `point-${i}`;
    const attribute = `ATTRIBUTE_${i % 3}`;
    const bytes = sealValue(dataKey, value, dataPointId, attribute);
    // SQLite's rows carry the sealed bytes as hex text, PostgreSQL's as bytes: both are opened.
    return { dataKey, sealed: i % 2 === 0 ? bytes.toString('hex') : bytes, dataPointId, attribute };
  });
}

function opener(threads = 1): { opener: ValueOpener; logs: string[] } {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  return { opener: new ValueOpener({ threads, logger: createLogger('debug', sink) }), logs };
}

test('a read of many values under two data keys answers them in order, as stored, on the thread and without it', async (t) => {
  const values = sealed(VALUES);
  for (const threads of [1, 0]) {
    const { opener: o, logs } = opener(threads);
    t.deepEqual(await o.open(values), VALUES, `threads: ${threads}`);
    t.deepEqual(await o.open(values.slice(0, 2)), VALUES.slice(0, 2));
    t.deepEqual(await o.open([]), []);
    await o.close();
    // Had the thread failed to start, the values would have been opened inline after a warning.
    t.deepEqual(logs, []);
  }
});

test('many reads at once each get their own values', async (t) => {
  const { opener: o } = opener(2);
  const reads = Array.from({ length: 50 }, (_, r) => VALUES.map((v) => ({ read: r, v })));
  const answers = await Promise.all(reads.map((values) => o.open(sealed(values))));
  t.deepEqual(answers, reads);
  await o.close();
});

test('a value that does not authenticate fails the read with its position, however it was altered', async (t) => {
  const { opener: o } = opener();
  const values = sealed(VALUES);
  const moved = values.map((v, i) => (i === 5 ? { ...v, attribute: 'ANOTHER' } : v));
  await t.throwsAsync(o.open(moved), { instanceOf: OpenError, message: 'ciphertext does not authenticate' }).then((err) => t.is(err?.index, 5));

  const flipped = values.map((v, i) => {
    if (i !== 7) return v;
    const bytes = Buffer.from(v.sealed as Buffer);
    bytes[bytes.length - 1] ^= 1;
    return { ...v, sealed: bytes };
  });
  await t.throwsAsync(o.open(flipped), { instanceOf: OpenError }).then((err) => t.is(err?.index, 7));

  const otherKey = values.map((v, i) => (i === 0 ? { ...v, dataKey: generateDataKey() } : v));
  await t.throwsAsync(o.open(otherKey), { instanceOf: OpenError }).then((err) => t.is(err?.index, 0));
  // The thread is still there for the next read.
  t.deepEqual(await o.open(values), VALUES);
  await o.close();
});

test('reads on the thread at the same time fail or succeed each on their own', async (t) => {
  const { opener: o } = opener();
  const values = sealed(VALUES);
  const moved = values.map((v, i) => (i === 3 ? { ...v, dataPointId: 'another-point' } : v));
  // Asked together: all three are with the thread at once.
  const [before, failed, after] = await Promise.allSettled([o.open(values), o.open(moved), o.open(values.slice(4))]);
  t.deepEqual(before, { status: 'fulfilled', value: VALUES });
  t.is(failed.status, 'rejected');
  t.true((failed as PromiseRejectedResult).reason instanceof OpenError);
  t.is(((failed as PromiseRejectedResult).reason as OpenError).index, 3);
  t.deepEqual(after, { status: 'fulfilled', value: VALUES.slice(4) });
  await o.close();
});

test('reads given to a thread that stops are opened on the event loop, and the stop is logged without a value', async (t) => {
  const { opener: o, logs } = opener();
  const values = sealed(VALUES);
  t.deepEqual(await o.open(values), VALUES);
  const [thread] = (o as unknown as { workers: { terminate(): Promise<number> }[] }).workers;
  const reads = Array.from({ length: 20 }, () => o.open(values));
  await thread.terminate();
  for (const answer of await Promise.all(reads)) t.deepEqual(answer, VALUES);
  t.deepEqual(await o.open(values), VALUES);
  t.true(logs.some((line) => line.includes('a value-opening thread stopped')));
  t.false(logs.some((line) => line.includes('separators')));
  await o.close();
});

test('closing answers the reads still waiting on a thread', async (t) => {
  const { opener: o } = opener();
  const values = sealed(Array.from({ length: 2000 }, (_, i) => `value ${i}`));
  const read = o.open(values);
  await o.close();
  t.is((await read).length, 2000);
  t.deepEqual(await o.open(values.slice(0, 10)), Array.from({ length: 10 }, (_, i) => `value ${i}`));
});

test('run from source in another working directory, the thread still starts', (t) => {
  // `npm run dev` and spawned test vaults run the sources through tsx; the thread must find
  // tsx from here, not from wherever the process was started.
  const script = `
    import { ValueOpener } from ${JSON.stringify(new URL('./opener.ts', import.meta.url).href)};
    import { generateDataKey, sealValue } from ${JSON.stringify(new URL('./envelope.ts', import.meta.url).href)};
    const key = generateDataKey();
    const values = [1, 2, 3, 4, 5].map((n) => ({ dataKey: key, sealed: sealValue(key, n, 'p' + n, 'A'), dataPointId: 'p' + n, attribute: 'A' }));
    const warnings = [];
    const opener = new ValueOpener({ threads: 1, logger: { warn: (...args) => warnings.push(args) } });
    console.log(JSON.stringify({ values: await opener.open(values), warnings: warnings.length }));
    await opener.close();
  `;
  const out = execFileSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', script], { cwd: tmpdir(), encoding: 'utf8' });
  t.deepEqual(JSON.parse(out), { values: [1, 2, 3, 4, 5], warnings: 0 });
});
