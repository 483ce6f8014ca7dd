// The console's shell: sign-in, navigation and hash routing. Routes carry ids only, never a
// value or a key, so nothing secret reaches the address bar, history or a Referer.
import { html, render, useEffect, useRef, useState } from './lib.js';
import { api, ApiError, onUnauthorized, session } from './api.js';
import { documentTitle, ErrorBox, keepFocusNear, PageTitle } from './ui.js';
import { Overview } from './pages/overview.js';
import { Subjects, Subject } from './pages/subjects.js';
import { Activity } from './pages/activity.js';
import { Alerts } from './pages/alerts.js';
import { Rules, RuleEditor } from './pages/rules.js';
import { Registry } from './pages/registry.js';
import { Applications } from './pages/applications.js';

const NAV = [
  ['overview', 'Overview'],
  ['subjects', 'Data subjects'],
  ['activity', 'Activity log'],
  ['alerts', 'Alerts'],
  ['rules', 'Rules'],
  ['registry', 'Registry'],
  ['applications', 'Applications'],
];

function parseHash() {
  let parts;
  try {
    parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  } catch {
    return { page: 'not-found' }; // an address typed or pasted with a broken %-escape
  }
  return { page: parts[0] || 'overview', id: parts.slice(1).join('/') || undefined };
}

