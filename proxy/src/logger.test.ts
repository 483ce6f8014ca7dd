import { Writable } from 'node:stream';
import test from 'ava';
import { createLogger } from './logger.js';

test('event values, whole events, the API key and the ingest token are redacted even if code logs them', (t) => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const log = createLogger('info', sink);
  log.info({ apiKey: 'k-secret', config: { apiKey: 'k-secret', ingestToken: 't-secret' } }, 'config');
  log.info({ event: { data: { value: 'v-secret' } }, events: [{ data: { value: 'v-secret' } }] }, 'events');
  log.info({ data: { value: 'v-secret', attribute: 'email' }, req: { headers: { authorization: 'Bearer k-secret' } } }, 'request');
  log.info({ eventId: 'e-1', eventCount: 3 }, 'ids and counts stay');
  const text = lines.join('');
  t.false(text.includes('k-secret'));
  t.false(text.includes('t-secret'));
  t.false(text.includes('v-secret'));
  t.true(text.includes('"attribute":"email"'));
  t.true(text.includes('"eventId":"e-1"') && text.includes('"eventCount":3'));
});
