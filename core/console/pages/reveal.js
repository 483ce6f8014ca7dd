// Revealing a subject's values one point at a time, when together they exceed what the vault
// answers in one read (its 413 under VAULT_READ_LIMIT; a single point is always answered).
import { html, useEffect, useState } from '../lib.js';
import { api, ApiError, seg } from '../api.js';

/** Reads in flight at once: enough to keep the vault busy, few enough to leave it to others. */
const AT_ONCE = 4;
/** Times one point is asked again after a 429 or 503, as long as the vault asks to wait. */
const RETRIES = 5;
const LONGEST_WAIT_S = 60;

export const count = (n) => n.toLocaleString('en');
export const values = (n) => `${count(n)} value${n === 1 ? '' : 's'}`;

/**
 * Reads each of `ids` with `GET /data/{id}`, `AT_ONCE` at a time, handing each value to
 * `onValue` and each refusal to `onRefused` as "status message" (a point deleted meanwhile,
 * prohibited, or sealed under another key), and the number done so far to `onProgress`.
 * Nothing is kept here: the page keeps what its table shows. A refusal that is not the
 * point's own (no answer at all, the session gone) stops every read and is thrown; `signal`
 * stops them too, and nothing read after it is handed on.
 */
export async function readPointByPoint({ ids, header, signal, onValue, onRefused, onProgress }) {
  let next = 0;
  let done = 0;
  let failed;
  const stopped = () => signal.aborted || failed !== undefined;
  const worker = async () => {
    while (!stopped() && next < ids.length) {
      const id = ids[next++];
      let outcome;
      try {
        outcome = await readOne(id, header, signal);
      } catch (err) {
        failed ??= err;
        return;
      }
      if (stopped()) return;
      if ('refused' in outcome) onRefused(id, outcome.refused);
      else onValue(id, outcome.value);
      onProgress(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, ids.length) }, worker));
  if (failed !== undefined && !signal.aborted) throw failed;
}

async function readOne(id, header, signal) {
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await api('GET', `/data/${seg(id)}`, { headers: { 'x-decryption-key': header }, signal });
      return { value: answer.data.value };
    } catch (err) {
      if (signal.aborted) return {};
      if (!(err instanceof ApiError) || err.status === 0 || err.status === 401) throw err;
      if ((err.status === 429 || err.status === 503) && attempt < RETRIES) {
        await pause(Math.min(err.retryAfter ?? 1, LONGEST_WAIT_S), signal);
        continue;
      }
      return { refused: `${err.status} ${err.message}` };
    }
  }
}

const pause = (seconds, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * How far a reveal has got, told to whoever listens. Only the progress bar listens: the page
 * around it, 5,000 rows of table, drawn again at every count kept the browser too busy to
 * take in the answers (a reveal of 5,000 values took a minute).
 */
export function revealProgress(total) {
  let done = 0;
  const listeners = new Set();
  return {
    total,
    done: () => done,
    set(n) {
      done = n;
      for (const listener of listeners) listener(n);
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/**
 * How far a reveal has got, with the way to stop it. The bar and its words change as values
 * arrive; a screen reader hears the milestones from the page's polite live region instead,
 * which would otherwise read out every count.
 */
export function RevealProgress({ progress, onCancel, cancelRef }) {
  const [done, setDone] = useState(progress.done());
  useEffect(() => progress.listen(setDone), [progress]);
  const total = progress.total;
  return html`<div class="reveal-progress">
    <span id="reveal-progress-text">Revealing ${count(done)} of ${values(total)}…</span>
    <progress max=${total} value=${done} aria-labelledby="reveal-progress-text"></progress>
    <button type="button" ref=${cancelRef} onClick=${onCancel}>Cancel reveal</button>
  </div>`;
}

/** What a milestone of the reveal tells a screen reader: each tenth of the way, not each value. */
export function milestone(done, total) {
  return Math.floor((done * 10) / Math.max(total, 1));
}

/** A stored value's cell when the vault would not read it: said in words, not by colour alone. */
export function refusedValue(reason) {
  return html`<strong class="refused">Could not be read: ${reason}</strong>`;
}
