import { html } from '../lib.js';
import { get, seg } from '../api.js';
import { ErrorBox, Level, Loading, PageTitle, Table, useLoad, when } from '../ui.js';
import { ChainState } from './chain.js';
import { activityColumns, useApplicationNames } from './activity.js';

const latestActivity = (count = 10) => get('/activity', { order: 'newest', count });

export function Overview({ admin }) {
  const stats = useLoad(() => get('/stats'));
  const activity = useLoad(() => latestActivity());
  const chain = useLoad(() => get('/activity/verify'));
  const appNames = useApplicationNames(admin);
  const s = stats.data;
  const cards = s
    ? [
        ['Data subjects', s.subjects, '#/subjects'],
        ['Data points', s.dataPoints, '#/subjects'],
        ['Definitions', s.definitions, '#/registry'],
        ['Rules', s.rules, '#/rules'],
        ['Applications', s.applications, '#/applications'],
      ]
    : [];
  return html`<section>
    <${PageTitle}>Overview</${PageTitle}>
    ${stats.loading && !s ? html`<${Loading} />` : null}
    <${ErrorBox} error=${stats.error} />
    ${s
      ? html`<ul class="cards" aria-label="Counts">
          ${cards.map(
            ([label, n, href]) => html`<li class="card stat">
              <a href=${href}><span class="n">${n === null ? '—' : n.toLocaleString('en')}</span><span class="label">${label}</span></a>
              ${n === null ? html`<small class="muted">admin only</small>` : null}
            </li>`,
          )}
        </ul>
        <div class="grid2">
          <section class="card" aria-labelledby="alerts-24h">
            <h2 id="alerts-24h">Alerts, last 24 hours</h2>
            ${s.alertsLast24Hours
              ? html`<ul class="levels">
                  ${Object.entries(s.alertsLast24Hours).map(([level, n]) => html`<li><${Level} level=${level} /> <a href=${`#/alerts/${seg(level)}`} aria-label=${`${n} ${level} alerts`}>${n}</a></li>`)}
                </ul>`
              : html`<p class="muted">Alerts are shown to administrators only.</p>`}
          </section>
          <section class="card" aria-labelledby="chain-state">
            <h2 id="chain-state">Activity chain</h2>
            ${chain.data
              ? html`<${ChainState} result=${chain.data} />`
              : chain.error?.status === 403
                ? html`<p class="muted">The activity chain is verified by administrators only.</p>`
                : chain.error
                  ? html`<${ErrorBox} error=${chain.error} />`
                  : html`<${Loading} what="Verifying" />`}
          </section>
        </div>`
      : null}
    <section class="card" aria-labelledby="latest">
      <h2 id="latest">Latest activity</h2>
      ${activity.data
        ? html`<${Table} caption="Latest activity entries" columns=${activityColumns(appNames).slice(0, 7)} rows=${activity.data} empty="No activity recorded yet." />
            <p><a href="#/activity">The whole activity log →</a></p>`
        : activity.error?.status === 403
          ? html`<p class="muted">The activity log is shown to administrators only.</p>`
          : activity.error
            ? html`<${ErrorBox} error=${activity.error} />`
          : html`<${Loading} />`}
    </section>
  </section>`;
}
