import { html, useEffect, useRef, useState } from '../lib.js';
import { api, get, seg, session } from '../api.js';
import { Check, clip, ConfirmButton, ErrorBox, fmt, Loading, Notice, onEscape, PageTitle, Select, Table, TextInput, splitList, useLoad, when } from '../ui.js';

/** The new key, shown once: it lives in this component only and is gone once dismissed. */
function NewKey({ application, apiKey, rolled, own, onDone }) {
  const [copied, setCopied] = useState();
  // Shown above the page's forms: the focus goes to the key itself (which selects it), or a
  // keyboard or screen-reader user would not learn it is there.
  useEffect(() => document.getElementById('new-api-key')?.focus(), [apiKey]);
  // The key in a text area, not an input: on a phone-wide window it wraps instead of
  // scrolling out of sight, and it is read off the screen when the clipboard is refused.
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(apiKey);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Copying was refused by the browser: select the key and copy it by hand.');
    }
  };
  return html`<div class="card newkey" role="region" aria-labelledby="newkey-title">
    <h2 id="newkey-title" class="clamp" title=${application.name}>${rolled ? 'Replacement API key' : 'API key'} of ${application.name}</h2>
    <p>This key is shown <strong>once</strong>. The vault keeps only its hash: store it now.</p>
    ${rolled
      ? html`<p>${application.previousKeyValidUntil
          ? html`The key it replaces keeps working until ${when(application.previousKeyValidUntil)} UTC: move the service over before then.`
          : 'The key it replaces no longer works.'}</p>`
      : null}
    ${own ? html`<p><strong>This console signed in with the key it replaces, and now signs in with this one.</strong></p>` : null}
    <div class="keybox">
      <label for="new-api-key" class="sr-only">New API key</label>
      <textarea id="new-api-key" class="mono" readOnly rows="2" spellcheck="false" value=${apiKey} onFocus=${(e) => e.currentTarget.select()}></textarea>
      <button type="button" onClick=${copy}>Copy</button>
    </div>
    <p role="status" class="muted small">${copied ?? ''}</p>
    <button type="button" class="primary" onClick=${onDone}>I have stored it</button>
  </div>`;
}

const KEEP_PREVIOUS = [
  { value: '0', label: 'No: it stops now' },
  { value: '3600', label: 'For 1 hour' },
  { value: '86400', label: 'For 1 day' },
  { value: '604800', label: 'For 7 days' },
];

/**
 * Changes an application in place, and rolls its key: its id, and so its history in the
 * activity log, stays. A new application for a new key would start a second history.
 */
function EditApplication({ application, signedInAs, onSaved, onRolled, onClose }) {
  const [name, setName] = useState(application.name);
  const [attributes, setAttributes] = useState(application.attributes.join(', '));
  const [isAdmin, setIsAdmin] = useState(application.admin);
  const [keep, setKeep] = useState('0');
  const [error, setError] = useState();
  const save = async (e) => {
    e.preventDefault();
    setError(undefined);
    try {
      const answer = await api('PATCH', `/applications/${seg(application.id)}`, { body: { name: name.trim(), attributes: splitList(attributes), admin: isAdmin } });
      onSaved(answer.data);
    } catch (err) {
      setError(err);
    }
  };
  const roll = async () => {
    setError(undefined);
    try {
      const answer = await api('POST', `/applications/${seg(application.id)}/key`, { body: { keepPreviousForSeconds: Number(keep) } });
      // Rolling the key this console signs in with: with the old key stopped at once, the
      // next request would sign the officer out before the new key, shown once, was shown.
      const own = application.id === signedInAs;
      if (own) session.signIn(answer.data.apiKey);
      onRolled(answer.data, own);
    } catch (err) {
      setError(err);
    }
  };
  // Opened in place from a row's Change: the focus comes into the form, Escape closes it.
  useEffect(() => document.getElementById('edit-app-name')?.focus(), []);
  return html`<form class="card" onSubmit=${save} aria-labelledby="edit-app" onKeyDown=${onEscape(onClose)}>
    <h2 id="edit-app" class="clamp" title=${application.name}>Change ${application.name}</h2>
    <p class="muted small">Its id and its history in the activity log stay. Every vault process applies a change within a second.</p>
    <div class="row">
      <${TextInput} id="edit-app-name" label="Name" value=${name} onInput=${setName} showHidden required />
      <${TextInput} id="edit-app-attributes" label="Attributes" hint="Comma-separated keys, or * for all" value=${attributes} onInput=${setAttributes} />
    </div>
    <${Check} id="edit-app-admin" label="Administrator (manages the registry, rules and applications)" checked=${isAdmin} onChange=${setIsAdmin} />
    <div class="actions">
      <button type="submit" class="primary" disabled=${!name.trim()}>Save changes</button>
      <button type="button" onClick=${onClose}>Close</button>
    </div>
    <h3>API key</h3>
    <p class="muted small">A new key is shown once. Roll it when a key may have leaked, or on your rotation schedule.</p>
    <div class="row">
      <${Select} id="edit-app-keep" label="Does the old key keep working?" value=${keep} onChange=${setKeep} options=${KEEP_PREVIOUS} />
    </div>
    <div class="actions">
      <${ConfirmButton} label="Roll the key" ariaLabel=${`Roll the key of ${application.name}`} confirm="Yes, issue a new key" onConfirm=${roll} />
    </div>
    <${ErrorBox} error=${error} intoView />
  </form>`;
}

