/**
 * Offline geolocation of a store or an event: a client address (or an explicit `origin`)
 * to country and ISO 3166-2 subdivision, from geoip-lite's bundled data.
 */
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type { Location } from '../rules/engine.js';

type GeoIp = { lookup(ip: string): { country: string; region: string; city: string } | null };
let geoip: GeoIp | undefined;

/**
 * The database costs ~150 MB and two seconds to load, so it is loaded on the first public
 * address only: deployments that never see one (tests, loopback benchmarks) never pay.
 */
function database(): GeoIp {
  geoip ??= createRequire(import.meta.url)('geoip-lite') as GeoIp;
  return geoip;
}

const PRIVATE = [/^10\./, /^127\./, /^169\.254\./, /^172\.(1[6-9]|2\d|3[01])\./, /^192\.168\./, /^0\./, /^::1$/, /^f[cd]/i, /^fe80:/i, /^::ffff:(10|127|192\.168)\./];

export function isPublicAddress(address: string): boolean {
  return isIP(address) !== 0 && !PRIVATE.some((re) => re.test(address));
}

/** `US`, `us-ca`, `GB-ENG`: an explicit location code as sent in `origin`. */
const CODE = /^([A-Za-z]{2})(?:-([A-Za-z0-9]{1,3}))?$/;

export function locate(address: string | undefined): Location | undefined {
  if (!address) return undefined;
  const code = CODE.exec(address);
  if (code) {
    const country = code[1].toUpperCase();
    return code[2] ? { country, subdivision: `${country}-${code[2].toUpperCase()}` } : { country };
  }
  const ip = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  if (!isPublicAddress(ip)) return undefined;
  const hit = database().lookup(ip);
  if (!hit || !hit.country) return undefined;
  return {
    country: hit.country,
    ...(hit.region ? { subdivision: `${hit.country}-${hit.region}` } : {}),
    ...(hit.city ? { city: hit.city } : {}),
  };
}
