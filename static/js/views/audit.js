// #/audit — the audit log (operators only): who changed what, who was refused. Read-only.

import { api, isAbort, session, canMutate } from '../api.js';
import { h, clear, badge, timeEl, toastError, replaceQuery, debounce, loading } from '../ui.js';

const OUTCOMES = ['accepted', 'done', 'refused', 'failed'];
const PAGE = 100;

export function mount(root, ctx) {
  if (!canMutate()) {
    root.appendChild(h('div', { class: 'card' }, h('div', { class: 'empty', testid: 'audit-forbidden' },
      'The audit log is for operators: it says who did what. You are signed in as ',
      h('b', null, session.user ? `${session.user.name} (${session.user.role})` : 'nobody'), '.')));
    return null;
  }
  const state = {
    target: ctx.query.get('target') || '',
    token: ctx.query.get('token') || '',
    outcome: ctx.query.get('outcome') || '',
    next: null,
    inflight: false,
  };

  const targetInput = h('input', {
    type: 'search', class: 'mono', testid: 'audit-filter-target', placeholder: 'target',
    title: 'Target path, e.g. cluster/lab (includes what is below it)', value: state.target,
    'aria-label': 'Target', size: 22,
  });
  const tokenInput = h('input', {
    type: 'search', class: 'mono', testid: 'audit-filter-token', placeholder: 'token name',
    title: 'Token name, e.g. operator', value: state.token, 'aria-label': 'Token name', size: 16,
  });
  const outcomeSel = h('select', { testid: 'audit-filter-outcome', 'aria-label': 'Outcome' },
    h('option', { value: '' }, 'All outcomes'), OUTCOMES.map((o) => h('option', { value: o }, o)));
  outcomeSel.value = state.outcome;
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'audit-refresh' }, 'Refresh');
  const moreBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'audit-more', hidden: true }, 'Older entries');
  const tbody = h('tbody', { testid: 'audit-body' }, h('tr', null, h('td', { colspan: 7 }, loading('Loading the audit log…'))));

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Audit log'),
      h('span', { class: 'sub' }, 'Every change and every refusal, newest first. Tokens are named, never shown.')),
    h('div', { class: 'card' },
      h('div', { class: 'card-head inline' }, targetInput, tokenInput, outcomeSel, h('span', { class: 'spacer' }), refreshBtn),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data', testid: 'audit-table' },
          h('thead', null, h('tr', null,
            h('th', null, 'When'), h('th', null, 'Token'), h('th', null, 'Route'), h('th', null, 'Target'),
            h('th', null, 'Operation'), h('th', null, 'Outcome'), h('th', null, 'Status'))),
          tbody)),
      h('div', { class: 'card-foot' }, moreBtn)));

  async function load(older = false) {
    if (state.inflight) return;
    state.inflight = true;
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (state.target) q.set('target', state.target);
    if (state.token) q.set('token', state.token);
    if (state.outcome) q.set('outcome', state.outcome);
    if (older && state.next) q.set('before', state.next);
    try {
      const data = await api(`/api/v1/audit?${q}`, { signal: ctx.signal });
      if (!older) clear(tbody);
      for (const entry of data.items) tbody.appendChild(row(entry));
      if (!tbody.children.length) {
        tbody.appendChild(h('tr', null, h('td', { colspan: 7 },
          h('div', { class: 'empty', testid: 'audit-empty' }, 'No entry matches these filters.'))));
      }
      state.next = data.next_before;
      moreBtn.hidden = !state.next;
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    } finally {
      state.inflight = false;
    }
  }

  function row(entry) {
    const op = entry.operation_id
      ? h('a', { href: `#/operations/${encodeURIComponent(entry.operation_id)}`, class: 'id', testid: 'audit-op-link' }, entry.operation_id)
      : h('span', { class: 'faint' }, '—');
    return h('tr', { testid: `audit-row-${entry.id}`, dataset: { outcome: entry.outcome, token: entry.token || '' } },
      h('td', { class: 'nowrap' }, timeEl(entry.at)),
      h('td', null, entry.token ? h('span', { class: 'id' }, entry.token) : h('span', { class: 'faint' }, 'no valid token'),
        // the role beside the name, unless the name says it ("operator operator")
        entry.role && entry.role !== entry.token ? h('span', { class: 'faint' }, ` · ${entry.role}`) : null),
      h('td', { class: 'wrap' }, h('span', { class: 'id', title: entry.path }, entry.route)), // a long route wraps: the table fits
      h('td', null, h('span', { class: 'id trunc', title: entry.target || '' }, entry.target || '—')),
      h('td', { class: 'nowrap' }, op),
      h('td', null, badge(entry.outcome, { testid: 'audit-outcome' })),
      h('td', null, h('span', { class: 'id' }, String(entry.status)), entry.code ? h('span', { class: 'faint' }, ` ${entry.code}`) : null));
  }

  const sync = () => replaceQuery('/audit', { target: state.target, token: state.token, outcome: state.outcome });
  const debounced = debounce(() => { sync(); load(); }, 300);
  targetInput.addEventListener('input', () => { state.target = targetInput.value.trim(); debounced(); });
  tokenInput.addEventListener('input', () => { state.token = tokenInput.value.trim(); debounced(); });
  outcomeSel.addEventListener('change', () => { state.outcome = outcomeSel.value; sync(); load(); });
  refreshBtn.addEventListener('click', () => load());
  moreBtn.addEventListener('click', () => load(true));

  load();
  return () => debounced.cancel();
}
