import { html, useEffect, useRef, useState } from '../lib.js';
import { api, get, seg } from '../api.js';
import { Check, ConfirmButton, ErrorBox, fmt, Loading, Notice, onEscape, PageTitle, Table, TextInput, splitList, useLoad, when } from '../ui.js';

/**
 * One registry collection: a list, a form that creates or (from a row's Edit) updates, and
 * delete. The vault's answers, 409 and 402 included, are shown as it worded them.
 */
function Collection({ name, path, idOf, columns, empty, toForm, toBody, Fields, admin, fixed = () => false, editable = true, deleting = (id) => `Yes, delete ${id}` }) {
  const items = useLoad(() => get(path));
  const [form, setForm] = useState(toForm());
  const [editing, setEditing] = useState();
  const [error, setError] = useState();
  const [notice, setNotice] = useState();
  // A row's Edit fills the form below the table: the focus follows it there and, once the
  // edit is saved or given up, comes back to the row's Edit.
  const opener = useRef();
  const formRef = useRef();
  useEffect(() => {
    if (editing) formRef.current?.querySelector('input:not([readonly]), textarea, select')?.focus();
    else if (opener.current?.isConnected) opener.current.focus();
    if (!editing) opener.current = undefined;
  }, [editing]);
  const run = async (fn) => {
    setError(undefined);
    setNotice(undefined);
    try {
      await fn();
      items.reload();
    } catch (err) {
      setError(err);
    }
  };
  const submit = (e) => {
    e.preventDefault();
    run(async () => {
      let body;
      try {
        body = toBody(form);
      } catch (err) {
        throw Object.assign(new Error(err.message), { status: 0, field: err.field });
      }
      const answer = await api('POST', path, { body });
      setNotice(typeof answer?.data === 'string' ? answer.data : `${name} ${editing ? 'saved' : 'created'}.`);
      setEditing(undefined);
      setForm(toForm());
    });
  };
  const remove = (item) =>
    run(async () => {
      const answer = await api('DELETE', `${path}/${seg(idOf(item))}`);
      setNotice(typeof answer?.data === 'string' ? answer.data : `${name} deleted.`);
    });
  const cancel = () => (setEditing(undefined), setForm(toForm()));
  // A refusal found in the browser names its field: marked invalid, and described by the message.
  const errorId = `${path.slice(1)}-error`;
  const edit = (item, button) => {
    opener.current = button;
    setEditing(idOf(item));
    setForm(toForm(item));
    document.getElementById(`${path.slice(1)}-form`)?.scrollIntoView({ block: 'nearest' });
  };
  return html`<div>
    <${ErrorBox} error=${items.error} />
    ${items.loading && !items.data ? html`<${Loading} />` : null}
    ${items.data
      ? html`<${Table}
          caption=${`${name}s`}
          columns=${[
            ...columns,
            {
              label: 'Actions',
              render: (item) =>
                fixed(item)
                  ? html`<span class="muted small">managed by the vault</span>`
                  : html`<span class="row-actions">
                      ${editable ? html`<button type="button" onClick=${(e) => edit(item, e.currentTarget)} aria-label=${`Edit ${idOf(item)}`}>Edit</button>` : null}
                      <${ConfirmButton} label="Delete" ariaLabel=${`Delete ${idOf(item)}`} confirm=${deleting(idOf(item))} onConfirm=${() => remove(item)} /></span>`,
            },
          ]}
          rows=${items.data}
          empty=${empty}
        />`
      : null}
    <form
      class="card"
      id=${`${path.slice(1)}-form`}
      ref=${formRef}
      onSubmit=${submit}
      onKeyDown=${editing ? onEscape(cancel) : undefined}
      aria-label=${editing ? `Edit ${name}` : `New ${name}`}
    >
      <h2>${editing ? html`Edit ${name.toLowerCase()} <span class="mono">${editing}</span>` : `New ${name.toLowerCase()}`}</h2>
      <${Fields} form=${form} set=${(patch) => setForm({ ...form, ...patch })} editing=${editing} errorOf=${(field) => (error?.field === field ? errorId : undefined)} />
      <${ErrorBox} error=${error} admin=${!admin} intoView id=${errorId} />
      <${Notice} intoView>${notice}</${Notice}>
      <div class="actions">
        <button type="submit" class="primary">${editing ? 'Save' : 'Create'}</button>
        ${editing ? html`<button type="button" onClick=${cancel}>Cancel</button>` : null}
      </div>
    </form>
  </div>`;
}

