/**
 * The domain's only error type. It carries the status and the exact message the interface
 * names, so services stay free of HTTP while the HTTP layer only has to copy two fields.
 */
export class VaultError extends Error {
  readonly status: number;
  /** Extra members of the error body, e.g. `index` for a failing bulk audit event. */
  readonly details?: Record<string, unknown>;

  constructor(status: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'VaultError';
    this.status = status;
    this.details = details;
  }
}

export const badRequest = (message: string) => new VaultError(400, message);
export const unauthorized = (message = 'Unauthorized') => new VaultError(401, message);
export const paymentRequired = (message: string) => new VaultError(402, message);
export const forbidden = (message = 'Forbidden') => new VaultError(403, message);
export const notFound = (message: string) => new VaultError(404, message);
export const methodNotAllowed = (message: string) => new VaultError(405, message);
export const conflict = (message: string) => new VaultError(409, message);
export const tooLarge = (message: string) => new VaultError(413, message);
export const unprocessable = (message: string) => new VaultError(422, message);

/** 503: the database could not take a write for now; nothing of the request was kept. */
export const BUSY_MESSAGE = 'The vault is busy with conflicting requests, retry the request';
export const STORAGE_FULL_MESSAGE = "The vault's storage is full, retry the request later";
/** 503: PostgreSQL could not be reached or stopped answering; the request's transaction did not commit, unless its COMMIT was the statement cut off. */
export const DATABASE_UNREACHABLE_MESSAGE = 'The vault cannot reach its database, retry the request later';

export function isVaultError(err: unknown): err is VaultError {
  return err instanceof VaultError;
}
