import { createServer, connect as netConnect, type Socket } from 'node:net';
import test from 'ava';
import { FakeVault } from '../testing/fake-vault.js';
import { cleanupRedis, makeEvent, postEvents, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

// A TCP relay to Redis that, once armed, passes the next moveToActive on but drops its reply and
// cuts the connection: ioredis then resends it, and without recovery the first job is orphaned.
test('a fetch whose reply was lost with the connection (Redis ran it, then went away) is still delivered, in order', async (t) => {
  const state = { armed: false, dropped: 0 };
  const server = createServer((client: Socket) => {
    const upstream = netConnect(6379, '127.0.0.1');
    let dropping = false;
    client.on('data', (chunk) => {
      const s = chunk.toString('latin1');
      if (state.armed && s.includes(':wait') && s.includes(':active') && s.includes(':prioritized') && !s.includes(':completed')) {
        state.armed = false;
        dropping = true;
        state.dropped++;
        upstream.write(chunk);
        setTimeout(() => { client.destroy(); upstream.destroy(); }, 20);
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => { if (!dropping) client.write(chunk); });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('lostreply');
  const sidecar = await startTestSidecar({ apiKey: vault.apiKey, vaultUrl: vault.url, prefix, redisUrl: `redis://127.0.0.1:${port}`, batchSize: 50 });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    server.close();
    await cleanupRedis(prefix);
  });
  const accepted: string[] = [];
  let a = await postEvents(sidecar.url, [makeEvent(0)]);
  accepted.push(...a.body.accepted.map((x) => x.eventId));
  await waitFor(() => vault.records.length >= 1, { message: 'first' });
  state.armed = true;
  for (let r = 1; r <= 3; r++) {
    a = await postEvents(sidecar.url, [makeEvent(r)]);
    t.is(a.status, 202);
    accepted.push(...a.body.accepted.map((x) => x.eventId));
  }
  await waitFor(() => vault.records.length >= accepted.length, { timeoutMs: 10_000, message: `all recorded (dropped ${state.dropped})` });
  t.is(state.dropped, 1);
  t.deepEqual(vault.recordedIds(), accepted);
});
