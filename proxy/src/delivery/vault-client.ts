import { Pool } from 'undici';
import type { StampedEvent } from '../ingest/event.js';
import { withTimeout } from '../queue/connection.js';
import { bulkBody } from './event-json.js';

/** The vault's error body for a refused bulk; `index` points at the first failing event. */
export interface VaultErrorBody {
  statusCode?: number;
  error?: string;
  message?: string;
  index?: number;
  [key: string]: unknown;
}

export type SendResult =
  | { kind: 'ok'; status: number; summaries: unknown }
  /** The vault refused the batch because of its content; nothing of it was recorded. */
  | { kind: 'rejected'; status: number; body: VaultErrorBody; index: number | undefined }
  /** The batch as a whole is too big for the vault; smaller pieces may pass. */
  | { kind: 'too-large'; status: number; body: VaultErrorBody }
  /**
   * Nothing is wrong with the events; try the same batch again later. `configuration`: the
   * vault refuses the sidecar itself (its key, its URL), which no quick retry mends.
   */
  | { kind: 'retry'; reason: string; status?: number; retryAfterMs?: number; configuration?: true };

export interface VaultSender {
  send(events: StampedEvent[], signal?: AbortSignal): Promise<SendResult>;
}

export interface VaultClientOptions {
  vaultUrl: string;
  apiKey: string;
  timeoutMs: number;
}

/** Throttling and timeouts: nothing is wrong with the batch, send it again later. */
const retryable4xx = new Set([408, 425, 429]);

/**
 * Without an `index`, these answers say nothing about the events themselves: a wrong key, a
 * vault without the bulk endpoint yet. Dead-lettering on them would empty the queue into the
 * dead-letter queue because of a configuration slip, so they are retried like an outage. With
 * an `index` they are about one event (a READ of an unknown data point is a 404, an attribute
 * the key may not touch a 403) and that event is dead-lettered.
 */
/** Ends the retry reason (metric label, /readyz detail) of a 2xx that is not a bulk answer. */
export const NOT_THE_VAULT = "not the vault's answer";

const configurationErrors = new Set([401, 403, 404, 405, 421]);

export class VaultClient implements VaultSender {
  private readonly pool: Pool;
  private readonly path: string;
  private readonly authorization: string;

  constructor(options: VaultClientOptions) {
    const url = new URL(options.vaultUrl);
    this.path = `${url.pathname.replace(/\/+$/, '')}/auditlogs/bulk`;
    this.authorization = `Bearer ${options.apiKey}`;
    this.pool = new Pool(url.origin, {
      connections: 2,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
    });
  }

  async send(events: StampedEvent[], signal?: AbortSignal): Promise<SendResult> {
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await this.pool.request({
        method: 'POST',
        path: this.path,
        headers: { 'content-type': 'application/json', authorization: this.authorization },
        body: bulkBody(events),
        signal,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      text = await res.body.text();
    } catch (err) {
      if (signal?.aborted) throw err;
      return { kind: 'retry', reason: networkReason(err) };
    }

    if (status >= 200 && status < 300) {
      const summaries = parseJson(text);
      // The vault answers a bulk with a summary per event. Anything else came from a server
      // that is not the vault (a wrong SIDECAR_VAULT_URL answering any POST): taken as
      // delivered, the events were gone, recorded nowhere. Retried like a refused key instead.
      if (!Array.isArray(summaries) || summaries.length !== events.length) {
        return { kind: 'retry', reason: `http ${status}, ${NOT_THE_VAULT}`, status, configuration: true };
      }
      return { kind: 'ok', status, summaries };
    }
    const retryAfterMs = parseRetryAfter(retryAfter);
    if (status >= 500 || status < 400 || retryable4xx.has(status)) {
      return { kind: 'retry', reason: `http ${status}`, status, retryAfterMs };
    }
    const parsed = parseJson(text);
    const body: VaultErrorBody =
      parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as VaultErrorBody)
        : { statusCode: status, message: text.slice(0, 1000) };
    const index =
      Number.isInteger(body.index) && (body.index as number) >= 0 && (body.index as number) < events.length
        ? (body.index as number)
        : undefined;
    if (index !== undefined) return { kind: 'rejected', status, body, index };
    if (configurationErrors.has(status)) return { kind: 'retry', reason: `http ${status}`, status, retryAfterMs, configuration: true };
    if (status === 413) return { kind: 'too-large', status, body };
    return { kind: 'rejected', status, body, index: undefined };
  }

  /** Lets requests in flight end for at most `graceMs`, then cuts them. */
  async close(graceMs = 1000): Promise<void> {
    await withTimeout(this.pool.close(), graceMs, 'vault client close').catch(() => this.pool.destroy().catch(() => {}));
  }
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim()) * 1000;
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** A short label for metrics and logs; never the request content. */
function networkReason(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' ? code.toLowerCase() : 'network';
}
