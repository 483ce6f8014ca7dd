/**
 * A forwarding HTTP proxy for tests: records what the client really sends (method, path,
 * headers, body), and can make a request fail the way networks do, before or after the
 * vault has acted on it.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

export interface Recorded {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/**
 * - `forward`: pass it on.
 * - `reset`: drop the connection before the vault sees the request.
 * - `drop-answer`: let the vault act, then drop the connection instead of answering.
 */
export type Fate = 'forward' | 'reset' | 'drop-answer';

export interface RecordingProxy {
  url: string;
  requests: Recorded[];
  /** TCP connections accepted so far. */
  connections: number;
  /** Decides each request's fate; default forward. */
  fate: (req: Recorded, n: number) => Fate;
  close(): Promise<void>;
}

export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const proxy: RecordingProxy = {
    url: '',
    requests: [],
    connections: 0,
    fate: () => 'forward',
    close: async () => {},
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const recorded: Recorded = { method: req.method!, path: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
    proxy.requests.push(recorded);
    const fate = proxy.fate(recorded, proxy.requests.length);
    if (fate === 'reset') {
      req.socket.destroy();
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers.connection;
    delete headers['keep-alive'];
    delete headers['transfer-encoding'];
    try {
      const upstream = await request(target + req.url, {
        method: req.method as 'GET',
        headers,
        body: recorded.body.length > 0 ? recorded.body : undefined,
      });
      const body = Buffer.from(await upstream.body.arrayBuffer());
      if (fate === 'drop-answer') {
        req.socket.destroy();
        return;
      }
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value !== undefined && !['connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(name)) out[name] = value;
      }
      res.writeHead(upstream.statusCode, out);
      res.end(body);
    } catch {
      req.socket.destroy();
    }
  });
  server.on('connection', () => proxy.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
