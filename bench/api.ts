/**
 * Seeding and set-up calls, made through the same HTTP API users call. Anything but the
 * expected status stops the run with the server's answer: a benchmark on a half-seeded
 * vault would measure the wrong thing.
 */
import { Agent, request } from 'undici';

const agent = new Agent({ connections: 16, keepAliveTimeout: 30_000, bodyTimeout: 600_000, headersTimeout: 600_000 });

export interface ApiResponse<T = any> {
  status: number;
  body: T;
}

export class Api {
  constructor(
    readonly url: string,
    readonly headers: Record<string, string> = {},
  ) {}

  async call<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const res = await request(`${this.url}${path}`, {
      method: method as 'GET',
      dispatcher: agent,
      headers: { ...this.headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let parsed: any = text;
    try {
      parsed = text.length ? JSON.parse(text) : undefined;
    } catch {
      // Not JSON (an HTML error page, say): keep the text for the message.
    }
    return { status: res.statusCode, body: parsed };
  }

  /** The call, which must answer one of `expected`; returns the body. */
  async ok<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, expected = [200, 201, 202]): Promise<T> {
    const res = await this.call<T>(method, path, body, headers);
    if (!expected.includes(res.status)) {
      throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
    }
    return res.body;
  }
}

/** Runs `task(i)` for i in [0, count) with at most `parallel` in flight. */
export async function inParallel(count: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(parallel, count) }, async () => {
    while (next < count) await task(next++);
  });
  await Promise.all(lanes);
}

export async function closeApiAgent(): Promise<void> {
  await agent.close();
}
