import { html, lines, useEffect, useRef, useState, visible } from '../lib.js';
import { api, ApiError, get, getAll, keyFileToHeader, post, search, seg } from '../api.js';
import { ConfirmButton, ErrorBox, fmt, keepFocusNear, keepingFocus, Loading, Notice, PageTitle, Table, download, fileName, useLoad, when } from '../ui.js';
import { activityColumns, useApplicationNames } from './activity.js';
import { count, milestone, readPointByPoint, refusedValue, RevealProgress, revealProgress, values as valueCount } from './reveal.js';

const ACTIVITY_SHOWN = 100;

async function allPoints(subjectId) {
  const all = [];
  for (let page = 0; ; page++) {
    const batch = await search({ entityId: subjectId }, page, 1000);
    all.push(...batch);
    if (batch.length < 1000) return all;
  }
}

/**
 * A revealed value for a table cell: text with its own line breaks, a structure as its members
 * by name and a list as numbered items, at every depth, so an officer reads a nested address
 * or a list of phones as such rather than as JSON.
 */
function showValue(value) {
  if (value === undefined) return html`<span class="muted">—</span>`;
  if (value && typeof value === 'object' && !Array.isArray(value)) return valuePart(value);
  return html`<span class="value">${valuePart(value)}</span>`;
}

function valuePart(value) {
  if (Array.isArray(value)) {
    if (value.length === 0) return html`<span class="muted">empty list</span>`;
    return html`<ol class="value-list">${value.map((item) => html`<li>${valuePart(item)}</li>`)}</ol>`;
  }
  if (value && typeof value === 'object') {
    const members = Object.entries(value);
    if (members.length === 0) return html`<span class="muted">no members</span>`;
    return html`<dl class="value">${members.map(([k, v]) => html`<div><dt>${k}</dt><dd>${valuePart(v)}</dd></div>`)}</dl>`;
  }
  return typeof value === 'string' ? lines(value) : JSON.stringify(value);
}

