/**
 * The web console at `/console`: static ES modules served by the vault itself (no second
 * server, no CDN, nothing to build). The browser code lives in `core/console/`; Preact and
 * htm come straight from node_modules. Every page is behind a strict Content-Security-Policy:
 * scripts only from this origin and never inline, so an injected string cannot run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

/**
 * `core/console/`, found from the sources (core/src/console/) or from a compiled build
 * (dist/core/src/console/, which holds only JavaScript) by looking up the directory tree.
 */
export const CONSOLE_ROOT = findConsoleRoot(dirname(fileURLToPath(import.meta.url)));

function findConsoleRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    for (const candidate of [join(dir, 'console'), join(dir, 'core', 'console')]) {
      if (existsSync(join(candidate, 'index.html'))) return candidate;
    }
    if (dirname(dir) === dir) return resolve(from, '../../console');
  }
}

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const require = createRequire(import.meta.url);

/**
 * The vendored modules, with the bare `preact` specifier pointed at our own copy: an import
 * map would have to be an inline script, which the CSP forbids.
 */
function vendorModules(): Map<string, string> {
  // Both packages ship their ES builds in dist/; their main entries sit beside them.
  const preactDir = dirname(require.resolve('preact/package.json'));
  const htmDir = resolve(dirname(require.resolve('htm')), '..');
  const relink = (code: string) => code.replace(/from\s*["']preact["']/g, 'from"./preact.js"').replace(/\/\/# sourceMappingURL=\S+/g, '');
  return new Map([
    ['preact.js', relink(readFileSync(join(preactDir, 'dist/preact.module.js'), 'utf8'))],
    ['hooks.js', relink(readFileSync(join(preactDir, 'hooks/dist/hooks.module.js'), 'utf8'))],
    ['htm.js', readFileSync(join(htmDir, 'dist/htm.module.js'), 'utf8')],
  ]);
}

export const consolePlugin: FastifyPluginAsync = async (app) => {
  const vendor = vendorModules();
  const index = readFileSync(join(CONSOLE_ROOT, 'index.html'), 'utf8');

  // The console's files are public: what it shows comes from the API, behind the key.
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config as object), public: true };
    route.schema = { ...route.schema, hide: true };
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('content-security-policy', CONSOLE_CSP);
    reply.header('referrer-policy', 'no-referrer');
    reply.header('cache-control', 'no-cache');
    return payload;
  });

  app.get('/console', async (_request, reply) => reply.type('text/html; charset=utf-8').send(index));
  app.get<{ Params: { file: string } }>('/console/vendor/:file', async (request, reply) => {
    const code = vendor.get(request.params.file);
    if (code === undefined) return reply.callNotFound();
    return reply.type('text/javascript; charset=utf-8').send(code);
  });
  await app.register(fastifyStatic, {
    root: CONSOLE_ROOT,
    prefix: '/console/app/',
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'deny',
    cacheControl: false,
  });
};
