/**
 * The typed client. One method per endpoint, grouped as the interface groups them; every
 * answer is unwrapped from `{data}`. The private key is attached to value reads and to
 * nothing else; the public key to stores and to nothing else.
 */
import { isVaultApiError, VaultApiError } from './errors.js';
import { checkKeyForm, isPrivateKey } from './keys.js';
import { Reporter, type ReporterOptions } from './reporter.js';
import { Transport, type Request, type Response, type TransportOptions } from './transport.js';
import type {
  ActivityFilter,
  ActivityHead,
  ActivityRecord,
  ActivitySummary,
  ActivityVerification,
  Alert,
  AlertFilter,
  Application,
  ApplicationChanges,
  ApplicationInput,
  AttributeDefinition,
  AttributeDefinitionInput,
  AttributeInput,
  CreatedApplication,
  DataPoint,
  Entity,
  EntityInput,
  EntityType,
  EntityTypeInput,
  ExternalActivityEvent,
  Readiness,
  VaultStats,
  Regulation,
  RegulationInput,
  Rule,
  RuleInput,
  SearchQuery,
  SearchRequest,
  SearchResult,
  RollKeyOptions,
  StorageRequest,
  Tag,
} from './types.js';

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

export interface CallOptions {
  signal?: AbortSignal;
}

export interface StoreOptions extends CallOptions {
  /** Overrides the client's encryption key for this call. */
  encryptionKey?: string;
}

export interface ReadOptions extends CallOptions {
  /** Overrides the client's decryption key for this call. */
  decryptionKey?: string;
}

const seg = encodeURIComponent;

/** The encryption key travels on every store: it must never be the private half. */
function refusePrivateKey(encryptionKey: string | undefined): void {
  if (encryptionKey !== undefined && isPrivateKey(encryptionKey)) {
    throw new TypeError('encryptionKey holds a private key; stores take the public key, and the private key is only sent on reads');
  }
}

type Send = <T>(request: Request) => Promise<T>;

/** `/entities` and `/datasubjects`: the same operations under two path forms. */
export class EntityApi {
  constructor(
    private readonly send: Send,
    private readonly base: '/entities' | '/datasubjects',
    private readonly keys: { encryptionKey?: string; decryptionKey?: string },
  ) {}

  /** Creates the entity or updates its metadata (tags, legal hold). */
  save(entity: EntityInput, options: CallOptions = {}): Promise<Entity> {
    // Create-or-update by id: sending it twice leaves the same entity.
    return this.send({ method: 'POST', path: this.base, body: entity, idempotent: true, signal: options.signal });
  }

  /** All entities (all data subjects on `/datasubjects`), ordered by id; one page when `page` or `count` is given. */
  list(options: CallOptions & { page?: number; count?: number } = {}): Promise<Entity[]> {
    return this.send({ method: 'GET', path: this.base, query: { page: options.page, count: options.count }, idempotent: true, signal: options.signal });
  }

  /**
   * Every entity, a page of `pageSize` (default 100) per request. The vault pages by offset
   * and offers no cursor: deleting (or purging) entities inside the loop skips others, and
   * entities others create meanwhile can repeat one. To delete, collect the ids first, then
   * delete them.
   */
  all(options: CallOptions & { pageSize?: number } = {}): AsyncGenerator<Entity, void, undefined> {
    return pages(options.pageSize ?? 100, (page, count) => this.list({ page, count, signal: options.signal }));
  }

  /** 404 `Not found` when absent; on `/datasubjects`, 400 `Entity is not a data subject`. */
  get(entityId: string, options: CallOptions = {}): Promise<Entity> {
    return this.send({ method: 'GET', path: `${this.base}/${seg(entityId)}`, idempotent: true, signal: options.signal });
  }

  /**
   * Stores attribute values, encrypted under the public key. Retried only when the
   * connection was refused (nothing was sent): a repeatable attribute stored twice holds two values.
   */
  async storeAttributes(entityId: string, request: StorageRequest | AttributeInput[], options: StoreOptions = {}): Promise<DataPoint[]> {
    const body: StorageRequest = Array.isArray(request) ? { data: request } : request;
    const encryptionKey = options.encryptionKey ?? this.keys.encryptionKey;
    refusePrivateKey(encryptionKey);
    return this.send({
      method: 'POST',
      path: `${this.base}/${seg(entityId)}/attributes`,
      body,
      headers: { 'x-encryption-key': encryptionKey },
      idempotent: false,
      signal: options.signal,
    });
  }

