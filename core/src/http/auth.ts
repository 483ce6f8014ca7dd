import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Caller } from '../access/caller.js';
import { unauthorized, VaultError } from '../errors.js';
import { AuthFailureLimiter } from './protection.js';
import type { Vault } from '../vault.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
  interface FastifyContextConfig {
    /** Routes that answer without an API key (health, docs). */
    public?: boolean;
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Every route needs an application's API key unless its config says `public`. */
export function installAuthentication(app: FastifyInstance, vault: Vault): void {
  const failures = new AuthFailureLimiter(vault.config.authFailures.max, vault.config.authFailures.windowMs);
  app.decorateRequest('caller', null as unknown as Caller);
  app.addHook('onRequest', async (request, reply) => {
    // Unknown routes fall through to the 404 handler rather than revealing auth state.
    // Fastify builds routeOptions anew at every read of it.
    const route = request.routeOptions;
    if (route.url === undefined || route.config.public) return;
    const wait = failures.retryAfter(request.ip);
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      throw new VaultError(429, 'Too many failed authentication attempts');
    }
    const key = bearer(request);
    const caller = key === undefined ? undefined : await vault.applications.authenticate(key);
    if (!caller) {
      failures.recordFailure(request.ip);
      throw unauthorized();
    }
    request.caller = caller;
  });
}
