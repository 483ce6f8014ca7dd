/**
 * The encrypted data plane: storing (`store.ts`), reading (`reads.ts`) and deleting
 * (`deletes.ts`) attribute values of entities, behind one service.
 *
 * Every value is sealed (AES-256-GCM) under a per-subject data key before it reaches the
 * database; indexed attributes also get a blind index per leaf. Reads need the private key
 * in the request. Each write is one transaction: the rules engine, the activity log and the
 * data commit or roll back together.
 */
import type { Caller } from '../access/caller.js';
import type { DataKeys } from '../crypto/datakeys.js';
import { DataPointDeleter } from './deletes.js';
import type { DataPoint } from './model.js';
import type { DataPlaneDeps, PathForm } from './plane.js';
import { DataPointReader, type ReadInput } from './reads.js';
import { DataPointStore, type StoreInput } from './store.js';

export { MESSAGES, deleteStructures, type DataPlaneDeps, type PathForm } from './plane.js';
export type { AttributeInput, StorageRequest, StoreInput } from './store.js';
export type { ReadInput } from './reads.js';

export class DataPointService {
  readonly dataKeys: DataKeys;
  private readonly writer: DataPointStore;
  private readonly reader: DataPointReader;
  private readonly deleter: DataPointDeleter;

  constructor(deps: DataPlaneDeps) {
    this.dataKeys = deps.dataKeys;
    this.writer = new DataPointStore(deps);
    this.reader = new DataPointReader(deps);
    this.deleter = new DataPointDeleter(deps);
  }

  store(caller: Caller, input: StoreInput): Promise<DataPoint[]> {
    return this.writer.store(caller, input);
  }

  readAttribute(caller: Caller, input: ReadInput & { attributeKey: string }): Promise<DataPoint[]> {
    return this.reader.readAttribute(caller, input);
  }

  readAttributes(caller: Caller, input: ReadInput & { attributes?: string[] }): Promise<DataPoint[]> {
    return this.reader.readAttributes(caller, input);
  }

  readPoint(caller: Caller, dataPointId: string, decryptionKey: unknown): Promise<DataPoint> {
    return this.reader.readPoint(caller, dataPointId, decryptionKey);
  }

  deleteAttribute(caller: Caller, input: { entityId: string; attributeKey: string; form: PathForm }): Promise<void> {
    return this.deleter.deleteAttribute(caller, input);
  }

  deletePoint(caller: Caller, dataPointId: string): Promise<void> {
    return this.deleter.deletePoint(caller, dataPointId);
  }

  purge(caller: Caller, input: { entityId: string; form: PathForm }): Promise<void> {
    return this.deleter.purge(caller, input);
  }
}
