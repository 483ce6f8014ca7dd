import { html, useState } from '../lib.js';
import { get, getAll } from '../api.js';
import { clip, ErrorBox, Field, keepingFocus, localToIso, Loading, Notice, PageTitle, Pager, RangeWarning, Select, subjectLink, Table, TextInput, download, fileName, useLoad, when } from '../ui.js';
import { chainIntact, ChainState } from './chain.js';

/** Application names by id, for admins (others may not list applications and see ids). */
export function useApplicationNames(admin) {
  const loaded = useLoad(() => (admin ? get('/applications').then((apps) => new Map(apps.map((a) => [a.id, a.name]))) : new Map()), [admin]);
  return loaded.data ?? new Map();
}

const yesNo = (flag) => (flag ? 'yes' : 'no');
const VERBS = { create: 'Created', update: 'Changed', delete: 'Deleted' };
const REGISTRY = { attribute: 'attribute', entityType: 'entity type', tag: 'tag', regulation: 'regulation' };

function fieldText(value) {
  if (value === null || value === undefined) return 'none';
  if (typeof value === 'boolean') return yesNo(value);
  if (Array.isArray(value)) return value.length > 0 ? value.join(', ') : 'none';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** A CHANGE record in words: what an officer reads to learn who widened an application's access, or lifted a hold. */
export function describeChange(change, appNames = new Map()) {
  const f = change.fields ?? {};
  const byRule = change.rule ? ` (rule ${change.rule})` : '';
  if (change.target === 'entity' && change.action === 'delete') return `Subject purged: ${f.values} value${f.values === 1 ? '' : 's'} deleted, its data keys destroyed`;
  if (change.target === 'entity') {
    const parts = [];
    if (f.legalHold !== undefined) parts.push(f.legalHold ? 'Legal hold put on' : 'Legal hold lifted');
    if (f.tags) parts.push(`${parts.length > 0 ? 'tags' : 'Tags'} now ${fieldText(f.tags)}`);
    return `${parts.join('; ')}${byRule}`;
  }
  if (change.target === 'encryptionKey') return describeKeyChange(change);
  if (change.target === 'rule') return `${VERBS[change.action] ?? change.action} rule ${change.id}`;
  if (REGISTRY[change.target]) {
    const set = change.action === 'update' ? Object.entries(f).map(([k, value]) => `${k} ${fieldText(value)}`).join('; ') : '';
    return `${VERBS[change.action] ?? change.action} ${REGISTRY[change.target]} ${change.id}${set ? `: ${set}` : ''}`;
  }
  if (change.target !== 'application') return `${VERBS[change.action] ?? change.action} ${change.target} ${change.id}`;
  const name = f.name ?? appNames.get(change.id) ?? change.id;
  const parts = [];
  if (f.attributes) parts.push(`attributes ${f.attributes.join(', ')}`);
  if (f.admin !== undefined) parts.push(`admin ${yesNo(f.admin)}`);
  const set = parts.length > 0 ? `: ${parts.join('; ')}` : '';
  switch (change.action) {
    case 'create':
      return `Created application ${name}${set}`;
    case 'update':
      return `Changed application ${name}${f.name !== undefined ? ' (renamed)' : ''}${set}`;
    case 'rollKey':
      return `Rolled the key of application ${name}: ${f.previousKeyValidUntil ? `old key works until ${f.previousKeyValidUntil.replace('T', ' ').slice(0, 16)} UTC` : 'old key stopped'}`;
    case 'delete':
      return `Deleted application ${name}`;
    default:
      return `${change.action} application ${name}`;
  }
}

/** The vault's own encryption keys, rotated from the command line; ids shortened as a prefix of `vault keys list`'s. */
function describeKeyChange(change) {
  const f = change.fields ?? {};
  const key = (id) => `${String(id).slice(0, 12)}…`;
  switch (change.action) {
    case 'create':
      return `Registered encryption key ${key(change.id)}${f.status === 'active' ? ' as the active key' : ''}`;
    case 'update':
      return f.status === 'active' ? `Encryption key ${key(change.id)} is the active key again` : `Encryption key ${key(change.id)} is no longer the active key`;
    case 'rewrap':
      return `Re-wrapped ${f.dataKeys} data key${f.dataKeys === 1 ? '' : 's'} of encryption key ${key(change.id)} under ${key(f.onto)}`;
    case 'delete':
      return `Retired encryption key ${key(change.id)}: ${f.dataKeys} data key${f.dataKeys === 1 ? '' : 's'} now on ${key(f.onto)} alone`;
    default:
      return `${change.action} encryption key ${key(change.id)}`;
  }
}

export const activityColumns = (appNames = new Map()) => [
  { label: 'Time', render: (r) => when(r.timestamp) },
  {
    label: 'Event',
    render: (r) => (r.change ? html`<span class="change">${r.eventType}<br /><span class="small">${describeChange(r.change, appNames)}</span></span>` : r.eventType),
  },
  { label: 'Subject', render: (r) => subjectLink(r.subjectId) },
  { label: 'Attribute', key: 'attribute' },
  {
    label: 'Application',
    // An admin or a sidecar may report for another application: the record names both.
    render: (r) => html`${clip(appNames.get(r.applicationId) ?? r.applicationId, r.applicationId)}${r.recordedBy && r.recordedBy !== r.applicationId
      ? html`<div class="small muted">reported by ${clip(appNames.get(r.recordedBy) ?? r.recordedBy, r.recordedBy)}</div>`
      : null}`,
  },
  { label: 'User', key: 'applicationUser' },
  {
    label: 'Seq.',
    render: (r) =>
      r.sealed === false
        ? html`<span class="muted" title="Not chained yet">pending</span>`
        : r.part
          ? html`<span title=${`Point ${r.part} of one read, recorded as one record`}>#${r.sequence}.${r.part}</span>`
          : `#${r.sequence}`,
  },
  { label: 'Data point', render: (r) => html`<span class="mono small" title=${r.dataPointId}>${r.dataPointId ?? '—'}</span>` },
  { label: 'Report-only', key: 'reportOnly' },
];

const CSV_FIELDS = ['sequence', 'part', 'eventId', 'eventType', 'timestamp', 'recordedDate', 'subjectId', 'dataPointId', 'attribute', 'applicationId', 'applicationUser', 'recordedBy', 'reportOnly', 'sealed', 'hash', 'change'];

function csvCell(value) {
  // A CHANGE record's change, as the API gives it.
  const text = value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  // A spreadsheet runs a cell that starts with =, +, - or @ as a formula, and may drop a
  // leading tab, line break or NUL before it looks (OWASP's CSV injection advice): a ' makes it text.
  const safe = /^[=+\-@\t\r\n\0]/.test(text) ? `'${text}` : text;
  // Every cell quoted (RFC 4180), so no value can end a cell or a row early.
  return `"${safe.replace(/"/g, '""')}"`;
}

export function toCsv(rows) {
  return [CSV_FIELDS.map(csvCell).join(','), ...rows.map((r) => CSV_FIELDS.map((f) => csvCell(r[f])).join(','))].join('\r\n') + '\r\n';
}

// Newest first: what an officer asking "who read this lately" wants on the first page.
const EMPTY = { subjectId: '', dataPointId: '', attribute: '', eventType: '', applicationId: '', applicationUser: '', from: '', to: '', order: 'newest' };
const ORDERS = [
  { value: 'newest', label: 'Newest first' },
  { value: 'oldest', label: 'Oldest first' },
];
const COUNT = 50;
/** SEQUENCE:HASH, as `vault activity head` prints it and GET /activity/verify takes it. */
const HEAD = /^\d{1,15}:[0-9a-f]{64}$/;

/** The Application filter's choice that asks for an id: one of an application since deleted, say. */
const BY_ID = '\u0000id';

/**
 * The applications by name, for the Application filter: the log keeps an application's id and
 * the table shows its name, so an officer looks for the name. A name two applications share is
 * told apart by the id.
 */
function applicationOptions(appNames) {
  const counts = new Map();
  for (const name of appNames.values()) counts.set(name, (counts.get(name) ?? 0) + 1);
  const apps = [...appNames].map(([id, name]) => ({ value: id, label: counts.get(name) > 1 ? `${name} (${id})` : name }));
  apps.sort((a, b) => a.label.localeCompare(b.label, 'en') || a.value.localeCompare(b.value));
  return [{ value: '', label: '(any)' }, ...apps, { value: BY_ID, label: 'Another, by id…' }];
}

function toQuery(f) {
  return { ...f, from: localToIso(f.from), to: localToIso(f.to) };
}

/** `#/activity/<subject id>` opens the log filtered on that subject. */
export function Activity({ admin, id }) {
  const initial = id ? { ...EMPTY, subjectId: id } : EMPTY;
  const [form, setForm] = useState(initial);
  const [filters, setFilters] = useState(initial);
  const [page, setPage] = useState(0);
  const [highlight, setHighlight] = useState();
  const [version, setVersion] = useState(0);
  const [chain, setChain] = useState();
  const [appById, setAppById] = useState(false);
  const [keptHead, setKeptHead] = useState('');
  const [status, setStatus] = useState();
  const [error, setError] = useState();
  const appNames = useApplicationNames(admin);
  const rows = useLoad(() => get('/activity', { ...toQuery(filters), page, count: COUNT }), [filters, page, version]);
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const chooseApp = (value) => {
    setAppById(value === BY_ID);
    setForm({ ...form, applicationId: value === BY_ID ? '' : value });
  };
  const clear = () => {
    setForm(EMPTY);
    setFilters(EMPTY);
    setAppById(false);
    setPage(0);
  };

  const apply = (e) => {
    e.preventDefault();
    setFilters(form);
    setPage(0);
  };
  const verify = async () => {
    setError(undefined);
    setChain(undefined);
    // Kept on paper or in a ticket, a head comes back with spaces or upper-case hex; the
    // vault's refusal of anything else names its schema, not what a head looks like.
    const head = keptHead.trim().toLowerCase();
    if (head && !HEAD.test(head)) {
      setError(Object.assign(new Error('A kept head is the sequence, a colon and 64 hex digits, as “vault activity head” prints it.'), { field: 'kept-head' }));
      return;
    }
    try {
      setChain(await get('/activity/verify', head ? { head } : undefined));
      setVersion((v) => v + 1);
    } catch (err) {
      setError(err);
    }
  };
  const exportCsv = async () => {
    setError(undefined);
    setStatus('Exporting…');
    try {
      const all = await getAll('/activity', toQuery(filters));
      // Which subject or application it is about, in the name; the time before them, so that a long id is what gets cut.
      const { subjectId, applicationId } = filters;
      const name = fileName(['activity', new Date().toISOString().slice(0, 19).replace(/:/g, ''), subjectId && 'subject', subjectId, applicationId && 'application', applicationId], 'csv');
      download(name, 'text/csv', toCsv(all));
      setStatus(`Exported ${all.length} record${all.length === 1 ? '' : 's'} as CSV.`);
    } catch (err) {
      setStatus(undefined);
      setError(err);
    }
  };
  // The record and the one before it: verification cannot tell which of the two was touched.
  const show = (sequence) => {
    setForm({ ...EMPTY, order: 'oldest' });
    setAppById(false);
    setFilters({ ...EMPTY, order: 'oldest', fromSequence: Math.max(1, sequence - 1), toSequence: sequence });
    setHighlight(sequence);
    setPage(0);
    setVersion((v) => v + 1);
  };

  // An intact chain comes into a live region already in the page, or a screen reader would
  // mostly not say it (a broken one is an alert, which is said as it arrives).
  return html`<section>
    <${PageTitle} sub="Every read, store, update and delete, and every change to access, holds, tags, rules, the registry and the keys, hash-chained so that tampering shows.">Activity log</${PageTitle}>
    <form class="card filters" onSubmit=${apply} aria-label="Activity filters">
      <div class="row">
        <${TextInput} id="f-subject" label="Subject" value=${form.subjectId} onInput=${set('subjectId')} />
        <${TextInput} id="f-point" label="Data point" value=${form.dataPointId} onInput=${set('dataPointId')} />
        <${TextInput} id="f-attribute" label="Attribute" hint="Exact key: EMAIL is not email" value=${form.attribute} onInput=${set('attribute')} />
        <${Select} id="f-event" label="Event type" value=${form.eventType} onChange=${set('eventType')} options=${['', 'READ', 'STORE', 'UPDATE', 'DELETE', 'CHANGE']} />
        <${Select} id="f-order" label="Order" value=${form.order} onChange=${set('order')} options=${ORDERS} />
      </div>
      <div class="row">
        ${appNames.size > 0
          ? html`<${Field} label="Application" id="f-app" hint=${appById ? 'Its id, as the table shows one no longer registered' : undefined}>
              <select id="f-app" aria-describedby=${appById ? 'f-app-hint' : undefined} value=${appById ? BY_ID : form.applicationId} onChange=${(e) => chooseApp(e.currentTarget.value)}>
                ${applicationOptions(appNames).map((o) => html`<option value=${o.value}>${o.label}</option>`)}
              </select>
              ${appById
                ? html`<input id="f-app-id" aria-label="Application id" value=${form.applicationId} onInput=${(e) => set('applicationId')(e.currentTarget.value)} aria-describedby="f-app-hint" />`
                : null}
            </${Field}>`
          : html`<${TextInput} id="f-app-id" label="Application id" value=${form.applicationId} onInput=${set('applicationId')} />`}
        <${TextInput} id="f-user" label="User" value=${form.applicationUser} onInput=${set('applicationUser')} />
        <${TextInput} id="f-from" label="From (UTC)" type="datetime-local" value=${form.from} onInput=${set('from')} />
        <${TextInput} id="f-to" label="To (UTC)" type="datetime-local" value=${form.to} onInput=${set('to')} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">Apply filters</button>
        <button type="button" onClick=${clear}>Clear</button>
        <span class="spacer"></span>
        <button type="button" onClick=${exportCsv}>Export CSV</button>
        <label for="kept-head" class="sr-only">Kept chain head</label>
        <input id="kept-head" class="mono kept-head" placeholder="kept head SEQUENCE:HASH (optional)" value=${keptHead} onInput=${(e) => setKeptHead(e.currentTarget.value)}
          aria-invalid=${error?.field === 'kept-head' ? 'true' : undefined} aria-describedby=${error?.field === 'kept-head' ? 'activity-error' : undefined} />
        <button type="button" onClick=${verify}>Verify chain</button>
      </div>
    </form>
    <${ErrorBox} error=${error} admin=${!admin} id="activity-error" />
    <${Notice}>${status}</${Notice}>
    <div role="status">${chainIntact(chain) ? html`<div class="card"><${ChainState} result=${chain} live=${false} /></div>` : null}</div>
    ${chain && !chainIntact(chain) ? html`<div class="card"><${ChainState} result=${chain} onShow=${show} /></div>` : null}
    <${Notice}>${filters.toSequence
      ? html`Showing records #${filters.fromSequence} to #${filters.toSequence}${
          // Said in words, not by the row's colour alone (WCAG 1.4.1).
          highlight === filters.toSequence ? `: #${highlight} is the first that does not verify (highlighted)${filters.fromSequence < highlight ? `, #${filters.fromSequence} the record before it` : ''}` : ''
        }. <button type="button" class="link" onClick=${keepingFocus(() => (setFilters(EMPTY), setPage(0)))}>Show the whole log</button>`
      : null}</${Notice}>
    <${RangeWarning} from=${filters.from} to=${filters.to} />
    <${ErrorBox} error=${rows.error} admin=${!admin} />
    ${rows.loading && !rows.data ? html`<${Loading} />` : null}
    ${rows.data
      ? html`<${Table}
            caption="Activity records"
            columns=${activityColumns(appNames)}
            rows=${rows.data}
            empty="No activity matches these filters."
            rowClass=${(r) => (r.sequence === highlight ? 'highlight' : '')}
          />
          <${Pager} page=${page} more=${rows.data.length === COUNT} onPage=${setPage} label="Activity pages" shown=${rows.current ? rows.data.length : undefined} what="record" />`
      : null}
  </section>`;
}
