import test from 'ava';
import { AbortedError, Notifier, abortable, backoffDelay, sleep } from './backoff.js';

test('backoff doubles from the base, stays within [ceiling/2, ceiling] and is capped', (t) => {
  t.is(backoffDelay(1, 100, 10_000, () => 0), 50);
  t.is(backoffDelay(1, 100, 10_000, () => 1), 100);
  t.is(backoffDelay(4, 100, 10_000, () => 1), 800);
  t.is(backoffDelay(4, 100, 10_000, () => 0), 400);
  t.is(backoffDelay(50, 100, 10_000, () => 1), 10_000);
  t.is(backoffDelay(5000, 100, 10_000, () => 0.5), 7500);
});

test('sleep and abortable give up with AbortedError on abort', async (t) => {
  const controller = new AbortController();
  const sleeping = sleep(60_000, controller.signal);
  const waiting = abortable(new Promise(() => {}), controller.signal);
  controller.abort();
  await t.throwsAsync(sleeping, { instanceOf: AbortedError });
  await t.throwsAsync(waiting, { instanceOf: AbortedError });
  await t.throwsAsync(sleep(1, controller.signal), { instanceOf: AbortedError });
  t.is(await abortable(Promise.resolve(3), new AbortController().signal), 3);
});

test('notifier wakes waiters on notify, timeout or abort', async (t) => {
  const notifier = new Notifier();
  const controller = new AbortController();
  const woken = notifier.wait(controller.signal);
  notifier.notify();
  await woken;
  await notifier.wait(controller.signal, 5);
  const aborted = notifier.wait(controller.signal);
  controller.abort();
  await aborted;
  t.pass();
});
