// The nodes card of a cluster's capacity page: health at a glance (counts by health label and
// by HyperPod status; a click filters), filters (instance group, health, status) kept in the
// page's query, pages by cursor (next_cursor), a selection that survives paging, and bulk
// reboot / replace / delete. A node's id opens it in full.

import { api, isAbort, canMutate } from '../api.js';
import { h, clear, fill, guard, replaceQuery, relTime, toastError, spinner, setSelectValue } from '../ui.js';
import { rules } from '../rules.js';
import { statusBadge, healthBadge, readyEl, statusTone, healthTone } from './node_view.js';
import { openNodeAction } from './node_actions.js';
import { openNodeDetail } from './node_detail.js';

const FILTERS = [['group', 'instance_group'], ['health', 'health'], ['status', 'status']];
const PAGE_SIZES = [20, 50, 100, 200]; // offered, up to the API's largest page

/** nodesCard({cluster, signal, query, path}) → {el, load(), setGroups(names), setSummary(nodes),
 * setRefused(reason)} */
export function nodesCard({ cluster, signal, query, path }) {
  const state = {
    filters: Object.fromEntries(FILTERS.map(([key]) => [key, query.get(key) || ''])),
    cursors: [null], // cursor of each page seen so far; the last is the current page's
    page: null, selected: new Set(), seq: 0, summary: null, refused: '',
    limit: Math.min(Number(query.get('limit')) || rules.nodes.pageDefault, rules.nodes.pageMax),
  };

  const glance = h('div', { class: 'glance', testid: 'nodes-glance' });
  const groupSel = h('select', { testid: 'nodes-filter-group', 'aria-label': 'Instance group' }, h('option', { value: '' }, 'All groups'));
  const healthSel = select('nodes-filter-health', 'Health', 'Any health', rules.nodes.health);
  const statusSel = select('nodes-filter-status', 'Status', 'Any status', rules.nodes.statuses);
  const sels = { group: groupSel, health: healthSel, status: statusSel };
  const total = h('span', { class: 'sub', testid: 'nodes-total' });
  const asOf = h('span', { class: 'sub', testid: 'nodes-as-of' });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'nodes-refresh', onclick: () => load() }, 'Refresh');
  const warn = h('div', { testid: 'nodes-warning' });
  const pageBox = h('input', { type: 'checkbox', testid: 'nodes-select-page', 'aria-label': 'Select every node on this page' });
  const tbody = h('tbody', { testid: 'nodes-body' });
  const prevBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'nodes-prev', onclick: () => go(-1) }, '← Previous');
  const nextBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'nodes-next', onclick: () => go(1) }, 'Next →');
  const pageInfo = h('span', { class: 'sub', testid: 'nodes-page' });
  const sizes = [...new Set([...PAGE_SIZES.filter((n) => n <= rules.nodes.pageMax), state.limit])].sort((a, b) => a - b);
  const sizeSel = h('select', { testid: 'nodes-page-size', 'aria-label': 'Nodes per page' },
    sizes.map((n) => h('option', { value: String(n) }, `${n} per page`)));
  sizeSel.value = String(state.limit);
  const selCount = h('span', { class: 'sel-count', testid: 'nodes-selected', dataset: { count: '0' } });
  const selectAll = h('button', { type: 'button', class: 'btn btn-sm btn-ghost', testid: 'nodes-select-all', hidden: true, onclick: () => selectAllMatching() }, 'Select all matching');
  const clearSel = h('button', { type: 'button', class: 'btn btn-sm btn-ghost', testid: 'nodes-clear', onclick: () => { state.selected.clear(); renderRows(); } }, 'Clear');
  const actionBtns = ['reboot', 'replace', 'delete'].map((a) => guard(h('button', {
    type: 'button', class: a === 'reboot' ? 'btn btn-sm' : 'btn btn-sm btn-danger', testid: `nodes-${a}`, dataset: { action: a },
    onclick: () => openNodeAction({ cluster, action: a, ids: [...state.selected], signal }),
  }, a === 'reboot' ? 'Reboot…' : a === 'replace' ? 'Replace…' : 'Delete…')));

  const el = h('div', { class: 'card', testid: 'nodes-card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Nodes'), total, h('span', { class: 'spacer' }), asOf, refreshBtn),
    h('div', { class: 'card-body' }, glance),
    h('div', { class: 'toolbar' },
      h('div', { class: 'inline' }, h('label', null, 'Group'), groupSel, h('label', null, 'Health'), healthSel, h('label', null, 'Status'), statusSel),
      h('span', { class: 'spacer' })),
    h('div', { class: 'toolbar bulk', testid: 'nodes-bulk' },
      selCount, selectAll, clearSel, h('span', { class: 'spacer' }),
      h('span', { class: 'faint escalation-hint' }, 'investigate (open a node) → reboot → replace'), ...actionBtns),
    warn,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'data nodes-table', testid: 'nodes-table' },
        h('thead', null, h('tr', null,
          h('th', { class: 'sel' }, pageBox), h('th', null, 'Node'), h('th', null, 'Group'), h('th', null, 'Type'),
          h('th', null, 'Status'), h('th', null, 'Health'), h('th', null, 'Kubernetes'), h('th', null, 'Launched'))),
        tbody)),
    h('div', { class: 'card-foot pager' }, pageInfo, h('span', { class: 'spacer' }), sizeSel, prevBtn, nextBtn));

  for (const [key] of FILTERS) {
    setSelectValue(sels[key], state.filters[key]);
    sels[key].addEventListener('change', () => setFilter(key, sels[key].value));
  }
  sizeSel.addEventListener('change', () => {
    state.limit = Number(sizeSel.value);
    state.cursors = [null];
    keepQuery();
    load();
  });
  pageBox.addEventListener('change', () => {
    for (const n of (state.page && state.page.items) || []) {
      if (pageBox.checked) state.selected.add(n.id); else state.selected.delete(n.id);
    }
    renderRows();
  });

  function setFilter(key, value) {
    state.filters[key] = value;
    setSelectValue(sels[key], value);
    state.cursors = [null];
    keepQuery();
    setSummary(state.summary);
    load();
  }

  /** The filters and page size stay in the page's query (bookmarkable). */
  function keepQuery() {
    replaceQuery(path, { ...state.filters, limit: state.limit === rules.nodes.pageDefault ? '' : state.limit });
  }

  function params(cursor, limit) {
    const q = new URLSearchParams();
    for (const [key, param] of FILTERS) if (state.filters[key]) q.set(param, state.filters[key]);
    if (cursor) q.set('cursor', cursor);
    if (limit) q.set('limit', String(limit));
    return q;
  }

  async function load() {
    const seq = ++state.seq;
    const cursor = state.cursors[state.cursors.length - 1];
    try {
      const page = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/nodes?${params(cursor, state.limit)}`, { signal });
      if (seq !== state.seq) return;
      state.page = page;
      render();
    } catch (e) {
      if (isAbort(e) || seq !== state.seq) return;
      fill(warn, h('div', { class: 'banner', testid: 'nodes-error' }, h('span', { class: 'msg' }, e.message)));
      if (!state.page) fill(tbody, h('tr', null, h('td', { colspan: 8 }, h('div', { class: 'empty' }, 'Could not read the nodes.'))));
    }
  }

  function go(step) {
    if (step > 0 && state.page && state.page.next_cursor) state.cursors.push(state.page.next_cursor);
    else if (step < 0 && state.cursors.length > 1) state.cursors.pop();
    else return;
    load();
  }

  /** Every node matching the filters, every page (largest pages the API allows). */
  async function selectAllMatching() {
    selectAll.disabled = true;
    selectAll.replaceChildren(spinner(), 'Selecting…');
    try {
      let cursor = null;
      do {
        const page = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/nodes?${params(cursor, rules.nodes.pageMax)}`, { signal });
        for (const n of page.items || []) state.selected.add(n.id);
        cursor = page.next_cursor;
      } while (cursor);
    } catch (e) {
      if (!isAbort(e)) toastError(e, 'Select all: ');
    } finally {
      selectAll.disabled = false;
      renderRows();
    }
  }

  function render() {
    const p = state.page;
    const items = p.items || [];
    total.textContent = `${p.total} matching`;
    total.dataset.total = String(p.total);
    asOf.textContent = p.as_of ? `as of ${relTime(p.as_of)}` : '';
    asOf.title = p.as_of || '';
    fill(warn, p.kubernetes_readable ? null : h('div', { class: 'banner info', testid: 'nodes-kube-unreadable' },
      h('span', { class: 'msg' }, 'The cluster\'s Kubernetes API could not be read: health, readiness and cordoning are unknown for now.')));
    pageInfo.textContent = items.length
      ? `page ${state.cursors.length} · ${items.length} node${items.length === 1 ? '' : 's'} of ${p.total}`
      : 'no nodes';
    prevBtn.disabled = state.cursors.length < 2;
    nextBtn.disabled = !p.next_cursor;
    renderRows();
  }

  function renderRows() {
    const items = (state.page && state.page.items) || [];
    clear(tbody);
    if (!items.length) {
      tbody.appendChild(h('tr', null, h('td', { colspan: 8 }, h('div', { class: 'empty', testid: 'nodes-empty' },
        Object.values(state.filters).some(Boolean) ? 'No node matches these filters.' : 'No nodes.'))));
    }
    for (const n of items) tbody.appendChild(row(n));
    const onPage = items.filter((n) => state.selected.has(n.id)).length;
    pageBox.checked = !!items.length && onPage === items.length;
    pageBox.indeterminate = onPage > 0 && onPage < items.length;
    const count = state.selected.size;
    selCount.dataset.count = String(count);
    selCount.textContent = count ? `${count} selected` : 'none selected';
    const matching = state.page ? state.page.total : 0;
    selectAll.hidden = !state.page || matching <= items.length || count >= matching;
    selectAll.replaceChildren(`Select all ${matching} matching`);
    clearSel.hidden = !count;
    for (const b of actionBtns) {
      if (!canMutate()) continue;
      b.disabled = !count || !!state.refused;
      b.title = state.refused;
    }
  }

  function row(n) {
    const box = h('input', { type: 'checkbox', testid: 'node-select', checked: state.selected.has(n.id), 'aria-label': `Select ${n.id}` });
    box.addEventListener('change', () => {
      if (box.checked) state.selected.add(n.id); else state.selected.delete(n.id);
      renderRows();
    });
    return h('tr', { testid: `node-row-${n.id}`, dataset: { id: n.id, status: n.status || '', health: n.health || 'Unknown', group: n.instance_group || '' } },
      h('td', { class: 'sel' }, box),
      h('td', null, h('a', {
        href: '#', class: 'id strong', testid: 'node-open', title: 'Open this node: conditions, taints, pods, events',
        onclick: (e) => { e.preventDefault(); openNodeDetail({ cluster, id: n.id, signal }); },
      }, n.id), n.hostname ? h('span', { class: 'sub-id' }, n.hostname) : null),
      h('td', null, h('span', { class: 'id' }, n.instance_group || '—')),
      h('td', null, h('span', { class: 'id' }, n.instance_type || '—')),
      h('td', null, statusBadge(n.status, { testid: 'node-status' }), n.message ? h('span', { class: 'sub-id trunc', title: n.message }, n.message) : null),
      h('td', null, healthBadge(n.health, { testid: 'node-health' })),
      h('td', null, readyEl(n)),
      h('td', { class: 'nowrap faint' }, n.launched_at ? relTime(n.launched_at) : '—'));
  }

  /** Counts by health label and by HyperPod status (the cluster's read); a click filters. */
  function setSummary(nodes) {
    state.summary = nodes;
    const byHealth = (nodes && nodes.by_health) || null;
    const byStatus = (nodes && nodes.by_status) || {};
    fill(glance,
      h('div', { class: 'glance-total' }, h('span', { class: 'big', testid: 'nodes-glance-total' }, String((nodes && nodes.total) || 0)), h('span', { class: 'muted' }, ' nodes')),
      counts('health', 'by health', byHealth, healthTone, 'Kubernetes not readable: health unknown'),
      counts('status', 'by status', byStatus, statusTone, 'No nodes reported'));
  }

  function counts(key, title, map, toneOf, none) {
    const entries = map ? Object.entries(map).sort((a, b) => b[1] - a[1]) : [];
    return h('div', { class: 'glance-group', testid: `nodes-by-${key}` }, h('div', { class: 'glance-title' }, title),
      entries.length
        ? h('div', { class: 'chips' }, entries.map(([value, n]) => h('button', {
          type: 'button', class: `count-chip tone-${toneOf(value)}${state.filters[key] === value ? ' on' : ''}`,
          testid: `nodes-${key}-${value}`, dataset: { count: String(n), value },
          title: `Show only ${value} nodes`, onclick: () => setFilter(key, state.filters[key] === value ? '' : value),
        }, h('b', null, String(n)), ` ${value}`)))
        : h('span', { class: 'faint' }, none));
  }

  function setGroups(names) {
    const want = state.filters.group;
    fill(groupSel, h('option', { value: '' }, 'All groups'), names.map((g) => h('option', { value: g }, g)));
    setSelectValue(groupSel, want);
  }

  /** Why nodes cannot be acted on here ('' when they can): an imported cluster. */
  function setRefused(reason) {
    state.refused = reason;
    if (state.page) renderRows();
  }

  return { el, load, setGroups, setSummary, setRefused };
}

function select(testid, label, anyText, values) {
  return h('select', { testid, 'aria-label': label }, h('option', { value: '' }, anyText), values.map((v) => h('option', { value: v }, v)));
}
