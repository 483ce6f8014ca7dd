import test from 'ava';
import { Writable } from 'node:stream';
import pg from 'pg';
import { createLogger } from './logger.js';
import { createPostgresDatabase } from './testing/harness.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger('info', sink), text: () => lines.join('') };
}

test('an error logged in the background keeps what failed, not the row or statement PostgreSQL quotes', async (t) => {
  const database = await createPostgresDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  t.teardown(async () => {
    await client.end();
    await database.drop();
  });
  await client.query('create table people (email text primary key)');
  await client.query("insert into people values ('ada@analytical.example')");
  const err = await client.query("insert into people values ('ada@analytical.example')").catch((e: unknown) => e);
  t.true(String((err as { detail?: string }).detail).includes('ada@analytical.example'), 'the driver quotes the row');

  const { logger, text } = capture();
  logger.error({ err }, 'retention sweep failed');
  const line = JSON.parse(text());
  t.false(text().includes('ada@analytical.example'));
  t.is(line.err.code, '23505');
  t.is(line.err.constraint, 'people_pkey');
  t.is(line.err.message, 'duplicate key value violates unique constraint "people_pkey"');
  t.truthy(line.err.stack);
});

test('an error that carries the parameters of its statement does not log them', (t) => {
  const { logger, text } = capture();
  const err = Object.assign(new Error('SQLITE_CONSTRAINT: UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE', parameters: ['secret value'] });
  logger.warn({ err }, 'sealing activity records failed; will retry');
  t.false(text().includes('secret value'));
  t.is(JSON.parse(text()).err.code, 'SQLITE_CONSTRAINT_UNIQUE');
});
