import test from 'ava';
import { resolveConfig } from './config.js';
import type { DeadLetterQueue } from './delivery/dead-letters.js';
import type { DeliveryWorker } from './delivery/worker.js';
import { SidecarMetrics } from './metrics.js';
import type { EventProducer } from './queue/producer.js';
import { buildServer } from './server.js';
import { capturingLogger, makeEvent } from './testing/helpers.js';

/** The sidecar's API over a queue that fails in a way nobody foresaw. */
function failingSidecar() {
  const { logger, lines } = capturingLogger('info');
  const producer = {
    enqueue: async () => {
      throw new TypeError('queue client broke: cannot read properties of undefined');
    },
  } as unknown as EventProducer;
  const app = buildServer({
    config: resolveConfig({ apiKey: 'sidecar-key-secret', prefix: 'unused' }),
    producer,
    deadLetters: {} as DeadLetterQueue,
    worker: {} as DeliveryWorker,
    metrics: new SidecarMetrics(),
    log: logger,
  });
  return { app, lines };
}

test('a failure is answered 500 without detail and logged at error with its stack, under the id the answer carries', async (t) => {
  const { app, lines } = failingSidecar();
  t.teardown(() => app.close());
  const res = await app.inject({ method: 'POST', url: '/events', payload: [makeEvent(1, { data: { attribute: 'EMAIL', value: 'ada@example.org' } } as never)] });
  t.is(res.statusCode, 500);
  t.is(res.json().message, 'Internal Server Error');
  const id = res.headers['x-request-id'];
  t.regex(String(id), /^[0-9a-f-]{36}$/);
  const failed = lines.find((l) => l.msg === 'request failed');
  t.like(failed, { level: 50, reqId: id });
  const err = failed?.err as { type?: string; message?: string; stack?: string };
  t.is(err.type, 'TypeError');
  t.regex(String(err.stack), /server-log\.test\.ts/);
  t.false(JSON.stringify(lines).includes('ada@example.org'));
});

test('every answer of the sidecar carries X-Request-Id', async (t) => {
  const { app } = failingSidecar();
  t.teardown(() => app.close());
  for (const url of ['/healthz', '/no/such/route']) t.regex(String((await app.inject({ url })).headers['x-request-id']), /^[0-9a-f-]{36}$/, url);
  t.is((await app.inject({ url: '/healthz', headers: { 'x-request-id': 'lb-1234' } })).headers['x-request-id'], 'lb-1234');
});
