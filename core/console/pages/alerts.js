import { html, useState } from '../lib.js';
import { get, seg } from '../api.js';
import { ErrorBox, Level, localToIso, Loading, PageTitle, Pager, RangeWarning, Select, subjectLink, Table, TextInput, useLoad, when } from '../ui.js';

const LEVELS = ['', 'NORMAL', 'INFO', 'WARNING', 'DANGER', 'SUCCESS', 'NEUTRAL'];
const COUNT = 50;
const EMPTY = { rule: '', level: '', from: '', to: '' };

const columns = [
  { label: 'Raised', render: (a) => when(a.createdDate) },
  { label: 'Level', render: (a) => html`<${Level} level=${a.level} />` },
  { label: 'Rule', render: (a) => html`<a href=${`#/rules/${seg(a.ruleKey)}`}>${a.ruleKey}</a>` },
  { label: 'Message', key: 'message' },
  { label: 'Subject', render: (a) => subjectLink(a.entityId) },
  { label: 'Attribute', key: 'attribute' },
  { label: 'Event', key: 'eventType' },
];

/** `#/alerts/<level>` opens the alerts of that level: where the overview's counts lead. */
export function Alerts({ admin, id }) {
  const initial = id && LEVELS.includes(id) ? { ...EMPTY, level: id } : EMPTY;
  const [form, setForm] = useState(initial);
  const [filters, setFilters] = useState(initial);
  const [page, setPage] = useState(0);
  const rules = useLoad(() => get('/rules').catch(() => []));
  const alerts = useLoad(
    () => get('/alerts', { rule: filters.rule, level: filters.level, from: localToIso(filters.from), to: localToIso(filters.to), page, count: COUNT }),
    [filters, page],
  );
  const set = (name) => (value) => setForm({ ...form, [name]: value });
  const ruleOptions = [{ value: '', label: '(any)' }, ...(rules.data ?? []).map((r) => ({ value: r.key, label: r.name ? `${r.name} (${r.key})` : r.key }))];
  return html`<section>
    <${PageTitle} sub="Raised by rules on stores and on activity, oldest first.">Alerts</${PageTitle}>
    <form class="card filters" aria-label="Alert filters" onSubmit=${(e) => (e.preventDefault(), setFilters(form), setPage(0))}>
      <div class="row">
        <${Select} id="a-rule" label="Rule" value=${form.rule} onChange=${set('rule')} options=${ruleOptions} />
        <${Select} id="a-level" label="Level" value=${form.level} onChange=${set('level')} options=${LEVELS} />
        <${TextInput} id="a-from" label="From (UTC)" type="datetime-local" value=${form.from} onInput=${set('from')} />
        <${TextInput} id="a-to" label="To (UTC)" type="datetime-local" value=${form.to} onInput=${set('to')} />
      </div>
      <div class="actions">
        <button type="submit" class="primary">Apply filters</button>
        <button type="button" onClick=${() => (setForm(EMPTY), setFilters(EMPTY), setPage(0))}>Clear</button>
      </div>
    </form>
    <${RangeWarning} from=${filters.from} to=${filters.to} what="alert" />
    <${ErrorBox} error=${alerts.error} admin=${!admin} />
    ${alerts.loading && !alerts.data ? html`<${Loading} />` : null}
    ${alerts.data
      ? html`<${Table} caption="Alerts" columns=${columns} rows=${alerts.data} empty="No alerts match these filters." />
          <${Pager} page=${page} more=${alerts.data.length === COUNT} onPage=${setPage} label="Alert pages" shown=${alerts.current ? alerts.data.length : undefined} what="alert" />`
      : null}
  </section>`;
}
