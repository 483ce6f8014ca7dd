import type { Kysely } from 'kysely';
import type { Caller } from '../access/caller.js';
import { committed } from '../db/after-commit.js';
import { dialectOf } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import { DATASUBJECT, ENTITY_TYPE_KEY } from '../entitytypes/service.js';
import { badRequest, BUSY_MESSAGE, forbidden, notFound, VaultError } from '../errors.js';
import { checkTagNamesStored } from '../tags/service.js';
import { hasControlCharacter, longerThan } from '../util/characters.js';
import { nowIso } from '../util/time.js';
import { findEntity, setEntityTags, type Entity } from './repository.js';
import { recordChange } from '../activity/changes.js';
import type { ActivityLog } from '../activity/log.js';
import { recheckIdleRetention } from '../rules/idle-retention.js';

export const ENTITY_ID_MAX = 512;
export const TAG_REMOVAL_FORBIDDEN = 'Only admins may remove tags from an entity';

export const ENTITY_ID_MESSAGE = `Entity ID must be 1 to ${ENTITY_ID_MAX} characters, without control characters`;

/**
 * Entity ids are caller-chosen; these are the only limits on them, with `refuseNewLegacyId`:
 * no control characters in a new one. An earlier release let them in, and an entity stored
 * so keeps being read, stored to, tagged and reported on.
 */
export function checkReferencedEntityId(id: unknown): string {
  if (id === undefined || id === null || id === '') throw badRequest('Entity ID is required');
  if (typeof id !== 'string' || longerThan(id, ENTITY_ID_MAX) || id.includes('\u0000')) throw badRequest(ENTITY_ID_MESSAGE);
  return id;
}

/**
 * Refuses an id with a control character unless the entity exists: looked up only for such
 * an id, so a store to an ordinary one costs no query more.
 */
export async function refuseNewLegacyId(db: Kysely<Database>, id: string): Promise<void> {
  if (hasControlCharacter(id) && !(await db.selectFrom('entities').select('id').where('id', '=', id).executeTakeFirst())) {
    throw badRequest(ENTITY_ID_MESSAGE);
  }
}

/**
 * Ids looked up as they are: an entity stored before the rules above covered every path
 * (report-only subjects registered by audit events were not checked) is still found by its
 * id. Only what no database column could hold is not looked for.
 */
function isLookupId(id: string): boolean {
  return id.length > 0 && id.length <= 4 * ENTITY_ID_MAX && !id.includes('\u0000');
}

/** The interface's 400 for a store or create that names another type than the entity has. */
export function entityTypeMismatch(actualType: string) {
  return badRequest(`Entity is of type ${actualType}, which does not match the provided entity type`);
}

export interface ResolvedEntity<E extends Entity = Entity> {
  entity: E;
  /** True when this call created it. */
  created: boolean;
}

export interface ResolveOptions<E extends Entity> {
  /** How to look the entity up, for a caller that reads more in the same statement (or locks it). */
  find?: (trx: Kysely<Database>, id: string) => Promise<E | undefined>;
}

/**
 * The entity a write is for, created on first use, inside the caller's transaction (so the
 * entity exists exactly when the caller's write commits). `requestedType` undefined: any
 * existing type is accepted, and a new entity is a `datasubject`. Throws 400 `No such
 * entity type` and the interface's type-mismatch 400.
 */
