export {
  VaultClient,
  EntityApi,
  DefinitionApi,
  DataPointApi,
  RegulationApi,
  TagApi,
  EntityTypeApi,
  RuleApi,
  AuditApi,
  ActivityApi,
  AlertApi,
  ApplicationApi,
  type VaultClientOptions,
  type CallOptions,
  type StoreOptions,
  type ReadOptions,
} from './client.js';
export { VaultAbortError, VaultApiError, VaultClientClosedError, VaultKeyError, VaultNetworkError, isVaultApiError } from './errors.js';
export { Reporter, DEFAULT_SIDECAR_URL, type ReporterOptions, type ReporterStats, type ReportableEvent, type StampedEvent } from './reporter.js';
export type { RetryOptions, TransportOptions, Request, Response } from './transport.js';
export { generateKeyPair, isPrivateKey, loadKeyFiles, loadKeysFromEnv, saveKeyPair, toHeaderValue, toPem, type KeyPair, type LoadedKeys } from './keys.js';
export { clientFromEnv } from './env.js';
export type * from './types.js';
