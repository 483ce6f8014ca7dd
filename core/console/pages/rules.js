import { html, useEffect, useState } from '../lib.js';
import { api, del, get, seg } from '../api.js';
import { ConfirmButton, ErrorBox, fmt, Loading, Notice, PageTitle, Table, useLoad, when } from '../ui.js';
import { RuleFields } from './rule-form.js';

export function Rules({ admin }) {
  const rules = useLoad(() => get('/rules'));
  return html`<section>
    <${PageTitle} sub="Rules watch stores (data rules) and audit events (activity rules).">Rules</${PageTitle}>
    <p><a class="button primary" href="#/rules/new">New rule</a></p>
    <${ErrorBox} error=${rules.error} admin=${!admin} />
    ${rules.loading && !rules.data ? html`<${Loading} />` : null}
    ${rules.data
      ? html`<${Table}
          caption="Rules"
          columns=${[
            { label: 'Key', render: (r) => html`<a href=${`#/rules/${seg(r.key)}`}>${r.key}</a>` },
            { label: 'Name', key: 'name' },
            { label: 'Type', render: (r) => r.type ?? 'data' },
            { label: 'Action', render: (r) => fmt(r.action?.type) },
            { label: 'Order', key: 'executionOrder' },
            { label: 'Modified', render: (r) => when(r.modifiedDate) },
          ]}
          rows=${rules.data}
          empty="No rules yet."
        />`
      : null}
  </section>`;
}

const NEW_RULE = {
  key: '',
  name: '',
  type: 'data',
  constraint: { type: 'all', constraints: [{ type: 'attribute', operator: 'any', attributes: [] }] },
  action: { type: 'alert', alertLevel: 'WARNING', message: '' },
};

/** The rule as it is sent back: without the members the vault sets. */
function editable(rule) {
  const { createdDate, modifiedDate, ...rest } = rule;
  return rest;
}

/** The answer to a create, kept across the move to the new rule's own address (a new editor). */
let createdNotice;

export function RuleEditor({ id, admin }) {
  const isNew = id === 'new';
  const [rule, setRule] = useState(isNew ? NEW_RULE : undefined);
  const [json, setJson] = useState(isNew ? JSON.stringify(NEW_RULE, null, 2) : '');
  const [jsonError, setJsonError] = useState();
  const [error, setError] = useState();
  const [notice, setNotice] = useState();
  // Put into the form's live region once the form (and the region) is drawn, not with it: a
  // region that arrives with its message is mostly not read out.
  const [carried] = useState(() => {
    const taken = createdNotice;
    createdNotice = undefined;
    return taken;
  });
  useEffect(() => {
    if (rule && carried) setNotice(carried);
  }, [Boolean(rule)]);
  const [loadError, setLoadError] = useState();
  const [deleted, setDeleted] = useState(false);

  useEffect(() => {
    if (isNew) return;
    get(`/rules/${seg(id)}`).then(
      (r) => {
        setRule(editable(r));
        setJson(JSON.stringify(editable(r), null, 2));
      },
      setLoadError,
    );
  }, [id]);

  const fromForm = (next) => {
    setRule(next);
    setJson(JSON.stringify(next, null, 2));
    setJsonError(undefined);
  };
  const fromJson = (text) => {
    setJson(text);
    try {
      const parsed = JSON.parse(text);
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('A rule is a JSON object');
      setRule(parsed);
      setJsonError(undefined);
    } catch (err) {
      setJsonError(err.message);
    }
  };
  const save = async (e) => {
    e.preventDefault();
    setError(undefined);
    setNotice(undefined);
    try {
      const answer = await api('POST', '/rules', { body: rule });
      setNotice(answer.data);
      if (isNew) {
        createdNotice = answer.data;
        location.hash = `#/rules/${seg(rule.key)}`;
      }
    } catch (err) {
      setError(err);
    }
  };
  const remove = async () => {
    setError(undefined);
    try {
      setNotice(await del(`/rules/${seg(id)}`));
      setDeleted(true);
    } catch (err) {
      setError(err);
    }
  };

  const title = isNew ? 'New rule' : html`Rule <span class="mono">${id}</span>`;
  if (loadError) return html`<section><${PageTitle} sub=${html`<a href="#/rules">← Rules</a>`}>${title}</${PageTitle}><${ErrorBox} error=${loadError} admin=${!admin} /></section>`;
  if (!rule) return html`<section><${PageTitle}>${title}</${PageTitle}><${Loading} /></section>`;
  if (deleted) return html`<section><${PageTitle}>${title}</${PageTitle}><${Notice}>${notice}</${Notice}><p><a href="#/rules">Back to the rules</a></p></section>`;
  return html`<section>
    <${PageTitle} sub=${html`<a href="#/rules">← Rules</a> · <a href=${`#/alerts`}>Alerts</a>`}>${title}</${PageTitle}>
    <form class="card" onSubmit=${save} aria-label="Rule">
      <${RuleFields} rule=${rule} onChange=${fromForm} isNew=${isNew} />
      <h2 class="sub"><label for="rule-json">As JSON</label></h2>
      <p class="muted small">Everything the form does not cover (nested constraints, geolocation subdivisions, retention dates…) is edited here. Both stay in step.</p>
      <textarea id="rule-json" class="json" rows="14" spellcheck="false" value=${json} onInput=${(e) => fromJson(e.currentTarget.value)} aria-invalid=${Boolean(jsonError)} aria-describedby="rule-json-error"></textarea>
      <p id="rule-json-error" class="field-error" role="alert">${jsonError ? `Not valid JSON: ${jsonError}` : ''}</p>
      <${ErrorBox} error=${error} admin=${!admin} intoView />
      <${Notice} intoView>${notice}</${Notice}>
      <div class="actions">
        <button type="submit" class="primary" disabled=${Boolean(jsonError)}>${isNew ? 'Create rule' : 'Save rule'}</button>
        ${isNew ? null : html`<span class="spacer"></span><${ConfirmButton} label="Delete rule" confirm="Delete this rule" onConfirm=${remove} />`}
      </div>
    </form>
  </section>`;
}
