import type { IncomingMessage } from 'node:http';

/** Headers that describe one connection, not the message (RFC 9110 §7.6.1). */
const hopByHop = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade',
  'proxy-authenticate', 'proxy-authorization',
]);

/**
 * The path and query to send on. A fragment is no part of a request target (RFC 9112 §3.2),
 * yet Node passes one through: it is cut off, as most servers cut it off before routing
 * (Express's parseurl does), so that the service and the route matching see the same path,
 * and `/users/u-1#x` is never audited as a read of user `u-1#x` while the service shows `u-1`.
 */
export function originForm(url: string): string {
  const hash = url.indexOf('#');
  if (hash >= 0) url = url.slice(0, hash);
  if (url.startsWith('/')) return url;
  try {
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  } catch {
    return `/${url}`;
  }
}

export function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

const noTokens = new Set<string>();

function connectionTokens(value: string | string[] | undefined): Set<string> {
  if (value === undefined) return noTokens;
  const list = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(list.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean));
}

/** The client's headers as sent (order and duplicates kept), minus per-connection ones. */
export function forwardHeaders(req: IncomingMessage): string[] {
  const drop = connectionTokens(req.headers.connection);
  const out: string[] = [];
  const raw = req.rawHeaders;
  let forwardedFor: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    // Node answered any Expect: 100-continue already; undici refuses to send it.
    if (hopByHop.has(name) || drop.has(name) || name === 'expect') continue;
    if (name === 'x-forwarded-for') {
      forwardedFor = forwardedFor ? `${forwardedFor}, ${raw[i + 1]}` : raw[i + 1];
      continue;
    }
    out.push(raw[i], raw[i + 1]);
  }
  const client = req.socket.remoteAddress;
  if (client) forwardedFor = forwardedFor ? `${forwardedFor}, ${client}` : client;
  if (forwardedFor) out.push('x-forwarded-for', forwardedFor);
  return out;
}

/**
 * The upstream's headers as it sent them (names spelt as written, order and repeats kept), from
 * undici's raw list of name, value, name, value…, minus per-connection ones.
 */
export function responseHeaders(raw: string[]): string[] {
  const drop = connectionTokens(headerOf(raw, 'connection'));
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    if (hopByHop.has(name) || drop.has(name)) continue;
    out.push(raw[i], raw[i + 1]);
  }
  return out;
}

/** How many `Host` lines a raw list holds. */
export function hostLines(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') n++;
  return n;
}

/** The first value of a header in a raw list, whatever the case of its name. */
export function headerOf(raw: string[], name: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) return raw[i + 1];
  return undefined;
}

/**
 * The upstream's own reason phrase (`422 Validation Failed`), which some services' clients
 * show; Node's default for the code only if the phrase is one Node would refuse to write.
 */
export function reasonPhrase(text: string | undefined): string | undefined {
  return text !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(text) ? text : undefined;
}
