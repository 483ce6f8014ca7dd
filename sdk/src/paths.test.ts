/**
 * Ids and keys as callers pass them, odd ones included: each reaches the path of the
 * operation called and never another endpoint's. An empty one, which would spell another
 * endpoint's path (`/entities/` is the list), is refused before anything is sent.
 */
import test from 'ava';
import type { VaultClient } from './client.js';
import { startRecordingProxy, type RecordingProxy } from './testing/proxy.js';
import { startSdkVault, unique, type SdkTestVault } from './testing/vault.js';

let v: SdkTestVault;
let proxy: RecordingProxy;
let c: VaultClient;
test.before(async () => {
  v = await startSdkVault();
  proxy = await startRecordingProxy(v.proc.url);
  c = v.client({ url: proxy.url });
});
test.after.always(async () => {
  await proxy?.close();
  await v?.dispose();
});

/** Every method that puts a caller's id or key in the path, given an empty one where `empty` says. */
function callsWithEmpty(empty: 'first' | 'second'): Array<[string, () => Promise<unknown>]> {
  const [a, b] = empty === 'first' ? ['', 'EMAIL'] : ['alice', ''];
  const calls: Array<[string, () => Promise<unknown>]> = [];
  for (const group of ['entities', 'dataSubjects'] as const) {
    const api = c[group];
    calls.push([`${group}.getAttribute`, () => api.getAttribute(a, b)], [`${group}.deleteAttribute`, () => api.deleteAttribute(a, b)]);
    if (empty === 'second') continue;
    calls.push(
      [`${group}.get`, () => api.get(a)],
      [`${group}.storeAttributes`, () => api.storeAttributes(a, [{ attribute: 'EMAIL', value: 'x' }])],
      [`${group}.getAttributes`, () => api.getAttributes(a)],
      [`${group}.purge`, () => api.purge(a)],
    );
  }
  if (empty === 'second') return calls;
  for (const group of ['definitions', 'regulations', 'tags', 'entityTypes', 'rules'] as const) {
    calls.push([`${group}.get`, () => c[group].get(a)], [`${group}.delete`, () => c[group].delete(a)]);
  }
  calls.push(
    ['data.get', () => c.data.get(a)],
    ['data.delete', () => c.data.delete(a)],
    ['applications.get', () => c.applications.get(a)],
    ['applications.update', () => c.applications.update(a, { name: 'x' })],
    ['applications.rollKey', () => c.applications.rollKey(a)],
    ['applications.delete', () => c.applications.delete(a)],
  );
  return calls;
}

test.serial('an empty id or key is a TypeError naming it, and nothing is sent (it would reach another endpoint)', async (t) => {
  await c.definitions.save({ key: 'EMAIL' });
  await c.dataSubjects.storeAttributes('alice', [{ attribute: 'EMAIL', value: 'alice@example.org' }]);
  const names: Record<string, string> = {
    getAttribute: 'entityId',
    storeAttributes: 'entityId',
    getAttributes: 'entityId',
    deleteAttribute: 'entityId',
    purge: 'entityId',
  };
  for (const empty of ['first', 'second'] as const) {
    for (const [name, call] of callsWithEmpty(empty)) {
      proxy.requests.length = 0;
      const [group, method] = name.split('.');
      const expected =
        empty === 'second'
          ? 'attributeKey'
          : (names[method] ?? { entities: 'entityId', dataSubjects: 'entityId', data: 'dataPointId', applications: 'id', tags: 'name' }[group] ?? 'key');
      // A rejection, not a throw: `.catch()` and `await` alike see it.
      const err = await t.throwsAsync(call(), { instanceOf: TypeError }, name);
      t.is(err?.message, `${expected} must be a non-empty string`, name);
      t.deepEqual(proxy.requests, [], `${name} sent nothing`);
    }
  }
  t.is((await c.dataSubjects.getAttribute('alice', 'EMAIL')).length, 1, 'the value is still there');
});

test('ids and keys with path and query characters, dots and unicode reach their own path', async (t) => {
  const odd = ['a/b', 'q?x=1', 'h#frag', '100%', '%2F', 'ü ünicode ✓', '..', '.', 'a/../b', 'me'];
  const email = unique('EMAIL');
  await c.definitions.save({ key: email });
  for (const id of odd) {
    const subject = `${unique('s')}${id}`;
    const [stored] = await c.dataSubjects.storeAttributes(subject, [{ attribute: email, value: id }]);
    t.is(stored.entityId, subject);
    t.is((await c.dataSubjects.get(subject)).id, subject);
    t.deepEqual((await c.entities.getAttribute<string>(subject, email)).map((p) => p.value), [id]);
    t.deepEqual((await c.dataSubjects.getAttributes(subject)).map((p) => p.dataPointId), [stored.dataPointId]);
    t.is((await c.data.get(stored.dataPointId)).value, id);

    const tag = await c.tags.save(`tag ${id}`);
    t.is((await c.tags.get(tag.name)).name, `tag ${id}`);
    t.is(await c.tags.delete(tag.name), 'Successfully Deleted Tag');

    t.is(await c.dataSubjects.deleteAttribute(subject, email), 'Successfully Deleted Data Point');
    await c.dataSubjects.purge(subject);
  }
});
