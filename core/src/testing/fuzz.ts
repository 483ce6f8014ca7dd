/**
 * Hostile input for any route: random JSON of every shape, odd strings, and bodies that are
 * not JSON at all. The vault must answer each with a 2xx or 4xx and keep answering.
 */
import fc from 'fast-check';
import type { ExecutionContext } from 'ava';
import type { TestVault } from './harness.js';

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '../../etc/passwd', "'; DROP TABLE entities; --", '<script>alert(1)</script>', '%00', '\uD800', '💥'.repeat(20), 'x'.repeat(5000), '__proto__', 'constructor'),
);

export const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(hostileString, fc.constantFrom('key', 'name', 'id', 'type', 'data', 'value', 'attribute', '__proto__')), tie('value'), { maxKeys: 5 }),
  ),
})).value;

export interface FuzzRoute {
  method: string;
  /** May contain `{id}`, replaced by a hostile path segment. */
  url: string;
  /** Builds a body; defaults to random JSON. */
  body?: fc.Arbitrary<unknown>;
  headers?: Record<string, string>;
}

export async function fuzzRoutes(t: ExecutionContext, vault: TestVault, routes: FuzzRoute[], runs = 60): Promise<void> {
  const segment = fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.constantFrom('%2e%2e', '%00', 'a'.repeat(600), '%F0%9F%92%A5'));
  for (const route of routes) {
    await fc.assert(
      fc.asyncProperty(route.body ?? hostileJson, segment, async (body, id) => {
        const url = route.url.replace(/\{id\}/g, encodeURIComponent(id));
        const res = await vault.request(route.method, url, { body, headers: route.headers });
        if (res.status >= 500) t.log(route.method, url, JSON.stringify(body)?.slice(0, 300), res.body);
        return res.status < 500;
      }),
      { numRuns: runs },
    );
    const deep = (n: number) => `${'{"constraints":['.repeat(n)}1${']}'.repeat(n)}`;
    // Broken, odd and hostile bodies: nesting deep enough to overflow a recursive walker, a lone surrogate.
    for (const payload of ['{', '{"a":', 'null', '[]', '"x"', '\u0000', '{"__proto__":{"admin":true}}', deep(60), deep(3000), '['.repeat(100_000), '{"key":"\\ud800"}']) {
      const res = await vault.request(route.method, route.url.replace(/\{id\}/g, 'x'), {
        payload,
        headers: { 'content-type': 'application/json', ...route.headers },
      });
      t.true(res.status < 500, `${route.method} ${route.url} with ${payload.slice(0, 80)} answered ${res.status}`);
    }
  }
  const health = await vault.request('GET', '/openapi.json');
  t.is(health.status, 200, 'the server still answers after the fuzzing');
}
