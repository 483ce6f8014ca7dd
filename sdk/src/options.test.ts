/**
 * Client options as applications build them, from configuration that may leave a value
 * unset: an option given as `undefined` keeps its default, and a value the client cannot
 * use is refused when the client is made rather than making calls retry without end.
 */
import test from 'ava';
import { VaultClient } from './client.js';
import { VaultAbortError, VaultNetworkError } from './errors.js';
import { closedPort } from '../../core/src/testing/process.js';

const apiKey = 'options-test-key-000000';

test('retry members given as undefined keep their defaults: a refused connection ends after 4 attempts', async (t) => {
  const url = `http://127.0.0.1:${await closedPort()}`;
  const unset: { retries?: number; maxDelayMs?: number } = {};
  const c = new VaultClient({ url, apiKey, retry: { retries: unset.retries, minDelayMs: 1, maxDelayMs: unset.maxDelayMs } });
  t.teardown(() => c.close());
  // The signal only bounds a failing run (the calls retried without end); it is not what is tested.
  const err = await t.throwsAsync(c.tags.list({ signal: AbortSignal.timeout(20_000) }));
  t.false(err instanceof VaultAbortError, 'the call ended by itself');
  t.true(err instanceof VaultNetworkError);
  t.like(err, { code: 'ECONNREFUSED', attempts: 4 });
});

test('retry values the client cannot use are a RangeError when it is made', (t) => {
  const url = 'http://127.0.0.1:8083';
  for (const retries of [-1, 1.5, Number.NaN, '3' as unknown as number]) {
    const err = t.throws(() => new VaultClient({ url, apiKey, retry: { retries } }), { instanceOf: RangeError }, String(retries));
    t.is(err?.message, 'retry.retries must be a whole number, 0 or more');
  }
  for (const name of ['minDelayMs', 'maxDelayMs'] as const) {
    for (const delay of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const err = t.throws(() => new VaultClient({ url, apiKey, retry: { [name]: delay } }), { instanceOf: RangeError }, `${name} ${delay}`);
      t.is(err?.message, `retry.${name} must be a number of milliseconds, 0 or more`);
    }
  }
  t.notThrows(() => new VaultClient({ url, apiKey, retry: { retries: 0, minDelayMs: 0, maxDelayMs: 0 } }).close());
});

test("the reporter's delays, limits and sizes the client cannot use are a RangeError when it is made", (t) => {
  const c = new VaultClient({ url: 'http://127.0.0.1:8083', apiKey });
  t.teardown(() => c.close());
  for (const name of ['flushIntervalMs', 'closeTimeoutMs', 'retryForMs', 'minDelayMs', 'maxDelayMs'] as const) {
    for (const value of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5' as unknown as number]) {
      const err = t.throws(() => c.reporter({ [name]: value }), { instanceOf: RangeError }, `${name} ${value}`);
      t.is(err?.message, `${name} must be a number of milliseconds, 0 or more`);
    }
  }
  for (const name of ['batchSize', 'maxQueued'] as const) {
    for (const value of [0, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      const err = t.throws(() => c.reporter({ [name]: value }), { instanceOf: RangeError }, `${name} ${value}`);
      t.is(err?.message, `${name} must be a whole number, 1 or more`);
    }
  }
  for (const value of [0, 1.5, Number.NaN]) {
    const err = t.throws(() => c.reporter({ maxAttempts: value }), { instanceOf: RangeError }, `maxAttempts ${value}`);
    t.is(err?.message, 'maxAttempts must be a whole number, 1 or more, or Infinity');
  }
  const unset: { flushIntervalMs?: number } = {};
  t.notThrows(() => c.reporter({ flushIntervalMs: unset.flushIntervalMs, minDelayMs: 0, maxAttempts: Number.POSITIVE_INFINITY, batchSize: 1 }));
});
