/**
 * Hot spots of a V8 CPU profile (`npm run bench -- --cpu-prof <dir>`): self time by function
 * and by package or core module, and inclusive time of the vault's own functions.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** `node_modules/<pkg>`, `core/src/<module>`, `node:<builtin>`, or the V8 pseudo-frames. */
function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const mod = /\/(core|proxy)\/src\/([^/]+)/.exec(url);
  if (mod) return `${mod[1]}/${mod[2]}`;
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '');
}

function label(n: ProfileNode): string {
  const where = n.callFrame.url.replace(/^file:\/\/.*?\/(node_modules|core|proxy)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${where}${where ? `:${n.callFrame.lineNumber + 1}` : ''}`;
}

export function summarize(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  // Sample timings, not hit counts: the interval varies under load.
  profile.samples.forEach((id, i) => selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const totalMs = [...selfMs.values()].reduce((a, b) => a + b, 0);

  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const selfByFn = new Map<string, number>();
  const selfByArea = new Map<string, number>();
  const inclusive = new Map<string, number>();
  // For library and native time: which vault function (nearest core/src frame) it was spent for.
  const byCaller = new Map<string, Map<string, number>>();
  for (const [id, ms] of selfMs) {
    const n = byId.get(id)!;
    selfByFn.set(label(n), (selfByFn.get(label(n)) ?? 0) + ms);
    const a = area(n.callFrame.url, n.callFrame.functionName);
    selfByArea.set(a, (selfByArea.get(a) ?? 0) + ms);
    // Each vault function on the stack once, however deep the recursion.
    const seen = new Set<string>();
    let nearest: string | undefined;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur)!;
      if (!/\/core\/src\//.test(node.callFrame.url)) continue;
      const l = label(node);
      if (nearest === undefined && node.callFrame.functionName) nearest = l;
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + ms);
    }
    const fn = label(n);
    const callers = byCaller.get(fn) ?? new Map<string, number>();
    callers.set(nearest ?? '(outside the vault)', (callers.get(nearest ?? '(outside the vault)') ?? 0) + ms);
    byCaller.set(fn, callers);
  }
  const table = (title: string, m: Map<string, number>) => {
    const rows = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
    return [title, ...rows.map(([k, v]) => `${((v / totalMs) * 100).toFixed(1).padStart(6)}%  ${v.toFixed(0).padStart(7)} ms  ${k}`)].join('\n');
  };
  const hottest = [...selfByFn.entries()]
    .filter(([k]) => !k.startsWith('('))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  const callers = hottest.map(([fn, ms]) => {
    const rows = [...byCaller.get(fn)!.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6);
    return [`${fn} (${((ms / totalMs) * 100).toFixed(1)}%), on behalf of:`, ...rows.map(([k, v]) => `   ${((v / totalMs) * 100).toFixed(1).padStart(6)}%  ${k}`)].join('\n');
  });
  return [
    `profile: ${(totalMs / 1000).toFixed(1)} s sampled`,
    table('\nself time by package / module:', selfByArea),
    table('\nself time by function:', selfByFn),
    table('\ninclusive time of vault functions (core/src):', inclusive),
    '\nthe hottest functions by the vault function they ran for:',
    ...callers,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(`${summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25))}\n`);
}
