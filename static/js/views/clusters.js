// #/clusters — clusters hypd created (read from AWS by tag) and imported ones, the caller's
// active cluster, each cluster's latest operation; Set active, Delete / Forget.
// Also exports the cluster actions the detail page shares (delete dialog, set active,
// kubeconfig download).

import { api, isAbort, canMutate } from '../api.js';
import {
  h, clear, fill, badge, toast, toastError, guard, roleHint, spinner, timeEl, whenVisible,
} from '../ui.js';
import { progress } from './operations.js';
import { clusterHref } from '../stages.js';
import { confirmDestroy } from '../confirm.js';
import { rules, words } from '../rules.js';
import { firstSteps } from '../first_steps.js';
import { money } from '../cost.js';

const REFRESH_MS = 15000;
const COST_MS = 60000; // each cluster's rate is read from AWS: once a minute is enough
const REFRESH_BUSY_MS = 4000;
const KIND_TEXT = { 'cluster.create': 'create', 'cluster.stage': 'stage re-run', 'cluster.delete': 'delete' };

export function mount(root, ctx) {
  const state = { items: null, active: null, ops: [], inflight: false, loadedOnce: false, costs: new Map() };

  const tbody = h('tbody', { testid: 'clusters-body' },
    h('tr', null, h('td', { colspan: 5 }, h('div', { class: 'loading' }, spinner(), 'Reading clusters from AWS…'))));
  const count = h('span', { class: 'sub', testid: 'clusters-count' });
  const updated = h('span', { class: 'sub', testid: 'clusters-updated' });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'clusters-refresh', onclick: () => load() }, 'Refresh');
  const newBtn = guard(h('button', {
    type: 'button', class: 'btn btn-primary', testid: 'cluster-new',
    onclick: () => { if (canMutate()) location.hash = '#/clusters/new'; },
  }, '+ New cluster'));
  const importBtn = guard(h('button', {
    type: 'button', class: 'btn', testid: 'cluster-import',
    onclick: () => { if (canMutate()) location.hash = '#/clusters/import'; },
  }, 'Import existing'));
  const activeNote = h('span', { class: 'sub', testid: 'active-cluster' });
  const tableCard = h('div', { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Clusters'), count, activeNote,
      h('span', { class: 'spacer' }), updated, refreshBtn),
    h('div', { class: 'table-wrap' },
      h('table', { class: 'data', testid: 'clusters-table' },
        h('thead', null, h('tr', null,
          h('th', null, 'Cluster'), h('th', null, 'EKS'), h('th', null, 'Latest operation'),
          h('th', { class: 'num', title: 'What it costs per hour while it runs: AWS list prices, not a bill' }, '$/h'), h('th', null, ''))),
        tbody)));

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Clusters'),
      h('span', { class: 'sub' }, 'Amazon EKS + SageMaker HyperPod clusters that hypd created or imported.'),
      h('span', { class: 'spacer' }),
      importBtn, ' ', newBtn),
    ...[roleHint('creating, activating or deleting clusters', 'clusters-role-hint')].filter(Boolean),
    tableCard);

  async function load() {
    if (state.inflight) return;
    state.inflight = true;
    try {
      const [list, active, ops] = await Promise.all([
        api('/api/v1/clusters', { signal: ctx.signal }),
        api('/api/v1/active-cluster', { signal: ctx.signal }).catch((e) => { if (isAbort(e)) throw e; return null; }),
        api('/api/v1/operations?target=cluster&limit=200', { signal: ctx.signal }).catch((e) => { if (isAbort(e)) throw e; return null; }),
      ]);
      state.items = (list && list.items) || [];
      state.active = active ? active.name : state.active;
      if (ops) state.ops = ops.items || [];
      if (!state.loadedOnce) {
        tableCard.before(firstSteps(ctx, state.items.map((c) => c.name), state.active));
      }
      state.loadedOnce = true;
      updated.textContent = `updated ${new Date().toLocaleTimeString(undefined, { hour12: false })}`;
      render();
      readCosts();
    } catch (e) {
      if (isAbort(e)) return;
      updated.textContent = 'refresh failed';
      if (!state.loadedOnce) {
        clear(tbody).appendChild(h('tr', null, h('td', { colspan: 5 }, h('div', { class: 'empty' }, e.message))));
      }
      toastError(e);
    } finally {
      state.inflight = false;
      schedule();
    }
  }

  /** Each live cluster's hourly rate (GET …/cost), read beside the list and at most once a
   * minute: it asks AWS, where the list is kept cheap. */
  function readCosts() {
    const now = Date.now();
    for (const c of state.items) {
      const known = state.costs.get(c.name);
      if (!c.eks || (known && now - known.at < COST_MS)) continue;
      state.costs.set(c.name, { at: now, hourly: known ? known.hourly : null });
      api(`/api/v1/clusters/${encodeURIComponent(c.name)}/cost`, { signal: ctx.signal })
        .then((cost) => { state.costs.set(c.name, { at: now, hourly: cost.hourly, budget: cost.budget }); render(); })
        .catch((e) => { if (!isAbort(e)) state.costs.set(c.name, { at: now, hourly: null, error: e.message }); });
    }
  }

  function costCell(c) {
    const known = state.costs.get(c.name);
    const hourly = known && known.hourly;
    if (!hourly) {
      return h('td', { class: 'num faint', testid: 'cluster-hourly', title: known && known.error ? known.error : 'Not running, or not read yet' }, '—');
    }
    return h('td', {
      class: 'num', testid: 'cluster-hourly', dataset: { hourly: Number(hourly.hourly_usd).toFixed(4), complete: hourly.complete ? '1' : '' },
      title: hourly.complete ? 'AWS list prices, not a bill' : 'Items without a figure (spot, prepaid, or a price that could not be read) are not in the total',
    }, money(hourly.hourly_usd, hourly.currency), hourly.complete ? null : '+', budgetMark(known.budget));
  }

  /** A budget past its first warning, beside the rate: the cluster list is where it is seen. */
  function budgetMark(budget) {
    const state = words(rules.field('Budget', 'state').enum);
    if (!budget || ![state.WARNING, state.EXCEEDED].includes(budget.state)) return null;
    const pct = Math.round(budget.fraction * 100);
    return h('div', {
      class: `budget-state budget-${budget.state}`, testid: 'cluster-budget', dataset: { state: budget.state },
    }, `${pct} % of ${money(budget.monthly_usd)} budget`);
  }

  /** Rows: every listed cluster, plus clusters whose create has not reached EKS yet (or
   * failed before it) and clusters being deleted, taken from the operations. */
  function rows() {
    const byName = new Map();
    for (const op of state.ops) {
      const m = String(op.target || '').match(/^cluster\/([^/]+)$/);
      if (!m) continue;
      if (!byName.has(m[1])) byName.set(m[1], []);
      byName.get(m[1]).push(op); // newest first
    }
    const out = state.items.map((c) => ({ ...c, ops: byName.get(c.name) || [] }));
    const listed = new Set(out.map((c) => c.name));
    for (const [name, ops] of byName) {
      if (listed.has(name)) continue;
      const latest = ops[0];
      const unfinished = !rules.finished.has(latest.status);
      const failedCreate = latest.kind !== 'cluster.delete' && latest.status !== rules.status.SUCCEEDED;
      if (unfinished || failedCreate) out.push({ name, region: latest.params && latest.params.region, imported: false, eks: null, ops });
    }
    out.sort((a, b) => a.name.localeCompare(b.name));
    return out;
  }

  function render() {
    const items = rows();
    count.textContent = String(items.length);
    fill(activeNote, state.active
      ? ['· active: ', h('a', { href: clusterHref(state.active), class: 'id' }, state.active)]
      : '· no active cluster');
    clear(tbody);
    if (!items.length) {
      tbody.appendChild(h('tr', null, h('td', { colspan: 5 },
        h('div', { class: 'empty', testid: 'clusters-empty' },
          'No clusters yet. ',
          canMutate() ? h('a', { href: '#/clusters/new' }, 'Create one') : 'An operator can create one',
          ': it takes a name, a zone, an instance type and a count.'))));
      return;
    }
    for (const c of items) tbody.appendChild(row(c));
  }

  function row(c) {
    const isActive = state.active === c.name;
    const eksStatus = c.eks ? c.eks.status : null;
    const running = c.ops.find((op) => !rules.finished.has(op.status));
    const latest = running || c.ops[0];
    const deleting = running && running.kind === 'cluster.delete';
    const href = clusterHref(c.name);
    return h('tr', {
      testid: `cluster-row-${c.name}`,
      dataset: { name: c.name, status: eksStatus || 'none', active: isActive ? '1' : '', imported: c.imported ? '1' : '' },
    },
    h('td', null,
      h('div', { class: 'cluster-name' },
        h('a', { href, class: 'id strong', testid: 'cluster-link' }, c.name),
        isActive ? h('span', { class: 'active-mark', testid: 'cluster-active', title: 'Your active cluster: tools and pages act on it by default' }, '★ active') : null,
        c.imported ? badge('imported', { class: 'plain tone-violet', testid: 'cluster-imported', title: 'Imported read-only: deleting it in hypd never touches AWS' }) : null,
        c.state && !['created', 'imported', 'creating', 'deleting', 'rerunning'].includes(c.state.status)
          ? badge(c.state.status.replace(/_/g, ' '), { class: 'plain tone-amber', testid: 'cluster-state', title: c.state.summary, dataset: { status: c.state.status } })
          : null),
      h('span', { class: 'sub-id' }, c.region || '')),
    h('td', { class: 'nowrap' },
      eksStatus ? badge(eksStatus, { testid: 'cluster-eks-status' }) : h('span', { class: 'faint', testid: 'cluster-eks-status' }, 'not created yet'),
      c.eks && c.eks.version ? h('span', { class: 'faint' }, `  v${c.eks.version}`) : null),
    h('td', { testid: 'cluster-activity' }, latest ? opCell(latest) : h('span', { class: 'faint' }, c.imported ? 'imported' : '—')),
    costCell(c),
    h('td', { class: 'actions' },
      activateButton(c, isActive),
      ' ',
      guard(h('button', {
        type: 'button', class: 'btn btn-sm btn-danger', testid: `cluster-delete-${c.name}`,
        disabled: !!deleting,
        title: c.imported ? 'Stop listing it; AWS is not touched' : 'Delete everything hypd made for this cluster',
        onclick: () => openDeleteDialog(c, { signal: ctx.signal, onForgotten: load }),
      }, c.imported ? 'Forget' : 'Delete'))));
  }

  function activateButton(c, isActive) {
    const btn = guard(h('button', {
      type: 'button', class: 'btn btn-sm', testid: `cluster-activate-${c.name}`, disabled: isActive,
      title: isActive ? 'Already your active cluster' : 'Make it your active cluster (per token)',
    }, isActive ? 'Active' : 'Set active'));
    btn.addEventListener('click', async () => {
      if (!canMutate() || btn.dataset.busy) return;
      btn.dataset.busy = '1';
      btn.disabled = true;
      try {
        await setActive(c.name, ctx.signal);
        state.active = c.name;
        render();
      } catch (e) {
        if (isAbort(e)) return;
        toastError(e, `Set active ${c.name}: `);
        delete btn.dataset.busy;
        btn.disabled = false;
      }
    });
    return btn;
  }

  let timer = null;
  function schedule() {
    clearTimeout(timer);
    if (ctx.signal.aborted) return;
    const busy = state.ops.some((op) => !rules.finished.has(op.status));
    timer = setTimeout(() => { if (!document.hidden) load(); else schedule(); }, busy ? REFRESH_BUSY_MS : REFRESH_MS);
  }

  load();
  const stopVisible = whenVisible(load);
  return () => {
    clearTimeout(timer);
    stopVisible();
  };
}

