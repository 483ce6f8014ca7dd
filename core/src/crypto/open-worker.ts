/**
 * The thread a `ValueOpener` sends reads of many values to. It opens each value with the same
 * `open` and `pointAad` as the vault's own thread, and answers with the plaintexts joined into
 * one JSON array, or with the position of the first value that failed to authenticate.
 */
import { parentPort } from 'node:worker_threads';
import { DATA_KEY_BYTES, open, pointAad } from './envelope.js';
import type { OpenReply, OpenRequest } from './opener.js';

function openAll(request: OpenRequest): OpenReply {
  const keys = Buffer.from(request.keys.buffer, request.keys.byteOffset, request.keys.byteLength);
  const texts: string[] = [];
  for (let i = 0; i < request.sealed.length; i++) {
    const at = request.keyOf[i] * DATA_KEY_BYTES;
    try {
      const plaintext = open(keys.subarray(at, at + DATA_KEY_BYTES), Buffer.from(request.sealed[i], 'hex'), pointAad(request.ids[i], request.attributes[i]));
      texts.push(plaintext.toString('utf8'));
    } catch {
      return { id: request.id, failed: i };
    }
  }
  // Each plaintext is the JSON text its value was sealed as, so joined they make one array.
  return { id: request.id, json: `[${texts.join(',')}]` };
}

parentPort!.on('message', (request: OpenRequest) => parentPort!.postMessage(openAll(request)));
