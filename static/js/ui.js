// DOM helpers, badges, toasts, time formatting. No framework: small functions that build nodes.

import { session, canMutate, canChangeWorkOf } from './api.js';
import { rules } from './rules.js';

/**
 * h('div', {class: 'x', testid: 'y', onclick: fn, dataset: {phase: 'p'}}, child, [children], 'text')
 * `testid` becomes data-testid. Boolean false / null attributes are skipped. `value`,
 * `checked`, `disabled`, `selected` are set as properties after the children exist.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  const late = {};
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k === 'dataset') {
      for (const [dk, dv] of Object.entries(v)) if (dv !== null && dv !== undefined) el.dataset[dk] = dv;
    } else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'selected') late[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  for (const [k, v] of Object.entries(late)) el[k] = v;
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

/** A titled group of form fields (<fieldset> with a <legend>). */
export function section(title, ...children) {
  return h('fieldset', { class: 'form-section' }, h('legend', null, title), children);
}

/** Replace an element's children; like h(), skips null/false and flattens arrays. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// ---------- badges ----------

const TONES = {
  // operation status
  queued: 'gray', running: 'blue', succeeded: 'green', failed: 'red', cancelled: 'amber',
  // step phase
  pending: 'gray', applying: 'blue', applied: 'teal', skipped: 'gray',
  // AWS-ish states
  available: 'green', active: 'green', inservice: 'green', ready: 'green', healthy: 'green',
  creating: 'blue', updating: 'blue', deleting: 'amber', deleted: 'gray', 'in-use': 'green',
  error: 'red', impaired: 'red', unavailable: 'red', 'information': 'blue',
  // accelerators
  gpu: 'violet', trainium: 'teal', inferentia: 'amber',
  // clusters: stages, preflight checks, HyperPod states, features
  not_run: 'gray', incomplete: 'amber', pass: 'green', fail: 'red', warn: 'amber', warning: 'amber',
  systemupdating: 'blue', rollingback: 'amber', pending_deletion: 'amber', enabled: 'green', disabled: 'gray',
  // audit outcomes
  accepted: 'blue', done: 'green', refused: 'amber',
};
// a resource's own states that mean work in progress (an operation's and a step's are the API's)
const LIVE_STATES = new Set(['creating', 'deleting', 'updating']);
const isLive = (v) => v === rules.status.RUNNING || rules.phaseInFlight.has(v) || LIVE_STATES.has(v);

export function tone(value) {
  return TONES[String(value || '').toLowerCase()] || 'gray';
}

export function badge(value, attrs = {}) {
  const v = value == null || value === '' ? 'unknown' : String(value);
  const cls = ['badge', `tone-${tone(v)}`];
  if (isLive(v.toLowerCase())) cls.push('live');
  if (v === rules.phase.SKIPPED) cls.push('skipped');
  if (attrs.class) cls.push(attrs.class);
  return h('span', { ...attrs, class: cls.join(' '), dataset: { value: v, ...(attrs.dataset || {}) } }, v);
}

/**
 * Why a workload waits: the scheduler's own words for the pods it cannot place yet (the
 * `waiting` of a job's or an endpoint's read: it fits the cluster, the capacity is taken or
 * not there yet). Nothing when none waits.
 */
export function waitingNote(waiting, what, testid) {
  if (!waiting || !waiting.length) return null;
  const who = waiting.length === 1 ? `${what} ${waiting[0].pod} waits` : `${waiting.length} ${what}s wait`;
  return h('div', { class: 'waiting', testid, title: waiting.map((w) => `${w.pod}: ${w.reason}: ${w.message}`).join('\n') },
    `${who} for capacity: ${waiting[0].message}`);
}

export function spinner() {
  return h('span', { class: 'spin', 'aria-hidden': 'true' });
}

export function loading(text = 'Loading…') {
  return h('div', { class: 'loading' }, spinner(), text);
}

/** The live progress panel of an operation. */
/** A long id (an operation's) in a table cell: its start and end; the whole in a title. */
export function shortId(id) {
  const s = String(id || '');
  return s.length > 16 ? `${s.slice(0, 8)}…${s.slice(-6)}` : s;
}

export function opHref(id) {
  return `#/operations/${encodeURIComponent(id)}`;
}

// ---------- role guard ----------

/** A team member's operator token: it changes only its team's work (jobs, spaces). */
function member(user) {
  return !!user && user.role === rules.role.OPERATOR && !!user.team;
}

/** Disable a mutating control the signed-in token may not use, with a hint saying why.
 *  `teamWork`: the control changes a team's job, which a team member may do — and with
 *  `team` given (the job's team, null: none), only when it is the member's own. */
export function guard(el, { teamWork = false, team } = {}) {
  const user = session.user;
  const mine = team === undefined ? canMutate(teamWork) : canChangeWorkOf(team);
  if (mine) return el;
  el.disabled = true;
  el.dataset.locked = 'role';
  el.setAttribute('aria-disabled', 'true');
  if (member(user) && teamWork) {
    el.title = `${user.name} is a member of team ${user.team} and changes only its team's work (jobs, spaces); this is ${team ? `team ${team}'s` : 'not a team\'s'}.`;
  } else {
    el.title = member(user)
      ? `Requires an operator outside any team; ${user.name} is a member of team ${user.team} and changes only its team's work (jobs, spaces).`
      : `Requires the operator role; you are signed in as ${user ? user.role : 'nobody'} (read-only).`;
  }
  return el;
}

