/**
 * Applications and their API keys.
 */
import type { Application, ApplicationChanges, ApplicationInput, CreatedApplication, RollKeyOptions } from '../types.js';
import { seg, type CallOptions, type Send } from './call.js';

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

  async get(id: string, options: CallOptions = {}): Promise<Application> {
    return this.send({ method: 'GET', path: `/applications/${seg(id, 'id')}`, idempotent: true, signal: options.signal });
  }

  /** Changes name, attributes or admin in place; every vault process applies it within a second. */
  async update(id: string, changes: ApplicationChanges, options: CallOptions = {}): Promise<Application> {
    return this.send({ method: 'PATCH', path: `/applications/${seg(id, 'id')}`, body: changes, idempotent: true, signal: options.signal });
  }

  /**
   * Gives the application a new API key, answered this once. Retried only when the connection
   * was refused: a lost answer would leave a key nobody holds, and the old one ended.
   */
  async rollKey(id: string, roll: RollKeyOptions = {}, options: CallOptions = {}): Promise<CreatedApplication> {
    return this.send({ method: 'POST', path: `/applications/${seg(id, 'id')}/key`, body: roll, idempotent: false, signal: options.signal });
  }

  async delete(id: string, options: CallOptions = {}): Promise<string> {
    return this.send({ method: 'DELETE', path: `/applications/${seg(id, 'id')}`, idempotent: true, signal: options.signal });
  }
}