export function Applications({ admin, applicationId }) {
  const apps = useLoad(() => get('/applications'));
  const [name, setName] = useState('');
  const [attributes, setAttributes] = useState('*');
  const [isAdmin, setIsAdmin] = useState(false);
  const [created, setCreated] = useState();
  const [error, setError] = useState();
  const [notice, setNotice] = useState();
  const [editing, setEditing] = useState();
  // The row's Change button that opened the form: where the focus goes back to once it closes.
  const opener = useRef();
  const refocus = (fallback) => {
    const target = opener.current?.isConnected ? opener.current : document.getElementById(fallback);
    target?.focus();
  };

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
    ${created
      ? html`<${NewKey}
          ...${created}
          onDone=${() => {
            setCreated(undefined);
            // Back where the key was asked for: the row's Change after a roll, else the new application's form.
            if (created.rolled) refocus('app-name');
            else document.getElementById('app-name')?.focus();
          }}
        />`
      : null}
    ${editing
      ? html`<${EditApplication}
          key=${editing.id}
          application=${editing}
          signedInAs=${applicationId}
          onClose=${() => (setEditing(undefined), refocus('app-name'))}
          onSaved=${(changed) => {
            setEditing(undefined);
            setNotice(`${changed.name} saved.`);
            apps.reload();
            refocus('app-name');
          }}
          onRolled=${(rolled, own) => {
            setEditing(undefined);
            setCreated({ application: rolled, apiKey: rolled.apiKey, rolled: true, own });
            apps.reload();
          }}
        />`
      : null}
    <${ErrorBox} error=${apps.error} admin=${!admin} />
    <${Notice} intoView>${notice}</${Notice}>
    ${apps.loading && !apps.data ? html`<${Loading} />` : null}
    ${apps.data
      ? html`<${Table}
          caption="Applications"
          columns=${[
            {
              label: 'Name',
              render: (a) => html`${clip(a.name)}${a.previousKeyValidUntil
                ? html`<div class="muted small">old key until ${when(a.previousKeyValidUntil)}</div>`
                : null}`,
            },
            { label: 'Id', render: (a) => html`<span class="mono small">${a.id}</span>` },
            { label: 'Attributes', render: (a) => fmt(a.attributes) },
            { label: 'Admin', key: 'admin' },
            { label: 'Created', render: (a) => when(a.createdDate ?? a.created) },
            {
              label: 'Actions',
              render: (a) => html`<span class="actions-inline">
                <button type="button" aria-label=${`Change ${a.name}`} onClick=${(e) => ((opener.current = e.currentTarget), setNotice(undefined), setEditing(a))}>Change</button>
                <${ConfirmButton} label="Delete" ariaLabel=${`Delete ${a.name}`} confirm=${`Yes, delete ${a.name}`} onConfirm=${() => remove(a)} />
              </span>`,
            },
          ]}
          rows=${apps.data}
          empty="No applications."
        />`
      : null}
    ${apps.data
      ? html`<form class="card" onSubmit=${create} aria-labelledby="new-app">
          <h2 id="new-app">New application</h2>
          <div class="row">
            <${TextInput} id="app-name" label="Name" value=${name} onInput=${setName} showHidden required />
            <${TextInput} id="app-attributes" label="Attributes" hint="Comma-separated keys, or * for all" value=${attributes} onInput=${setAttributes} />
          </div>
          <${Check} id="app-admin" label="Administrator (manages the registry, rules and applications)" checked=${isAdmin} onChange=${setIsAdmin} />
          <${ErrorBox} error=${error} intoView />
          <div class="actions"><button type="submit" class="primary" disabled=${!name.trim()}>Create application</button></div>
        </form>`
      : null}
  </section>`;
}
