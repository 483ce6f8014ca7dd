/**
 * Checking the activity log: the whole hash chain recomputed, and, given a head the operator
 * kept outside the database, whether the log still holds that record.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { chainHash, GENESIS_HASH, type ChainHead } from './chain.js';

const VERIFY_PAGE = 2000;

export interface VerifyResult {
  /** The chain verifies from the first record to the last (and holds the kept head, when given). */
  valid: boolean;
  /** Sealed records in the log when the check started. */
  records: number;
  /** Committed records not yet chained (they are sealed within about a second). */
  unsealed: number;
  firstBrokenSequence?: number;
  firstBrokenEventId?: string;
  /** Hash of the last record: kept elsewhere, it also reveals records cut off the end. */
  lastHash?: string;
  lastSequence?: number;
  /**
   * With an expected head: whether the record at its sequence is still there, unchanged (its
   * hash is the kept one, and its fields still give it). Answered whether or not the chain
   * breaks before it, which `firstBrokenSequence` reports.
   */
  headMatches?: boolean;
}

/**
 * Recomputes the whole chain in sequence order. The first record whose position, content or
 * predecessor does not match its hash is reported: an edited record fails itself, a deleted
 * one fails its successor, reordered ones fail where the order breaks. Given the head an
 * operator kept elsewhere, a log cut short (or rewritten from some point on) is caught too.
 */
export async function verifyActivityChain(db: Kysely<Database>, expectedHead?: ChainHead): Promise<VerifyResult> {
  const pending = await db.selectFrom('activity_pending').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  const unsealed = Number(pending.n);
  const head = await db.selectFrom('activity_log').select(['sequence', 'hash']).orderBy('sequence', 'desc').limit(1).executeTakeFirst();
  const end = head ? Number(head.sequence) : 0;
  const counted = await db
    .selectFrom('activity_log')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('sequence', '<=', end)
    .executeTakeFirstOrThrow();
  const records = Number(counted.n);
  let expected = 1;
  let previous = GENESIS_HASH;
  let after = Number.MIN_SAFE_INTEGER;
  let headMatches: boolean | undefined = expectedHead ? expectedHead.sequence === 0 && expectedHead.hash === GENESIS_HASH : undefined;
  for (;;) {
    const page = await db
      .selectFrom('activity_log')
      .selectAll()
      .where('sequence', '>', after)
      .where('sequence', '<=', end)
      .orderBy('sequence')
      .limit(VERIFY_PAGE)
      .execute();
    if (page.length === 0) break;
    // SQLite answers synchronously: without a turn of the event loop between pages, every other
    // request waited for the whole chain (seconds per hundred thousand records).
    if (after !== Number.MIN_SAFE_INTEGER) await new Promise((resolve) => setImmediate(resolve));
    for (const row of page) {
      const sequence = Number(row.sequence);
      const { hash, ...fields } = row;
      if (sequence !== expected || chainHash(previous, fields) !== hash) {
        // A break before the kept head says nothing of the head itself: was the log cut short
        // of it, or was it rewritten? Look at that record on its own.
        if (expectedHead && expectedHead.sequence >= sequence) headMatches = await holdsHead(db, expectedHead, end);
        return { valid: false, records, unsealed, firstBrokenSequence: sequence, firstBrokenEventId: row.event_id, headMatches };
      }
      if (expectedHead && sequence === expectedHead.sequence) headMatches = hash === expectedHead.hash;
      previous = hash;
      expected += 1;
      after = sequence;
    }
  }
  const result: VerifyResult = { valid: true, records, unsealed };
  if (end > 0) {
    result.lastHash = previous;
    result.lastSequence = end;
  }
  if (expectedHead) {
    result.headMatches = headMatches ?? false;
    if (!result.headMatches) result.valid = false;
  }
  return result;
}

/**
 * Whether the record at the head's sequence is there with the kept hash, and its fields still
 * give that hash from the hash of the record before it as stored. Without that record (deleted)
 * the fields cannot be checked, so the head is not confirmed.
 */
async function holdsHead(db: Kysely<Database>, head: ChainHead, end: number): Promise<boolean> {
  if (head.sequence === 0) return head.hash === GENESIS_HASH;
  if (head.sequence > end) return false;
  const rows = await db
    .selectFrom('activity_log')
    .selectAll()
    .where('sequence', 'in', [head.sequence - 1, head.sequence])
    .execute();
  const record = rows.find((row) => Number(row.sequence) === head.sequence);
  const before = head.sequence === 1 ? GENESIS_HASH : rows.find((row) => Number(row.sequence) === head.sequence - 1)?.hash;
  if (!record || before === undefined || record.hash !== head.hash) return false;
  const { hash, ...fields } = record;
  return chainHash(before, fields) === hash;
}

/** `<sequence>:<hash>`, as `vault activity head` prints it. */
export function parseChainHead(text: string): ChainHead | undefined {
  const match = /^(\d{1,15}):([0-9a-f]{64})$/.exec(text.trim());
  return match ? { sequence: Number(match[1]), hash: match[2] } : undefined;
}