function parseSchema(text) {
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      return JSON.parse(t);
    } catch (err) {
      throw Object.assign(new Error(`Schema is not valid JSON: ${err.message}`), { field: 'def-schema' });
    }
  }
  return t || 'string';
}

const DefinitionFields = ({ form, set, editing, errorOf }) => html`
  <div class="row">
    <${TextInput} id="def-key" label="Key" value=${form.key} onInput=${(key) => set({ key })} readOnly=${Boolean(editing)} required />
    <${TextInput} id="def-name" label="Name" value=${form.name} onInput=${(name) => set({ name })} />
    <${TextInput} id="def-hint" label="Hint" value=${form.hint} onInput=${(hint) => set({ hint })} />
  </div>
  <div class="field">
    <label for="def-schema">Schema</label>
    <textarea id="def-schema" class="json" rows="4" spellcheck="false" value=${form.schema} onInput=${(e) => set({ schema: e.currentTarget.value })} aria-describedby=${[errorOf('def-schema'), 'def-schema-hint'].filter(Boolean).join(' ')} aria-invalid=${errorOf('def-schema') ? 'true' : undefined}></textarea>
    <small class="muted" id="def-schema-hint">string, int, float, boolean, date or file; or a JSON object of sub-attributes, e.g. {"email": "string", "[phones]": {"number": "string"}}</small>
  </div>
  <div class="row">
    <${TextInput} id="def-tags" label="Tags" hint="Comma-separated" value=${form.tags} onInput=${(tags) => set({ tags })} />
    <${TextInput} id="def-regulations" label="Regulations" hint="Comma-separated keys" value=${form.regulations} onInput=${(regulations) => set({ regulations })} />
    <${TextInput} id="def-entitytypes" label="Entity types" hint="Empty means datasubject" value=${form.entityTypes} onInput=${(entityTypes) => set({ entityTypes })} />
  </div>
  <div class="row checks">
    <${Check} id="def-repeatable" label="Repeatable" checked=${form.repeatable} onChange=${(repeatable) => set({ repeatable })} />
    <${Check} id="def-indexed" label="Indexed (searchable by value)" checked=${form.indexed} onChange=${(indexed) => set({ indexed })} />
    <${Check} id="def-immutable" label="Immutable" checked=${form.immutable} onChange=${(immutable) => set({ immutable })} />
  </div>`;

const definitions = {
  name: 'Attribute definition',
  path: '/attributes',
  idOf: (d) => d.key,
  empty: 'No attribute definitions yet.',
  columns: [
    { label: 'Key', render: (d) => html`<span class="mono">${d.key}</span>` },
    { label: 'Name', key: 'name' },
    { label: 'Schema', render: (d) => html`<code class="schema">${typeof d.schema === 'string' ? d.schema : JSON.stringify(d.schema)}</code>` },
    { label: 'Repeatable', key: 'repeatable' },
    { label: 'Indexed', key: 'indexed' },
    { label: 'Tags', key: 'tags' },
    { label: 'Regulations', key: 'regulations' },
  ],
  toForm: (d = {}) => ({
    key: d.key ?? '',
    name: d.name ?? '',
    hint: d.hint ?? '',
    schema: d.schema === undefined ? 'string' : typeof d.schema === 'string' ? d.schema : JSON.stringify(d.schema, null, 2),
    tags: (d.tags ?? []).join(', '),
    regulations: (d.regulations ?? []).join(', '),
    entityTypes: (d.entityTypes ?? []).join(', '),
    repeatable: Boolean(d.repeatable),
    indexed: Boolean(d.indexed),
    immutable: Boolean(d.immutable),
  }),
  // An emptied field is sent as null: the vault keeps what a body leaves out.
  toBody: (f) => ({
    key: f.key.trim(),
    name: f.name.trim() || null,
    hint: f.hint.trim() || null,
    schema: parseSchema(f.schema),
    tags: splitList(f.tags),
    regulations: splitList(f.regulations),
    entityTypes: splitList(f.entityTypes),
    repeatable: f.repeatable,
    indexed: f.indexed,
    immutable: f.immutable,
  }),
  Fields: DefinitionFields,
};

