import type { Logger } from 'pino';
import type { StampedEvent } from '../ingest/event.js';
import type { SidecarMetrics } from '../metrics.js';
import { AbortedError, abortable, backoffDelay, sleep } from './backoff.js';
import type { SendResult, VaultErrorBody, VaultSender } from './vault-client.js';

export interface DeadLetterReason {
  kind: 'rejected' | 'too-large' | 'retries-exhausted';
  statusCode?: number;
  /** The vault's answer, as received. */
  answer?: VaultErrorBody;
  detail: string;
  attempts: number;
}

export interface DeadLetterEntry {
  event: StampedEvent;
  reason: DeadLetterReason;
}

export interface DeadLetterSink {
  add(entries: DeadLetterEntry[]): Promise<void>;
}

export interface DelivererOptions {
  maxRetries: number | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
}

export interface DeliveryOutcome {
  delivered: number;
  deadLettered: number;
  requests: number;
}

type Final = Exclude<SendResult, { kind: 'retry' }> | { kind: 'exhausted'; last: Extract<SendResult, { kind: 'retry' }>; attempts: number };

/**
 * Hands one batch to the vault, whatever it takes. Order is kept: the batch is retried as a
 * whole (5xx, network) until the vault takes it, and when the vault refuses it the batch is
 * cut around the offending event so everything before it is recorded before anything after.
 * The vault's bulk is atomic and deduplicates by eventId, so resending a prefix it may have
 * seen is harmless, and the poison event can be isolated without guessing.
 */
export class Deliverer {
  /**
   * Why the vault refuses the sidecar itself (`http 401`: a wrong SIDECAR_API_KEY), until a
   * batch goes through again; `/readyz` shows it, since events only pile up in Redis meanwhile.
   */
  refusedBy: string | undefined;
  /**
   * Why the last attempt failed when the vault could not be reached or asked for a retry
   * (`econnrefused`, `http 503`), until a batch goes through again: shown by `/readyz`.
   */
  failingWith: string | undefined;

  constructor(
    private readonly vault: VaultSender,
    private readonly deadLetters: DeadLetterSink,
    private readonly options: DelivererOptions,
    private readonly metrics: SidecarMetrics,
    private readonly log: Logger,
  ) {}

  /**
   * Resolves once every event is either recorded by the vault or dead-lettered; rejects with
   * AbortedError, leaving the rest undelivered, when the signal fires first.
   */
  async deliver(events: StampedEvent[], signal: AbortSignal): Promise<DeliveryOutcome> {
    const stopTimer = this.metrics.batchLatency.startTimer();
    this.metrics.batchSize.observe(events.length);
    const outcome: DeliveryOutcome = { delivered: 0, deadLettered: 0, requests: 0 };
    // Pieces still to send, in order; cutting a piece replaces it at the front.
    const work: StampedEvent[][] = [events];
    while (work.length > 0) {
      const piece = work.shift()!;
      const result = await this.sendWithRetries(piece, signal, outcome);
      switch (result.kind) {
        case 'ok':
          outcome.delivered += piece.length;
          this.metrics.eventsDelivered.inc(piece.length);
          this.metrics.batchesDelivered.inc();
          break;
        case 'exhausted':
          await this.deadLetter(
            piece.map((event) => ({
              event,
              reason: {
                kind: 'retries-exhausted',
                statusCode: result.last.status,
                detail: `vault unavailable after ${result.attempts} attempts (${result.last.reason})`,
                attempts: result.attempts,
              },
            })),
            signal,
            outcome,
          );
          break;
        case 'too-large':
          if (piece.length === 1) {
            await this.deadLetter(
              [{ event: piece[0], reason: { kind: 'too-large', statusCode: result.status, answer: result.body, detail: 'event too large for the vault', attempts: 1 } }],
              signal,
              outcome,
            );
          } else {
            work.unshift(...halves(piece));
          }
          break;
        case 'rejected': {
          const index = result.index ?? (piece.length === 1 ? 0 : undefined);
          if (index === undefined) {
            // No index in the answer: bisect until the refusal lands on a single event.
            work.unshift(...halves(piece));
            break;
          }
          this.log.warn(
            { eventId: piece[index].eventId, statusCode: result.status, error: result.body.error },
            'vault refused an event; dead-lettering it and delivering the rest',
          );
          await this.deadLetter(
            [{ event: piece[index], reason: { kind: 'rejected', statusCode: result.status, answer: result.body, detail: describeAnswer(result.body), attempts: 1 } }],
            signal,
            outcome,
          );
          const before = piece.slice(0, index);
          const after = piece.slice(index + 1);
          work.unshift(...[before, after].filter((p) => p.length > 0));
          break;
        }
      }
    }
    stopTimer();
    return outcome;
  }

