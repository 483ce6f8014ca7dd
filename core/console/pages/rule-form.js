// The rule form: the common constraints and actions as fields, everything else as JSON.
import { html, useEffect, useRef, useState } from '../lib.js';
import { Check, Select, TextInput, splitList } from '../ui.js';

/** Per constraint type: its operators (if any) and the member holding its list. */
export const CONDITIONS = {
  attribute: { operators: ['any', 'none'], list: 'attributes', label: 'Attributes', hint: 'Attribute keys, comma-separated' },
  tag: { operators: ['any', 'all', 'none'], list: 'tags', label: 'Tags', hint: 'Tags, comma-separated' },
  regulation: { operators: ['any', 'all', 'none'], list: 'regulations', label: 'Regulations', hint: 'Regulation keys, comma-separated' },
  geolocation: { operators: ['any', 'none'], list: 'countries', label: 'Countries', hint: 'ISO 3166-1 country codes, comma-separated' },
  entityType: { list: 'entityTypes', label: 'Entity types', hint: 'Entity types, comma-separated' },
  application: { operators: ['any', 'none'], list: 'applications', label: 'Applications', hint: 'Application ids, comma-separated' },
  eventType: { list: 'eventTypes', label: 'Event types', hint: 'READ, STORE, UPDATE, DELETE' },
  user: {},
  sentiment: {},
};
const PREDICATES = ['eq', 'neq', 'lt', 'gt', 'leq', 'geq', 'before', 'after', 'in', 'nin', 'regex'];
export const ACTIONS = ['alert', 'tag', 'regulation', 'entityTag', 'block', 'prohibition', 'legalHold', 'retention'];
const LEVELS = ['NORMAL', 'INFO', 'WARNING', 'DANGER', 'SUCCESS', 'NEUTRAL'];

const ALLOWED = {
  attribute: ['type', 'operator', 'attributes'],
  tag: ['type', 'operator', 'tags'],
  regulation: ['type', 'operator', 'regulations'],
  geolocation: ['type', 'operator', 'countries'],
  entityType: ['type', 'entityTypes'],
  application: ['type', 'operator', 'applications'],
  eventType: ['type', 'eventTypes'],
  user: ['type', 'attribute', 'predicate', 'value'],
  sentiment: ['type', 'threshold'],
};

/**
 * A comma-separated list as the user types it. The rule holds the list, split at every
 * keystroke so that the JSON stays in step; drawn back from that list, the field would drop a
 * comma or space the moment it was typed, and "EMAIL, NAME" would become "EMAILNAME". The text
 * is shown while it still splits into the rule's list; once the list is changed elsewhere (the
 * JSON editor, another condition type), the list is shown instead.
 */
function ListInput({ list, onList, ...rest }) {
  const items = Array.isArray(list) ? list : [];
  const [text, setText] = useState(() => items.join(', '));
  const shown = JSON.stringify(splitList(text)) === JSON.stringify(items) ? text : items.join(', ');
  return html`<${TextInput} ...${rest} value=${shown} onInput=${(t) => (setText(t), onList(splitList(t)))} />`;
}

const simple = (c) => Boolean(c && typeof c === 'object' && ALLOWED[c.type] && Object.keys(c).every((k) => ALLOWED[c.type].includes(k)));

/**
 * The constraint as a match type and a flat list of conditions, when the form can show it
 * without losing anything; undefined means JSON only. A single condition shows as "all of"
 * one, and is only wrapped so once the form edits it.
 */
export function asConditions(constraint) {
  if (simple(constraint)) return { match: 'all', conditions: [constraint] };
  if (!constraint || typeof constraint !== 'object' || (constraint.type !== 'all' && constraint.type !== 'any')) return undefined;
  const flat = Array.isArray(constraint.constraints) && Object.keys(constraint).every((k) => k === 'type' || k === 'constraints') && constraint.constraints.every(simple);
  return flat ? { match: constraint.type, conditions: constraint.constraints } : undefined;
}

function Condition({ index, condition, onChange, onRemove }) {
  const spec = CONDITIONS[condition.type] ?? {};
  const id = (n) => `c${index}-${n}`;
  const set = (patch) => onChange({ ...condition, ...patch });
  const changeType = (type) => {
    const next = { type };
    if (CONDITIONS[type].operators) next.operator = CONDITIONS[type].operators[0];
    if (CONDITIONS[type].list) next[CONDITIONS[type].list] = [];
    if (type === 'user') Object.assign(next, { attribute: '', predicate: 'eq', value: '' });
    if (type === 'sentiment') next.threshold = -0.5;
    onChange(next);
  };
  return html`<fieldset class="condition">
    <legend>Condition ${index + 1}</legend>
    <div class="row">
      <${Select} id=${id('type')} label="Type" value=${condition.type} onChange=${changeType} options=${Object.keys(CONDITIONS)} />
      ${spec.operators ? html`<${Select} id=${id('op')} label="Operator" value=${condition.operator ?? spec.operators[0]} onChange=${(operator) => set({ operator })} options=${spec.operators} />` : null}
      ${spec.list
        ? html`<${ListInput} id=${id('list')} label=${spec.label} hint=${spec.hint} list=${condition[spec.list]} onList=${(list) => set({ [spec.list]: list })} />`
        : null}
      ${condition.type === 'user'
        ? html`<${TextInput} id=${id('attr')} label="Attribute" value=${condition.attribute} onInput=${(attribute) => set({ attribute })} />
            <${Select} id=${id('pred')} label="Predicate" value=${condition.predicate ?? 'eq'} onChange=${(predicate) => set({ predicate })} options=${PREDICATES} />
            <${TextInput} id=${id('value')} label="Value" value=${condition.value} onInput=${(value) => set({ value })} />`
        : null}
      ${condition.type === 'sentiment'
        ? html`<${TextInput} id=${id('threshold')} label="Threshold (-1 to 1)" type="number" step="0.1" min="-1" max="1" value=${condition.threshold} onInput=${(t) => set({ threshold: t.trim() === '' ? undefined : Number(t) })} />`
        : null}
    </div>
    <button type="button" class="link" id=${id('remove')} onClick=${onRemove}>Remove condition ${index + 1}</button>
  </fieldset>`;
}

