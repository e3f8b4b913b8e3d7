// Entry point: session, sign-in, header, hash router.

import {
  api, session, saveSession, clearSession, onUnauthorized, onSignedOutElsewhere, tokenFromOtherTabs,
  isAbort, canMutate,
} from './api.js';
import { h, clear, toastError } from './ui.js';
import { loadRules } from './rules.js';
import * as operations from './views/operations.js';
import * as operation from './views/operation.js';
import * as networks from './views/networks.js';
import * as discovery from './views/discovery.js';
import * as clusters from './views/clusters.js';
import * as clusterNew from './views/cluster_new.js';
import * as clusterImport from './views/cluster_import.js';
import * as cluster from './views/cluster.js';
import * as capacity from './views/capacity.js';
import * as groupNew from './views/group_new.js';
import * as audit from './views/audit.js';
import * as jobs from './views/jobs.js';
import * as endpoints from './views/endpoints.js';
import * as models from './views/models.js';
import * as spaces from './views/spaces.js';
import * as teams from './views/teams.js';
import * as storage from './views/storage.js';

// A page of one cluster's own resources, `#/clusters/<c>/<path>`: the cluster page links
// every one whose view exports `clusterLink` ({text, testid}), so a new resource's page is
// one line here and no edit there.
const clusterPage = (path, view) => ({
  re: new RegExp(`^/clusters/([^/]+)/${path}/?$`), view, nav: 'clusters', clusterPage: path,
});

const ROUTES = [
  { re: /^\/clusters\/?$/, view: clusters, nav: 'clusters' },
  // `#/clusters/new` and `#/clusters/import` are forms; clusters of those names are at
  // `#/clusters/new/` and `#/clusters/import/` (stages.js clusterHref)
  { re: /^\/clusters\/new$/, view: clusterNew, nav: 'clusters' },
  { re: /^\/clusters\/import$/, view: clusterImport, nav: 'clusters' },
  { re: /^\/clusters\/([^/]+)\/?$/, view: cluster, nav: 'clusters' },
  clusterPage('capacity', capacity),
  clusterPage('capacity/add-group', groupNew),
  clusterPage('jobs', jobs),
  clusterPage('endpoints', endpoints),
  clusterPage('models', models),
  clusterPage('spaces', spaces),
  clusterPage('teams', teams),
  clusterPage('storage', storage),
  { re: /^\/operations\/?$/, view: operations, nav: 'operations' },
  { re: /^\/operations\/([^/]+)\/?$/, view: operation, nav: 'operations' },
  { re: /^\/networks\/?$/, view: networks, nav: 'networks' },
  { re: /^\/discovery\/?$/, view: discovery, nav: 'discovery' },
  { re: /^\/audit\/?$/, view: audit, nav: 'audit' },
];
/** The cluster page's links to its resources' pages, in ROUTES' order. */
const CLUSTER_PAGES = ROUTES.filter((r) => r.clusterPage && r.view.clusterLink)
  .map((r) => ({ path: r.clusterPage, ...r.view.clusterLink }));
const DEFAULT_ROUTE = '#/clusters'; // where a signed-in person starts: what they run

const $ = (id) => document.getElementById(id);
const viewEl = () => $('view');

let current = null; // {controller, cleanup}

function teardown() {
  if (!current) return;
  const { controller, cleanup } = current;
  current = null;
  controller.abort();
  try { if (typeof cleanup === 'function') cleanup(); } catch (e) { console.warn(e); }
}

export function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '';
  const i = raw.indexOf('?');
  const path = i >= 0 ? raw.slice(0, i) : raw;
  const query = new URLSearchParams(i >= 0 ? raw.slice(i + 1) : '');
  return { path, query };
}

function render() {
  if (!session.user) {
    showSignIn();
    return;
  }
  const { path, query } = parseHash();
  if (!path || path === '/') {
    location.replace(DEFAULT_ROUTE);
    return;
  }
  teardown();
  const root = clear(viewEl());
  let match = null;
  let route = null;
  for (const r of ROUTES) {
    match = path.match(r.re);
    if (match) { route = r; break; }
  }
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', !!route && a.dataset.route === route.nav);
  }
  if (!route) {
    root.appendChild(h('div', { class: 'card', testid: 'not-found' },
      h('div', { class: 'empty' }, 'No page at ', h('code', null, `#${path}`), '. ',
        h('a', { href: DEFAULT_ROUTE }, 'Go to clusters'))));
    return;
  }
  const controller = new AbortController();
  const params = match.slice(1).map((s) => decodeURIComponent(s));
  const ctx = { params, query, signal: controller.signal, path, clusterPages: CLUSTER_PAGES };
  let cleanup = null;
  try {
    cleanup = route.view.mount(root, ctx);
  } catch (e) {
    console.error(e);
    toastError(e);
  }
  current = { controller, cleanup };
}

// ---------- header ----------

