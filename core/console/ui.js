// Shared pieces of every page: loading and error states, tables, pagers, forms, downloads.
import { html, markedIn, useEffect, useRef, useState } from './lib.js';
import { ApiError, seg } from './api.js';

/**
 * Runs `load` whenever `deps` change; returns {data, error, loading, current, reload}. `data`
 * stays while the next load runs; `current` says it answers the deps as they are now (in the
 * render that changes them, `loading` is not yet set).
 */
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ loading: true });
  const [tick, setTick] = useState(0);
  const now = [...deps, tick];
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    Promise.resolve()
      .then(load)
      .then(
        (data) => live && setState({ data, loading: false, for: now }),
        (error) => live && setState({ error, loading: false, for: now }),
      );
    return () => (live = false);
  }, now);
  const current = !state.loading && state.for?.length === now.length && state.for.every((d, i) => Object.is(d, now[i]));
  return { ...state, current, reload: () => setTick((t) => t + 1) };
}

/**
 * A message that answers something the user did may be drawn away from where they did it (a
 * delete in a long table answers under the form below it): `intoView` brings it into view.
 * Not for what a page shows as it loads, or opening a page would scroll it.
 */
function useIntoView(message, wanted) {
  const ref = useRef();
  // Markup is new at every render: only its arrival counts, or a re-render would scroll back.
  const identity = typeof message === 'object' && message !== null && !(message instanceof Error) ? true : message;
  useEffect(() => {
    if (wanted && identity) ref.current?.scrollIntoView?.({ block: 'nearest' });
  }, [identity]);
  return ref;
}

/** An API error as the vault worded it; a 403 on an admin page says what is missing. */
export function ErrorBox({ error, admin, intoView = false, id }) {
  const ref = useIntoView(error, intoView);
  if (!error) return null;
  const status = error instanceof ApiError ? error.status : 0;
  const hint = status === 403 && admin ? html`<p>This needs an administrator's API key, and yours is not one.</p>` : null;
  return html`<div class="error" role="alert" id=${id} ref=${ref}>
    <strong>${status ? `${status} ` : ''}${error.message}</strong>${hint}
  </div>`;
}

/**
 * A status message. The live region stays in the page while empty: a screen reader announces
 * what is put into a region it already knows, and mostly not a region that arrives with its text.
 */
export function Notice({ children, kind = 'ok', intoView = false }) {
  const ref = useIntoView(children, intoView);
  return html`<div class=${children ? `notice ${kind}` : undefined} role="status" ref=${ref}>${children || null}</div>`;
}

export function Loading({ what = 'Loading' }) {
  return html`<p class="muted" aria-busy="true">${what}…</p>`;
}

/**
 * Page heading that takes focus on arrival, so keyboard and screen-reader users land on it,
 * and names the document after it: tabs, history and assistive technology tell the pages apart.
 */
export function PageTitle({ children, sub, title }) {
  const ref = useRef();
  useEffect(() => ref.current?.focus(), []);
  useEffect(() => documentTitle(ref.current?.textContent));
  return html`<header class="page-title"><h1 tabindex="-1" ref=${ref} title=${title}>${children}</h1>${sub ? html`<p class="muted">${sub}</p>` : null}</header>`;
}

export function documentTitle(what) {
  document.title = what ? `${what} – Vault console` : 'Vault console';
}

