import test from 'ava';
import Fastify from 'fastify';
import pino, { type Logger } from 'pino';
import { requestLoggerFactory } from './request-logger.js';

function capturedLogger(level: string): { logger: Logger; lines: () => Array<Record<string, unknown>>; children: () => number } {
  const written: string[] = [];
  const logger = pino({ level }, { write: (line: string) => void written.push(line) });
  let children = 0;
  const child = logger.child;
  logger.child = function (this: Logger, ...args: Parameters<Logger['child']>) {
    children += 1;
    return child.apply(this, args);
  } as Logger['child'];
  return { logger, lines: () => written.map((l) => JSON.parse(l)), children: () => children };
}

test('a request that logs nothing at the logger’s level makes no child logger', (t) => {
  const { logger, lines, children } = capturedLogger('warn');
  const log = requestLoggerFactory(logger, { reqId: 'req-1' }, {});
  log.info({ route: '/data/:id' }, 'request completed');
  log.debug('details');
  t.is(log.level, 'warn');
  t.deepEqual(lines(), []);
  t.is(children(), 0);
});

test('a line it does log carries the request’s bindings, as pino’s own child would', (t) => {
  const { logger, lines, children } = capturedLogger('info');
  const log = requestLoggerFactory(logger, { reqId: 'req-2' }, {});
  log.info({ route: '/data/:id', statusCode: 200 }, 'request completed');
  log.error(new Error('boom'), 'request failed');
  const [completed, failed] = lines();
  t.like(completed, { reqId: 'req-2', route: '/data/:id', statusCode: 200, msg: 'request completed', level: 30 });
  t.like(failed, { reqId: 'req-2', msg: 'request failed', level: 50 });
  t.is((failed.err as { message: string }).message, 'boom');
  t.is(children(), 1, 'one child, made on the first line and kept');
  log.child({ job: 'x' }).warn('from a child of the request');
  t.like(lines()[2], { reqId: 'req-2', job: 'x', msg: 'from a child of the request' });
});

test('a level set on the request’s logger applies to that request only', (t) => {
  const { logger, lines } = capturedLogger('info');
  const log = requestLoggerFactory(logger, { reqId: 'req-3' }, {});
  log.level = 'debug';
  log.debug('now shown');
  logger.debug('still hidden');
  t.deepEqual(
    lines().map((l) => l.msg),
    ['now shown'],
  );
});

test('a route with its own log level gets it', async (t) => {
  const { logger, lines } = capturedLogger('warn');
  const app = Fastify({ loggerInstance: logger, childLoggerFactory: requestLoggerFactory });
  app.get('/loud', { logLevel: 'info' }, async (request) => {
    request.log.info('from the handler');
    return { ok: true };
  });
  app.get('/quiet', async (request) => {
    request.log.info('from the handler');
    return { ok: true };
  });
  t.is((await app.inject({ url: '/quiet' })).statusCode, 200);
  t.is((await app.inject({ url: '/loud' })).statusCode, 200);
  const shown = lines().filter((l) => l.msg === 'from the handler');
  t.is(shown.length, 1);
  t.regex(String(shown[0].reqId), /^req-/);
  await app.close();
});