export function roleHint(what, testid, { teamWork = false } = {}) {
  const user = session.user;
  if (canMutate(teamWork)) return null;
  if (member(user)) {
    return h('div', { class: 'role-hint', testid },
      `Read-only: ${what} is for an operator outside any team; `, h('b', null, user.name),
      ` is a member of team ${user.team} and changes only its team's work (jobs, spaces).`);
  }
  return h('div', { class: 'role-hint', testid },
    `Read-only: ${what} needs an operator token; you are signed in as `,
    h('b', null, user ? `${user.name} (${user.role})` : 'nobody'), '.');
}

// ---------- toasts ----------

export function toast(message, { kind = 'error', code = null, link = null, timeout = 7000 } = {}) {
  const host = document.getElementById('toasts');
  if (!host) return;
  const close = () => el.remove();
  const el = h('div', { class: `toast ${kind}`, testid: 'toast', role: kind === 'error' ? 'alert' : 'status', dataset: { code } },
    h('div', { class: 'body' },
      h('div', { class: 'msg', testid: 'toast-message' }, message),
      code ? h('div', { class: 'code' }, code) : null,
      link ? h('div', { class: 'code' }, h('a', { href: link.href, onclick: close }, link.text)) : null),
    h('button', { class: 'x', type: 'button', 'aria-label': 'Dismiss', onclick: close }, '×'));
  host.appendChild(el);
  while (host.children.length > 4) host.firstElementChild.remove();
  if (timeout) setTimeout(close, timeout);
}

/** Show an ApiError (or any error) from the envelope as a toast. */
export function toastError(err, prefix = '') {
  if (!err) return;
  const details = err.details || {};
  const opId = details.operation_id || details.running_operation_id || details.operation;
  const link = typeof opId === 'string' ? { href: `#/operations/${encodeURIComponent(opId)}`, text: `Open ${opId}` } : null;
  toast(`${prefix}${err.message || String(err)}`, { code: err.code || null, link });
}

// ---------- time ----------

export function parseTime(t) {
  if (!t) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

export function relTime(t, now = Date.now()) {
  const ms = parseTime(t);
  if (ms === null) return '—';
  const s = Math.round((now - ms) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(ms).toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

export function absTime(t) {
  const ms = parseTime(t);
  return ms === null ? '' : new Date(ms).toLocaleString(undefined, { hour12: false });
}

export function clockTime(t) {
  const ms = parseTime(t);
  if (ms === null) return '';
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(s < 10 ? 1 : 0)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/** A <time> that shows relative time and keeps the absolute one in its title. */
export function timeEl(t, testid) {
  return h('time', { datetime: t || '', title: absTime(t), testid, class: 'nowrap' }, relTime(t));
}

/** Copy-on-click monospace id. */
export function idEl(text, attrs = {}) {
  if (!text) return h('span', { class: 'faint' }, '—');
  return h('span', {
    ...attrs,
    class: `id ${attrs.class || ''}`.trim(),
    title: attrs.title || 'Click to copy',
    onclick: (e) => {
      e.stopPropagation();
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(() => toast(`Copied ${text}`, { kind: 'ok', timeout: 1600 }), () => {});
      }
    },
  }, text);
}

export const REGIONS = [
  'us-east-1', 'us-east-2', 'us-west-1', 'us-west-2', 'ca-central-1', 'sa-east-1',
  'eu-west-1', 'eu-west-2', 'eu-west-3', 'eu-central-1', 'eu-north-1', 'eu-south-2',
  'ap-northeast-1', 'ap-northeast-2', 'ap-south-1', 'ap-southeast-1', 'ap-southeast-2',
  'ap-southeast-3', 'ap-southeast-4', 'ap-southeast-5',
];

/** A region <select>: first option is the server's default region. */
export function regionSelect(attrs, value = '') {
  const opts = [h('option', { value: '' }, 'Default region')];
  for (const r of REGIONS) opts.push(h('option', { value: r }, r));
  const sel = h('select', attrs, opts);
  setSelectValue(sel, value);
  return sel;
}

export function setSelectValue(sel, value) {
  if (value && ![...sel.options].some((o) => o.value === value)) sel.appendChild(h('option', { value }, value));
  sel.value = value || '';
}

/** Replace the hash's query without a hashchange (keeps filters bookmarkable). */
export function replaceQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== null && v !== undefined && v !== false) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, '', `#${path}${s ? `?${s}` : ''}`);
}

/** Call `fn` whenever the page becomes visible again (a view's refresh after the tab was in
 * the background); answers the function that stops it. */
export function whenVisible(fn) {
  const onChange = debounce(() => { if (!document.hidden) fn(); }, 200);
  document.addEventListener('visibilitychange', onChange);
  return () => {
    onChange.cancel();
    document.removeEventListener('visibilitychange', onChange);
  };
}

export function debounce(fn, ms) {
  let t = null;
  const d = (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
  d.cancel = () => clearTimeout(t);
  return d;
}