export function Field({ label, id, hint, children }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${hint ? html`<small class="muted" id=${`${id}-hint`}>${hint}</small>` : null}
  </div>`;
}

/**
 * `showHidden`: a field that holds caller-chosen text (a name) keeps its value as it is, so
 * that saving it unchanged changes nothing; but an input draws a bidi override or a zero-width
 * space as nothing at all, so beneath it the text is shown once more as the rest of the console
 * shows it, markers and all.
 */
export function TextInput({ id, label, value, onInput, hint, showHidden = false, type = 'text', errorId, ...rest }) {
  const marked = showHidden ? markedIn(value ?? '') : [];
  // `errorId`: the message that refuses what the field holds, read out with the field and marking it invalid.
  const describedBy = [errorId, hint && `${id}-hint`, marked.length && `${id}-marked`].filter(Boolean).join(' ');
  return html`<${Field} label=${label} id=${id} hint=${hint}>
    <input id=${id} type=${type} value=${value ?? ''} onInput=${(e) => onInput(e.currentTarget.value)} aria-describedby=${describedBy || undefined} aria-invalid=${errorId ? 'true' : undefined} ...${rest} />
    ${marked.length ? html`<${Marked} id=${`${id}-marked`} text=${value} chars=${marked} />` : null}
  </${Field}>`;
}

/** What a field does not show of its text: which characters, and the text as the console marks it. */
function Marked({ id, text, chars }) {
  // The marker's own brackets are drawn by the field, where they pass for a marker: said apart.
  const hidden = chars.some((c) => c !== '\u27E8' && c !== '\u27E9');
  return html`<p class="marked-note small" id=${id}>
    <strong>${hidden ? 'Holds characters this field does not show:' : 'Holds marker brackets typed as text:'}</strong> ${chars.join(' ')}. Marked, it reads: ${clip(text)}
  </p>`;
}

export function Select({ id, label, value, onChange, options, hint }) {
  return html`<${Field} label=${label} id=${id} hint=${hint}>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)} aria-describedby=${hint ? `${id}-hint` : undefined}>
      ${options.map((o) => (typeof o === 'string' ? html`<option value=${o}>${o || '(any)'}</option>` : html`<option value=${o.value}>${o.label}</option>`))}
    </select>
  </${Field}>`;
}

export function Check({ id, label, checked, onChange }) {
  return html`<div class="check"><input id=${id} type="checkbox" checked=${checked} onChange=${(e) => onChange(e.currentTarget.checked)} /><label for=${id}>${label}</label></div>`;
}

/**
 * Previous/next over 0-based pages; `more` says whether a full page came back. The page number
 * and how many rows it `shown` are a live region, so a screen reader says where a press or a
 * filter led (the table itself changes silently); `shown` is left out until the page's rows are
 * `current`, not to count the rows of the page before. A press that reaches the first
 * or last page disables the button pressed, which drops its focus: the other one takes it.
 */
export function Pager({ page, more, onPage, label = 'Pages', shown, what = 'row' }) {
  const previous = useRef();
  const next = useRef();
  const pressed = useRef();
  useEffect(() => {
    const [from, to] = pressed.current === 'next' ? [next, previous] : [previous, next];
    if (!pressed.current || !from.current?.disabled || to.current?.disabled) return;
    pressed.current = undefined;
    if (!document.activeElement || document.activeElement === document.body) to.current?.focus();
  }, [page, more]);
  const go = (to, which) => {
    pressed.current = which;
    onPage(to);
  };
  return html`<nav class="pager" aria-label=${label}>
    <button type="button" ref=${previous} disabled=${page === 0} onClick=${() => go(page - 1, 'previous')}>← Previous</button>
    <span role="status">Page ${page + 1}${shown === undefined ? null : html`<span class="sr-only">, ${shown ? `${shown} ${what}${shown === 1 ? '' : 's'}` : `no ${what}s`} shown</span>`}</span>
    <button type="button" ref=${next} disabled=${!more} onClick=${() => go(page + 1, 'next')}>Next →</button>
  </nav>`;
}

export function Table({ caption, columns, rows, empty = 'Nothing to show.', rowClass }) {
  if (!rows?.length) return html`<p class="muted empty">${empty}</p>`;
  // Explicit roles: the narrow layout restyles the table as blocks, which would drop them.
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label=${caption}>
    <table role="table">
      <caption class="sr-only">${caption}</caption>
      <thead role="rowgroup"><tr role="row">${columns.map((c) => html`<th scope="col" role="columnheader">${c.label}</th>`)}</tr></thead>
      <tbody role="rowgroup">
        ${rows.map(
          (row, i) => html`<tr role="row" class=${rowClass?.(row) ?? ''} key=${row.id ?? row.key ?? i}>
            ${columns.map((c) => html`<td role="cell" data-label=${c.label}>${c.render ? c.render(row) : fmt(row[c.key])}</td>`)}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** A subject's id as a link to its page; a long id is cut in a table cell, whole in its title. */
export function subjectLink(id) {
  return id ? html`<a href=${`#/subjects/${seg(id)}`} title=${id}>${id}</a>` : fmt();
}

export function fmt(value) {
  if (value === undefined || value === null || value === '') return html`<span class="muted">—</span>`;
  if (Array.isArray(value)) return value.length ? clip(value.join(', ')) : html`<span class="muted">—</span>`;
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'object') return clip(JSON.stringify(value));
  return clip(String(value));
}