  /** The values of one attribute, decrypted. 404 `Data Not Found` when there are none. */
  getAttribute<V = DataPoint['value']>(entityId: string, attributeKey: string, options: ReadOptions = {}): Promise<DataPoint<V>[]> {
    return this.send({
      method: 'GET',
      path: `${this.base}/${seg(entityId)}/attributes/${seg(attributeKey)}`,
      headers: { 'x-decryption-key': options.decryptionKey ?? this.keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Every attribute the application may read (or only `attributes`), decrypted. */
  getAttributes(entityId: string, options: ReadOptions & { attributes?: string[] } = {}): Promise<DataPoint[]> {
    return this.send({
      method: 'GET',
      path: `${this.base}/${seg(entityId)}/attributes`,
      query: { attributes: options.attributes?.join(',') },
      headers: { 'x-decryption-key': options.decryptionKey ?? this.keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  /** Deletes every value of the attribute. */
  deleteAttribute(entityId: string, attributeKey: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `${this.base}/${seg(entityId)}/attributes/${seg(attributeKey)}`, idempotent: true, signal: options.signal });
  }

  /** Deletes all data of the entity and the entity itself; its activity history stays. */
  purge(entityId: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `${this.base}/${seg(entityId)}/data`, idempotent: true, signal: options.signal });
  }
}

/** Attribute definitions (`/attributes`). */
export class DefinitionApi {
  constructor(private readonly send: Send) {}

  /** Creates or updates the definition with that key. */
  save(definition: AttributeDefinitionInput, options: CallOptions = {}): Promise<AttributeDefinition> {
    return this.send({ method: 'POST', path: '/attributes', body: definition, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<AttributeDefinition[]> {
    return this.send({ method: 'GET', path: '/attributes', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<AttributeDefinition> {
    return this.send({ method: 'GET', path: `/attributes/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/attributes/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}

/** Data points by id (`/data/{dataPointId}`). */
export class DataPointApi {
  constructor(
    private readonly send: Send,
    private readonly keys: { decryptionKey?: string },
  ) {}

  get<V = DataPoint['value']>(dataPointId: string, options: ReadOptions = {}): Promise<DataPoint<V>> {
    return this.send({
      method: 'GET',
      path: `/data/${seg(dataPointId)}`,
      headers: { 'x-decryption-key': options.decryptionKey ?? this.keys.decryptionKey },
      idempotent: true,
      signal: options.signal,
    });
  }

  delete(dataPointId: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/data/${seg(dataPointId)}`, idempotent: true, signal: options.signal });
  }
}

export class RegulationApi {
  constructor(private readonly send: Send) {}

  /** Creates or updates by key; answers `Regulation created` or `Regulation updated`. */
  save(regulation: RegulationInput, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'POST', path: '/regulations', body: regulation, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Regulation[]> {
    return this.send({ method: 'GET', path: '/regulations', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<Regulation> {
    return this.send({ method: 'GET', path: `/regulations/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/regulations/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}

export class TagApi {
  constructor(private readonly send: Send) {}

  /** Creates the tag, or touches the one with that name. */
  save(name: string, options: CallOptions = {}): Promise<Tag> {
    return this.send({ method: 'POST', path: '/tags', body: { name }, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Tag[]> {
    return this.send({ method: 'GET', path: '/tags', idempotent: true, signal: options.signal });
  }

  get(name: string, options: CallOptions = {}): Promise<Tag> {
    return this.send({ method: 'GET', path: `/tags/${seg(name)}`, idempotent: true, signal: options.signal });
  }

  /** Removes the tag everywhere; 409 when a rule references it. */
  delete(name: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/tags/${seg(name)}`, idempotent: true, signal: options.signal });
  }
}

export class EntityTypeApi {
  constructor(private readonly send: Send) {}

  save(entityType: EntityTypeInput, options: CallOptions = {}): Promise<EntityType> {
    return this.send({ method: 'POST', path: '/entitytypes', body: entityType, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<EntityType[]> {
    return this.send({ method: 'GET', path: '/entitytypes', idempotent: true, signal: options.signal });
  }

  get(key: string, options: CallOptions = {}): Promise<EntityType> {
    return this.send({ method: 'GET', path: `/entitytypes/${seg(key)}`, idempotent: true, signal: options.signal });
  }

  delete(key: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/entitytypes/${seg(key)}`, idempotent: true, signal: options.signal });
  }
}

export class RuleApi {
  constructor(private readonly send: Send) {}

  /**
   * Creates or updates by key; answers `Rule created` or `Rule updated`. Retried on
   * connection errors: an update keeps the rule's place in the order, so a resent save
   * leaves the same rule (answered `Rule updated` if the first one had landed).
   */
  save(rule: RuleInput, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'POST', path: '/rules', body: rule, idempotent: true, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Rule[]> {
    return this.send({ method: 'GET', path: '/rules', idempotent: true, signal: options.signal });
  }

  /** By key, then by name. */
  get(keyOrName: string, options: CallOptions = {}): Promise<Rule> {
    return this.send({ method: 'GET', path: `/rules/${seg(keyOrName)}`, idempotent: true, signal: options.signal });
  }

  delete(keyOrName: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/rules/${seg(keyOrName)}`, idempotent: true, signal: options.signal });
  }
}

const hasEventId = (event: ExternalActivityEvent) => typeof event.eventId === 'string' && event.eventId.length > 0;

/** Report-only audit logs: activity on data kept outside the vault. */
export class AuditApi {
  constructor(private readonly rawSend: <T>(request: Request) => Promise<T>) {}

  /**
   * Records one event and answers its summary. Retried on connection errors when the event
   * carries an `eventId` (the vault records an id once), otherwise only when the connection
   * was refused (nothing was sent).
   */
  log(event: ExternalActivityEvent, options: CallOptions = {}): Promise<ActivitySummary> {
    return this.rawSend({ method: 'POST', path: '/auditlogs', body: event, idempotent: hasEventId(event), signal: options.signal });
  }

  /**
   * Records events atomically: on the first failing event nothing is recorded and the
   * VaultApiError's `index` names it. Retried on connection errors when every event carries an
   * `eventId`, otherwise only when the connection was refused.
   */
  logBulk(events: ExternalActivityEvent[], options: CallOptions = {}): Promise<ActivitySummary[]> {
    return this.rawSend({ method: 'POST', path: '/auditlogs/bulk', body: events, idempotent: events.every(hasEventId), signal: options.signal });
  }
}

/** Iterates pages until a short or empty page; `fetchPage` returns `[]` for "no more". */
async function* pages<T>(pageSize: number, fetchPage: (page: number, count: number) => Promise<T[]>): AsyncGenerator<T, void, undefined> {
  for (let page = 0; ; page++) {
    const items = await fetchPage(page, pageSize);
    yield* items;
    if (items.length < pageSize) return;
  }
}

export class ActivityApi {
  constructor(private readonly send: Send) {}

  /** One page of the activity log, oldest first unless `order: 'newest'`. */
  list(filter: ActivityFilter = {}, options: CallOptions = {}): Promise<ActivityRecord[]> {
    return this.send({ method: 'GET', path: '/activity', query: { ...filter }, idempotent: true, signal: options.signal });
  }

  /**
   * Every matching record sealed when the walk starts (`head()` seals what is pending), each
   * once, walking the pages. Records added meanwhile, including the READs the loop's own
   * reads append, are left for the next walk (`fromSequence`: the last `sequence` seen + 1).
   */
  all(filter: Omit<ActivityFilter, 'page'> = {}, options: CallOptions = {}): AsyncGenerator<ActivityRecord, void, undefined> {
    return this.walkSnapshot(filter, options);
  }

  private async *walkSnapshot(filter: Omit<ActivityFilter, 'page'>, options: CallOptions): AsyncGenerator<ActivityRecord, void, undefined> {
    // Offset paging over a growing log never meets a short page when every read adds a
    // record, and repeats entries under `newest`. The sealed range up to the head never changes.
    const head = await this.head(options);
    const toSequence = Math.min(filter.toSequence ?? head.sequence, head.sequence);
    if (toSequence < 1 || toSequence < (filter.fromSequence ?? 1)) return;
    yield* pages(filter.count ?? 100, (page, count) => this.list({ ...filter, toSequence, page, count }, options));
  }

  /**
   * Recomputes the log's hash chain and reports the first broken record. Given a head kept
   * from `head()` (the object, or `SEQUENCE:HASH`), also whether the log still holds that
   * record unchanged (`headMatches`; `valid` is false when it does not).
   */
  verify(head?: ActivityHead | string, options: CallOptions = {}): Promise<ActivityVerification> {
    const query = head === undefined ? undefined : { head: typeof head === 'string' ? head : `${head.sequence}:${head.hash}` };
    return this.send({ method: 'GET', path: '/activity/verify', query, idempotent: true, signal: options.signal });
  }

  /** The chain head (after sealing pending records): keep it outside the database. */
  head(options: CallOptions = {}): Promise<ActivityHead> {
    return this.send({ method: 'GET', path: '/activity/head', idempotent: true, signal: options.signal });
  }
}

export class AlertApi {
  constructor(private readonly send: Send) {}

  list(filter: AlertFilter = {}, options: CallOptions = {}): Promise<Alert[]> {
    return this.send({ method: 'GET', path: '/alerts', query: { ...filter }, idempotent: true, signal: options.signal });
  }

  all(filter: Omit<AlertFilter, 'page'> = {}, options: CallOptions = {}): AsyncGenerator<Alert, void, undefined> {
    return pages(filter.count ?? 100, (page, count) => this.list({ ...filter, page, count }, options));
  }
}

export class ApplicationApi {
  constructor(private readonly send: Send) {}

  /** Creates an application; the answer carries its API key, shown this once. Retried only when the connection was refused. */
  create(application: ApplicationInput, options: CallOptions = {}): Promise<CreatedApplication> {
    return this.send({ method: 'POST', path: '/applications', body: application, idempotent: false, signal: options.signal });
  }

  list(options: CallOptions = {}): Promise<Application[]> {
    return this.send({ method: 'GET', path: '/applications', idempotent: true, signal: options.signal });
  }

  /** The application whose key this client holds: its attributes and admin flag. Any key may ask. */
  me(options: CallOptions = {}): Promise<Application> {
    return this.send({ method: 'GET', path: '/applications/me', idempotent: true, signal: options.signal });
  }

  get(id: string, options: CallOptions = {}): Promise<Application> {
    return this.send({ method: 'GET', path: `/applications/${seg(id)}`, idempotent: true, signal: options.signal });
  }

  /** Changes name, attributes or admin in place; every vault process applies it within a second. */
  update(id: string, changes: ApplicationChanges, options: CallOptions = {}): Promise<Application> {
    return this.send({ method: 'PATCH', path: `/applications/${seg(id)}`, body: changes, idempotent: true, signal: options.signal });
  }

  /**
   * Gives the application a new API key, answered this once. Retried only when the connection
   * was refused: a lost answer would leave a key nobody holds, and the old one ended.
   */
  rollKey(id: string, roll: RollKeyOptions = {}, options: CallOptions = {}): Promise<CreatedApplication> {
    return this.send({ method: 'POST', path: `/applications/${seg(id)}/key`, body: roll, idempotent: false, signal: options.signal });
  }

  delete(id: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/applications/${seg(id)}`, idempotent: true, signal: options.signal });
  }
}

/**
 * A 2xx answer whose body is not what every vault answer is (a proxy's text page, an empty
 * or cut-off body) must not reach the caller as `undefined` typed as the resource. It is a
 * VaultApiError, not a VaultNetworkError: an answer arrived, so the request was carried out.
 */
function unusable(request: Request, res: Response<unknown>, lacking: string): VaultApiError {
  const type = res.headers['content-type'];
  return new VaultApiError({
    status: res.status,
    message: `The ${res.status} answer (${type === undefined ? 'no content type' : String(type)}) ${lacking}`,
    method: request.method,
    path: request.path.split('?')[0],
    body: res.body,
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

  private readonly transport: Transport;
  private readonly authorization: string;
  private readonly reporters = new Set<Reporter>();

  constructor(private readonly options: VaultClientOptions) {
    if (!options.apiKey) throw new TypeError('apiKey is required');
    checkKeyForm(options.encryptionKey, 'encryptionKey');
    checkKeyForm(options.decryptionKey, 'decryptionKey');
    refusePrivateKey(options.encryptionKey);
    this.transport = new Transport(options);
    this.authorization = `Bearer ${options.apiKey}`;
    const keys = { encryptionKey: options.encryptionKey, decryptionKey: options.decryptionKey };
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
    // The client's own keys were checked when it was made; a key given for one call is checked here.
    for (const [name, value] of Object.entries(request.headers ?? {})) {
      const header = name.toLowerCase();
      if (header === 'x-encryption-key' && value !== this.options.encryptionKey) checkKeyForm(value, 'encryptionKey');
      if (header === 'x-decryption-key' && value !== this.options.decryptionKey) checkKeyForm(value, 'decryptionKey');
    }
    return this.transport.send<T>({ ...request, headers: { ...request.headers, authorization: this.authorization } });
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
    const res = await this.transport.send(call);
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
    const reporter = new Reporter(this, this.options, options);
    this.reporters.add(reporter);
    reporter.onClose(() => this.reporters.delete(reporter));
    return reporter;
  }

  /** Flushes open reporters, then closes the connections. */
  async close(): Promise<void> {
    await Promise.all([...this.reporters].map((r) => r.close()));
    await this.transport.close();
  }
}
