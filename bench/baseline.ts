/**
 * The ceiling of this stack: Fastify and better-sqlite3 with the vault's SQLite settings,
 * answering the same paths with the same JSON shapes, but storing values in plaintext and
 * checking nothing (no authentication, no schemas, no keys, no rules, no activity log).
 * Each vault figure is divided by the matching figure of this server, measured in the
 * same run, so the ratio says what the vault's work costs, whatever the machine.
 *
 * Run as its own process: BASELINE_PORT=<port> BASELINE_DB=<file> node --import tsx bench/baseline.ts
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import Fastify from 'fastify';

interface StoredRow {
  id: string;
  entity_id: string;
  attribute: string;
  value: string;
  created_date: string;
  modified_date: string;
}

interface AttributeInput {
  attribute: string;
  value: unknown;
}

interface AuditEvent {
  eventType: string;
  dataPointId?: string;
  subjectId?: string;
  applicationId?: string;
  data?: { attribute?: string };
}

export function openBaselineDatabase(path: string): Database.Database {
  const db = new Database(path);
  // The vault's own settings (core/src/db/connect.ts), so durability and caching are equal
  // on both sides; keep them in step when the vault's change.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = memory');
  db.exec(`
    CREATE TABLE IF NOT EXISTS points (
      id TEXT PRIMARY KEY, entity_id TEXT NOT NULL, attribute TEXT NOT NULL, value TEXT NOT NULL,
      created_date TEXT NOT NULL, modified_date TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS points_by_entity ON points (entity_id);
    CREATE INDEX IF NOT EXISTS points_by_value ON points (attribute, value);
    CREATE TABLE IF NOT EXISTS events (
      id TEXT PRIMARY KEY, event_type TEXT NOT NULL, data_point_id TEXT NOT NULL, subject_id TEXT,
      attribute TEXT, application_id TEXT, recorded TEXT NOT NULL);
  `);
  return db;
}

function dataPoint(row: StoredRow, withValue: boolean): Record<string, unknown> {
  const point: Record<string, unknown> = {
    attribute: row.attribute,
    dataPointId: row.id,
    entityId: row.entity_id,
    subjectId: row.entity_id,
    createdDate: row.created_date,
    modifiedDate: row.modified_date,
    regulations: [],
    sensitivity: 'NORMAL',
    reportOnly: false,
    structureRootId: null,
  };
  if (withValue) point.value = JSON.parse(row.value);
  return point;
}

export async function startBaseline(port: number, dbPath: string) {
  const db = openBaselineDatabase(dbPath);
  const insertPoint = db.prepare('INSERT INTO points VALUES (@id, @entity_id, @attribute, @value, @created_date, @modified_date)');
  const byId = db.prepare('SELECT * FROM points WHERE id = ?');
  const byEntity = db.prepare('SELECT * FROM points WHERE entity_id = ? ORDER BY created_date, id');
  const byValue = db.prepare('SELECT * FROM points WHERE attribute = ? AND value = ? ORDER BY created_date, id LIMIT ?');
  const insertEvent = db.prepare('INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)');

  const storeAll = db.transaction((entityId: string, data: AttributeInput[]) => {
    const now = new Date().toISOString().replace('Z', '+00:00');
    return data.map((item) => {
      const row: StoredRow = { id: randomUUID(), entity_id: entityId, attribute: item.attribute, value: JSON.stringify(item.value), created_date: now, modified_date: now };
      insertPoint.run(row);
      return dataPoint(row, true);
    });
  });
  const recordAll = db.transaction((events: AuditEvent[]) => {
    const now = new Date().toISOString();
    return events.map((e) => {
      const dataPointId = e.dataPointId ?? randomUUID();
      insertEvent.run(randomUUID(), e.eventType, dataPointId, e.subjectId ?? null, e.data?.attribute ?? null, e.applicationId ?? null, now);
      return { eventType: e.eventType, dataPointId, subjectId: e.subjectId, attribute: e.data?.attribute };
    });
  });

  const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
  app.post<{ Params: { entityId: string }; Body: { data: AttributeInput[] } }>('/entities/:entityId/attributes', async (request) => ({
    data: storeAll(request.params.entityId, request.body.data),
  }));
  app.get<{ Params: { id: string } }>('/data/:id', async (request, reply) => {
    const row = byId.get(request.params.id) as StoredRow | undefined;
    if (!row) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'Data Not Found' });
    return { data: dataPoint(row, true) };
  });
  app.get<{ Params: { entityId: string } }>('/entities/:entityId/attributes', async (request) => ({
    data: (byEntity.all(request.params.entityId) as StoredRow[]).map((r) => dataPoint(r, true)),
  }));
  app.post<{ Body: { query: { values: { attribute: string; value: string }[] }; count?: number } }>('/search', async (request) => {
    const { attribute, value } = request.body.query.values[0];
    return { data: (byValue.all(attribute, JSON.stringify(value), request.body.count ?? 100) as StoredRow[]).map((r) => dataPoint(r, false)) };
  });
  app.post<{ Body: AuditEvent[] }>('/auditlogs/bulk', async (request) => recordAll(request.body));

  await app.listen({ host: '127.0.0.1', port });
  return {
    app,
    /** Fast seeding for the search-at-scale reference: rows straight into the table. */
    db,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env.BASELINE_PORT ?? 0);
  const dbPath = process.env.BASELINE_DB;
  if (!dbPath) {
    process.stderr.write('BASELINE_DB is required\n');
    process.exit(2);
  }
  const { app } = await startBaseline(port, dbPath);
  process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
}
