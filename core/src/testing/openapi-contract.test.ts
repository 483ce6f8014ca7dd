/** The contract checker itself finds what it is there to find, on a server made to break it. */
import test from 'ava';
import Fastify from 'fastify';
import swagger from '@fastify/swagger';
import { Contract } from './openapi-contract.js';
import type { Response } from './harness.js';

async function serve(contract: Contract, answer: unknown, status = 200) {
  const app = Fastify();
  contract.instrument(app);
  await app.register(swagger, { openapi: { openapi: '3.0.3', info: { title: 't', version: '1' } } });
  const response = {
    200: { type: 'object', properties: { data: { type: 'object', properties: { id: { type: 'string' }, note: { type: 'string' }, when: { type: 'string', format: 'date-time' } } } } },
    404: { type: 'object', properties: { message: { type: 'string' } } },
  };
  app.get('/things/:id', { schema: { response } }, async (_request, reply) => reply.status(status as 200).send(answer));
  await app.ready();
  contract.use(app.swagger() as any);
  const res = await app.inject({ method: 'GET', url: '/things/1' });
  const answered: Response = { status: res.statusCode, body: res.json(), headers: res.headers as Response['headers'] };
  await app.close();
  return contract.check('GET', '/things/{id}', answered);
}

test('an answer that keeps to its schema passes', async (t) => {
  t.deepEqual(await serve(new Contract(), { data: { id: '1', note: 'n' } }), []);
});

test('a member the response schema does not declare is reported as dropped', async (t) => {
  t.deepEqual(await serve(new Contract(), { data: { id: '1', legalHold: true } }), ['body.data.legalHold was dropped by the response schema']);
});

test('a null the schema turns into a string is reported', async (t) => {
  t.deepEqual(await serve(new Contract(), { data: { id: '1', note: null } }), ['body.data.note was null but was answered as ""']);
});

test('a status the operation does not list is reported', async (t) => {
  const problems = await serve(new Contract(), { message: 'x' }, 409);
  t.is(problems.length, 1);
  t.regex(problems[0], /^answered 409, which the operation does not list/);
});

test('a value the serialiser changed is reported', async (t) => {
  t.deepEqual(await serve(new Contract(), { data: { id: 7 } }), ['body.data.id was 7 but was answered as "7"']);
});

test('a body that does not match the declared schema is reported', async (t) => {
  const problems = await serve(new Contract(), { data: { id: '1', when: 'yesterday' } });
  t.is(problems.length, 1);
  t.regex(problems[0], /^body\/data\/when must match format "date-time"/);
});
