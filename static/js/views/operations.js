// #/operations — the list, filtered by status and kind, refreshed every few seconds.

import { api, isAbort } from '../api.js';
import { rules } from '../rules.js';
import { h, clear, badge, timeEl, toastError, replaceQuery, debounce, duration, parseTime, spinner, shortId } from '../ui.js';

const REFRESH_MS = 4000;
const KNOWN_KINDS = ['cluster.create', 'cluster.stage', 'cluster.delete', 'network.create', 'network.delete'];

export function mount(root, ctx) {
  const state = {
    status: ctx.query.get('status') || '',
    kind: ctx.query.get('kind') || '',
    target: ctx.query.get('target') || '',
    auto: ctx.query.get('auto') !== '0',
    kinds: new Set(KNOWN_KINDS),
    inflight: false,
    loadedAt: null,
    errorShown: false,
  };

  const statusSel = h('select', { testid: 'filter-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'All statuses'),
    Object.values(rules.status).map((s) => h('option', { value: s }, s)));
  statusSel.value = state.status;
  const kindList = h('datalist', { id: 'kinds-list' });
  const kindInput = h('input', {
    type: 'search', class: 'mono', testid: 'filter-kind', placeholder: 'kind', title: 'Operation kind, e.g. network.create',
    list: 'kinds-list', value: state.kind, 'aria-label': 'Kind', size: 22,
  });
  const targetInput = h('input', {
    type: 'search', class: 'mono', testid: 'filter-target', placeholder: 'target', title: 'Target path, e.g. network/lab',
    value: state.target, 'aria-label': 'Target', size: 20,
  });
  const autoBox = h('input', { type: 'checkbox', testid: 'ops-auto', checked: state.auto });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'ops-refresh', title: 'Refresh now' }, 'Refresh');
  const updated = h('span', { class: 'sub', testid: 'ops-updated' });
  const tbody = h('tbody', { testid: 'operations-body' },
    h('tr', null, h('td', { colspan: 7 }, h('div', { class: 'loading' }, spinner(), 'Loading operations…'))));

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Operations'),
      h('span', { class: 'sub' }, 'Every change the panel follows through to the end.'),
      h('span', { class: 'spacer' })),
    h('div', { class: 'card' },
      h('div', { class: 'card-head inline' },
        statusSel, kindInput, kindList, targetInput,
        h('span', { class: 'spacer' }),
        updated,
        h('label', { class: 'check', title: `Refresh every ${REFRESH_MS / 1000}s` }, autoBox, 'Auto-refresh'),
        refreshBtn),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data', testid: 'operations-table' },
          h('thead', null, h('tr', null,
            h('th', null, 'Operation'), h('th', null, 'Kind'), h('th', null, 'Target'),
            h('th', null, 'Status'), h('th', null, 'Progress'), h('th', null, 'Actor'),
            h('th', null, 'Created'))),
          tbody))));

  const syncQuery = () => replaceQuery('/operations', {
    status: state.status, kind: state.kind, target: state.target, auto: state.auto ? '' : '0',
  });

  async function load() {
    if (state.inflight) return;
    state.inflight = true;
    const q = new URLSearchParams({ limit: '100' });
    if (state.status) q.set('status', state.status);
    if (state.kind) q.set('kind', state.kind);
    if (state.target) q.set('target', state.target);
    try {
      const data = await api(`/api/v1/operations?${q}`, { signal: ctx.signal });
      const items = (data && data.items) || [];
      renderRows(items);
      state.loadedAt = Date.now();
      state.errorShown = false;
      updated.textContent = `updated ${new Date().toLocaleTimeString(undefined, { hour12: false })}`;
    } catch (e) {
      if (isAbort(e)) return;
      updated.textContent = 'refresh failed';
      if (!state.errorShown) toastError(e); // one toast per failure streak, not one per tick
      state.errorShown = true;
    } finally {
      state.inflight = false;
    }
  }

  function renderRows(items) {
    for (const op of items) if (op.kind) state.kinds.add(op.kind);
    clear(kindList).append(...[...state.kinds].sort().map((k) => h('option', { value: k })));
    clear(tbody);
    if (!items.length) {
      const filtered = state.status || state.kind || state.target;
      tbody.appendChild(h('tr', null, h('td', { colspan: 7 },
        h('div', { class: 'empty', testid: 'operations-empty' },
          filtered ? 'No operation matches these filters.' : 'No operations yet. Create a cluster or a network to start one.'))));
      return;
    }
    for (const op of items) tbody.appendChild(row(op));
  }

  function row(op) {
    const href = `#/operations/${encodeURIComponent(op.id)}`;
    const tr = h('tr', {
      class: 'clickable', testid: `op-row-${op.id}`, dataset: { status: op.status, kind: op.kind },
      onclick: (e) => { if (!e.target.closest('a')) location.hash = href; },
    },
    h('td', { class: 'nowrap' }, h('a', { href, class: 'id', testid: 'op-link', title: op.id }, shortId(op.id))),
    h('td', null, h('span', { class: 'id' }, op.kind || '—')),
    h('td', null, h('span', { class: 'id trunc', title: op.target || '' }, op.target || '—')),
    h('td', null, badge(op.status, { testid: 'op-row-status' }),
      op.cancel_requested && !rules.finished.has(op.status) ? h('span', { class: 'faint' }, ' cancelling') : null),
    h('td', null, progress(op)),
    h('td', null, op.actor ? h('span', { class: 'id' }, op.actor) : h('span', { class: 'faint' }, '—')),
    h('td', { class: 'nowrap' }, timeEl(op.created_at), ' ', h('span', { class: 'faint' }, elapsed(op))));
    return tr;
  }

  const debouncedLoad = debounce(() => { syncQuery(); load(); }, 300);
  statusSel.addEventListener('change', () => { state.status = statusSel.value; syncQuery(); load(); });
  kindInput.addEventListener('input', () => { state.kind = kindInput.value.trim(); debouncedLoad(); });
  targetInput.addEventListener('input', () => { state.target = targetInput.value.trim(); debouncedLoad(); });
  autoBox.addEventListener('change', () => { state.auto = autoBox.checked; syncQuery(); });
  refreshBtn.addEventListener('click', () => load());

  load();
  const timer = setInterval(() => {
    if (state.auto && !document.hidden) load();
  }, REFRESH_MS);
  return () => { clearInterval(timer); debouncedLoad.cancel(); };
}

