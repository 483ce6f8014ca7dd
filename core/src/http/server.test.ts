import test from 'ava';
import { connect, type AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { startTestVault, type TestVault } from '../testing/harness.js';

/** Sends `raw` on a socket of its own and resolves with everything answered until it closes. */
function rawExchange(port: number, raw: string, how: 'end' | 'write'): Promise<string> {
  return new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
    if (how === 'end') socket.end(raw);
    else socket.write(raw);
  });
}
let v: TestVault;
test.before(async () => {
  v = await startTestVault({ env: { VAULT_BODY_LIMIT: '65536' } });
});
test.after.always(async () => v?.close());

test('unknown routes answer 404 Not Found', async (t) => {
  const res = await v.request('GET', '/no/such/route');
  t.is(res.status, 404);
  t.deepEqual(res.body, { statusCode: 404, error: 'Not Found', message: 'Not Found' });
});

test('no API key or an unknown one is 401 Unauthorized', async (t) => {
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer not-a-real-key-000000' }, { authorization: 'Basic abc' }]) {
    const res = await v.request('GET', '/entitytypes', { apiKey: null, headers });
    t.is(res.status, 401);
    t.deepEqual(res.body, { statusCode: 401, error: 'Unauthorized', message: 'Unauthorized' });
  }
});

test('malformed JSON is a 400 that says so', async (t) => {
  const res = await v.request('POST', '/entitytypes', { payload: '{"key": ', headers: { 'content-type': 'application/json' } });
  t.is(res.status, 400);
  t.is(res.body.message, 'Body is not valid JSON');
});

