// Change and delete one instance group. Edit is an explicit diff: only a count that differs
// from the group as shown is sent, and a reply of 200 {"changed": false} (the group already
// is as asked) is said as "no change". Delete shows why the API refused (the last group; or
// 409 in_use: the pods that cannot move), through confirm.js, which asks before `force`).

import { mutator, canMutate } from '../api.js';
import { h, fill, toast } from '../ui.js';
import { rules } from '../rules.js';
import { openModal, openOperation } from '../modal.js';
import { capacityLabel, efaLabel } from '../capacity_fields.js';
import { confirmDestroy } from '../confirm.js';

const FIXED = [
  ['instance_type', 'Instance type', (g) => g.instance_type],
  ['capacity_type', 'Capacity type', (g) => capacityLabel(g.capacity_type || rules.defaultCapacityType)],
  ['training_plan_arn', 'Training plan', (g) => g.training_plan_arn],
  ['efa_mode', 'EFA mode', (g) => (g.efa_mode ? efaLabel(g.efa_mode) : 'none')],
  ['availability_zone', 'Zone', (g) => g.availability_zone],
  ['subnet_id', 'Subnet', (g) => (g.subnet_ids || []).join(', ')],
];

function groupUrl(cluster, group) {
  return `/api/v1/clusters/${encodeURIComponent(cluster)}/instance-groups/${encodeURIComponent(group)}`;
}

export function openEditGroup({ cluster, group: g, signal }) {
  if (!canMutate()) return;
  const send = mutator();
  const countIn = h('input', {
    type: 'number', id: 'ig-edit-count', testid: 'ig-edit-count', class: 'mono', step: 1,
    min: rules.group.count.min, max: rules.group.count.max, value: String(g.target_count ?? ''), inputmode: 'numeric',
  });
  const result = h('div', { class: 'banner info', testid: 'ig-edit-result', hidden: true });
  const fixed = h('dl', { class: 'kv fixed-fields', testid: 'ig-edit-fixed' },
    FIXED.filter(([, , get]) => get(g)).flatMap(([field, label, get]) => [
      h('dt', null, label), h('dd', { testid: `ig-fixed-${field}`, dataset: { field }, title: 'fixed for the group\'s life' }, h('span', { class: 'id' }, get(g)))]));
  const content = [
    h('p', null, 'Group ', h('b', { class: 'id' }, g.name), ` runs ${g.current_count ?? '—'} of a target of ${g.target_count ?? '—'} × `, h('span', { class: 'id' }, g.instance_type || '—'), '.'),
    h('div', { class: 'field' },
      h('label', { for: 'ig-edit-count' }, 'Instance count'), countIn,
      h('div', { class: 'hint' }, `${rules.group.count.min}–${rules.group.count.max}. Only a count that differs from the target is sent; HyperPod adds or removes instances to reach it.`)),
    h('h3', { class: 'fixed-title' }, 'Fixed for the group\'s life'),
    h('p', { class: 'muted', testid: 'ig-edit-fixed-why' },
      'AWS cannot change these on an existing group. To change one, add a new instance group with the new value, move the work, then delete this group.'),
    fixed,
    result,
  ];
  openModal({
    testid: 'ig-edit-dialog', title: `Change instance group ${g.name}`, content, confirmText: 'Apply change', signal,
    fields: { instance_count: countIn }, // the API's refusal of the count lands on it
    async onSubmit({ close }) {
      result.hidden = true;
      const n = Number(countIn.value);
      if (!Number.isInteger(n) || n < rules.group.count.min || n > rules.group.count.max) {
        const msg = `A whole number from ${rules.group.count.min} to ${rules.group.count.max}.`;
        throw Object.assign(new Error(msg), { status: 422, details: { instance_count: [msg] } }); // on the field, as the API's 422 would
      }
      const diff = {};
      if (n !== g.target_count) diff.instance_count = n;
      if (!Object.keys(diff).length) {
        showResult('Nothing changed: the count is the group\'s target already, so nothing was sent.', 'unchanged');
        return;
      }
      const reply = await send(groupUrl(cluster, g.name), { method: 'PATCH', body: diff, signal });
      if (reply && reply.changed === false) {
        showResult(`No change: ${reply.message || 'the group is already as asked'}. Nothing was sent to AWS.`, 'no-change');
        toast(`No change: ${g.name} is already as asked.`, { kind: 'info', timeout: 3000 });
        return;
      }
      close();
      openOperation(reply);
    },
  });

  function showResult(text, kind) {
    result.hidden = false;
    result.dataset.result = kind;
    fill(result, h('span', { class: 'msg' }, text));
  }
  countIn.focus();
  countIn.select();
}

export function openDeleteGroup({ cluster, group: g, signal }) {
  if (!canMutate()) return;
  const about = [
    h('p', null, 'This terminates the ', h('b', null, `${g.current_count ?? 0} instance${g.current_count === 1 ? '' : 's'}`), ' of ',
      h('b', { class: 'id' }, g.name), ` (${g.instance_type || '—'}) and then deletes the group's own compute subnet.`),
    h('p', { class: 'muted' }, 'Pods on its nodes are evicted; those a controller manages (Deployment, Job, StatefulSet) are recreated on other groups if they fit. The cluster\'s last group cannot be deleted: delete the cluster instead.'),
  ];
  confirmDestroy({
    kind: 'instance group', name: g.name, url: groupUrl(cluster, g.name), about, confirmText: 'Delete group',
    action: 'ig-delete', signal,
  }).then(openOperation);
}
