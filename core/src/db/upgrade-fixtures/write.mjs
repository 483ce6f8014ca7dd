// What a release wrote for the upgrade fixtures: run by make.sh against that release's vault.
// usage: node write.mjs URL ADMINKEY DATADIR STATEFILE
import { readFileSync, writeFileSync } from 'node:fs';
const [V, ADMIN, DIR, STATE] = process.argv.slice(2);
const pub = readFileSync(`${DIR}/vault-public-key.pem`).toString('base64');
const priv = readFileSync(`${DIR}/vault-private-key.pem`).toString('base64');
const BILL = 'billing-key-0123456789abcdef';
async function api(method, path, body, headers = {}, key = ADMIN) {
  const r = await fetch(V + path, { method, headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text(); let json; try { json = JSON.parse(text); } catch { json = text; }
  return { status: r.status, json };
}
function check(cond, msg, extra) { if (!cond) { console.log('FAIL:', msg, extra !== undefined ? JSON.stringify(extra).slice(0, 1500) : ''); process.exitCode = 1; } else console.log('ok:', msg); }
async function allActivity() { const out = []; for (let p = 0; ; p++) { const r = await api('GET', `/activity?page=${p}&count=1000`); if (r.status !== 200) { check(false, 'activity list', r); return out; } out.push(...r.json.data); if (r.json.data.length < 1000) return out; } }

const s = {};
for (const d of [{ key: 'EMAIL', indexed: true, tags: ['pii'], regulations: ['GDPR'] }, { key: 'NAME', schema: { first: 'string', last: 'string' }, indexed: true }, { key: 'AGE', schema: 'int' }, { key: 'NOTE', repeatable: true }])
  check([200, 201].includes((await api('POST', '/attributes', d)).status), 'definition ' + d.key);
const app = await api('POST', '/applications', { name: 'billing', attributes: ['EMAIL'], admin: false, apiKey: BILL });
check(app.status === 201, 'app', app);
s.appId = app.json.data?.id;
const rule = await api('POST', '/rules', { key: 'email-tag', type: 'data', constraint: { type: 'attribute', operator: 'any', attributes: ['EMAIL'] }, action: { type: 'tag', tag: 'mailed' } });
check(rule.status === 201, 'rule', rule);
for (const u of ['u1', 'u2', 'u3']) {
  const r = await api('POST', `/datasubjects/${u}/attributes`, { data: [{ attribute: 'EMAIL', value: `${u}@example.org` }, { attribute: 'NAME', value: { first: 'Ada', last: u } }, { attribute: 'AGE', value: 30 }, { attribute: 'NOTE', value: 'n1' }, { attribute: 'NOTE', value: 'n2' }], origin: 'GB' }, { 'x-encryption-key': pub });
  check([200, 201].includes(r.status), 'store ' + u, r);
}
const read = await api('GET', '/datasubjects/u1/attributes', undefined, { 'x-decryption-key': priv });
check(read.status === 200, 'subject read', read);
s.u1 = read.json.data;
const emailId = s.u1.find((p) => p.attribute === 'EMAIL').dataPointId;
check((await api('GET', `/data/${emailId}`, undefined, { 'x-decryption-key': priv })).status === 200, 'read by id');
check((await api('GET', '/datasubjects/u2/attributes/EMAIL', undefined, { 'x-decryption-key': priv }, BILL)).status === 200, 'billing read');
const srch = await api('POST', '/search', { query: { values: [{ attribute: 'EMAIL', value: 'u2@example.org' }] } });
check(srch.status === 200, 'search', srch);
const a1 = await api('POST', '/auditlogs', { eventType: 'STORE', subjectId: 'cust-1', applicationId: 'crm', eventId: 'crm-1', dataPointId: 'crm/cust-1/email', data: { attribute: 'EMAIL', value: 'x@y.org' } });
check(a1.status === 200 || a1.status === 201, 'audit', a1);
s.audit1 = a1.json;
const bulk = await api('POST', '/auditlogs/bulk', [{ eventType: 'READ', dataPointId: 'crm/cust-1/email', applicationId: 'crm', applicationUser: 'alice', eventId: 'crm-2' }, { eventType: 'DELETE', dataPointId: 'crm/cust-1/email', applicationId: 'crm', eventId: 'crm-3' }]);
check(bulk.status === 200 || bulk.status === 201, 'bulk', bulk);
const u3 = await api('GET', '/datasubjects/u3/attributes/NOTE', undefined, { 'x-decryption-key': priv });
check((await api('DELETE', `/data/${u3.json.data[0].dataPointId}`)).status === 200, 'delete point');
check((await api('DELETE', `/datasubjects/u3/data`)).status === 200, 'purge u3');
const v = await api('GET', '/activity/verify');
check(v.json.data?.valid === true, 'old verify', v);
s.verify = v.json.data;
s.activity = await allActivity();
console.log('old records', s.activity.length);
writeFileSync(STATE, `${JSON.stringify(s, null, 1)}\n`);