/**
 * Caller-chosen text, which may run to hundreds of characters without a space: a few lines of
 * it, the rest behind an ellipsis and whole in the title (the stylesheet's `.clip`). Only long
 * text breaks anywhere: a table would squeeze a short word that could, and split it.
 */
export function clip(text, title = text) {
  const long = /\S{24}/.test(text) || text.length > 80;
  return long || title !== text ? html`<span class=${long ? 'clip' : undefined} title=${title}>${text}</span>` : text;
}

export function when(iso) {
  if (!iso) return html`<span class="muted">—</span>`;
  const d = new Date(iso);
  return html`<time datetime=${iso} title=${iso}>${isNaN(d) ? iso : d.toISOString().replace('T', ' ').slice(0, 19)}</time>`;
}

export function Level({ level }) {
  return html`<span class=${`badge level-${String(level).toLowerCase()}`}>${level}</span>`;
}

/**
 * A two-step button: the first press asks, the second does it. No modal dialogs. The question
 * replaces the button, so it takes the focus (a keyboard user would otherwise be left on the
 * page's start), and Escape or Cancel puts the focus back on the button. What it confirmed
 * may take its row away, button and all: `keepFocusNear` then puts the focus where it was.
 */
export function ConfirmButton({ label, ariaLabel, confirm = 'Confirm', onConfirm, danger = true, disabled }) {
  const [asking, setAsking] = useState(false);
  const ask = useRef();
  const yes = useRef();
  const back = useRef(false);
  const confirmed = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (back.current) {
      ask.current?.focus();
      if (confirmed.current && ask.current) keepFocusNear(ask.current);
    }
    back.current = false;
    confirmed.current = false;
  }, [asking]);
  const answer = (yesPressed) => {
    back.current = true;
    confirmed.current = yesPressed;
    setAsking(false);
    if (yesPressed) onConfirm();
  };
  if (!asking) return html`<button type="button" ref=${ask} class=${danger ? 'danger' : ''} aria-label=${ariaLabel} disabled=${disabled} onClick=${() => setAsking(true)}>${label}</button>`;
  return html`<span class="confirm" onKeyDown=${(e) => e.key === 'Escape' && (e.preventDefault(), e.stopPropagation(), answer(false))}>
    <button type="button" ref=${yes} class="danger" onClick=${() => answer(true)}>${confirm}</button>
    <button type="button" onClick=${() => answer(false)}>Cancel</button>
  </span>`;
}

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';
const SECTIONING = 'section, [role="tabpanel"], main';
/** Long enough for any answer of the vault; a delete that never removes anything stops being watched. */
const WATCH_MS = 120_000;

/**
 * Watches `control` (which has the focus) while what it confirmed runs. Should the page take
 * it away and leave the focus on nothing (the page's start, for a keyboard or screen-reader
 * user), the focus goes where it was, as it was found now: the same control of the next row,
 * else of the previous one; else the list, or the "nothing here" that took its place; else
 * what replaced the control; else the heading of its section; and again should that go too.
 * A control only disabled while the work runs (the browser drops its focus) has it back once
 * it can be used again. The user moving the focus, or clicking, ends the watch, as does the
 * function returned; a control that stays (a refused delete) keeps it.
 */
