/** `vault activity ...`: the activity log's chain, checked and its head printed to keep elsewhere. */
import { ActivityService, parseChainHead, type ChainHead } from '../activity/service.js';
import { withVault, type Command } from './command.js';

export const activityCommands: Record<string, Command> = {
  'activity verify': {
    summary: 'Seal pending records, recompute the activity log hash chain and report the first broken record',
    usage: 'vault activity verify [--head SEQUENCE:HASH]   (a head printed earlier by `vault activity head`)',
    options: { head: { type: 'string' } },
    async run({ values }, io) {
      let head: ChainHead | undefined;
      if (values.head !== undefined) {
        head = parseChainHead(String(values.head));
        if (!head) {
          io.err('--head must be SEQUENCE:HASH as `vault activity head` prints it');
          return 2;
        }
      }
      const result = await withVault(io, (vault) => new ActivityService(vault.db, vault.sealer).verify(head));
      const pending = result.unsealed > 0 ? ` (${result.unsealed} not yet sealed)` : '';
      if (result.firstBrokenSequence !== undefined) {
        io.out(`Activity log BROKEN at sequence ${result.firstBrokenSequence} (event ${result.firstBrokenEventId}) after ${result.records} records`);
        // The head is checked on its own: whether, besides the break, records were cut off the end.
        if (head && result.headMatches) io.out(`It still holds the kept head ${head.sequence}:${head.hash} unchanged: nothing up to it was cut off the end`);
        else if (head) io.out(`Nor does it hold the kept head ${head.sequence}:${head.hash} as it was: that record was removed or rewritten`);
        return 1;
      }
      if (head && !result.headMatches) {
        io.out(`Activity log does not hold the expected head ${head.sequence}:${head.hash} (it has ${result.records} records): records were removed or rewritten`);
        return 1;
      }
      // Cut off the end, a log is still a valid chain: only a kept head says whether that was checked.
      const covered = head
        ? `, and it still holds the kept head ${head.sequence}:${head.hash}: nothing up to it was removed or rewritten`
        : '. Records cut off the end would not show: check against a head kept elsewhere with --head';
      io.out(`Activity log intact: ${result.records} records${pending}${covered}`);
      return 0;
    },
  },

  'activity head': {
    summary: 'Seal pending records and print the chain head (SEQUENCE:HASH) to keep outside the database',
    usage: 'vault activity head',
    async run(_args, io) {
      const head = await withVault(io, (vault) => new ActivityService(vault.db, vault.sealer).head());
      io.out(`${head.sequence}:${head.hash}`);
      return 0;
    },
  },
};
