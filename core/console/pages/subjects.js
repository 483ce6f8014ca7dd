import { html, useState } from '../lib.js';
import { get, search, seg } from '../api.js';
import { ErrorBox, Loading, Notice, PageTitle, Pager, subjectLink, Table, TextInput, useLoad, when } from '../ui.js';
export { Subject } from './subject.js';

const COUNT = 25;
/** Points a search by value reads; a value this common is better narrowed than paged through. */
const SEARCH_LIMIT = 1000;

/** Leaf paths of a schema (`CONTACT.email`), which is what blind indexes are kept for. */
function indexedPaths(definitions) {
  const out = [];
  const walk = (prefix, schema) => {
    if (schema && typeof schema === 'object') {
      for (const [k, v] of Object.entries(schema)) walk(`${prefix}.${k.replace(/^\[(.*)\]$/, '$1')}`, v);
    } else out.push(prefix);
  };
  for (const d of definitions) if (d.indexed) walk(d.key, d.schema);
  return out;
}

export function Subjects() {
  const [subjectId, setSubjectId] = useState('');
  const [attribute, setAttribute] = useState('');
  const [value, setValue] = useState('');
  const [found, setFound] = useState();
  // What a search found, for a screen reader: the results appear below the form without a word.
  const [said, setSaid] = useState('');
  const [error, setError] = useState();
  const [page, setPage] = useState(0);
  const list = useLoad(() => get('/datasubjects', { page, count: COUNT }), [page]);
  const definitions = useLoad(() => get('/attributes'));
  const paths = indexedPaths(definitions.data ?? []);

  // Straight to the subject's page, even for an id with no subject: a purged subject's
  // history is found there, and the page says when no subject has the id.
  const open = (e) => {
    e.preventDefault();
    location.hash = `#/subjects/${seg(subjectId.trim())}`;
  };
  // The value goes in the request body, never in the address.
  const byValue = async (e) => {
    e.preventDefault();
    setError(undefined);
    setFound(undefined);
    setSaid('');
    // The vault ignores a value on an attribute it keeps no blind index for: say so, rather
    // than report that no subject holds the value.
    if (definitions.data && !paths.includes(attribute.trim())) {
      // Said of the Attribute field, which is marked invalid and described by it.
      setError(Object.assign(new Error(`${attribute.trim()} is not an indexed attribute (or a leaf of one): only those can be searched by value.`), { field: 's-attr' }));
      return;
    }
    try {
      const points = await search({ values: [{ attribute: attribute.trim(), value }] }, 0, SEARCH_LIMIT);
      const subjects = new Map();
      for (const p of points) subjects.set(p.subjectId, [...(subjects.get(p.subjectId) ?? []), p.attribute]);
      // A full read may be the whole list: the cut is only said when a point lies past it
      // (page SEARCH_LIMIT of one point each is the one right after the read).
      const cut = points.length === SEARCH_LIMIT && (await search({ values: [{ attribute: attribute.trim(), value }] }, SEARCH_LIMIT, 1)).length > 0;
      setFound({ subjects: [...subjects].map(([id, attributes]) => ({ id, attributes: [...new Set(attributes)] })), cut });
      const n = subjects.size;
      setSaid(
        (n ? `${n} subject${n === 1 ? ' holds' : 's hold'} this value.` : 'No subject holds this value (or you may not see the attribute).') +
          (cut ? ` Only the first ${SEARCH_LIMIT} points holding it were read: more hold it.` : ''),
      );
    } catch (err) {
      setError(err);
    }
  };

  return html`<section>
    <${PageTitle} sub="Find a data subject to answer an access request, honour an erasure or set a legal hold.">Data subjects</${PageTitle}>
    <div class="grid2">
      <form class="card" onSubmit=${open} aria-labelledby="by-id">
        <h2 id="by-id">Find by id</h2>
        <${TextInput} id="s-id" label="Subject id" value=${subjectId} onInput=${setSubjectId} required />
        <button type="submit" class="primary" disabled=${!subjectId.trim()}>Open subject</button>
      </form>
      <form class="card" onSubmit=${byValue} aria-labelledby="by-value">
        <h2 id="by-value">Find by value</h2>
        <${TextInput} id="s-attr" label="Attribute" value=${attribute} onInput=${setAttribute} list="indexed-paths" required errorId=${error?.field === 's-attr' ? 'search-error' : undefined} hint="An indexed attribute, or a leaf of one such as CONTACT.email" />
        <datalist id="indexed-paths">${paths.map((p) => html`<option value=${p} />`)}</datalist>
        <${TextInput} id="s-value" label="Value" value=${value} onInput=${setValue} required autocomplete="off" hint="Matched through the blind index: the vault decrypts nothing" />
        <button type="submit" class="primary" disabled=${!attribute.trim() || value === ''}>Search</button>
        <p class="sr-only" role="status">${said}</p>
      </form>
    </div>
    <${ErrorBox} error=${error} id="search-error" />
    ${found
      ? html`<section class="card" aria-labelledby="found"><h2 id="found">Matching subjects</h2>
          ${found.cut ? html`<${Notice} kind="warn">Only the first ${SEARCH_LIMIT} points holding this value were read: more hold it, and other subjects may too.</${Notice}>` : null}
          <${Table}
            caption="Subjects matching the value"
            columns=${[
              { label: 'Subject', render: (s) => subjectLink(s.id) },
              { label: 'Matched on', render: (s) => s.attributes.join(', ') },
            ]}
            rows=${found.subjects}
            empty="No subject holds that value (or you may not see the attribute)."
          /></section>`
      : null}
    <section class="card" aria-labelledby="all-subjects">
      <h2 id="all-subjects">All data subjects</h2>
      <${ErrorBox} error=${list.error} />
      ${list.loading && !list.data ? html`<${Loading} />` : null}
      ${list.data
        ? html`<${Table}
              caption="Data subjects"
              columns=${[
                { label: 'Subject', render: (s) => subjectLink(s.id) },
                { label: 'Tags', key: 'tags' },
                { label: 'Legal hold', render: (s) => (s.legalHold ? html`<span class="badge hold">on hold</span>` : 'no') },
                { label: 'Created', render: (s) => when(s.created) },
              ]}
              rows=${list.data}
              empty="No data subjects yet."
            />
            <${Pager} page=${page} more=${list.data.length === COUNT} onPage=${setPage} label="Subject pages" shown=${list.current ? list.data.length : undefined} what="subject" />`
        : null}
    </section>
  </section>`;
}