export function progress(op) {
  const steps = op.steps || [];
  const n = steps.length;
  if (!n) return h('span', { class: 'faint' }, '—');
  const P = rules.phase;
  const done = steps.filter((s) => s.phase === P.SUCCEEDED).length;
  const run = steps.filter((s) => rules.phaseInFlight.has(s.phase)).length;
  const bad = steps.filter((s) => s.phase === P.FAILED).length;
  const skip = steps.filter((s) => s.phase === P.SKIPPED).length;
  const pct = (k) => `${(100 * k) / n}%`;
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-label': `${done} of ${n} steps succeeded`, 'aria-valuemin': 0, 'aria-valuemax': n, 'aria-valuenow': done });
  const seg = (cls, k) => { if (k) { const s = h('span', { class: cls }); s.style.width = pct(k); bar.appendChild(s); } };
  seg('ok', done); seg('run', run); seg('bad', bad); seg('skip', skip);
  const cur = steps.find((s) => rules.phaseInFlight.has(s.phase) || s.phase === P.FAILED);
  return h('div', { class: 'progress-cell' }, bar,
    h('span', { class: 'faint nowrap', title: `${done} of ${n} steps succeeded${skip ? `, ${skip} skipped` : ''}` },
      `${done}/${n}`, cur ? ` · ${cur.name}` : ''));
}

function elapsed(op) {
  if (!rules.finished.has(op.status)) return '';
  const a = parseTime(op.created_at);
  const b = parseTime(op.updated_at);
  return a !== null && b !== null ? `(${duration(b - a)})` : '';
}
