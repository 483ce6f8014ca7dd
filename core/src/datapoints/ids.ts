/**
 * Data point ids: UUID version 7 (RFC 9562), from the `uuid` package the sidecar stamps its
 * ids with too. They are monotonic within a process, so ids created in one millisecond still
 * sort in creation order: reads and search order by `createdDate`, then id, which then is the
 * order the points were stored in, and new rows land at the end of the primary-key index
 * instead of at random pages.
 */
import { v7 } from 'uuid';

export function newPointId(): string {
  return v7();
}
