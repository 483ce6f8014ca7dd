import { html, useState } from '../lib.js';
import { api, get, seg } from '../api.js';
import { Check, ConfirmButton, ErrorBox, fmt, Loading, Notice, PageTitle, Table, TextInput, splitList, useLoad, when } from '../ui.js';

/** The new key, shown once: it lives in this component only and is gone once dismissed. */
function NewKey({ application, apiKey, onDone }) {
  const [copied, setCopied] = useState();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(apiKey);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Copying was refused by the browser: select the key and copy it by hand.');
    }
  };
  return html`<div class="card newkey" role="region" aria-labelledby="newkey-title">
    <h2 id="newkey-title">API key of ${application.name}</h2>
    <p>This key is shown <strong>once</strong>. The vault keeps only its hash: store it now.</p>
    <div class="keybox">
      <label for="new-api-key" class="sr-only">New API key</label>
      <input id="new-api-key" class="mono" readOnly value=${apiKey} onFocus=${(e) => e.currentTarget.select()} />
      <button type="button" onClick=${copy}>Copy</button>
    </div>
    <p role="status" class="muted small">${copied ?? ''}</p>
    <button type="button" class="primary" onClick=${onDone}>I have stored it</button>
  </div>`;
}

export function Applications({ admin }) {
  const apps = useLoad(() => get('/applications'));
  const [name, setName] = useState('');
  const [attributes, setAttributes] = useState('*');
  const [isAdmin, setIsAdmin] = useState(false);
  const [created, setCreated] = useState();
  const [error, setError] = useState();
  const [notice, setNotice] = useState();

  const create = async (e) => {
    e.preventDefault();
    setError(undefined);
    setNotice(undefined);
    try {
      const answer = await api('POST', '/applications', { body: { name: name.trim(), attributes: splitList(attributes), admin: isAdmin } });
      setCreated({ application: answer.data, apiKey: answer.data.apiKey });
      setName('');
      apps.reload();
    } catch (err) {
      setError(err);
    }
  };
  const remove = async (app) => {
    setError(undefined);
    try {
      const answer = await api('DELETE', `/applications/${seg(app.id)}`);
      setNotice(typeof answer?.data === 'string' ? answer.data : `${app.name} deleted.`);
      apps.reload();
    } catch (err) {
      setError(err);
    }
  };

  return html`<section>
    <${PageTitle} sub="Who may call the vault, and which attributes each may touch.">Applications</${PageTitle}>
    ${created ? html`<${NewKey} ...${created} onDone=${() => setCreated(undefined)} />` : null}
    <${ErrorBox} error=${apps.error} admin=${!admin} />
    <${Notice} intoView>${notice}</${Notice}>
    ${apps.loading && !apps.data ? html`<${Loading} />` : null}
    ${apps.data
      ? html`<${Table}
          caption="Applications"
          columns=${[
            { label: 'Name', key: 'name' },
            { label: 'Id', render: (a) => html`<span class="mono small">${a.id}</span>` },
            { label: 'Attributes', render: (a) => fmt(a.attributes) },
            { label: 'Admin', key: 'admin' },
            { label: 'Created', render: (a) => when(a.createdDate ?? a.created) },
            { label: 'Actions', render: (a) => html`<${ConfirmButton} label="Delete" ariaLabel=${`Delete ${a.name}`} confirm=${`Yes, delete ${a.name}`} onConfirm=${() => remove(a)} />` },
          ]}
          rows=${apps.data}
          empty="No applications."
        />`
      : null}
    ${apps.data
      ? html`<form class="card" onSubmit=${create} aria-labelledby="new-app">
          <h2 id="new-app">New application</h2>
          <div class="row">
            <${TextInput} id="app-name" label="Name" value=${name} onInput=${setName} required />
            <${TextInput} id="app-attributes" label="Attributes" hint="Comma-separated keys, or * for all" value=${attributes} onInput=${setAttributes} />
          </div>
          <${Check} id="app-admin" label="Administrator (manages the registry, rules and applications)" checked=${isAdmin} onChange=${setIsAdmin} />
          <${ErrorBox} error=${error} intoView />
          <div class="actions"><button type="submit" class="primary" disabled=${!name.trim()}>Create application</button></div>
        </form>`
      : null}
  </section>`;
}