/** A compact cell for an operation: kind, status, progress, link. */
export function opCell(op) {
  return h('div', { class: 'op-cell' },
    h('a', { href: `#/operations/${encodeURIComponent(op.id)}`, class: 'op-cell-link', testid: 'cluster-op-link', title: op.id },
      KIND_TEXT[op.kind] || op.kind,
      op.kind === 'cluster.stage' && op.params && op.params.stage ? ` ${op.params.stage}` : ''),
    badge(op.status, { testid: 'cluster-op-status' }),
    rules.finished.has(op.status) ? h('span', { class: 'faint nowrap' }, timeEl(op.updated_at)) : progress(op));
}

// ---------- shared cluster actions ----------

export async function setActive(name, signal) {
  const reply = await api('/api/v1/active-cluster', { method: 'PUT', body: { name }, signal });
  toast(`${reply && reply.name ? reply.name : name} is now your active cluster.`, { kind: 'ok', timeout: 3000 });
  return reply;
}

/** Save GET …/kubeconfig as a JSON file (kubectl reads JSON kubeconfigs). */
export async function downloadKubeconfig(name, signal) {
  const text = await api(`/api/v1/clusters/${encodeURIComponent(name)}/kubeconfig?format=yaml`, {
    signal, as: 'text', headers: { Accept: 'application/yaml, application/json' },
  });
  const file = `kubeconfig-${name}.yaml`;
  const blob = new Blob([text], { type: 'application/yaml' });
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: file, hidden: true });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  toast(`Saved ${file}. Use it with kubectl --kubeconfig ${file}; it signs in with aws eks get-token.`, { kind: 'ok', timeout: 6000 });
  return file;
}

