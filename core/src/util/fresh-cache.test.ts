import test from 'ava';
import { FreshCache } from './fresh-cache.js';

const later = <T>(value: T, ms = 5) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

test('requests that miss together share one load, and its answer is cached', async (t) => {
  const cache = new FreshCache<string, string>(10, 60_000);
  let loads = 0;
  const load = () => {
    loads++;
    return later('row');
  };
  const answers = await Promise.all(Array.from({ length: 20 }, () => cache.get('k', load)));
  t.deepEqual(new Set(answers), new Set(['row']));
  t.is(loads, 1);
  t.is(await cache.get('k', load), 'row');
  t.is(loads, 1);
});

test('a request after an invalidation does not join a load that started before it', async (t) => {
  const cache = new FreshCache<string, string>(10, 60_000);
  const first = cache.get('app', () => later('before the delete', 20));
  cache.delete('app');
  const second = await cache.get('app', () => later(undefined));
  t.is(second, undefined, 'the deleted row is not served from the earlier load');
  t.is(await first, 'before the delete');
  t.is(await cache.get('app', () => later('reloaded')), 'reloaded', 'nor was the earlier load cached');
});

test('a failed load is not cached and the next request tries again', async (t) => {
  const cache = new FreshCache<string, string>(10, 60_000);
  await t.throwsAsync(cache.get('k', () => Promise.reject(new Error('database gone'))), { message: 'database gone' });
  t.is(await cache.get('k', () => later('back')), 'back');
});

test('entries older than the maximum age are read again', async (t) => {
  // Wide enough that a busy machine (the whole suite at once) cannot age the entry between two reads.
  const cache = new FreshCache<string, number>(10, 1000);
  let n = 0;
  const load = () => Promise.resolve(++n);
  t.is(await cache.get('k', load), 1);
  t.is(await cache.get('k', load), 1);
  await later(null, 1100);
  t.is(await cache.get('k', load), 2);
});
