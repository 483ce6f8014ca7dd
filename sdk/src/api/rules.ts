/**
 * Rules and the alerts they raise.
 */
import type { Alert, AlertFilter, Rule, RuleInput } from '../types.js';
import { seg, pages, type CallOptions, type Send } from './call.js';

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

export class AlertApi {
  constructor(private readonly send: Send) {}

  list(filter: AlertFilter = {}, options: CallOptions = {}): Promise<Alert[]> {
    return this.send({ method: 'GET', path: '/alerts', query: { ...filter }, idempotent: true, signal: options.signal });
  }

  all(filter: Omit<AlertFilter, 'page'> = {}, options: CallOptions = {}): AsyncGenerator<Alert, void, undefined> {
    return pages(filter.count ?? 100, (page, count) => this.list({ ...filter, page, count }, options));
  }
}
