import { html } from '../lib.js';

/** Every record verifies, and the kept head, if one was given, is among them. */
export const chainIntact = (result) => Boolean(result?.valid) && !(result.headMatches === false && result.firstBrokenSequence === undefined);

/**
 * What `GET /activity/verify` found, in words. An intact chain is a status; `live={false}`
 * leaves that to a live region around it, which is in the page before the answer.
 */
export function ChainState({ result, onShow, live = true }) {
  if (!result) return null;
  // Every record verifies, yet the head kept outside the database is not among them.
  if (result.headMatches === false && result.firstBrokenSequence === undefined) {
    return html`<div class="chain broken" role="alert" data-chain="head-mismatch">
      <strong>✗ The kept head does not match</strong>
      <p>The ${result.records} sealed records verify, but the record the kept head names is not in the log as it was: records were cut off the end or rewritten from there on (or the head was not taken from this vault).</p>
      ${result.lastHash ? html`<p>Chain head now <code>${result.lastSequence}:${result.lastHash}</code></p>` : null}
    </div>`;
  }
  if (result.valid) {
    return html`<div class="chain ok" role=${live ? 'status' : undefined} data-chain="valid">
      <strong>✓ Chain intact</strong>
      <p>${result.records} sealed record${result.records === 1 ? '' : 's'} verified${result.unsealed ? `, ${result.unsealed} awaiting sealing` : ''}.</p>
      ${result.headMatches ? html`<p><strong>✓ The kept head matches</strong>: the log still holds that record unchanged.</p>` : null}
      ${result.lastHash
        ? html`<p>Chain head <code>${result.lastSequence}:${result.lastHash}</code></p>
            <p class="muted small">Compare it with the head kept outside the database: records cut off the end leave a valid, shorter chain that only that copy reveals (enter a kept one beside Verify chain, or run <code>vault activity verify --head SEQUENCE:HASH</code>).</p>`
        : null}
    </div>`;
  }
  return html`<div class="chain broken" role="alert" data-chain="broken">
    <strong>✗ Chain broken</strong>
    <p>The first record that does not verify is <strong>#${result.firstBrokenSequence}</strong>${result.firstBrokenEventId ? html` (event <span class="mono">${result.firstBrokenEventId}</span>)` : null}. It or the record before it was edited, removed or reordered outside the vault.</p>
    ${result.headMatches === true
      ? html`<p data-head="matches"><strong>✓ The kept head matches</strong>: the log still holds that record unchanged, so nothing up to it was cut off the end.</p>`
      : null}
    ${result.headMatches === false
      ? html`<p data-head="mismatch"><strong>✗ The kept head does not match either</strong>: the record it names was removed or rewritten (or the head was not taken from this vault).</p>`
      : null}
    ${onShow ? html`<button type="button" onClick=${() => onShow(result.firstBrokenSequence)}>Show record #${result.firstBrokenSequence}</button>` : null}
  </div>`;
}
