import { html } from '../lib.js';

/** What `GET /activity/verify` found, in words. */
export function ChainState({ result, onShow }) {
  if (!result) return null;
  if (result.valid) {
    return html`<div class="chain ok" role="status" data-chain="valid">
      <strong>✓ Chain intact</strong>
      <p>${result.records} sealed record${result.records === 1 ? '' : 's'} verified${result.unsealed ? `, ${result.unsealed} awaiting sealing` : ''}.</p>
      ${result.lastHash
        ? html`<p>Chain head <code>${result.lastSequence}:${result.lastHash}</code></p>
            <p class="muted small">Compare it with the head kept outside the database: records cut off the end leave a valid, shorter chain that only that copy reveals (<code>vault activity verify --head SEQUENCE:HASH</code> checks a kept one).</p>`
        : null}
    </div>`;
  }
  return html`<div class="chain broken" role="alert" data-chain="broken">
    <strong>✗ Chain broken</strong>
    <p>The first record that does not verify is <strong>#${result.firstBrokenSequence}</strong>${result.firstBrokenEventId ? html` (event <span class="mono">${result.firstBrokenEventId}</span>)` : null}. It or the record before it was edited, removed or reordered outside the vault.</p>
    ${onShow ? html`<button type="button" onClick=${() => onShow(result.firstBrokenSequence)}>Show record #${result.firstBrokenSequence}</button>` : null}
  </div>`;
}
