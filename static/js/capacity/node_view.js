// How a node's HyperPod status and health label are shown. The values themselves are the
// API's (rules.nodes); tones are chosen by what a value says, so no list is copied here.

import { h } from '../ui.js';

export function statusTone(status) {
  const s = String(status || '');
  if (/^running$/i.test(s)) return 'green';
  if (/fail/i.test(s)) return 'red';
  if (/shutting|detach/i.test(s)) return 'amber';
  if (/pending|updating|progress|attach/i.test(s)) return 'blue';
  return 'gray';
}

export function healthTone(health) {
  const s = String(health || '');
  if (/^schedulable$/i.test(s)) return 'green';
  if (/replacement/i.test(s)) return 'red';
  if (/reboot/i.test(s)) return 'amber';
  if (/unschedulable/i.test(s)) return 'blue'; // deep health checks running
  return 'gray';
}

function toneBadge(value, tone, attrs = {}) {
  const v = value == null || value === '' ? 'Unknown' : String(value);
  return h('span', { ...attrs, class: `badge tone-${tone}`, dataset: { value: v } }, v);
}

export function statusBadge(status, attrs) {
  return toneBadge(status, statusTone(status), attrs);
}

export function healthBadge(health, attrs) {
  return toneBadge(health || 'Unknown', healthTone(health), attrs);
}

/** Ready / not ready / no Node, as text with a title saying why. */
export function readyEl(node) {
  if (node.ready == null) return h('span', { class: 'faint', title: 'No Kubernetes Node (not joined yet, or the cluster\'s Kubernetes API could not be read)' }, '—');
  return node.ready
    ? h('span', { class: 'ok-text' }, node.unschedulable ? 'ready · cordoned' : 'ready')
    : h('span', { class: 'bad-text' }, 'not ready');
}