const entityTypes = {
  name: 'Entity type',
  path: '/entitytypes',
  idOf: (t) => t.key,
  fixed: (t) => t.key === 'datasubject',
  empty: 'No entity types.',
  columns: [
    { label: 'Key', render: (t) => html`<span class="mono">${t.key}</span>` },
    { label: 'Name', key: 'name' },
    { label: 'Description', key: 'description' },
  ],
  toForm: (t = {}) => ({ key: t.key ?? '', name: t.name ?? '', description: t.description ?? '' }),
  // An emptied field is sent as null: the vault keeps what a body leaves out.
  toBody: (f) => ({ key: f.key.trim(), name: f.name || null, description: f.description || null }),
  Fields: ({ form, set, editing }) => html`<div class="row">
    <${TextInput} id="et-key" label="Key" value=${form.key} onInput=${(key) => set({ key })} readOnly=${Boolean(editing)} required />
    <${TextInput} id="et-name" label="Name" value=${form.name} onInput=${(name) => set({ name })} />
    <${TextInput} id="et-description" label="Description" value=${form.description} onInput=${(description) => set({ description })} />
  </div>`,
};

const tags = {
  name: 'Tag',
  path: '/tags',
  idOf: (t) => t.name,
  // A tag is only its name: there is nothing to edit.
  editable: false,
  deleting: (name) => `Yes, delete ${name} and untag every definition, subject and data point`,
  empty: 'No tags yet.',
  columns: [
    { label: 'Tag', render: (t) => html`<span class="badge">${t.name}</span>` },
    { label: 'Created', render: (t) => when(t.createdDate) },
  ],
  toForm: (t = {}) => ({ name: t.name ?? '' }),
  toBody: (f) => ({ name: f.name.trim() }),
  Fields: ({ form, set, editing }) => html`<${TextInput} id="tag-name" label="Name" value=${form.name} onInput=${(name) => set({ name })} readOnly=${Boolean(editing)} required />`,
};

const regulations = {
  name: 'Regulation',
  path: '/regulations',
  idOf: (r) => r.key,
  deleting: (key) => `Yes, delete ${key} and remove it from every definition and data point`,
  empty: 'No regulations.',
  columns: [
    { label: 'Key', render: (r) => html`<span class="mono">${r.key}</span>` },
    { label: 'Name', key: 'name' },
    { label: 'URL', render: (r) => fmt(r.url) },
  ],
  toForm: (r = {}) => ({ key: r.key ?? '', name: r.name ?? '', url: r.url ?? '' }),
  toBody: (f) => ({ key: f.key.trim(), name: f.name || null, url: f.url || null }),
  Fields: ({ form, set, editing }) => html`<div class="row">
    <${TextInput} id="reg-key" label="Key" value=${form.key} onInput=${(key) => set({ key })} readOnly=${Boolean(editing)} required />
    <${TextInput} id="reg-name" label="Name" value=${form.name} onInput=${(name) => set({ name })} />
    <${TextInput} id="reg-url" label="URL" type="url" value=${form.url} onInput=${(url) => set({ url })} />
  </div>`,
};

const TABS = [
  ['definitions', 'Attribute definitions', definitions],
  ['entitytypes', 'Entity types', entityTypes],
  ['tags', 'Tags', tags],
  ['regulations', 'Regulations', regulations],
];

export function Registry({ admin }) {
  const [tab, setTab] = useState('definitions');
  const current = TABS.find(([k]) => k === tab);
  const keyNav = (e) => {
    const i = TABS.findIndex(([k]) => k === tab);
    const next = e.key === 'ArrowRight' ? (i + 1) % TABS.length : e.key === 'ArrowLeft' ? (i + TABS.length - 1) % TABS.length : -1;
    if (next >= 0) {
      setTab(TABS[next][0]);
      document.getElementById(`tab-${TABS[next][0]}`)?.focus();
    }
  };
  return html`<section>
    <${PageTitle} sub="What may be stored, about whom, and under which regulations.">Registry</${PageTitle}>
    <div class="tabs" role="tablist" aria-label="Registry" onKeyDown=${keyNav}>
      ${TABS.map(
        ([k, label]) => html`<button type="button" role="tab" id=${`tab-${k}`} aria-selected=${tab === k} aria-controls="registry-panel" tabindex=${tab === k ? 0 : -1} onClick=${() => setTab(k)}>${label}</button>`,
      )}
    </div>
    <div role="tabpanel" id="registry-panel" aria-labelledby=${`tab-${tab}`}>
      <${Collection} key=${tab} admin=${admin} ...${current[2]} />
    </div>
  </section>`;
}