function showUser(user) {
  $('nav').hidden = !user;
  $('userbox').hidden = !user;
  if (!user) return;
  $('whoami-name').textContent = user.name;
  const role = $('whoami-role');
  role.textContent = user.role;
  role.className = `role role-${user.role}`;
  $('whoami').title = `Signed in as ${user.name} (${user.role}`
    + `${user.team ? `, team ${user.team}` : ''})`;
  $('whoami-team').textContent = user.team ? `team ${user.team}` : '';
  $('whoami-team').hidden = !user.team;
  const chip = $('readonly-hint');
  chip.hidden = canMutate();
  const member = canMutate(true) && !canMutate();
  chip.textContent = member ? 'team work only' : 'read-only';
  chip.title = member ? `A member of team ${user.team}: this token changes only its team's jobs and spaces`
    : 'Viewer tokens can read everything but change nothing';
  const sandbox = $('sandbox-badge');
  sandbox.hidden = user.aws !== 'sandbox';
  sandbox.title = `The local sandbox (${user.region}): AWS and the clusters are simulated on `
    + 'this machine. Nothing is made in an AWS account and nothing is billed.';
  $('aws-place').textContent = user.aws === 'sandbox' ? '' : user.region;
  $('aws-place').hidden = user.aws === 'sandbox';
  $('aws-place').title = `A real AWS account, region ${user.region}: what hypd makes is billed.`;
  $('nav-audit').hidden = !canMutate(true); // the audit log is an operator's read (a member's too)
  document.body.dataset.role = user.role;
}

// ---------- sign-in ----------

function showSignIn(message = '') {
  teardown();
  showUser(null);
  delete document.body.dataset.role;
  const root = clear(viewEl());
  const input = h('input', {
    type: 'password', id: 'token-input', testid: 'token-input', class: 'mono',
    autocomplete: 'off', spellcheck: 'false', placeholder: 'API token', required: true,
    'aria-describedby': 'sign-in-error',
  });
  const err = h('div', { class: 'form-error', id: 'sign-in-error', testid: 'sign-in-error', role: 'alert' }, message);
  const btn = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'sign-in' }, 'Sign in');
  const form = h('form', { class: 'card signin', testid: 'sign-in-form', novalidate: true },
    h('div', { class: 'card-body' },
      h('h1', null, 'Sign in to hypd'),
      h('p', null, 'Paste an API token. ', h('code', null, 'hypd up'),
        ' prints the generated operator token once at start and keeps it in its data directory.'),
      err,
      h('div', { class: 'field' }, h('label', { for: 'token-input' }, 'Token'), input),
      btn));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    if (!token) {
      err.textContent = 'Enter a token.';
      input.focus();
      return;
    }
    btn.disabled = true;
    err.textContent = '';
    try {
      const me = await api('/api/v1/auth/whoami', { token });
      saveSession(token, { name: me.name, role: me.role, aws: me.aws, region: me.region, team: me.team });
      showUser(session.user);
      render();
    } catch (ex) {
      err.textContent = ex.status === 401
        ? 'That token was not accepted (401). Check it and try again.'
        : ex.message;
      btn.disabled = false;
      input.select();
    }
  });
  root.appendChild(h('div', { class: 'signin-wrap' }, form));
  input.focus();
}

function signOut(message = '') {
  clearSession();
  showSignIn(message);
}

// ---------- boot ----------

onSignedOutElsewhere(() => showSignIn('You signed out in another tab.'));

onUnauthorized(() => {
  if (!session.token && !session.user) return;
  signOut('Your session ended: the server answered 401 (token missing, revoked or expired). Sign in again.');
});

$('sign-out').addEventListener('click', () => signOut());
window.addEventListener('hashchange', render);

async function boot() {
  clear(viewEl()).appendChild(h('div', { class: 'loading' }, h('span', { class: 'spin' }), 'Loading…'));
  try {
    await loadRules(); // every form's rules are the API's: read them before any view mounts
  } catch (e) {
    clear(viewEl()).appendChild(h('div', { class: 'card', testid: 'boot-error' },
      h('div', { class: 'empty' }, `Cannot read the API's rules: ${e.message}. Reload to try again.`)));
    return;
  }
  if (!session.token) {
    const shared = await tokenFromOtherTabs(); // a new tab of a signed-in browser
    if (shared) {
      saveSession(shared, null);
    } else {
      showSignIn();
      return;
    }
  }
  clear(viewEl()).appendChild(h('div', { class: 'loading' }, h('span', { class: 'spin' }), 'Checking token…'));
  try {
    const me = await api('/api/v1/auth/whoami');
    session.user = { name: me.name, role: me.role, aws: me.aws, region: me.region, team: me.team };
    showUser(session.user);
    render();
  } catch (e) {
    if (isAbort(e)) return;
    if (e.status === 401) return; // the unauthorized handler already showed sign-in
    showSignIn(e.message);
  }
}

boot();
