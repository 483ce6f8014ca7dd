/** Every scenario group, in run order, and the scenario ids `--only` accepts. */
import type { BenchContext } from '../context.js';
import * as datapath from './datapath.js';
import * as search from './search.js';
import * as audit from './audit.js';
import * as rules from './rules.js';
import * as sidecar from './sidecar.js';
import * as postgres from './postgres.js';

export interface Group {
  scenarios: string[];
  run(ctx: BenchContext): Promise<void>;
}

/** Cheapest first; the 1M-point seeding late; PostgreSQL last, as it compares to the SQLite figures. */
export const GROUPS: Group[] = [
  { scenarios: datapath.SCENARIOS, run: datapath.runDataPath },
  { scenarios: rules.SCENARIOS, run: rules.runRules },
  { scenarios: audit.SCENARIOS, run: audit.runAudit },
  { scenarios: sidecar.SCENARIOS, run: sidecar.runSidecar },
  { scenarios: search.SCENARIOS, run: search.runSearch },
  { scenarios: postgres.SCENARIOS, run: postgres.runPostgres },
];

export const ALL_SCENARIOS = GROUPS.flatMap((g) => g.scenarios);
