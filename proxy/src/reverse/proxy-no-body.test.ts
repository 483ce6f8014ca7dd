import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { request } from 'undici';
import { FakeVault } from '../testing/fake-vault.js';
import { capturingLogger, cleanupRedis, metricValue, startTestSidecar, uniquePrefix, waitFor } from '../testing/helpers.js';

test('answers that have no body by definition (HEAD, 204) lose no events and raise no warning', async (t) => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'PUT') {
        res.writeHead(204);
        return res.end();
      }
      const body = JSON.stringify({ id: 'u-1', email: 'u-1@example.test' });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(join(tmpdir(), 'proxy-no-body-'));
  const routesFile = join(dir, 'routes.json');
  // Routes as a service with Express's habits is audited: GET answers HEAD too, a PUT may answer 204.
  writeFileSync(routesFile, JSON.stringify({
    applicationId: 'crm',
    routes: [
      { method: ['GET', 'HEAD'], path: '/users/:id', eventType: 'READ', subjectId: { param: 'id' }, attributes: { email: { response: '/email' } } },
      { method: 'PUT', path: '/users/:id', eventType: 'UPDATE', subjectId: { param: 'id' }, attributes: { email: { response: '/email' } } },
    ],
  }));
  const vault = new FakeVault();
  await vault.start();
  const prefix = uniquePrefix('proxy-no-body');
  const { logger, lines } = capturingLogger();
  const sidecar = await startTestSidecar({
    apiKey: vault.apiKey, vaultUrl: vault.url, prefix, upstream: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, routesFile, batchMs: 10,
  }, { logger });
  t.teardown(async () => {
    await sidecar.close();
    await vault.stop();
    await cleanupRedis(prefix);
    server.closeAllConnections();
    server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const head = await request(`${sidecar.proxyUrl}/users/u-1`, { method: 'HEAD' });
  t.is(head.statusCode, 200);
  t.is(head.headers['content-length'], '39', 'the length of the GET body, as the upstream said');
  await head.body.dump();
  const put = await request(`${sidecar.proxyUrl}/users/u-1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is(put.statusCode, 204);
  await put.body.dump();
  // Then a GET, whose event shows the ones before it were handled.
  const get = await request(`${sidecar.proxyUrl}/users/u-1`);
  t.is(get.statusCode, 200);
  await get.body.dump();
  await waitFor(() => vault.records.length > 0, { message: "the GET's event" });
  t.deepEqual(vault.records.map((e) => [e.eventType, e.subjectId, e.data?.attribute]), [['READ', 'u-1', 'email']]);
  t.is(await metricValue(sidecar.url, 'sidecar_proxy_events_lost_total'), 0);
  t.deepEqual(lines.filter((l) => l.msg.startsWith('events lost')), []);
});
