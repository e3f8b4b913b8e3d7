// The confirmation of a node action (reboot, replace, delete): what it does to the nodes and
// to the pods running on them, where it stands in the escalation order (investigate → reboot
// → replace; delete is not a remedy), and — above one batch — how the nodes are split into
// AWS's batches (rules.nodes.batchSize), sent one after the other.

import { canMutate } from '../api.js';
import { h } from '../ui.js';
import { rules } from '../rules.js';
import { openOperation } from '../modal.js';
import { batches } from '../batches.js';
import { confirmDestroy } from '../confirm.js';

const ACTIONS = {
  reboot: {
    verb: 'Reboot',
    does: 'The operating system restarts; the instance, its node id and its local disks stay.',
    pods: 'Pods on these nodes are disrupted: their controllers (Deployment, Job, training operator) reschedule them, elsewhere or back once the node is Ready; bare pods are lost.',
    accepts: 'Only Running nodes.',
    when: 'The first remedy for a node that is stuck, not Ready or flagged for reboot.',
  },
  replace: {
    verb: 'Replace',
    does: 'Each instance is terminated and a new one (a new node id) joins the same instance group.',
    pods: 'Data on the instances\' local disks is lost; pods are evicted and rescheduled by their controllers.',
    accepts: 'Running or Failure nodes.',
    when: 'For a node a reboot did not fix, or one in Failure or flagged for replacement.',
    danger: true,
  },
  delete: {
    verb: 'Delete',
    does: 'The instances are terminated and not replaced: each one\'s instance group shrinks by one.',
    pods: 'Pods are evicted and local data is lost.',
    accepts: 'Any node not already shutting down.',
    when: 'Not a remedy for a sick node (replace it instead): only to make a group smaller by these nodes.',
    danger: true,
  },
};
const ESCALATION = [['investigate', 'Investigate'], ['reboot', 'Reboot'], ['replace', 'Replace']];

export function escalationEl(current) {
  return h('ol', { class: 'escalation', testid: 'node-escalation', dataset: { current } },
    ESCALATION.map(([key, label]) => h('li', { class: key === current ? 'current' : '', dataset: { step: key } }, label)));
}

function batchesEl(ids) {
  const parts = batches(ids);
  const size = rules.nodes.batchSize;
  if (parts.length < 2) {
    return h('p', { class: 'muted', testid: 'node-action-batches', dataset: { count: '1' } },
      `Sent in one call (AWS takes up to ${size} nodes per call).`);
  }
  return h('div', { class: 'batches', testid: 'node-action-batches', dataset: { count: String(parts.length) } },
    h('p', null, h('b', null, `${ids.length} nodes → ${parts.length} batches`),
      ` of at most ${size} (AWS's limit per call), sent one after the other: each batch is waited on until its nodes are done before the next is sent, so at most ${size} nodes are out of service at a time. The progress panel shows one step per batch.`),
    h('ol', { class: 'batch-list' }, parts.map((part, i) => {
      const first = i * size + 1;
      return h('li', { testid: `node-action-batch-${i + 1}`, dataset: { count: String(part.length) } },
        h('b', null, `batch_${i + 1}`), ` · nodes ${first}–${first + part.length - 1} · ${part.length} node${part.length === 1 ? '' : 's'}`,
        h('span', { class: 'sub-id' }, part.length > 3 ? `${part.slice(0, 2).join(', ')} … ${part[part.length - 1]}` : part.join(', ')));
    })));
}

/** Confirm and send `action` on `ids` through the one confirmation (confirm.js); a 202
 * opens the operation's progress panel. replace and delete are refused (409 in_use) while
 * pods that would not come back run on the nodes: the dialog names them from the dry run. */
export function openNodeAction({ cluster, action, ids, signal }) {
  if (!canMutate() || !ids.length) return null;
  const a = ACTIONS[action];
  const tooMany = ids.length > rules.nodes.maxPerAction;
  const about = [
    escalationEl(action === 'delete' ? 'none' : action),
    action === 'delete' ? h('p', { class: 'hint warn' }, 'Delete is not part of the escalation.') : null,
    h('dl', { class: 'kv action-kv' },
      h('dt', null, 'What it does'), h('dd', { testid: 'node-action-does' }, a.does),
      h('dt', null, 'Running pods'), h('dd', { testid: 'node-action-pods' }, a.pods),
      h('dt', null, 'Takes'), h('dd', null, a.accepts),
      h('dt', null, 'When'), h('dd', null, a.when)),
    tooMany
      ? h('p', { class: 'form-error', testid: 'node-action-too-many' }, `At most ${rules.nodes.maxPerAction} nodes per operation; select fewer.`)
      : batchesEl(ids),
  ];
  // the dialog names what it acts on: the node itself, or how many of which cluster (the
  // batches list them); forcing past live pods means typing that name
  const one = ids.length === 1;
  return confirmDestroy({
    kind: one ? 'node' : `${ids.length} nodes of cluster`, name: one ? ids[0] : cluster, verb: a.verb,
    confirmText: one ? `${a.verb} node ${ids[0]}` : `${a.verb} ${ids.length} nodes`,
    // refused by the API above the limit (422): no plan to read, nothing to confirm
    url: tooMany ? null : `/api/v1/clusters/${encodeURIComponent(cluster)}/nodes/${action}`,
    method: 'POST', body: { node_ids: ids }, about, danger: !!a.danger, wide: true,
    action: `node-${action}`, signal, blocked: tooMany,
  }).then(openOperation);
}