export function Subject({ id, admin, allAttributes }) {
  const subject = useLoad(() => get(`/datasubjects/${seg(id)}`), [id]);
  const points = useLoad(() => allPoints(id), [id]);
  const activity = useLoad(() => get('/activity', { subjectId: id, order: 'newest', count: ACTIVITY_SHOWN }), [id]);
  const appNames = useApplicationNames(admin);
  // Decrypted values live in this component's memory only and go when it unmounts.
  const [values, setValues] = useState();
  // Stored values the vault would not read one by one, with its reason ("404 Data Not Found").
  const [refused, setRefused] = useState();
  // A reveal point by point under way (`revealProgress`); `running` stops it.
  const [progress, setProgress] = useState();
  const [announced, setAnnounced] = useState('');
  const running = useRef();
  const revealButton = useRef();
  const cancelButton = useRef();
  const focusBack = useRef(false);
  const [keyFile, setKeyFile] = useState();
  const keyInput = useRef();
  const [error, setError] = useState();
  const [notice, setNotice] = useState();
  const [busy, setBusy] = useState(false);
  const [purgeText, setPurgeText] = useState('');
  const [purged, setPurged] = useState(false);

  const act = async (what, fn) => {
    setError(undefined);
    setNotice(undefined);
    setBusy(true);
    try {
      await fn();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const reveal = () =>
    act('reveal', async () => {
      // Refused in the browser, the file is at fault: the field is marked and described by why.
      const header = await keyFileToHeader(keyFile).catch((err) => {
        throw Object.assign(err, { field: 'key-file' });
      });
      let read;
      try {
        read = (await api('GET', `/datasubjects/${seg(id)}/attributes`, { headers: { 'x-decryption-key': header } })).data;
      } catch (err) {
        // Too much for one answer (VAULT_READ_LIMIT); the vault answers any one point.
        if (err instanceof ApiError && err.status === 413) return revealPointByPoint(header);
        // The vault's 404 for a subject holding no stored value (report-only points only).
        if (!(err instanceof ApiError && err.status === 404)) throw err;
        read = [];
      }
      setRefused(undefined);
      setValues(new Map(read.map((p) => [p.dataPointId, p.value])));
      activity.reload(); // the reveal is a read, recorded like any other
      setNotice(
        read.length === 0
          ? 'No values to reveal: this subject has no stored values you may see. Report-only points record activity, not values.'
          : `Revealed ${read.length} value${read.length === 1 ? '' : 's'}. They are kept on this page only.`,
      );
    });

  /**
   * The table's stored values read one at a time. The bar moves a few times a second; the
   * table, which may be 5,000 rows, is drawn again only at each tenth of the way.
   */
  const revealPointByPoint = async (header) => {
    const listed = points.data ?? (await allPoints(id));
    const ids = listed.filter((p) => !p.structureRootId && !p.reportOnly).map((p) => p.dataPointId);
    const total = ids.length;
    const controller = new AbortController();
    running.current = controller;
    // Filled in place: the page holds each value once, in the Map its table reads.
    const shown = new Map();
    const notRead = new Map();
    setValues(shown);
    setRefused(notRead);
    const progressNow = revealProgress(total);
    setProgress(progressNow);
    setAnnounced(`Revealing ${valueCount(total)} one at a time: together they are more than the vault answers at once.`);
    let done = 0;
    let told = 0;
    let timer;
    const draw = () => {
      timer = undefined;
      progressNow.set(done);
      if (milestone(done, total) > told) {
        told = milestone(done, total);
        setAnnounced(`Revealing ${count(done)} of ${valueCount(total)}…`);
      }
    };
    try {
      await readPointByPoint({
        ids,
        header,
        signal: controller.signal,
        onValue: (pointId, value) => shown.set(pointId, value),
        onRefused: (pointId, reason) => notRead.set(pointId, reason),
        onProgress: (n) => {
          done = n;
          timer ??= setTimeout(draw, 200);
        },
      });
    } finally {
      clearTimeout(timer);
      if (running.current === controller) running.current = undefined;
      setProgress(undefined);
      setAnnounced('');
      activity.reload(); // each point read is recorded, cancelled or not
    }
    const reason = controller.signal.reason;
    if (controller.signal.aborted && reason !== 'cancel') return; // hidden, or the page left
    const kept = ` ${shown.size === 1 ? 'It is' : 'They are'} kept on this page only.`;
    const marked = notRead.size ? ` ${count(notRead.size)} could not be read and ${notRead.size === 1 ? 'is' : 'are'} marked in the table.` : '';
    if (controller.signal.aborted) {
      setNotice({ kind: 'warn', text: `Reveal cancelled: ${count(shown.size)} of ${valueCount(total)} revealed, the rest not.${marked}${shown.size ? kept : ''}` });
    } else if (notRead.size) {
      setNotice({ kind: 'warn', text: `Revealed ${count(shown.size)} of ${valueCount(total)}.${marked}${shown.size ? kept : ''}` });
    } else {
      setNotice(`Revealed ${valueCount(total)}, one at a time: together they are more than the vault answers at once.${kept}`);
    }
  };

  const cancel = () => running.current?.abort('cancel');
  useEffect(() => () => running.current?.abort('gone'), []);

  // The reveal button is disabled while a reveal runs: its focus goes to Cancel, and back.
  useEffect(() => {
    const at = document.activeElement;
    if (progress && !focusBack.current && (!at || at === document.body || at === revealButton.current)) {
      focusBack.current = true;
      cancelButton.current?.focus();
    } else if (!progress && !busy && focusBack.current) {
      focusBack.current = false;
      if (!at || at === document.body) revealButton.current?.focus();
    }
  }, [Boolean(progress), busy]);

  // Hidden values that one click would bring back are not hidden: the key goes with them.
  const forget = () => {
    running.current?.abort('forget');
    setValues(undefined);
    setRefused(undefined);
    setKeyFile(undefined);
    if (keyInput.current) keyInput.current.value = '';
  };

  const hide = () => {
    forget();
    setNotice('Values hidden and the key file forgotten: choose it again to reveal them.');
  };

  // An answer to a subject access request must not look whole when it is not: the file and
  // the notice both say what this key and this page could not put in it.
  const exportJson = () =>
    act('export', async () => {
      let history;
      try {
        history = await getAll('/activity', { subjectId: id });
      } catch (err) {
        if (err.status !== 403) throw err;
        history = null; // not an admin's key: the export says so rather than failing
      }
      // Report-only points have no value in the vault: no reveal could add one.
      const stored = roots.filter((p) => !p.reportOnly);
      const unrevealed = stored.filter((p) => !values?.has(p.dataPointId) && !refused?.has(p.dataPointId)).length;
      const notRead = stored.filter((p) => refused?.has(p.dataPointId));
      const reasons = [...new Set(notRead.map((p) => refused.get(p.dataPointId)))];
      const limitations = [
        ...(history === null ? ["Activity history not included: only an administrator's API key may read the activity log, and this key is not one."] : []),
        ...(allAttributes ? [] : ['Data points limited to the attributes this API key may read: its application may not see them all.']),
        ...(unrevealed ? [`Values not included for ${unrevealed} of the ${stored.length} stored value${stored.length === 1 ? '' : 's'}: reveal them with the private key first.`] : []),
        ...(notRead.length
          ? [
              `Values not included for ${notRead.length} of the ${stored.length} stored value${stored.length === 1 ? '' : 's'}: the vault would not read them (${reasons.slice(0, 5).join('; ')}${reasons.length > 5 ? '; …' : ''}); each is marked with valueNotIncluded.`,
            ]
          : []),
      ];
      const report = {
        exportedAt: new Date().toISOString(),
        complete: limitations.length === 0,
        limitations,
        subject: subject.data,
        valuesIncluded: Boolean(values),
        dataPoints: (points.data ?? []).map((p) =>
          values?.has(p.dataPointId) ? { ...p, value: values.get(p.dataPointId) } : refused?.has(p.dataPointId) ? { ...p, valueNotIncluded: refused.get(p.dataPointId) } : p,
        ),
        activity: history,
      };
      download(fileName(['subject', id], 'json'), 'application/json', JSON.stringify(report, null, 2));
      const n = report.dataPoints.length;
      const exported = `Exported ${n} data point${n === 1 ? '' : 's'}${values ? (n === 1 ? ' with its value' : ' with their values') : ''}${history ? ' and the activity history' : ''}.`;
      setNotice(
        report.complete
          ? exported
          : {
              kind: 'warn',
              text: html`${exported} <strong>This export is partial</strong>; do not send it as a complete answer:
                <ul>${limitations.map((l) => html`<li>${l}</li>`)}</ul>`,
            },
      );
    });

  const setHold = (legalHold) =>
    act('hold', async () => {
      await post('/datasubjects', { id, legalHold });
      subject.reload();
      activity.reload(); // the change is recorded like any other
      setNotice(legalHold ? 'Legal hold set: its data can no longer be deleted or overwritten.' : 'Legal hold lifted.');
    });

  const deleteAttribute = (attribute) =>
    act('delete', async () => {
      const r = await api('DELETE', `/datasubjects/${seg(id)}/attributes/${seg(attribute)}`);
      points.reload();
      activity.reload();
      setNotice(`${attribute}: ${r?.data ?? 'deleted'}`);
    });

  const purge = () =>
    act('purge', async () => {
      await api('DELETE', `/datasubjects/${seg(id)}/data`);
      forget();
      setPurged(true);
      setNotice(`Subject ${id} purged: its data and its keys are gone; its activity history stays.`);
    });

  if (purged) {
    return html`<section><${PageTitle} title=${id}>Subject ${id}</${PageTitle}><${Notice}>${notice}</${Notice}><p><a href="#/subjects">Back to data subjects</a></p></section>`;
  }

  const activitySection = html`<section class="card" aria-labelledby="subject-activity">
    <h2 id="subject-activity">Activity</h2>
    ${activity.error
      ? html`<${ErrorBox} error=${activity.error} admin=${!admin} />`
      : activity.data
        ? html`${activity.data.length === ACTIVITY_SHOWN ? html`<p class="muted small">The latest ${ACTIVITY_SHOWN} entries, newest first.</p>` : null}
            <${Table} caption="Activity of the subject" columns=${activityColumns(appNames)} rows=${activity.data} empty="No activity recorded." />
            <p><a href=${`#/activity/${seg(id)}`}>This subject in the activity log (all entries, filters, CSV export) →</a></p>`
        : html`<${Loading} />`}
  </section>`;

  // A mistyped or purged id: nothing to act on (a legal hold would create the subject), but
  // the history of a purged subject stays and is shown.
  if (subject.error?.status === 404) {
    return html`<section>
      <${PageTitle} title=${id} sub=${html`<a href="#/subjects">← Data subjects</a>`}>Subject <span class="mono">${id}</span></${PageTitle}>
      <${Notice} kind="warn">No data subject has this id. If it was purged, its activity history is below.</${Notice}>
      ${activitySection}
    </section>`;
  }

  const roots = (points.data ?? []).filter((p) => !p.structureRootId);
  const held = subject.data?.legalHold;
  const columns = [
    { label: 'Attribute', key: 'attribute' },
    { label: 'Sensitivity', key: 'sensitivity' },
    { label: 'Tags', key: 'tags' },
    { label: 'Regulations', key: 'regulations' },
    { label: 'Created', render: (p) => when(p.createdDate) },
    { label: 'Modified', render: (p) => when(p.modifiedDate) },
    { label: 'Report-only', key: 'reportOnly' },
    ...(values ? [{ label: 'Value', render: (p) => (refused?.has(p.dataPointId) ? refusedValue(refused.get(p.dataPointId)) : showValue(values.get(p.dataPointId))) }] : []),
  ];
  const attributes = [...new Set(roots.map((p) => p.attribute))];
  // The id as the label shows it (hidden characters marked) is what an officer can type.
  const confirmed = purgeText === id || purgeText === visible(id);

  return html`<section>
    <${PageTitle} title=${id} sub=${html`<a href="#/subjects">← Data subjects</a>`}>Subject <span class="mono">${id}</span></${PageTitle}>
    <${ErrorBox} error=${subject.error} />
    ${subject.data
      ? html`<dl class="card facts">
          <div><dt>Type</dt><dd>${subject.data.type}</dd></div>
          <div><dt>Tags</dt><dd>${fmt(subject.data.tags)}</dd></div>
          <div><dt>Legal hold</dt><dd>${held ? html`<span class="badge hold">on hold</span>` : 'no'}</dd></div>
          <div><dt>Created</dt><dd>${when(subject.data.created)}</dd></div>
        </dl>`
      : null}
    <${ErrorBox} error=${error} admin=${!admin} intoView id="subject-error" />
    <${Notice} kind=${notice?.kind} intoView>${notice?.text ?? notice}</${Notice}>

    <section class="card" aria-labelledby="points">
      <h2 id="points">Data points</h2>
      <div class="toolbar">
        <div class="field inline">
          <label for="key-file">Private key file</label>
          <input id="key-file" ref=${keyInput} type="file" accept=".pem,.key,.txt,application/x-pem-file" onChange=${(e) => setKeyFile(e.currentTarget.files?.[0])}
            aria-invalid=${error?.field === 'key-file' ? 'true' : undefined} aria-describedby=${error?.field === 'key-file' ? 'subject-error' : undefined} />
        </div>
        <button type="button" class="primary" ref=${revealButton} disabled=${!keyFile || busy} onClick=${keepingFocus(reveal)}>Reveal values</button>
        ${values ? html`<button type="button" onClick=${keepingFocus(hide)}>Hide values</button>` : null}
        <span class="spacer"></span>
        <button type="button" onClick=${keepingFocus(exportJson)} disabled=${busy || !points.data}>Export JSON</button>
      </div>
      <p class="muted small">The key file is read in this browser and sent with the reveal requests only; it is never stored.</p>
      ${progress ? html`<${RevealProgress} progress=${progress} onCancel=${cancel} cancelRef=${cancelButton} />` : null}
      <p class="sr-only" role="status">${announced}</p>
      <${ErrorBox} error=${points.error} />
      ${points.loading && !points.data ? html`<${Loading} />` : null}
      ${points.data ? html`<${Table} caption="Data points of the subject" columns=${columns} rows=${roots} empty="No data points you may see." />` : null}
    </section>

    <section class="card" aria-labelledby="manage">
      <h2 id="manage">Legal hold and erasure</h2>
      <div class="toolbar">
        ${held
          ? html`<${ConfirmButton} label="Lift legal hold" confirm="Lift the hold: its data may be deleted again" disabled=${busy} onConfirm=${() => setHold(false)} />`
          : html`<button type="button" disabled=${busy} onClick=${keepingFocus(() => setHold(true))}>Set legal hold</button>`}
      </div>
      ${attributes.length
        ? html`<h3>Delete one attribute</h3>
            <ul class="plain">
              ${attributes.map((a) => html`<li><span class="mono">${a}</span> <${ConfirmButton} label=${`Delete ${a}`} confirm=${`Delete every ${a} value`} onConfirm=${() => deleteAttribute(a)} /></li>`)}
            </ul>`
        : null}
      <h3>Purge the subject</h3>
      <p>Deletes every data point, destroys the subject's keys and removes the subject. Its activity history stays. This cannot be undone.</p>
      <form class="purge" onSubmit=${(e) => (e.preventDefault(), confirmed && (keepFocusNear(document.activeElement), purge()))}>
        <div class="field">
          <label for="purge-confirm">Type the subject id <span class="mono">${id}</span> to confirm</label>
          <input id="purge-confirm" type="text" autocomplete="off" value=${purgeText} onInput=${(e) => setPurgeText(e.currentTarget.value)} />
        </div>
        <button type="submit" class="danger" disabled=${!confirmed || busy}>Purge subject</button>
      </form>
    </section>

    ${activitySection}
  </section>`;
}
