import test from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { DEFAULT_WEBHOOK_OPTIONS, MAX_CONNECTIONS_PER_RECEIVER, WebhookDelivery } from './webhooks.js';

/** A receiver on 127.0.0.1 that counts the connections it is holding open. */
async function receiver(handle: (req: IncomingMessage, res: ServerResponse) => void) {
  let open = 0;
  let peak = 0;
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    req.resume();
    handle(req, res);
  });
  server.on('connection', (socket) => {
    open++;
    peak = Math.max(peak, open);
    socket.on('close', () => open--);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get peak() {
      return peak;
    },
    get requests() {
      return requests;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('a receiver that never answers holds a bounded number of the vault’s connections, however many alerts wait', async (t) => {
  // Hangs every request: before, each alert in flight opened a socket of its own, and an alert
  // storm ran the vault out of file descriptors (every client connection then reset).
  const hanging = await receiver(() => {});
  const delivery = new WebhookDelivery({ ...DEFAULT_WEBHOOK_OPTIONS, urls: [hanging.url], attempts: 1 }, pino({ level: 'silent' }));
  try {
    for (let i = 0; i < 200; i++) delivery.send(`alert-${i}`, { id: `alert-${i}` });
    const deadline = Date.now() + 2_000;
    while (hanging.requests <= MAX_CONNECTIONS_PER_RECEIVER && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    t.is(hanging.requests, MAX_CONNECTIONS_PER_RECEIVER, 'the others wait for a connection');
    t.is(hanging.peak, MAX_CONNECTIONS_PER_RECEIVER);
  } finally {
    await delivery.close();
    await hanging.stop();
  }
});

test('alerts queued behind a busy receiver are all delivered', async (t) => {
  const slow = await receiver((_req, res) => setTimeout(() => res.end('ok'), 20));
  const delivery = new WebhookDelivery({ ...DEFAULT_WEBHOOK_OPTIONS, urls: [slow.url], attempts: 2, baseDelayMs: 10 }, pino({ level: 'silent' }));
  try {
    for (let i = 0; i < 100; i++) delivery.send(`alert-${i}`, { id: `alert-${i}` });
    await delivery.idle();
    t.is(slow.requests, 100);
    t.true(slow.peak <= MAX_CONNECTIONS_PER_RECEIVER);
  } finally {
    await delivery.close();
    await slow.stop();
  }
});

test('credentials in a webhook URL are sent as basic authentication', async (t) => {
  const authorizations: Array<string | undefined> = [];
  const guarded = await receiver((req, res) => {
    authorizations.push(req.headers.authorization);
    res.statusCode = req.headers.authorization === `Basic ${Buffer.from('vault:p@ss:word').toString('base64')}` ? 204 : 401;
    res.end();
  });
  const url = guarded.url.replace('http://', 'http://vault:p%40ss%3Aword@');
  const delivery = new WebhookDelivery({ ...DEFAULT_WEBHOOK_OPTIONS, urls: [url], attempts: 1 }, pino({ level: 'silent' }));
  try {
    delivery.send('alert-1', { id: 'alert-1' });
    await delivery.idle();
    t.deepEqual(authorizations, [`Basic ${Buffer.from('vault:p@ss:word').toString('base64')}`]);
  } finally {
    await delivery.close();
    await guarded.stop();
  }
});

test('a failing delivery is retried 8 times, as the README says, after its first try', async (t) => {
  const failing = await receiver((_req, res) => {
    res.statusCode = 503;
    res.end();
  });
  // The default number of tries; only the waits are shortened.
  const delivery = new WebhookDelivery({ ...DEFAULT_WEBHOOK_OPTIONS, urls: [failing.url], baseDelayMs: 1, maxDelayMs: 4 }, pino({ level: 'silent' }));
  try {
    delivery.send('alert-1', { id: 'alert-1' });
    await delivery.idle();
    t.is(failing.requests, 1 + 8);
  } finally {
    await delivery.close();
    await failing.stop();
  }
});
