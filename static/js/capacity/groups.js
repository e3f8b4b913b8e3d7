// The instance groups card of a cluster's capacity page: one row per group (type, count /
// target, capacity type, EFA mode, zone and subnet, status, the operation changing it) with
// Edit count and Delete; "+ Add instance group" opens the add form.

import { api, isAbort, canMutate } from '../api.js';
import { h, clear, badge, guard, opHref } from '../ui.js';
import { capacityLabel, efaLabel } from '../capacity_fields.js';
import { rules } from '../rules.js';
import { openEditGroup, openDeleteGroup } from './group_dialogs.js';
import { addGroupHref } from './links.js';

/** groupsCard({cluster, signal}) → {el, load(refused), groups(), busy()} */
export function groupsCard({ cluster, signal }) {
  const state = { items: null, unavailable: null, refused: '' };
  const body = h('tbody', { testid: 'ig-body' });
  const count = h('span', { class: 'sub', testid: 'ig-count-total' });
  const addBtn = guard(h('button', {
    type: 'button', class: 'btn btn-primary btn-sm', testid: 'ig-add',
    onclick: () => { if (canMutate()) location.hash = addGroupHref(cluster); },
  }, '+ Add instance group'));
  const el = h('div', { class: 'card', testid: 'ig-card' },
    h('div', { class: 'card-head' }, h('h2', null, 'Instance groups'), count, h('span', { class: 'spacer' }), addBtn),
    h('div', { class: 'table-wrap' },
      h('table', { class: 'data', testid: 'ig-table' },
        h('thead', null, h('tr', null,
          h('th', null, 'Group'), h('th', null, 'Instance type'), h('th', { class: 'num' }, 'Count'),
          h('th', null, 'Capacity'), h('th', null, 'EFA'), h('th', null, 'Zone / subnet'), h('th', null, 'Status'),
          h('th', null, ''))),
        body)),
    h('div', { class: 'card-foot' },
      'Instance type, capacity type, EFA mode and placement are fixed for a group\'s life; the count changes by an operation.'));

  /** load(refused): `refused` says why groups cannot change here ('' when they can). */
  async function load(refused = '') {
    state.refused = refused;
    if (canMutate()) {
      addBtn.disabled = !!refused;
      addBtn.title = refused;
    }
    try {
      const data = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/instance-groups`, { signal });
      state.items = data.items || [];
      state.unavailable = null;
    } catch (e) {
      if (isAbort(e)) throw e;
      if (e.status !== 409) throw e;
      state.items = [];
      state.unavailable = e.message; // no HyperPod cluster yet
    }
    render();
  }

  function render() {
    clear(body);
    const items = state.items || [];
    count.textContent = `${items.length} group${items.length === 1 ? '' : 's'}`;
    if (!items.length) {
      body.appendChild(h('tr', null, h('td', { colspan: 8 },
        h('div', { class: 'empty', testid: state.unavailable ? 'ig-unavailable' : 'ig-empty' },
          state.unavailable || 'No instance groups.'))));
      return;
    }
    for (const g of items) body.appendChild(row(g));
  }

  function row(g) {
    const busy = !!g.operation_id;
    const why = state.refused || (busy ? 'An operation is changing this group: follow it first' : '');
    const edit = guard(h('button', {
      type: 'button', class: 'btn btn-sm', testid: `ig-edit-${g.name}`, disabled: !!why,
      title: why || 'Change the instance count',
      onclick: () => openEditGroup({ cluster, group: g, signal }),
    }, 'Edit count'));
    const del = guard(h('button', {
      type: 'button', class: 'btn btn-sm btn-danger', testid: `ig-delete-${g.name}`, disabled: !!why,
      title: why || 'Delete this group, its nodes and its own subnet',
      onclick: () => openDeleteGroup({ cluster, group: g, signal }),
    }, 'Delete'));
    const plan = g.training_plan_arn ? g.training_plan_arn.split('/').pop() : null;
    return h('tr', { testid: `ig-row-${g.name}`, dataset: { name: g.name, status: g.status || '', capacity: g.capacity_type || '' } },
      h('td', null, h('b', { class: 'id' }, g.name),
        (g.deep_health_checks || []).length ? h('span', { class: 'sub-id', title: g.deep_health_checks.join(', ') }, 'deep health checks') : null),
      h('td', null, h('span', { class: 'id' }, g.instance_type || '—')),
      h('td', { class: 'num nowrap', testid: 'ig-count', dataset: { current: String(g.current_count ?? ''), target: String(g.target_count ?? '') } },
        `${g.current_count ?? '—'}`, h('span', { class: 'faint' }, ` / ${g.target_count ?? '—'}`)),
      h('td', { testid: 'ig-capacity' }, badge(capacityLabel(g.capacity_type || rules.defaultCapacityType), { class: `plain ${capacityTone(g.capacity_type)}` }),
        plan ? h('span', { class: 'sub-id trunc', title: g.training_plan_arn }, plan) : null),
      h('td', { testid: 'ig-efa' }, g.efa_mode ? h('span', { class: 'id' }, efaLabel(g.efa_mode)) : h('span', { class: 'faint', title: 'The type has no EFA interface' }, 'none')),
      h('td', { testid: 'ig-zone' }, h('span', { class: 'id' }, g.availability_zone || '—'),
        (g.subnet_ids || []).length ? h('span', { class: 'sub-id', title: g.subnet_ids.join('\n') }, g.subnet_ids.join(', ')) : null),
      h('td', { testid: 'ig-status' }, badge(g.status),
        g.operation_id ? h('a', { class: 'sub-id', href: opHref(g.operation_id), testid: 'ig-op-link', title: g.operation_id }, 'follow operation →') : null),
      h('td', { class: 'actions' }, edit, ' ', del));
  }

  return {
    el,
    load,
    groups: () => state.items || [],
    busy: () => (state.items || []).some((g) => g.operation_id),
  };
}

function capacityTone(type) {
  if (type === rules.capacity.SPOT) return 'tone-amber';
  if (type === rules.capacity.TRAINING_PLAN) return 'tone-violet';
  return 'tone-gray';
}