function useRoute() {
  const [route, setRoute] = useState(parseHash);
  useEffect(() => {
    const on = () => setRoute(parseHash());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** What the signed-in key may do, as the vault says of its own application. */
const whoFrom = (application) => ({ applicationId: application.id, admin: application.admin, allAttributes: application.attributes.includes('*') });

/**
 * The vault would not say what the key may do (429, 5xx, no answer). Guessing "not an admin"
 * would hide pages from an administrator and word every refusal wrongly: ask again instead.
 */
function WhoUnknown({ error, onRetry, onSignOut }) {
  useEffect(() => documentTitle('Could not check the API key'), []);
  return html`<main class="signin" id="main">
    <div class="card" role="alert" aria-labelledby="unknown-title">
      <h1 id="unknown-title">The vault could not check this API key</h1>
      <p>It did not say what the key may do${error.status ? html` (<strong>${error.status} ${error.message}</strong>)` : html`: ${error.message}`}. This is usually brief: the vault may be busy or restarting.</p>
      <div class="actions">
        <button type="button" class="primary" onClick=${onRetry}>Try again</button>
        <button type="button" onClick=${onSignOut}>Sign out</button>
      </div>
    </div>
  </main>`;
}

function SignIn({ onSignedIn, onUnknown, reason }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState();
  const [busy, setBusy] = useState(false);
  const keyField = useRef();
  useEffect(() => documentTitle('Sign in'), []);
  // Signed out, by the officer or because the key is no longer accepted: the focus was on what
  // is gone. It goes to the key, which the reason describes, so that a screen reader says why.
  useEffect(() => {
    if (reason) keyField.current?.focus();
  }, []);
  const submit = async (e) => {
    e.preventDefault();
    // The button is disabled while the key is checked, which drops its focus: back after a
    // refusal; signed in, the page's heading takes it.
    const stopKeeping = keepFocusNear(document.activeElement);
    setBusy(true);
    setError(undefined);
    try {
      const me = await api('GET', '/applications/me', { apiKey: key.trim() });
      session.signIn(key.trim());
      stopKeeping();
      onSignedIn(whoFrom(me.data));
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return setError(err);
      // The key may well be good: keep it, so that Try again needs no retyping.
      session.signIn(key.trim());
      onUnknown(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin" id="main">
    <form class="card" onSubmit=${submit} aria-labelledby="signin-title">
      <h1 id="signin-title">Vault console</h1>
      <p class="muted">Sign in with an application's API key. It is kept for this browser tab only and forgotten when you sign out or close it.</p>
      ${reason ? html`<p class="notice warn" role="status" id="signin-reason">${reason}</p>` : null}
      <div class="field">
        <label for="api-key">API key</label>
        <input id="api-key" ref=${keyField} type="password" autocomplete="off" spellcheck="false" required value=${key} onInput=${(e) => setKey(e.currentTarget.value)}
          aria-invalid=${error ? 'true' : undefined} aria-describedby=${[error && 'signin-error', reason && 'signin-reason'].filter(Boolean).join(' ') || undefined} />
      </div>
      <${ErrorBox} error=${error} id="signin-error" />
      <button type="submit" class="primary" disabled=${busy || !key.trim()}>${busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
  </main>`;
}

function Page({ route, applicationId, admin, allAttributes }) {
  const props = { applicationId, admin, allAttributes, id: route.id };
  switch (route.page) {
    case 'subjects':
      return route.id ? html`<${Subject} key=${route.id} ...${props} />` : html`<${Subjects} ...${props} />`;
    case 'activity':
      return html`<${Activity} key=${route.id ?? ''} ...${props} />`;
    case 'alerts':
      // Keyed by the address, as the activity log is: a level's count, then the navigation's
      // Alerts, each start from their own filters.
      return html`<${Alerts} key=${route.id ?? ''} ...${props} />`;
    case 'rules':
      return route.id ? html`<${RuleEditor} key=${route.id} ...${props} />` : html`<${Rules} ...${props} />`;
    case 'registry':
      return html`<${Registry} ...${props} />`;
    case 'applications':
      return html`<${Applications} ...${props} />`;
    case 'overview':
      return html`<${Overview} ...${props} />`;
    default:
      return html`<section><${PageTitle}>No such page</${PageTitle}><p role="alert">No such page. <a href="#/overview">Go to the overview</a>.</p></section>`;
  }
}

function App() {
  const route = useRoute();
  const [who, setWho] = useState(undefined);
  const [reason, setReason] = useState();
  const [checking, setChecking] = useState(Boolean(session.apiKey()));
  const [unknown, setUnknown] = useState();

  const signOut = (why) => {
    session.signOut();
    // The next person to sign in starts on the overview, not on what this one last saw.
    location.hash = '#/overview';
    setWho(undefined);
    setUnknown(undefined);
    setReason(why);
  };
  const check = () => {
    setChecking(true);
    setUnknown(undefined);
    api('GET', '/applications/me')
      .then((r) => setWho(whoFrom(r.data)))
      .catch((err) => (err instanceof ApiError && err.status === 401 ? signOut() : setUnknown(err)))
      .finally(() => setChecking(false));
  };
  useEffect(() => onUnauthorized(() => signOut('The vault no longer accepts this API key. Sign in again.')), []);
  // A reload keeps the tab's session: ask the vault again what this key may do.
  useEffect(() => {
    if (session.apiKey()) check();
  }, []);
  useEffect(() => {
    if (!checking) performance.mark('console-interactive');
  }, [checking]);

  if (checking) return html`<p class="loading">Loading the console…</p>`;
  if (unknown) return html`<${WhoUnknown} error=${unknown} onRetry=${check} onSignOut=${() => signOut('Signed out.')} />`;
  if (!who) return html`<${SignIn} reason=${reason} onSignedIn=${(w) => (setReason(undefined), setWho(w))} onUnknown=${(err) => (setReason(undefined), setUnknown(err))} />`;
  return html`<div class="shell">
    <a class="skip" href="#main" onClick=${(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>Skip to content</a>
    <header class="topbar">
      <span class="brand">Vault console</span>
      <span class="who">${who.admin ? 'Administrator key' : 'Application key (limited)'}</span>
      <button type="button" class="signout" onClick=${() => signOut('Signed out.')}>Sign out</button>
    </header>
    <nav class="sidebar" aria-label="Console">
      <ul>
        ${NAV.map(([page, label]) => html`<li><a href=${`#/${page}`} aria-current=${route.page === page ? 'page' : undefined}>${label}</a></li>`)}
      </ul>
    </nav>
    <main id="main" tabindex="-1"><${Page} route=${route} applicationId=${who.applicationId} admin=${who.admin} allAttributes=${who.allAttributes} /></main>
  </div>`;
}

const root = document.getElementById('app');
root.textContent = ''; // the static "Loading" text is not Preact's to reconcile
render(html`<${App} />`, root);
