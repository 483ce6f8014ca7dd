// The vault's REST API from the browser. The API key lives in sessionStorage only (gone when
// the tab closes); private keys and values are never stored anywhere and never put in a URL.
const KEY = 'vault.console.apiKey';

export const session = {
  apiKey: () => sessionStorage.getItem(KEY),
  signIn: (apiKey) => sessionStorage.setItem(KEY, apiKey),
  signOut: () => sessionStorage.removeItem(KEY),
};

export class ApiError extends Error {
  constructor(status, message, body, retryAfter) {
    super(message);
    this.status = status;
    this.body = body;
    /** Seconds the vault asked to wait (`Retry-After` of a 429 or 503), when it said. */
    this.retryAfter = retryAfter;
  }
}

let unauthorizedHandler = () => {};
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

/**
 * One request. `query` members that are empty are left out; `headers` carry per-request
 * secrets (the decryption key) that must not outlive this call; `signal` abandons it.
 */
export async function api(method, path, { query, body, headers, apiKey, signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  const key = apiKey ?? session.apiKey();
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
      signal,
    });
  } catch {
    throw new ApiError(0, 'The vault did not answer');
  }
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const wait = Number(res.headers.get('retry-after'));
    const error = new ApiError(res.status, json?.message ?? res.statusText ?? 'Request failed', json, Number.isFinite(wait) && wait > 0 ? wait : undefined);
    if (res.status === 401 && apiKey === undefined) unauthorizedHandler();
    throw error;
  }
  return json;
}

/** `{data}` unwrapped. */
export const get = (path, query) => api('GET', path, { query }).then((r) => r.data);
export const post = (path, body) => api('POST', path, { body }).then((r) => r.data);
export const del = (path) => api('DELETE', path).then((r) => r.data);
export const seg = encodeURIComponent;

/** Search pages; the vault's 404 `Data Not Found` for an empty page is an empty list here. */
export async function search(query, page = 0, count = 100) {
  try {
    return await post('/search', { query, page, count });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return [];
    throw err;
  }
}

/** Every page of a paged GET, `count` at a time, up to `limit` records. */
export async function getAll(path, query, { count = 1000, limit = 1_000_000 } = {}) {
  const all = [];
  for (let page = 0; all.length < limit; page++) {
    const batch = await get(path, { ...query, page, count });
    all.push(...batch);
    if (batch.length < count) break;
  }
  return all;
}

const NOT_A_KEY = 'This file is not a private key: choose the PEM file that begins with -----BEGIN PRIVATE KEY----- (or its base64).';
const PASSPHRASE = 'This private key is locked with a passphrase, and the vault takes the key itself: unlock a copy first (openssl pkey -in key.pem -out unlocked.pem).';
const PUBLIC_KEY = 'This is a public key: values are revealed with the private half of the pair, the file that begins with -----BEGIN PRIVATE KEY-----.';

/**
 * A private key file as the header wants it: the base64 of its PEM. Read in the browser and
 * handed straight to the one request that needs it. A file that is plainly not one is refused
 * here with words an officer can act on: sent, the vault's 400 names an encoding, and text a
 * header cannot carry (an image, accented letters) fails before any request, as if the vault
 * were down.
 */
export async function keyFileToHeader(file) {
  const text = (await file.text()).trim();
  const pem = text.startsWith('-----BEGIN') ? text : decodedPem(text);
  if (pem === undefined || !/^-----BEGIN [A-Z ]*KEY-----[\s\S]+-----END [A-Z ]*KEY-----$/.test(pem)) throw new Error(NOT_A_KEY);
  if (/^-----BEGIN (RSA )?PUBLIC KEY-----/.test(pem)) throw new Error(PUBLIC_KEY);
  if (/^-----BEGIN ENCRYPTED PRIVATE KEY-----/.test(pem)) throw new Error(PASSPHRASE);
  if (!/^-----BEGIN (RSA )?PRIVATE KEY-----/.test(pem)) throw new Error(NOT_A_KEY);
  return btoa(pem + '\n');
}

/** The PEM that base64 text holds, or undefined. */
function decodedPem(text) {
  const compact = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return undefined;
  try {
    const decoded = atob(compact).trim();
    return decoded.startsWith('-----BEGIN') ? decoded : undefined;
  } catch {
    return undefined;
  }
}
