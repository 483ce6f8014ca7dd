/**
 * The HTTP layer: Fastify with declared schemas (which also make the OpenAPI document),
 * authentication, error mapping, and one encapsulated plugin per concept.
 */
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Logger } from 'pino';
import type { Vault } from '../vault.js';
import { applicationRoutes } from '../applications/routes.js';
import { activityRoutes } from '../activity/routes.js';
import { auditRoutes } from '../audit/routes.js';
import { definitionRoutes } from '../definitions/routes.js';
import { dataPointRoutes } from '../datapoints/routes.js';
import { searchRoutes } from '../search/routes.js';
import { entityRoutes } from '../entities/routes.js';
import { entityTypeRoutes } from '../entitytypes/routes.js';
import { ruleRoutes } from '../rules/routes.js';
import { alertRoutes } from '../alerts/routes.js';
import { regulationRoutes } from '../regulations/routes.js';
import { tagRoutes } from '../tags/routes.js';
import { installAuthentication } from './auth.js';
import { installErrorHandling } from './errors.js';
import { installValidation } from './validation.js';
import { installJsonParser } from './json.js';
import { installProtection } from './protection.js';
import { installDraining } from './shutdown.js';
import { opsRoutes } from '../ops/routes.js';

export interface ServerOptions {
  logger?: Logger | false;
}

/** Header names whose values must never reach a log line. */
export const REDACTED_HEADERS = ['authorization', 'x-encryption-key', 'x-decryption-key'];

export async function buildServer(vault: Vault, options: ServerOptions = {}): Promise<FastifyInstance> {
  const https = vault.config.tls
    ? { key: readFileSync(vault.config.tls.keyPath), cert: readFileSync(vault.config.tls.certPath) }
    : undefined;
  const app = Fastify({
    ...(https ? { https } : {}),
    loggerInstance: options.logger === false ? undefined : (options.logger ?? vault.logger),
    bodyLimit: vault.config.bodyLimit,
    trustProxy: vault.config.trustProxy,
    // Ids in paths are caller-chosen and may be long; the schema bounds them instead.
    routerOptions: { maxParamLength: 1024, ignoreTrailingSlash: true },
    ajv: { customOptions: { strict: false } },
  }) as unknown as FastifyInstance;

  // Only JSON bodies: anything else is a 415 rather than a guess.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);

  installValidation(app);
  installErrorHandling(app);
  installAuthentication(app, vault);
  installDraining(app);
  await installProtection(app, vault.config);
  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    vault.metrics.requests.inc(labels);
    vault.metrics.latency.observe(labels, reply.elapsedTime / 1000);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'Sensitive data vault', version: '0.1.0', description: 'Encrypted attribute storage, search, rules and audit logging.' },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } } },
      security: [{ apiKey: [] }],
    },
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...(route.config as object), public: true };
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list' } });
  app.get('/openapi.json', { schema: { hide: true }, config: { public: true } }, async () => app.swagger());

  await app.register(opsRoutes, { vault });
  await app.register(applicationRoutes, { vault });
  await app.register(auditRoutes, { vault });
  await app.register(activityRoutes, { vault });
  await app.register(entityTypeRoutes, { vault });
  await app.register(ruleRoutes, { vault });
  await app.register(alertRoutes, { vault });
  await app.register(tagRoutes, { vault });
  await app.register(regulationRoutes, { vault });
  await app.register(definitionRoutes, { vault });
  await app.register(entityRoutes, { vault });
  await app.register(dataPointRoutes, { vault });
  await app.register(searchRoutes, { vault });

  return app;
}
