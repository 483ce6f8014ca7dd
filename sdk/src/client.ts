/**
 * The typed client. One method per endpoint, grouped as the interface groups them (a module
 * of `api/` per group); every answer is unwrapped from `{data}`. The private key is attached
 * to value reads and to nothing else; the public key to stores and to nothing else.
 */
import { ActivityApi, AuditApi } from './api/activity.js';
import { ApplicationApi } from './api/applications.js';
import { pages, refusePrivateKey, type CallOptions, type Send } from './api/call.js';
import { DataPointApi, EntityApi } from './api/data.js';
import { DefinitionApi, EntityTypeApi, RegulationApi, TagApi } from './api/registry.js';
import { AlertApi, RuleApi } from './api/rules.js';
import { isVaultApiError, VaultApiError, VaultClientClosedError } from './errors.js';
import { headerForm } from './keys.js';
import { Reporter, type ReporterOptions } from './reporter.js';
import { closedError, Transport, type Request, type Response, type TransportOptions } from './transport.js';
import type { Readiness, SearchQuery, SearchRequest, SearchResult, VaultStats } from './types.js';

export { ActivityApi, AuditApi, ApplicationApi, DataPointApi, EntityApi, DefinitionApi, EntityTypeApi, RegulationApi, TagApi, AlertApi, RuleApi };
export type { CallOptions, ReadOptions, StoreOptions } from './api/call.js';

export interface VaultClientOptions extends TransportOptions {
  /** The application's API key, sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** `X-Encryption-Key` value (base64 of the PEM public key), sent on stores only. */
  encryptionKey?: string;
  /**
   * `X-Decryption-Key` value (base64 of the PEM private key), sent on value reads only.
   * Leave it out in services that only store.
   */
  decryptionKey?: string;
}

/**
 * A 2xx answer whose body is not what every vault answer is (a proxy's text page, an empty
 * or cut-off body) must not reach the caller as `undefined` typed as the resource. It is a
 * VaultApiError, not a VaultNetworkError: an answer arrived, so the request was carried out.
 */
function unusable(request: Request, res: Response<unknown>, lacking: string): VaultApiError {
  const type = res.headers['content-type'];
  // The answer to a request that sent a key (a value read, a store) holds values, cut off or
  // not: an error is logged, so it keeps the answer of other requests only.
  const holdsValues = Object.keys(request.headers ?? {}).some((name) => /^x-(en|de)cryption-key$/i.test(name));
  return new VaultApiError({
    status: res.status,
    message: `The ${res.status} answer (${type === undefined ? 'no content type' : String(type)}) ${lacking}`,
    method: request.method,
    path: request.path.split('?')[0],
    body: holdsValues ? undefined : res.body,
  });
}

function jsonOf<T>(request: Request, res: Response<unknown>): T {
  if (typeof res.body !== 'object' || res.body === null) throw unusable(request, res, 'is not JSON');
  return res.body as T;
}

function dataOf<T>(request: Request, res: Response<unknown>): T {
  const body = jsonOf<{ data?: T }>(request, res);
  if (!('data' in body)) throw unusable(request, res, 'has no data member');
  return body.data as T;
}

function isEmptySearch(err: unknown): boolean {
  return isVaultApiError(err, 404, 'Data Not Found');
}

export class VaultClient {
  readonly entities: EntityApi;
  readonly dataSubjects: EntityApi;
  readonly definitions: DefinitionApi;
  readonly data: DataPointApi;
  readonly regulations: RegulationApi;
  readonly tags: TagApi;
  readonly entityTypes: EntityTypeApi;
  readonly rules: RuleApi;
  readonly audit: AuditApi;
  readonly activity: ActivityApi;
  readonly alerts: AlertApi;
  readonly applications: ApplicationApi;

  // ES private fields: `console.log(vault)`, `util.inspect` and `JSON.stringify` do not show
  // them, and the options hold the API key, the private key and any TLS client key.
  readonly #options: VaultClientOptions;
  readonly #transport: Transport;
  readonly #authorization: string;
  readonly #keys: { encryptionKey?: string; decryptionKey?: string };
  readonly #reporters = new Set<Reporter>();
  #closing: Promise<void> | undefined;

  constructor(options: VaultClientOptions) {
    // An API key is printable ASCII without spaces (the vault's rule), so whitespace around it,
    // such as the newline at the end of a secret's file, is no part of it. Anything else
    // could never sign in, and a control character would fail each request inside undici.
    const apiKey = options.apiKey?.trim();
    if (!apiKey) throw new TypeError('apiKey is required');
    if (!/^[\x21-\x7e]+$/.test(apiKey)) throw new TypeError('apiKey must be printable ASCII, without spaces');
    const keys = { encryptionKey: headerForm(options.encryptionKey, 'encryptionKey'), decryptionKey: headerForm(options.decryptionKey, 'decryptionKey') };
    refusePrivateKey(keys.encryptionKey);
    this.#options = options;
    this.#keys = keys;
    this.#transport = new Transport(options);
    this.#authorization = `Bearer ${apiKey}`;
    const send: Send = async (request) => dataOf(request, await this.exchange(request));
    const raw: Send = async (request) => jsonOf(request, await this.exchange(request));
    this.entities = new EntityApi(send, '/entities', keys);
    this.dataSubjects = new EntityApi(send, '/datasubjects', keys);
    this.definitions = new DefinitionApi(send);
    this.data = new DataPointApi(send, keys);
    this.regulations = new RegulationApi(send);
    this.tags = new TagApi(send);
    this.entityTypes = new EntityTypeApi(send);
    this.rules = new RuleApi(send);
    this.audit = new AuditApi(raw);
    this.activity = new ActivityApi(send);
    this.alerts = new AlertApi(send);
    this.applications = new ApplicationApi(send);
  }