export function keepFocusNear(control) {
  if (!control || control === document.body) return () => {};
  const row = control.closest('tr, li');
  const list = row?.parentElement;
  const index = row ? [...list.children].indexOf(row) : -1;
  const position = row ? [...row.querySelectorAll(FOCUSABLE)].indexOf(control) : -1;
  const ancestors = [];
  for (let e = control.parentElement; e && e !== document.body; e = e.parentElement) ancestors.push(e);
  // What has the focus on the user's behalf: the control, then where it was moved. A page that
  // renders in steps (a loading state, then the list) can take that away too, so the watch goes
  // on until the user moves the focus themselves, or the time is up.
  let holder = control;
  const observer = new MutationObserver(() => {
    const active = document.activeElement;
    if (active && active !== document.body) {
      if (active !== holder) stop();
      return;
    }
    if (holder.isConnected) {
      if (!holder.disabled) holder.focus();
      return;
    }
    const next = focusTarget({ list, index, position, hadRow: Boolean(row), anchor: ancestors.find((e) => e.isConnected) });
    if (!next) return;
    holder = next;
    next.focus();
  });
  const timer = setTimeout(() => stop(), WATCH_MS);
  // A click on the page's background leaves the focus on nothing too, but by the user's choice.
  document.addEventListener('pointerdown', stop, { capture: true, once: true });
  // Another page is none of the watch's business: its heading takes the focus.
  addEventListener('hashchange', stop, { once: true });
  function stop() {
    observer.disconnect();
    clearTimeout(timer);
    document.removeEventListener('pointerdown', stop, { capture: true });
    removeEventListener('hashchange', stop);
  }
  observer.observe(document.body, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled'] });
  return stop;
}

/** An onClick that runs `handler` and keeps the focus near the button pressed (`keepFocusNear`). */
export const keepingFocus = (handler) => (e) => {
  keepFocusNear(e.currentTarget);
  return handler(e);
};

function focusTarget({ list, index, position, hadRow, anchor }) {
  if (list?.isConnected) {
    const rows = [...list.children];
    // Nearest first: the rows after the removed one (now from `index`), then those before it.
    const order = [...rows.slice(index), ...rows.slice(0, index).reverse()];
    for (const r of order) {
      const controls = [...r.querySelectorAll(FOCUSABLE)];
      if (controls.length) return controls[Math.min(position, controls.length - 1)];
    }
    return list.closest('.table-wrap') ?? focusable(list);
  }
  if (!anchor) return undefined;
  const empty = anchor.querySelector(':scope > .empty');
  if (empty) return focusable(empty);
  if (!hadRow && !anchor.matches(SECTIONING)) {
    const replacement = anchor.querySelector(FOCUSABLE);
    if (replacement) return replacement;
  }
  const section = anchor.closest(SECTIONING);
  if (!section) return focusable(anchor);
  if (section.matches('[role="tabpanel"]')) return focusable(section);
  const labelledBy = section.getAttribute('aria-labelledby');
  const heading = (labelledBy && document.getElementById(labelledBy)) || section.querySelector('h1, h2, h3');
  return focusable(heading ?? section);
}

/** An element that is not a control, made able to take the focus from a script (not by Tab). */
function focusable(element) {
  if (!element.hasAttribute('tabindex')) element.setAttribute('tabindex', '-1');
  return element;
}

/** Escape pressed within: for a form opened in place, which it closes. */
export const onEscape = (handler) => (e) => {
  if (e.key === 'Escape' && !e.defaultPrevented) {
    e.preventDefault();
    handler();
  }
};

/**
 * A file name made of `parts` (an id among them) that every system takes as it is: letters,
 * digits, `.`, `_` and `-` only, the rest replaced by `_`, at most 120 characters and never
 * starting with a dot (hidden, or `..`). Ids are the callers': left raw, a bidi override would
 * make `subject-<U+202E>fdp.exe.json` read as another file, and a slash or a 512-character id is
 * refused or cut by the system, differently on each. When an id had to be changed, a digest
 * of it follows, so that two ids made alike still land in two files. The file's content keeps
 * the raw id: it is the evidence.
 */
export function fileName(parts, extension) {
  const safe = (text) => text.replace(/[^A-Za-z0-9._-]+/g, '_');
  const raw = parts.filter((p) => p !== undefined && p !== '').map(String).join('-');
  let stem = safe(raw).slice(0, 100);
  if (stem !== raw) stem = `${stem}-${digest(raw)}`;
  stem = stem.replace(/^\./, '_') || 'export';
  return `${stem}.${extension}`;
}

/** FNV-1a over UTF-16 code units: 8 hex digits to tell two names apart, not a security measure. */
function digest(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/** A file built in the browser and handed to the user; nothing is sent anywhere. Name it with `fileName`. */
export function download(name, type, content) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * Said over a list filtered From a time later than To: otherwise it looks as if nothing
 * happened. Its live region stays in the page, empty, so that the warning is read out.
 */
export function RangeWarning({ from, to, what = 'record' }) {
  return html`<${Notice} kind="warn">${from && to && from > to ? `From is later than To: no ${what} can match.` : null}</${Notice}>`;
}

/** `<input type=datetime-local>` (taken as UTC) to ISO 8601. */
export function localToIso(value) {
  return value ? `${value.length === 16 ? `${value}:00` : value}Z` : undefined;
}

export const splitList = (text) =>
  String(text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