/**
 * The delete confirmation (confirm.js). A cluster hypd made: type its name, optionally also
 * delete the shared S3 bucket's data (?delete_data=true); answers 202 → its operation. An
 * imported cluster: "Forget" (200; AWS untouched) → onForgotten().
 */
export function openDeleteDialog(cluster, { signal, onForgotten } = {}) {
  if (!canMutate()) return;
  const { name, imported } = cluster;
  const url = `/api/v1/clusters/${encodeURIComponent(name)}`;
  const dataBox = h('input', { type: 'checkbox', id: 'cluster-delete-data', testid: 'cluster-delete-data' });
  confirmDestroy({
    kind: imported ? 'imported cluster' : 'cluster', name, url, verb: imported ? 'Forget' : 'Delete',
    action: 'cluster-delete', typeAlways: !imported, signal,
    urlFor: () => (!imported && dataBox.checked ? `${url}?delete_data=true` : url),
    about: imported
      ? h('p', null, 'hypd stops listing it. ', h('b', null, 'Nothing in AWS is touched:'),
        ' the EKS cluster, any HyperPod cluster and their data stay exactly as they are. You can import it again later.')
      : [
        h('p', null, 'This tears down, in reverse order, everything hypd made for ', h('b', { class: 'id' }, name),
          ': Kubernetes load balancers and volumes first, then the HyperPod cluster and its instances, the EKS cluster, the roles, and the network if hypd created it.'),
        h('p', { class: 'muted' }, 'It runs as an operation you can follow; resources hypd did not make are left alone.')],
    extra: imported ? null
      : h('label', { class: 'check danger-check', for: 'cluster-delete-data' }, dataBox,
        h('span', null, h('b', null, 'Also delete the shared S3 bucket data'),
          h('span', { class: 'muted' }, ' — every object in the bucket mounted at /s3. Unchecked, the bucket and its data are kept.'))),
  }).then((reply) => {
    if (!reply) return;
    const op = reply.operation;
    if (op && op.id) {
      location.hash = `#/operations/${encodeURIComponent(op.id)}`;
    } else {
      toast(reply.message || `Forgot ${name}.`, { kind: 'ok', timeout: 4000 });
      if (onForgotten) onForgotten();
    }
  });
}
