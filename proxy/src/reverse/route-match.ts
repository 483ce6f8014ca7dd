/** Which route of a routes file a request's method and path reach, and its path parameters. */
import type { CompiledRoute, RouteMatch } from './routes-file.js';

/** First matching route wins, in file order. */
export class CompiledRoutes {
  constructor(readonly routes: CompiledRoute[]) {}

  /**
   * Segments are compared decoded, as the upstream's router sees them: `/usu%C3%A1rios/1` is
   * what clients send for a route listed as `/usuários/:id`, and so is `/usua%CC%81rios/1`, the
   * same word decomposed (`a` + combining acute): literals are compared in Unicode NFC, since
   * clients spell either way (macOS hands out decomposed text) and an upstream that serves both
   * must not have one go unaudited. Parameters keep the spelling sent: they are ids. Literal
   * segments match in any case and a trailing slash is ignored, as most frameworks route
   * (Express by default): `/Users/u-1/` reaches the same handler as `/users/u-1`, and its
   * reads must not go unaudited. A path the upstream does not serve answers 404 and yields no
   * event, so matching leniently invents none. For the same reason a path with `.` or `..`
   * segments (`%2e` too), a run of slashes or a backslash that matches no route as sent is
   * matched as servers that tidy paths see it, dot segments resolved (RFC 3986 §5.2.4), slashes
   * merged and backslashes read as slashes: nginx and Tomcat serve `/x/../users/u-1` and
   * `//users//u-1` as `/users/u-1`, servers that parse with WHATWG `new URL` `/users\u-1`, and
   * that read must not go unaudited either.
   */
  match(method: string, pathname: string): RouteMatch | undefined {
    const raw = pathname.split('/').slice(1);
    const found = this.matchSegments(method, raw);
    if (found || !isUntidy(pathname, raw)) return found;
    return this.matchSegments(method, tidy(pathSegments(pathname)));
  }

  private matchSegments(method: string, segments: string[]): RouteMatch | undefined {
    let raw = segments;
    if (raw.length > 1 && raw[raw.length - 1] === '') raw = raw.slice(0, -1);
    // undefined where the %-escapes do not decode.
    const parts = raw.map(decodeSegment);
    const lower = parts.map((part, i) => comparable(part ?? raw[i]));
    for (const route of this.routes) {
      if (route.methods !== 'any' && !route.methods.has(method.toUpperCase())) continue;
      if (route.rest ? parts.length <= route.segments.length : parts.length !== route.segments.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      let undecodable = false;
      for (let i = 0; i < route.segments.length && ok; i++) {
        const segment = route.segments[i];
        const part = parts[i];
        if ('literal' in segment) ok = segment.literal === lower[i];
        else if (raw[i] === '') ok = false;
        else if (part === undefined) undecodable = true;
        else params[segment.param] = part;
      }
      if (ok && route.rest) {
        const rest = parts.slice(route.segments.length);
        if (rest.some((part) => part === undefined)) undecodable = true;
        else params['*'] = rest.join('/');
      }
      if (ok) return undecodable ? { route, params, undecodable: true } : { route, params };
    }
    return undefined;
  }
}

/**
 * Whether the path's `..` segments (`%2e%2e` too, and a backslash read as a slash, as WHATWG
 * URL parsing reads it) climb above its root, as in `/../admin`. No
 * client resolving a link sends that; nginx and Tomcat answer 400. Sent on, it would leave the
 * path of SIDECAR_UPSTREAM (`/api/../admin`) for a server that resolves it. Empty segments do
 * not count, since servers that merge slashes see `//../admin` as `/../admin`.
 */
export function climbsAboveRoot(pathname: string): boolean {
  if (!/\.|%2e/i.test(pathname)) return false;
  let depth = 0;
  for (const segment of pathSegments(pathname)) {
    if (segment === '') continue;
    const decoded = decodeSegment(segment);
    if (decoded === '..') {
      if (--depth < 0) return true;
    } else if (decoded !== '.') depth++;
  }
  return false;
}

/** The segments as servers that read a backslash as a slash (WHATWG URL parsing) see them. */
function pathSegments(pathname: string): string[] {
  return pathname.split(pathname.includes('\\') ? /[/\\]/ : '/').slice(1);
}

function isUntidy(pathname: string, segments: string[]): boolean {
  return pathname.includes('\\') || segments.some((segment, i) => (segment === '' && i < segments.length - 1) || isDotSegment(segment));
}

function isDotSegment(segment: string): boolean {
  const decoded = decodeSegment(segment);
  return decoded === '.' || decoded === '..';
}

/**
 * The segments with empty ones (runs of slashes) left out and `.` and `..` resolved; a `..` at
 * the root is dropped, as URL parsers drop it. A path that ended in a slash, or in a dot
 * segment, still does.
 */
function tidy(segments: string[]): string[] {
  const out: string[] = [];
  for (const segment of segments) {
    const decoded = decodeSegment(segment);
    if (decoded === '..') out.pop();
    else if (decoded !== '.' && segment !== '') out.push(segment);
  }
  const last = decodeSegment(segments[segments.length - 1]);
  if (last === '' || last === '.' || last === '..') out.push('');
  return out;
}

const NON_ASCII = /[^\x00-\x7f]/;

/** A decoded literal as compared: NFC, lower case. ASCII is its own NFC, so most paths skip it. */
export function comparable(segment: string): string {
  return (NON_ASCII.test(segment) ? segment.normalize('NFC') : segment).toLowerCase();
}

export function decodeSegment(segment: string): string | undefined {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