  private async sendWithRetries(piece: StampedEvent[], signal: AbortSignal, outcome: DeliveryOutcome): Promise<Final> {
    const { maxRetries, retryBaseMs, retryMaxMs } = this.options;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw new AbortedError();
      const stop = this.metrics.vaultRequests.startTimer();
      let result: SendResult;
      try {
        result = await this.vault.send(piece, signal);
      } catch (err) {
        if (signal.aborted) throw new AbortedError();
        throw err;
      }
      outcome.requests++;
      stop({ outcome: result.kind === 'retry' ? result.reason : result.kind });
      this.refusedBy = result.kind === 'retry' && result.configuration ? result.reason : undefined;
      this.failingWith = result.kind === 'retry' && !result.configuration ? result.reason : undefined;
      if (result.kind !== 'retry') return result;
      if (maxRetries !== undefined && attempt > maxRetries) return { kind: 'exhausted', last: result, attempts: attempt };
      this.metrics.retries.inc({ reason: result.reason });
      // Log the first failure and then at powers of two, so a long outage doesn't flood the log.
      if ((attempt & (attempt - 1)) === 0) {
        if (result.configuration) {
          this.log.error({ attempt, reason: result.reason, eventCount: piece.length }, 'the vault refuses the sidecar (check SIDECAR_API_KEY and SIDECAR_VAULT_URL); retrying');
        } else this.log.warn({ attempt, reason: result.reason, eventCount: piece.length }, 'vault delivery failed; retrying');
      }
      // A refused key is not mended by a quick retry, and each 401 counts towards the vault's
      // lockout of this address: every client on the host would be locked out with it.
      const delay = result.configuration
        ? retryMaxMs
        : Math.max(backoffDelay(attempt, retryBaseMs, retryMaxMs), Math.min(result.retryAfterMs ?? 0, retryMaxMs));
      await sleep(delay, signal);
    }
  }

  /** The job holding these events is only completed after this resolves, so it must not give up. */
  private async deadLetter(entries: DeadLetterEntry[], signal: AbortSignal, outcome: DeliveryOutcome): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw new AbortedError();
      try {
        await abortable(this.deadLetters.add(entries), signal);
        break;
      } catch (err) {
        if (signal.aborted) throw new AbortedError();
        this.log.error({ err: (err as Error).message, attempt }, 'could not store dead letters; retrying');
        await sleep(backoffDelay(attempt, this.options.retryBaseMs, this.options.retryMaxMs), signal);
      }
    }
    outcome.deadLettered += entries.length;
    for (const { reason } of entries) this.metrics.eventsDeadLettered.inc({ reason: reason.kind });
  }
}

function halves<T>(items: T[]): T[][] {
  const mid = Math.ceil(items.length / 2);
  return [items.slice(0, mid), items.slice(mid)];
}

function describeAnswer(body: VaultErrorBody): string {
  const parts = [body.statusCode, body.error, body.message].filter((p) => p !== undefined && p !== '');
  return parts.length > 0 ? parts.join(' ') : 'refused by the vault';
}
