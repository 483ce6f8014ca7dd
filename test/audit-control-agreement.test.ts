/**
 * The sidecar's ingest check and the vault agree on control characters in an audit event's
 * ids and origin: whatever the sidecar accepts the vault records, so nothing it queues can
 * become a dead letter for them, and it refuses nothing the vault would record about a point
 * it has not seen.
 */
import test from 'ava';
import { startTestVault, type TestVault } from '../core/src/testing/harness.js';
import { prepareBatch } from '../proxy/src/ingest/validate.js';

let v: TestVault;
const ATTRIBUTE = 'AGREE_EMAIL';
test.before(async () => {
  v = await startTestVault();
  const res = await v.request('POST', '/attributes', { body: { key: ATTRIBUTE, schema: 'string' } });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
});
test.after.always(async () => v?.close());

/** A C0 control, DEL, C1 controls (NEL, CSI), and for contrast characters that are none. */
const samples = ['\u0001', '\t', '\n', '\u001b[2K', '\u007f', '\u0085', '\u009b', ' ', 'é', '😀', '\u200b'];

let n = 0;
/** An event about a point the vault has not seen, with the field under test set by `extra`. */
function fresh(eventType: string, extra: () => Record<string, unknown>): Record<string, unknown> {
  n += 1;
  const base: Record<string, unknown> = {
    eventType,
    applicationId: 'crm',
    subjectId: `agree-subject-${n}`,
    dataPointId: `agree-point-${n}`,
    data: { attribute: ATTRIBUTE },
  };
  return { ...base, ...extra() };
}

const fields: Array<[string, (s: string) => Record<string, unknown>]> = [
  ['applicationId', (s) => ({ applicationId: `crm${s}` })],
  ['eventId', (s) => ({ eventId: `agree-event-${n}${s}` })],
  ['dataPointId', (s) => ({ dataPointId: `agree-point-${n}${s}` })],
  ['data.dataPointId', (s) => ({ dataPointId: undefined, data: { attribute: ATTRIBUTE, dataPointId: `agree-point-${n}${s}` } })],
  ['applicationUser', (s) => ({ applicationUser: `clerk${s}` })],
  ['dataStoreName', (s) => ({ dataStoreName: `db${s}` })],
  ['dataStoreServer', (s) => ({ dataStoreServer: `db1${s}` })],
  ['dataStoreEntityName', (s) => ({ dataStoreEntityName: `users${s}` })],
  ['location.country', (s) => ({ location: { country: `DE${s}` } })],
  ['location.subdivision', (s) => ({ location: { subdivision: `BY${s}` } })],
  ['location.city', (s) => ({ location: { city: `Munich${s}` } })],
];

test('for every field and character, the sidecar accepts an event exactly when the vault records it', async (t) => {
  for (const eventType of ['STORE', 'READ', 'UPDATE', 'DELETE']) {
    for (const [field, make] of fields) {
      if (field === 'data.dataPointId' && eventType !== 'STORE') continue;
      for (const s of samples) {
        const event = fresh(eventType, () => make(s));
        const sidecar = prepareBatch([JSON.parse(JSON.stringify(event))]);
        const accepted = sidecar.rejected.length === 0;
        const vault = await v.request('POST', '/auditlogs', { body: event });
        const what = `${eventType} ${field} ${JSON.stringify(s)}: sidecar ${accepted ? 'accepted' : sidecar.rejected[0]!.message}, vault ${vault.status} ${vault.body.message ?? ''}`;
        t.is(accepted, vault.status === 200, what);
        if (!accepted) t.is(vault.status, 400, what);
      }
    }
  }
});