  /** Sends a request with the client's credentials and answers the parsed body. */
  async request<T = unknown>(request: Request): Promise<T> {
    return (await this.exchange<T>(request)).body;
  }

  private exchange<T>(request: Request): Promise<Response<T>> {
    // Refused from the start of close(), not only once its reporters have delivered what they hold.
    if (this.#closing) return Promise.reject(closedError(request, 0));
    return this.#exchange(request);
  }

  /** Without the check: a reporter's last batches go out while close() waits for them. */
  #exchange<T>(request: Request): Promise<Response<T>> {
    // The client's own keys were put in header form when it was made; a key given for one call is here.
    const headers: Record<string, string | undefined> = { ...request.headers, authorization: this.#authorization };
    for (const [name, value] of Object.entries(headers)) {
      const header = name.toLowerCase();
      if (header === 'x-encryption-key' && value !== this.#keys.encryptionKey) headers[name] = headerForm(value, 'encryptionKey');
      if (header === 'x-decryption-key' && value !== this.#keys.decryptionKey) headers[name] = headerForm(value, 'decryptionKey');
    }
    return this.#transport.send<T>({ ...request, headers });
  }

  /**
   * One page of data points matching the query, without values. An empty page is `[]`
   * (the vault's 404 `Data Not Found`).
   */
  async search(request: SearchRequest, options: CallOptions = {}): Promise<SearchResult[]> {
    const call: Request = { method: 'POST', path: '/search', body: request, idempotent: true, signal: options.signal };
    try {
      return dataOf(call, await this.exchange(call));
    } catch (err) {
      if (isEmptySearch(err)) return [];
      throw err;
    }
  }

  /**
   * Every data point matching the query, walking the pages (`pageSize` per request, default
   * 100). The vault pages by offset and offers no cursor: deleting points inside the loop
   * skips others, and points stored meanwhile can repeat one. To delete, collect the ids
   * first, then delete them.
   */
  searchAll(query: SearchQuery, options: CallOptions & { pageSize?: number } = {}): AsyncGenerator<SearchResult, void, undefined> {
    const { pageSize = 100, ...call } = options;
    return pages(pageSize, (page, count) => this.search({ query, page, count }, call));
  }

  /** Liveness: `{status: 'ok'}`. */
  async health(options: CallOptions = {}): Promise<{ status: string }> {
    const call: Request = { method: 'GET', path: '/healthz', idempotent: true, signal: options.signal };
    return jsonOf(call, await this.exchange(call));
  }

  /** Readiness: whether the vault takes traffic (its database answers, migrations applied). */
  async ready(options: CallOptions = {}): Promise<Readiness> {
    const call: Request = { method: 'GET', path: '/readyz', idempotent: true, acceptStatus: [503], signal: options.signal };
    if (this.#closing) throw closedError(call, 0);
    const res = await this.#transport.send(call);
    return { ready: res.status === 200, ...jsonOf<{ status: string; reason?: string }>(call, res) };
  }

  /** Counts of subjects, data points, definitions, rules (and, for admins, applications and recent alerts). */
  async stats(options: CallOptions = {}): Promise<VaultStats> {
    const call: Request = { method: 'GET', path: '/stats', idempotent: true, signal: options.signal };
    return dataOf(call, await this.exchange(call));
  }

  /** Prometheus metrics text. */
  metrics(options: CallOptions = {}): Promise<string> {
    return this.request({ method: 'GET', path: '/metrics', idempotent: true, signal: options.signal });
  }

  /**
   * A batching reporter of activity events: to the sidecar when `sidecar` is set, else
   * straight to `POST /auditlogs/bulk`. Closed with the client.
   */
  reporter(options: ReporterOptions = {}): Reporter {
    // Its events would be refused one by one, long after the mistake.
    if (this.#closing) throw new VaultClientClosedError({ closed: 'client', message: 'The vault client is closed: it makes no more reporters' });
    const reporter = new Reporter({ request: async <T>(request: Request) => (await this.#exchange<T>(request)).body }, this.#options, options);
    this.#reporters.add(reporter);
    reporter.onClose(() => this.#reporters.delete(reporter));
    return reporter;
  }

  /**
   * Flushes open reporters, then closes the connections. Calls already made are answered
   * first; calls made after it fail with `VaultClientClosedError`. A second close() resolves
   * with the first.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all([...this.#reporters].map((r) => r.close()));
      await this.#transport.close();
    })();
    return this.#closing;
  }
}
