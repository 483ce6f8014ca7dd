/**
 * The HTTP layer: Fastify with declared schemas (which also make the OpenAPI document),
 * authentication, error mapping, and one encapsulated plugin per concept.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
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
import { answerClientError, installErrorHandling, refuseOversizedContinue } from './errors.js';
import { installValidation } from './validation.js';
import { installJsonParser } from './json.js';
import { installProtection } from './protection.js';
import { installDraining } from './shutdown.js';
import { errorBody } from './errors.js';
import { idDigester, RequestLog } from './request-log.js';
import { requestLoggerFactory } from './request-logger.js';
import { documentCommonAnswers } from './openapi.js';
import { opsRoutes } from '../ops/routes.js';
import { statsRoutes } from '../stats/routes.js';
import { consolePlugin } from '../console/plugin.js';

export interface ServerOptions {
  logger?: Logger | false;
  /**
   * Called on the bare instance, before any plugin or route: hooks added later do not reach
   * routes already registered in plugins. Tests use it to see what handlers answered before
   * serialisation.
   */
  instrument?: (app: FastifyInstance) => void;
}

/** Header names whose values must never reach a log line. */
export const REDACTED_HEADERS = ['authorization', 'x-encryption-key', 'x-decryption-key'];

/**
 * A request's id: the one a proxy in front gave it (`X-Request-Id`, nginx's `$request_id`), so
 * one request can be followed through both logs, when it is a plain token; else a new UUID.
 * Fastify's default (`req-1`, `req-2`, … per process) repeats across processes and restarts.
 */
const PLAIN_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && PLAIN_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Node's own bounds on receiving a request. Fastify turns Node's request timeout off, which
 * lets a client that trickles a body hold its connection, and the body's buffer, forever.
 * Node looks for late requests every `connectionsCheckingInterval` (30 s by default), so a
 * short timeout needs a shorter interval to be kept.
 */
function receiving(requestTimeoutMs: number): { headersTimeout?: number; connectionsCheckingInterval?: number } {
  if (requestTimeoutMs === 0) return {};
  return { headersTimeout: Math.min(60_000, requestTimeoutMs), connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeoutMs / 4))) };
}

/**
 * Fastify (5.12.8 on) takes a numeric trustProxy as "believe no hop", which would make every
 * client behind the proxy one address (one lockout for all, the proxy's location): a hop
 * count is handed over as the rule it stands for, the last `hops` addresses are proxies.
 */
function proxyTrust(setting: boolean | number | string[]): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === 'number' ? (_address, hop) => hop < setting : setting;
}

export async function buildServer(vault: Vault, options: ServerOptions = {}): Promise<FastifyInstance> {
  const https = vault.config.tls
    ? { key: readFileSync(vault.config.tls.keyPath), cert: readFileSync(vault.config.tls.certPath) }
    : undefined;
  const app = Fastify({
    ...(https ? { https: { ...https, ...receiving(vault.config.requestTimeoutMs) } } : { http: receiving(vault.config.requestTimeoutMs) }),
    requestTimeout: vault.config.requestTimeoutMs,
    loggerInstance: options.logger === false ? undefined : (options.logger ?? vault.logger),
    bodyLimit: vault.config.bodyLimit,
    trustProxy: proxyTrust(vault.config.trustProxy),
    clientErrorHandler: answerClientError,
    // Ids in paths are caller-chosen: the route schemas bound them with their own 400, so
    // the router's limit only has to be above any URL Node accepts (16 KiB of headers).
    routerOptions: { maxParamLength: 65_536, ignoreTrailingSlash: true },
    ajv: { customOptions: { strict: false } },
    // Fastify's request lines would carry the raw URL, and with it the ids in the path.
    logController: new RequestLog(idDigester(vault.indexKey)),
    childLoggerFactory: requestLoggerFactory,
    genReqId: requestId,
    // Refusals before routing (a path that is not percent-encoded UTF-8, a parameter past the
    // router's limit): Fastify's own answers would echo the path back.
    frameworkErrors: (err, request, reply) => {
      const known: Record<string, string> = { FST_ERR_BAD_URL: 'Path is not valid UTF-8', FST_ERR_MAX_PARAM_LENGTH: 'Path parameter is too long' };
      const status = known[err.code] ? 400 : (err.statusCode ?? 500);
      void (reply as FastifyReply).code(status).header('x-request-id', request.id).send(errorBody(status, known[err.code] ?? STATUS_CODES[status] ?? 'Error'));
      // Neither the hooks nor the request log see a request refused before routing: counted
      // and logged here, as any other (the path is what was wrong with it: never shown).
      const labels = { method: request.method, route: 'unmatched', status: String(status) };
      vault.metrics.requests.inc(labels);
      vault.metrics.latency.observe(labels, (reply as FastifyReply).elapsedTime / 1000);
      request.log.info({ method: request.method, route: 'unmatched', statusCode: status }, 'request completed');
    },
  }) as unknown as FastifyInstance;
  options.instrument?.(app);
  if (vault.config.trustProxy === true) {
    app.log.warn(
      'VAULT_TRUST_PROXY=true believes every X-Forwarded-For: a client can choose its own address and so evade the ' +
        'failed-login lockout and fool geolocation rules. Set it to the proxy\'s address (or CIDR), or a hop count.',
    );
  }

  refuseOversizedContinue(app.server, vault.config.bodyLimit, app.log);

  // Only JSON bodies: anything else is a 415 rather than a guess.
  app.removeContentTypeParser('text/plain');
  installJsonParser(app);

  installValidation(app);
  installErrorHandling(app);
  installAuthentication(app, vault);
  installDraining(app);
  await installProtection(app, vault.config);
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    vault.metrics.requests.inc(labels);
    vault.metrics.latency.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.addHook('onRoute', documentCommonAnswers);
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
  await app.register(statsRoutes, { vault });
  await app.register(consolePlugin);

  return app;
}
