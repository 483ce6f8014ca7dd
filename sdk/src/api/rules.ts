/**
 * Rules and the alerts they raise.
 */
import type { Alert, AlertFilter, Rule, RuleInput } from '../types.js';
import { KeyedCollection, pages, type CallOptions, type Send } from './call.js';

/**
 * Rules (`/rules`), by key, then by name. Save creates or updates by key, answering `Rule
 * created` or `Rule updated`; an update keeps the rule's place in the order, so a resent save
 * leaves the same rule.
 */
export class RuleApi extends KeyedCollection<Rule, RuleInput, string> {
  constructor(send: Send) {
    super(send, '/rules');
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