function ActionFields({ action, onChange }) {
  const set = (patch) => onChange({ ...action, ...patch });
  const changeType = (type) => onChange(type === 'alert' ? { type, alertLevel: 'WARNING', message: '' } : { type });
  const t = action.type;
  return html`<div class="row">
    <${Select} id="action-type" label="Action" value=${t} onChange=${changeType} options=${ACTIONS} />
    ${t === 'alert' ? html`<${Select} id="action-level" label="Alert level" value=${action.alertLevel ?? 'NORMAL'} onChange=${(alertLevel) => set({ alertLevel })} options=${LEVELS} />` : null}
    ${t === 'alert' || t === 'block' ? html`<${TextInput} id="action-message" label="Message" value=${action.message} onInput=${(message) => set({ message })} />` : null}
    ${t === 'tag' || t === 'entityTag' ? html`<${TextInput} id="action-tag" label="Tag" value=${action.tag} onInput=${(tag) => set({ tag })} />` : null}
    ${t === 'regulation' ? html`<${TextInput} id="action-regulation" label="Regulation" value=${action.regulation} onInput=${(regulation) => set({ regulation })} />` : null}
    ${t === 'prohibition'
      ? html`<${ListInput} id="action-prohibitions" label="Prohibitions" hint="READ, STORE, UPDATE, DELETE" list=${action.prohibitions} onList=${(prohibitions) => set({ prohibitions })} />`
      : null}
    ${t === 'retention'
      ? html`<${TextInput} id="action-days" label="Days since store" type="number" min="0" value=${action.daysSinceStore} onInput=${(x) => set({ daysSinceStore: x === '' ? undefined : Number(x) })} />
          <${Check} id="action-autodelete" label="Delete automatically once expired" checked=${Boolean(action.autoDelete)} onChange=${(autoDelete) => set({ autoDelete })} />`
      : null}
    ${['tag', 'entityTag', 'prohibition', 'legalHold'].includes(t)
      ? html`<${Check} id="action-status" label="Apply (unchecked: remove or lift)" checked=${action.status !== false} onChange=${(s) => set({ status: s ? undefined : false })} />`
      : null}
  </div>`;
}

/** The form over a rule object; `onChange` receives the whole new rule. */
export function RuleFields({ rule, onChange, isNew }) {
  const set = (patch) => onChange({ ...rule, ...patch });
  const form = asConditions(rule.constraint);
  const conditions = form?.conditions;
  const setConditions = (list, match = form.match) => set({ constraint: { type: match, constraints: list } });
  // Conditions are drawn by position: removing the last one takes away the button pressed,
  // which would leave the focus on the page's start. It goes to the condition before, or to Add.
  const removedLast = useRef(false);
  useEffect(() => {
    if (!removedLast.current) return;
    removedLast.current = false;
    const count = conditions?.length ?? 0;
    document.getElementById(count ? `c${count - 1}-remove` : 'add-condition')?.focus();
  }, [conditions?.length]);
  return html`<div>
    <div class="row">
      <${TextInput} id="rule-key" label="Key" value=${rule.key} onInput=${(key) => set({ key })} readOnly=${!isNew} required />
      <${TextInput} id="rule-name" label="Name" value=${rule.name} onInput=${(name) => set({ name })} />
      <${Select} id="rule-type" label="Rule type" value=${rule.type ?? 'data'} onChange=${(type) => set({ type })} options=${['data', 'activity']} hint="data: on every store; activity: on every audit event" />
      <${TextInput} id="rule-order" label="Execution order" type="number" value=${rule.executionOrder} onInput=${(x) => set({ executionOrder: x === '' ? undefined : Number(x) })} />
    </div>
    <h2 class="sub">When</h2>
    ${conditions
      ? html`<${Select} id="rule-match" label="Match" value=${form.match} onChange=${(match) => setConditions(conditions, match)} options=${[
            { value: 'all', label: 'all of these conditions' },
            { value: 'any', label: 'any of these conditions' },
          ]} />
          ${conditions.map(
            (c, i) => html`<${Condition}
              key=${i}
              index=${i}
              condition=${c}
              onChange=${(next) => setConditions(conditions.map((x, j) => (j === i ? next : x)))}
              onRemove=${() => ((removedLast.current = i === conditions.length - 1), setConditions(conditions.filter((_, j) => j !== i)))}
            />`,
          )}
          <button type="button" id="add-condition" onClick=${() => setConditions([...conditions, { type: 'attribute', operator: 'any', attributes: [] }])}>Add condition</button>`
      : html`<p class="muted">This constraint is richer than the form shows (nesting or less common members): edit it as JSON below.</p>`}
    <h2 class="sub">Then</h2>
    <${ActionFields} action=${rule.action ?? { type: 'alert' }} onChange=${(action) => set({ action })} />
  </div>`;
}
