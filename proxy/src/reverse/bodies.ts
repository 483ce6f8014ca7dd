import type { ServerResponse } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { TextDecoder } from 'node:util';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { charsetLabels, UTF8_CHARSETS } from '../http.js';

export function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/(?:[\w.+-]+\+)?json\b/i.test(contentType.trim());
}

/** Reads a body's bytes as text. */
export interface Charset {
  decode(bytes: Buffer): string;
}

const utf8: Charset = { decode: (bytes) => bytes.toString('utf8') };
/** One per label Node knows: a finite set (the WHATWG labels), so an upstream cannot grow it. */
const decoders = new Map<string, TextDecoder>();

/**
 * The charset a JSON body's Content-Type declares (UTF-8 when none: JSON is UTF-8), or
 * undefined when Node has no decoder for it, or when two `charset` parameters disagree.
 * `latin1`, `iso-8859-1` and `windows-1252` all read as windows-1252, as browsers read them.
 */
export function charsetOf(contentType: string | undefined): Charset | undefined {
  const labels = charsetLabels(contentType);
  const label = labels[0];
  if (labels.some((other) => other !== label)) return undefined;
  // Read as UTF-8, as the ingest API takes them: ASCII is a subset of UTF-8 (WHATWG would say windows-1252).
  if (label === undefined || UTF8_CHARSETS.has(label)) return utf8;
  let decoder = decoders.get(label);
  if (decoder === undefined) {
    try {
      decoder = new TextDecoder(label);
    } catch {
      return undefined;
    }
    decoders.set(label, decoder);
  }
  return decoder;
}

export function parseJson(buffer: Buffer | undefined, charset: Charset = utf8): unknown {
  if (buffer === undefined || buffer.length === 0) return undefined;
  try {
    const text = charset.decode(buffer);
    // A UTF-8 byte order mark, which some Windows tools write: services drop it (Express's
    // body-parser does, and RFC 8259 §8.1 allows it), so its events are due.
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return undefined;
  }
}

export function decode(buffer: Buffer, encoding: string | undefined, limit: number): Buffer | undefined {
  const options = { maxOutputLength: Math.max(limit, 1) * 4 };
  try {
    switch ((encoding ?? 'identity').trim().toLowerCase()) {
      case 'identity':
      case '':
        return buffer;
      case 'gzip':
      case 'x-gzip':
        return gunzipSync(buffer, options);
      case 'deflate':
        return inflateSync(buffer, options);
      case 'br':
        return brotliDecompressSync(buffer, options);
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

/**
 * Streams the upstream body to the client (through `tap` if given) and resolves true once it
 * all went through, false if either side broke off; a client hanging up stops the upstream
 * transfer. With a tap, it does not: the upstream already acted on the request (stored what
 * it was sent) and the audit events need its answer, so the rest of the body still flows into
 * the tap, up to its limit and within the upstream timeouts, and true then means the tap saw
 * it all. (Plain pipe() rather than stream.pipeline: the latter allocates an AbortController
 * and a DOMException per call, a measurable cost per proxied request.)
 */
export function relay(source: Readable, res: ServerResponse, tap: Tap | undefined, end: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      resolve(ok);
    };
    // Destroying the upstream body (client gone) makes it emit an error too: always listen.
    source.on('error', () => {
      res.destroy();
      settle(false);
    });
    tap?.on('error', () => {
      res.destroy();
      source.destroy();
      settle(false);
    });
    const clientGone = () => {
      if (settled) return;
      if (!tap) {
        source.destroy();
        settle(res.writableFinished);
        return;
      }
      const stopIfOverflowing = () => {
        if (!tap.overflow) return;
        source.destroy();
        settle(false);
      };
      stopIfOverflowing();
      tap.on('data', stopIfOverflowing);
      tap.once('end', () => settle(true));
      tap.resume();
    };
    // The client may have left while the upstream was still thinking.
    if (res.destroyed) {
      if (tap) source.pipe(tap);
      clientGone();
      return;
    }
    const out = tap ? source.pipe(tap) : source;
    out.pipe(res, { end });
    if (end) res.once('finish', () => settle(true));
    else out.once('end', () => settle(true));
    // pipe() has unpiped the tap by now: it registered its own close listener first.
    res.once('close', clientGone);
  });
}

/** Reads until the end or just past `limit` bytes, leaving the rest of the stream unread. */
export function readUpTo(stream: Readable, limit: number): Promise<{ chunks: Buffer[]; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    const cleanup = () => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      total += chunk.length;
      if (total > limit) {
        stream.pause();
        cleanup();
        resolve({ chunks, complete: false });
      }
    };
    const onEnd = () => {
      cleanup();
      resolve({ chunks, complete: true });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    stream.on('data', onData);
    stream.once('end', onEnd);
    stream.once('error', onError);
  });
}

/**
 * A client's body for undici to send: `head` (already read), then the rest of `rest`. Undici
 * destroys a body it gives up on (the upstream answered or failed before taking it all); the
 * rest of the client's body is then read and dropped, as Node drains a body its handler never
 * read, so the client can finish sending (it may not stop on an early answer) and send its next
 * request on the connection. Destroyed with this wrapper, the request would leave its
 * connection stalled: Node stops reading a socket whose request takes no more.
 */
export async function* resume(head: Buffer[], rest: Readable): AsyncGenerator<Buffer> {
  try {
    yield* head;
    for await (const chunk of rest.iterator({ destroyOnReturn: false })) yield chunk as Buffer;
  } finally {
    if (!rest.readableEnded && !rest.destroyed) rest.resume();
  }
}

/** Passes a response through while keeping a copy of its first `limit` bytes. */
export class Tap extends Transform {
  private chunks: Buffer[] = [];
  private size = 0;
  overflow = false;

  constructor(private readonly limit: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!this.overflow) {
      this.size += chunk.length;
      if (this.size > this.limit) {
        this.overflow = true;
        this.chunks = [];
      } else this.chunks.push(chunk);
    }
    callback(null, chunk);
  }

  buffer(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
