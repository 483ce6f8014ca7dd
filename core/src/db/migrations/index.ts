import type { Migration } from 'kysely';
import * as registry from './0001_registry.js';
import * as activity from './0002_activity.js';
import * as rules from './0003_rules.js';
import * as dataplane from './0004_dataplane.js';
import * as keyRotation from './0005_key_rotation.js';
import * as activitySealing from './0006_activity_sealing.js';
import * as activityLean from './0007_activity_lean.js';
import * as activityReadSets from './0008_activity_read_sets.js';
import * as vaultedPointsBySubject from './0009_vaulted_points_by_subject.js';
import * as applicationKeyRoll from './0010_application_key_roll.js';
import * as activityChanges from './0011_activity_changes.js';
import * as indexKeyCheck from './0012_index_key_check.js';
import * as retiredApiKeys from './0013_retired_api_keys.js';

/** Ordered by name; each module appends its own migration here. */
export const migrations: Record<string, Migration> = {
  '0001_registry': registry,
  '0002_activity': activity,
  '0003_rules': rules,
  '0004_dataplane': dataplane,
  '0005_key_rotation': keyRotation,
  '0006_activity_sealing': activitySealing,
  '0007_activity_lean': activityLean,
  '0008_activity_read_sets': activityReadSets,
  '0009_vaulted_points_by_subject': vaultedPointsBySubject,
  '0010_application_key_roll': applicationKeyRoll,
  '0011_activity_changes': activityChanges,
  '0012_index_key_check': indexKeyCheck,
  '0013_retired_api_keys': retiredApiKeys,
};