test('a body that is not JSON is 415', async (t) => {
  const res = await v.request('POST', '/entitytypes', { payload: 'key=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.is(res.status, 415);
  t.is(res.body.message, 'Content type must be application/json');
  const text = await v.request('POST', '/entitytypes', { payload: 'hello', headers: { 'content-type': 'text/plain' } });
  t.is(text.status, 415);
});

test('a JSON body in a charset other than UTF-8 is 415 naming the one it takes; UTF-8, however spelled, is JSON', async (t) => {
  const body = JSON.stringify({ key: 'charset_latin1', name: 'Café' });
  for (const charset of ['latin1', 'ISO-8859-1', 'utf-16', '"windows-1252"', '']) {
    const res = await v.request('POST', '/entitytypes', { payload: body, headers: { 'content-type': `application/json; charset=${charset}` } });
    t.is(res.status, 415, charset);
    t.deepEqual(res.body, { statusCode: 415, error: 'Unsupported Media Type', message: 'Content type charset must be utf-8' });
  }
  t.is((await v.request('GET', '/entitytypes/charset_latin1')).status, 404, 'nothing was stored');

  const spellings = ['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'Application/JSON; Charset=US-ASCII'];
  for (const [i, contentType] of spellings.entries()) {
    const key = `charset_ok_${i}`;
    const res = await v.request('POST', '/entitytypes', { payload: JSON.stringify({ key, name: 'Café' }), headers: { 'content-type': contentType } });
    t.is(res.status, 201, contentType);
    t.is((await v.request('GET', `/entitytypes/${key}`)).body.data.name, 'Café');
  }
  // No body, no charset to misread: a DELETE with any JSON content type is still a DELETE.
  const removed = await v.request('DELETE', '/entitytypes/charset_ok_0', { payload: '', headers: { 'content-type': 'application/json; charset=latin1' } });
  t.is(removed.status, 200);
});

test('a compressed body is 415 naming the encoding the vault takes, and stores nothing; identity is a plain body', async (t) => {
  const body = Buffer.from(JSON.stringify({ key: 'encoded_gzip', name: 'x' }));
  for (const [encoding, payload] of [
    ['gzip', gzipSync(body)],
    ['br', body],
    ['GZIP, identity', gzipSync(body)],
  ] as const) {
    const res = await v.request('POST', '/entitytypes', { payload, headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
    t.is(res.status, 415, encoding);
    t.deepEqual(res.body, { statusCode: 415, error: 'Unsupported Media Type', message: 'Content encoding must be identity' }, encoding);
  }
  t.is((await v.request('GET', '/entitytypes/encoded_gzip')).status, 404, 'nothing was stored');
  const plain = await v.request('POST', '/entitytypes', { payload: JSON.stringify({ key: 'encoded_identity' }), headers: { 'content-type': 'application/json', 'content-encoding': 'Identity' } });
  t.is(plain.status, 201);
  // No body, nothing to decode: a DELETE labelled gzip by a client that labels everything is still a DELETE.
  const removed = await v.request('DELETE', '/entitytypes/encoded_identity', { payload: '', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
  t.is(removed.status, 200);
});

test('a body over the configured limit is 413', async (t) => {
  const res = await v.request('POST', '/entitytypes', { body: { key: 'big', description: 'x'.repeat(70_000) } });
  t.is(res.status, 413);
  t.is(res.body.message, 'Request body is too large');
});

test('unknown fields and wrong types are 400, and change nothing', async (t) => {
  const unknown = await v.request('POST', '/entitytypes', { body: { key: 'thing', colour: 'red' } });
  t.is(unknown.status, 400);
  t.regex(unknown.body.message, /must NOT have additional properties/);
  const wrongType = await v.request('POST', '/entitytypes', { body: { key: 12 } });
  t.is(wrongType.status, 400);
  t.regex(wrongType.body.message, /must be string/);
  t.is((await v.request('GET', '/entitytypes/thing')).status, 404);
});

test('the OpenAPI document and its UI are served without a key', async (t) => {
  const doc = await v.request('GET', '/openapi.json', { apiKey: null });
  t.is(doc.status, 200);
  t.is(doc.body.openapi, '3.0.3');
  t.truthy(doc.body.paths['/entitytypes/{typeKey}'].delete);
  const ui = await v.request('GET', '/docs/', { apiKey: null });
  t.is(ui.status, 200);
  t.regex(String(ui.headers['content-type']), /text\/html/);
});

test('key headers and API keys never reach the log', async (t) => {
  await v.request('GET', '/entitytypes', { headers: { 'x-decryption-key': v.keys.privateKey, 'x-encryption-key': v.keys.publicKey } });
  const all = v.logs.join('\n');
  t.false(all.includes(v.adminKey));
  t.false(all.includes(v.keys.privateKey.slice(0, 64)));
  t.false(all.includes(v.keys.publicKey.slice(0, 64)));
});

test('NUL characters are refused in bodies and paths, before any database sees them', async (t) => {
  const body = await v.request('POST', '/entitytypes', { body: { key: 'nul_type', name: 'a\u0000b' } });
  t.is(body.status, 400);
  t.is(body.body.message, 'Strings may not contain NUL characters');
  const path = await v.request('GET', '/entitytypes/a%00b');
  t.is(path.status, 400);
  t.is(path.body.message, 'Strings may not contain NUL characters');
  t.is((await v.request('GET', '/entitytypes/nul_type')).status, 404);
});

test('an empty body with a JSON content type is no body, as clients send on DELETE', async (t) => {
  await v.request('POST', '/entitytypes', { body: { key: 'empty_body_type' } });
  const res = await v.request('DELETE', '/entitytypes/empty_body_type', { payload: '', headers: { 'content-type': 'application/json' } });
  t.is(res.status, 200);
});

test('prototype-poisoning keys are refused', async (t) => {
  const res = await v.request('POST', '/entitytypes', { payload: '{"key":"x","__proto__":{"admin":true}}', headers: { 'content-type': 'application/json' } });
  t.is(res.status, 400);
  t.is(res.body.message, 'Body contains a forbidden property name');
});

test('a client that sends its request too slowly gets 408 and loses its connection; others are served meanwhile', async (t) => {
  const slow = await startTestVault({ env: { VAULT_REQUEST_TIMEOUT_MS: '1000' } });
  t.teardown(() => slow.close());
  await slow.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = slow.app.server.address() as AddressInfo;

  /** Sends `head`, then one byte of `trickle` every 200 ms; resolves to what came back once the vault closes the connection. */
  const trickled = (head: string, trickle: string) =>
    new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      let sent = 0;
      const timer = setInterval(() => sent < trickle.length && socket.write(trickle[sent++]), 200);
      socket.on('data', (d) => (answer += d));
      socket.on('close', () => {
        clearInterval(timer);
        resolve(answer);
      });
      socket.write(head);
    });
  const body = JSON.stringify({ key: 'SLOW_TYPE' });
  const auth = `Authorization: Bearer ${slow.adminKey}\r\n`;
  const answers = await Promise.all([
    // The body trickles in (40 bytes would take 8 s).
    trickled(`POST /entitytypes HTTP/1.1\r\nHost: vault\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length + 20}\r\n\r\n`, body.padEnd(body.length + 20)),
    // The headers never end.
    trickled(`GET /entitytypes HTTP/1.1\r\nHost: vault\r\n`, 'X-Slow: yes, very slow indeed, slower than that'),
    (async () => {
      const res = await fetch(`http://127.0.0.1:${port}/entitytypes`, { headers: { authorization: `Bearer ${slow.adminKey}` } });
      return `${res.status}`;
    })(),
  ]);
  for (const answer of answers.slice(0, 2)) {
    t.regex(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    t.deepEqual(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { error: 'Request Timeout', message: 'Client Timeout', statusCode: 408 });
    t.regex(answer, /\r\nConnection: close\r\n/i);
  }
  t.is(answers[2], '200');
  t.false((await slow.request<{ data: Array<{ key: string }> }>('GET', '/entitytypes')).body.data.some((e) => e.key === 'SLOW_TYPE'));
});

test('requests the HTTP parser refuses leave no key and no value in the log, even at trace', async (t) => {
  const traced = await startTestVault({ env: { VAULT_LOG_LEVEL: 'trace' } });
  t.teardown(() => traced.close());
  await traced.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = traced.app.server.address() as AddressInfo;
  const send = (raw: string) => rawExchange(port, raw, 'end');
  const value = `chunk-leak-${randomBytes(6).toString('hex')}@example.org`;
  const auth = `Authorization: Bearer ${traced.adminKey}\r\nX-Decryption-Key: ${traced.keys.privateKey}\r\n`;
  const answers = [
    // Headers past what Node takes.
    await send(`GET /entities/x/attributes HTTP/1.1\r\nHost: vault\r\n${auth}X-Pad: ${'p'.repeat(70_000)}\r\n\r\n`),
    // A chunked store whose framing breaks after its value.
    await send(`POST /entities/x/attributes HTTP/1.1\r\nHost: vault\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n30\r\n{"data":[{"attribute":"NOTE","value":"${value}"}]}\r\nZZ\r\n`),
  ];
  t.regex(answers[0], /^HTTP\/1\.1 431 /);
  t.regex(answers[1], /^HTTP\/1\.1 400 /);
  const lines = traced.logs.join('\n');
  t.true(lines.includes('HPE_HEADER_OVERFLOW') && lines.includes('HPE_STRICT'), 'the refusals were logged');
  // pino writes a Buffer as {"type":"Buffer","data":[bytes]}: those bytes are read as text too.
  const bytes = [...lines.matchAll(/"type":"Buffer","data":\[([\d,]*)\]/g)].map((m) => Buffer.from(m[1].split(',').map(Number)).toString('latin1'));
  const logs = [lines, ...bytes].join('\n');
  for (const secret of [traced.adminKey, traced.keys.privateKey, value]) t.false(logs.includes(secret));
});

test('a request the HTTP parser refuses is answered with Connection: close, so a keep-alive client does not reuse the closed connection', async (t) => {
  await v.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = v.app.server.address() as AddressInfo;
  // Written, not ended: the server, not the client, must be the one to close.
  const send = (raw: string) => rawExchange(port, raw, 'write');
  const auth = `Authorization: Bearer ${v.adminKey}\r\n`;
  const answers = [
    // A decryption key far past the 16 KiB of headers Node takes.
    await send(`GET /entitytypes HTTP/1.1\r\nHost: vault\r\n${auth}X-Decryption-Key: ${'A'.repeat(60_000)}\r\n\r\n`),
    await send(`GET /entitytypes HTTP/9.9\r\nHost: vault\r\n${auth}\r\n`),
  ];
  t.regex(answers[0], /^HTTP\/1\.1 431 /);
  t.regex(answers[1], /^HTTP\/1\.1 400 /);
  for (const answer of answers) t.regex(answer.slice(0, answer.indexOf('\r\n\r\n')), /\r\nConnection: close(\r\n|$)/i);
});

test('a client still sending a body over the limit gets its 413, not a broken connection', async (t) => {
  await v.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = v.app.server.address() as AddressInfo;
  const size = 2 * 1024 * 1024; // 32 times the limit: far more than the socket buffers hold
  const answer = await new Promise<{ text: string; writeError?: string }>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let writeError: string | undefined;
    socket.on('data', (d) => (text += d));
    socket.on('error', (err: NodeJS.ErrnoException) => (writeError ??= err.code));
    socket.on('close', () => resolve({ text, writeError }));
    socket.write(`POST /entitytypes HTTP/1.1\r\nHost: vault\r\nAuthorization: Bearer ${v.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    // Paced, as a client on a real network sends: the vault answers long before the last byte.
    const timer = setInterval(() => {
      if (sent >= size || socket.destroyed) {
        clearInterval(timer);
        return;
      }
      socket.write(chunk);
      sent += chunk.length;
    }, 2);
  });
  t.is(answer.writeError, undefined, 'every byte of the body could be sent');
  t.regex(answer.text, /^HTTP\/1\.1 413 /);
  t.true(answer.text.endsWith('{"statusCode":413,"error":"Payload Too Large","message":"Request body is too large"}'));
});

test('a client that asks before sending a body over the limit (Expect: 100-continue) is told 413 at once; one within it is let through', async (t) => {
  await v.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = v.app.server.address() as AddressInfo;
  const head = (length: number) =>
    `POST /entitytypes HTTP/1.1\r\nHost: vault\r\nAuthorization: Bearer ${v.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
  // The headers only: had the vault said 100 Continue, it would wait for a body that never comes.
  const refused = await rawExchange(port, head(2 * 1024 * 1024), 'write');
  t.regex(refused, /^HTTP\/1\.1 413 /);
  t.notRegex(refused, /100 Continue/);
  t.regex(refused, /\r\nconnection: close\r\n/i);
  t.true(refused.endsWith('{"statusCode":413,"error":"Payload Too Large","message":"Request body is too large"}'));

  const key = `CONTINUE_${randomBytes(3).toString('hex').toUpperCase()}`;
  const body = JSON.stringify({ key, name: 'Asked first' });
  const accepted = await new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (d) => {
      answer += d;
      if (answer === 'HTTP/1.1 100 Continue\r\n\r\n') socket.write(body);
      else if (/\r\n\r\n\{.*\}$/s.test(answer)) socket.end();
    });
    socket.on('close', () => resolve(answer));
    socket.write(head(Buffer.byteLength(body)));
  });
  t.regex(accepted, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 20[01] /);
  t.is((await v.request('GET', '/entitytypes')).body.data.filter((e: { key: string }) => e.key === key).length, 1);
});