export async function resolveForStore<E extends Entity = Entity>(
  trx: Kysely<Database>,
  id: string,
  requestedType?: string,
  { find = (db, entityId) => findEntity(db, entityId) as Promise<E | undefined> }: ResolveOptions<E> = {},
): Promise<ResolvedEntity<E>> {
  checkReferencedEntityId(id);
  // Before the type's check, so a new id with a control character is answered as ever.
  await refuseNewLegacyId(trx, id);
  if (requestedType !== undefined) {
    let query = trx.selectFrom('entity_types').select('key').where('key', '=', requestedType);
    // Held until this commits, so the type's delete through another process waits and then sees this entity.
    if (dialectOf(trx) === 'postgres') query = query.forShare();
    const known = ENTITY_TYPE_KEY.test(requestedType) && (await query.executeTakeFirst());
    if (!known) throw badRequest('No such entity type');
  }
  let entity = await find(trx, id);
  let created = false;
  // A concurrent first store of the same id may win the insert; then its entity is the one we
  // use. A purge through another process may delete that entity again before we read it.
  for (let attempt = 1; !entity; attempt++) {
    if (attempt > CREATE_ATTEMPTS) throw new VaultError(503, BUSY_MESSAGE);
    // Purged through another process since it was found: it would be new now.
    if (hasControlCharacter(id)) throw badRequest(ENTITY_ID_MESSAGE);
    const type = requestedType ?? DATASUBJECT;
    const now = nowIso();
    const inserted = await trx
      .insertInto('entities')
      .values({ id, type, legal_hold: 0, created_date: now, updated_date: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    created = Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
    entity = await find(trx, id);
  }
  if (requestedType !== undefined && entity.type !== requestedType) throw entityTypeMismatch(entity.type);
  return { entity, created };
}

const CREATE_ATTEMPTS = 3;

/**
 * The entity, locked on PostgreSQL until the caller commits, as it is once the lock is held:
 * a statement that waits for a row lock still reads everything else (here its tags) as it
 * was when the statement began, so the lock and the read are two statements.
 */
async function findLockedEntity(trx: Kysely<Database>, id: string): Promise<Entity | undefined> {
  if (dialectOf(trx) === 'postgres') {
    const row = await trx.selectFrom('entities').select('id').where('id', '=', id).forUpdate().executeTakeFirst();
    if (!row) return undefined;
  }
  return findEntity(trx, id);
}

export interface EntityInput {
  id?: unknown;
  type?: string;
  tags?: string[];
  legalHold?: boolean;
}

export interface EntityListOptions {
  type?: string;
  /** 0-based; paging applies when either member is given. */
  page?: number;
  count?: number;
}

export const DEFAULT_PAGE_SIZE = 100;

export class EntityService {
  constructor(
    private readonly db: Kysely<Database>,
    /** A legal hold or tags changed are recorded (`CHANGE`) in the transaction that changes them. */
    private readonly activity: ActivityLog,
  ) {}

  /**
   * Creates the entity or updates its metadata: tags and legal hold are replaced when sent and
   * kept when not. Only admins may change a legal hold or take a tag away (tag rules depend on
   * tags such as `monitored`, so a data application must not be able to shed them); any
   * application may add tags. Sending the current values back is fine, as clients echo the
   * entity they read. An entity's type never changes (the interface's 400, for admins too).
   */
  async upsert(caller: Caller, input: EntityInput, options: { dataSubjectsOnly?: boolean } = {}): Promise<ResolvedEntity> {
    const id = checkReferencedEntityId(input.id);
    await refuseNewLegacyId(this.db, id);
    if (options.dataSubjectsOnly && input.type !== undefined && input.type !== DATASUBJECT) throw badRequest('Entity is not a data subject');
    const requestedType = options.dataSubjectsOnly ? DATASUBJECT : input.type;
    const tags = input.tags === undefined ? undefined : await checkTagNamesStored(this.db, input.tags);
    return committed(this.db, async (trx) => {
      // Locked: two updates of one entity's tags through different processes would otherwise
      // interleave their replace, and a hold could be set on an entity a purge is deleting.
      const { entity, created } = await resolveForStore(trx, id, requestedType, { find: findLockedEntity });
      const holdChanges = input.legalHold !== undefined && input.legalHold !== entity.legalHold;
      if (holdChanges && !caller.admin) throw forbidden();
      if (tags !== undefined && !caller.admin && entity.tags.some((tag) => !tags.includes(tag))) throw forbidden(TAG_REMOVAL_FORBIDDEN);
      const newTags = tags === undefined ? undefined : [...new Set(tags)].sort();
      const tagsChange = newTags !== undefined && newTags.join('\n') !== [...entity.tags].sort().join('\n');
      if (tags !== undefined) await setEntityTags(trx, id, tags);
      const now = nowIso();
      if (holdChanges || !created) {
        await trx
          .updateTable('entities')
          .set({ ...(holdChanges ? { legal_hold: input.legalHold ? (1 as const) : (0 as const) } : {}), updated_date: now })
          .where('id', '=', id)
          .execute();
      }
      if (holdChanges && !input.legalHold) await recheckIdleRetention(trx, id);
      // Tags decide which tag rules apply to the subject (`monitored`, say): who changed them is
      // recorded with the holds.
      if (holdChanges || tagsChange) {
        const fields = { ...(holdChanges ? { legalHold: input.legalHold } : {}), ...(tagsChange ? { tags: newTags } : {}) };
        await recordChange(this.activity, trx, caller, { target: 'entity', id, action: created ? 'create' : 'update', fields }, now);
      }
      return { entity: (await findEntity(trx, id))!, created };
    });
  }

  async list(options: EntityListOptions = {}): Promise<Entity[]> {
    const paged = options.page !== undefined || options.count !== undefined;
    const count = options.count ?? DEFAULT_PAGE_SIZE;
    const page = options.page ?? 0;
    let rows = this.db.selectFrom('entities').selectAll().orderBy('id');
    if (options.type !== undefined) rows = rows.where('type', '=', options.type);
    if (paged) rows = rows.limit(count).offset(page * count);
    const entities = await rows.execute();
    if (entities.length === 0) return [];

    // A page names its ids (at most 1000); a full list takes every tag of the selection in one query.
    let tagQuery = this.db.selectFrom('entity_tags').select(['entity_tags.entity_id', 'entity_tags.tag']);
    if (paged) {
      tagQuery = tagQuery.where('entity_tags.entity_id', 'in', entities.map((e) => e.id));
    } else if (options.type !== undefined) {
      tagQuery = tagQuery.innerJoin('entities', 'entities.id', 'entity_tags.entity_id').where('entities.type', '=', options.type);
    }
    const tagRows = await tagQuery.orderBy('entity_tags.tag').execute();
    const tagsOf = new Map<string, string[]>();
    for (const { entity_id, tag } of tagRows) {
      const list = tagsOf.get(entity_id);
      if (list) list.push(tag);
      else tagsOf.set(entity_id, [tag]);
    }
    return entities.map((row) => ({
      id: row.id,
      type: row.type,
      tags: tagsOf.get(row.id) ?? [],
      legalHold: row.legal_hold === 1,
      created: row.created_date,
      updated: row.updated_date,
    }));
  }

  async get(id: string): Promise<Entity> {
    const entity = isLookupId(id) ? await findEntity(this.db, id) : undefined;
    if (!entity) throw notFound('Not found');
    return entity;
  }

  async getDataSubject(id: string): Promise<Entity> {
    const entity = await this.get(id);
    if (entity.type !== DATASUBJECT) throw badRequest('Entity is not a data subject');
    return entity;
  }
}
