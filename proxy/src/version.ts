/**
 * The sidecar's version, for the start line: from the nearest package.json above this module,
 * the proxy package's own from the sources and the repository's from dist/ (both are released together).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function nearestVersion(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: unknown };
      if (typeof version === 'string') return version;
    } catch {
      // None here, or not readable: look further up.
    }
    if (dirname(dir) === dir) return 'unknown';
  }
}

export const SIDECAR_VERSION = nearestVersion(dirname(fileURLToPath(import.meta.url)));
