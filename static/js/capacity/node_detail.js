// One node in full, in a panel (GET …/nodes/<id>, read now): HyperPod's status and message,
// health label, the Kubernetes Node's conditions and taints, the pods on it — what an action
// would disrupt — and its recent HyperPod events. The investigate step of the escalation;
// from here the next steps (reboot, then replace) are one click away.

import { api, isAbort } from '../api.js';
import { h, fill, guard, loading, absTime, relTime } from '../ui.js';
import { statusBadge, healthBadge, readyEl } from './node_view.js';
import { openNodeAction, escalationEl } from './node_actions.js';

export function openNodeDetail({ cluster, id, signal }) {
  const body = h('div', { class: 'node-detail-body' }, loading(`Reading node ${id}…`));
  const closeBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'node-detail-close' }, 'Close');
  const dlg = h('dialog', { class: 'modal drawer', testid: 'node-detail', dataset: { node: id }, 'aria-labelledby': 'node-detail-title' },
    h('div', { class: 'modal-body' },
      h('div', { class: 'drawer-head' }, h('h2', { id: 'node-detail-title' }, 'Node ', h('span', { class: 'id', testid: 'node-detail-id' }, id)),
        h('span', { class: 'spacer' }), closeBtn),
      body));
  document.body.appendChild(dlg);
  const close = () => { if (dlg.open) dlg.close(); };
  dlg.addEventListener('close', () => dlg.remove());
  closeBtn.addEventListener('click', close);
  if (signal) signal.addEventListener('abort', close, { once: true });
  dlg.showModal();

  const act = (action) => { close(); openNodeAction({ cluster, action, ids: [id], signal }); };

  api(`/api/v1/clusters/${encodeURIComponent(cluster)}/nodes/${encodeURIComponent(id)}`, { signal })
    .then((n) => fill(body, render(n, act)))
    .catch((e) => { if (!isAbort(e)) fill(body, h('div', { class: 'form-error', testid: 'node-detail-error' }, e.message)); });
  return dlg;
}

function render(n, act) {
  const actions = ['reboot', 'replace', 'delete'].map((a) => guard(h('button', {
    type: 'button', class: a === 'reboot' ? 'btn btn-sm btn-primary' : 'btn btn-sm btn-danger', testid: `node-detail-${a}`,
    onclick: () => act(a),
  }, a === 'reboot' ? 'Reboot…' : a === 'replace' ? 'Replace…' : 'Delete…')));
  return [
    h('div', { class: 'meta' },
      h('span', null, 'status ', statusBadge(n.status, { testid: 'node-detail-status' })),
      h('span', null, 'health ', healthBadge(n.health, { testid: 'node-detail-health' })),
      h('span', null, 'Kubernetes ', readyEl(n))),
    n.message ? h('div', { class: 'banner info', testid: 'node-detail-message' }, h('span', { class: 'msg' }, n.message)) : null,
    h('dl', { class: 'kv', testid: 'node-detail-facts' }, facts(n).flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
    section('Conditions', 'node-detail-conditions', table(['type', 'status', 'reason', 'message', 'since'],
      (n.conditions || []).map((c) => ({
        testid: `node-condition-${c.type}`, dataset: { status: c.status || '' },
        cells: [c.type, c.status, c.reason || '', c.message || '', c.lastTransitionTime ? relTime(c.lastTransitionTime) : ''],
      })), 'No Kubernetes Node, so no conditions.')),
    section('Taints', 'node-detail-taints', (n.taints || []).length
      ? h('div', { class: 'chips' }, n.taints.map((t) => h('span', { class: 'chip' }, `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`)))
      : h('div', { class: 'faint' }, 'None.')),
    section(`Pods on this node (${(n.pods || []).length}) — what an action disrupts`, 'node-detail-pods', table(['namespace', 'name', 'phase', 'owner'],
      (n.pods || []).map((p) => ({ testid: 'node-pod', cells: [p.namespace, p.name, p.phase || '', p.owner || 'none (a bare pod: lost on reboot)'] })),
      'No pods.')),
    section('Recent HyperPod events', 'node-detail-events', (n.events || []).length
      ? h('ul', { class: 'events hp-events', tabindex: 0, 'aria-label': 'Node events' }, n.events.map((e) => h('li', { testid: 'node-event' },
        h('time', { datetime: e.at || '', title: absTime(e.at) }, relTime(e.at)), h('div', { class: 'what' }, e.description || ''))))
      : h('div', { class: 'faint' }, 'No events.')),
    h('div', { class: 'drawer-actions' },
      escalationEl('investigate'),
      h('p', { class: 'muted' }, 'You are investigating. If the node is stuck or not Ready, reboot it first; replace it when a reboot did not help or it is in Failure. Delete only to shrink its group.'),
      h('div', { class: 'modal-actions' }, actions)),
  ];
}

function facts(n) {
  const id = (v) => (v == null || v === '' ? h('span', { class: 'faint' }, '—') : h('span', { class: 'id' }, String(v)));
  return [
    ['instance group', id(n.instance_group)], ['instance type', id(n.instance_type)],
    ['zone', id(n.availability_zone)], ['private IP', id(n.private_ip)],
    ['capacity type', id(n.capacity_type)], ['threads per core', id(n.threads_per_core)],
    ['Kubernetes Node', id(n.node_name)], ['launched', n.launched_at ? absTime(n.launched_at) : '—'],
    ['software updated', n.last_software_update_at ? absTime(n.last_software_update_at) : '—'],
  ];
}

function section(title, testid, content) {
  return h('section', { class: 'drawer-section', testid }, h('h3', null, title), content);
}

function table(cols, rows, empty) {
  if (!rows.length) return h('div', { class: 'faint' }, empty);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'mini' },
    h('thead', null, h('tr', null, cols.map((c) => h('th', null, c)))),
    h('tbody', null, rows.map((r) => h('tr', { testid: r.testid, dataset: r.dataset || {} }, r.cells.map((c) => h('td', null, String(c))))))));
}
