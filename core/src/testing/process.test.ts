/**
 * spawnVault must hand a test its own vault: test files run side by side, and another one's
 * server can take the port freePort() released before the new vault listens on it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { spawnVault } from './process.js';

test("a port another process's server holds is not taken for the vault's, even though that server answers", async (t) => {
  // Answers the readiness probe as any vault would, and refuses this vault's admin key.
  const foreign = createServer((req, res) => {
    res.writeHead(req.url === '/openapi.json' ? 200 : 401, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => foreign.close(() => resolve())));
  const port = (foreign.address() as AddressInfo).port;
  const refused = await t.throwsAsync(spawnVault({ port }));
  t.regex(refused!.message, new RegExp(`127\\.0\\.0\\.1:${port} is another process's vault|port ${port} was taken`));
});
