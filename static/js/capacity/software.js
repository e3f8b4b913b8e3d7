// Cluster software: update the HyperPod software of the nodes (UpdateClusterSoftware, rolled
// out node by node) and upgrade the EKS Kubernetes version by one minor version (then the
// add-ons). Each is an operation on the cluster; its progress panel opens.

import { mutator, canMutate } from '../api.js';
import { h, fill, guard, toast } from '../ui.js';
import { rules } from '../rules.js';
import { openModal, openOperation } from '../modal.js';

/** The lowest version above `current` among the ones the API upgrades to, or null (the
 * API refuses anything but the next minor version, naming it). */
export function nextVersion(current) {
  const later = rules.upgradeVersions.filter((v) => compare(v, current) > 0).sort(compare);
  return later.length ? later[0] : null;
}

function compare(a, b) {
  const [am, an] = String(a).split('.').map(Number);
  const [bm, bn] = String(b).split('.').map(Number);
  return am - bm || an - bn;
}

/** softwareButtons({cluster, signal}) → {el, update(clusterDetail, groupNames)} */
export function softwareButtons({ cluster, signal }) {
  const state = { c: null, groups: [] };
  const softwareBtn = guard(h('button', {
    type: 'button', class: 'btn', testid: 'cluster-software-update', onclick: () => openSoftware(),
  }, 'Update node software…'));
  const upgradeBtn = guard(h('button', {
    type: 'button', class: 'btn', testid: 'cluster-k8s-upgrade', onclick: () => openUpgrade(),
  }, 'Upgrade Kubernetes…'));
  const el = h('span', { class: 'inline' }, softwareBtn, upgradeBtn);

  function update(c, groups) {
    state.c = c;
    state.groups = groups;
    const version = c.eks && c.eks.version;
    const next = version ? nextVersion(version) : null;
    upgradeBtn.replaceChildren(next ? `Upgrade Kubernetes to ${next}…` : 'Upgrade Kubernetes…');
    upgradeBtn.dataset.next = next || '';
    if (!canMutate()) return;
    const refused = c.imported ? 'Imported clusters are read, never changed.' : '';
    softwareBtn.disabled = !!refused || !c.hyperpod || !groups.length;
    softwareBtn.title = refused || (c.hyperpod ? 'Update the HyperPod software (AMI, drivers, agents) of the nodes' : 'There is no HyperPod cluster yet');
    upgradeBtn.disabled = !!refused || !next;
    upgradeBtn.title = refused || (!version ? 'There is no EKS cluster yet'
      : next ? `Upgrade from ${version} to ${next} (one minor version at a time)` : `Kubernetes ${version} is the newest version hypd upgrades to`);
  }

  function openSoftware() {
    if (!canMutate() || !state.c) return;
    const send = mutator();
    const boxes = state.groups.map((g) => h('input', { type: 'checkbox', value: g, checked: true, testid: `software-group-${g}` }));
    openModal({
      testid: 'software-dialog', title: `Update the node software of ${cluster}?`, signal, confirmText: 'Update software',
      content: [
        h('p', null, 'HyperPod rolls its newest software (AMI, drivers, agents) onto the nodes of the chosen groups, node by node. ',
          h('b', null, 'Pods on a node being updated are disrupted'), ' and rescheduled by their controllers; prefer a quiet time.'),
        h('div', { class: 'field' }, h('span', { class: 'label' }, 'Instance groups'),
          h('div', { class: 'checks-inline' }, boxes.map((b) => h('label', { class: 'check' }, b, h('span', { class: 'id' }, b.value))))),
      ],
      async onSubmit({ close, error }) {
        const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
        if (!chosen.length) { error.textContent = 'Choose at least one instance group.'; return; }
        const body = chosen.length === boxes.length ? {} : { instance_groups: chosen };
        const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/software-update`, { body, signal });
        close();
        openOperation(reply);
      },
    });
  }

  function openUpgrade() {
    if (!canMutate() || !state.c) return;
    const from = state.c.eks && state.c.eks.version;
    const to = nextVersion(from);
    if (!to) return;
    const send = mutator();
    const result = h('div', { testid: 'upgrade-result' });
    openModal({
      testid: 'upgrade-dialog', title: `Upgrade Kubernetes from ${from} to ${to}?`, signal, confirmText: `Upgrade to ${to}`, danger: true,
      content: [
        h('p', null, 'EKS upgrades the control plane one minor version at a time; hypd then moves the EKS add-ons to the new version\'s defaults. The API stays available; it takes 10–20 minutes on AWS.'),
        h('p', null, h('b', null, 'It cannot be undone.'), ' Nodes keep their version until their software is updated.'),
        result,
      ],
      async onSubmit({ close }) {
        const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/kubernetes-version`, { body: { version: to }, signal });
        if (reply && reply.changed === false) {
          fill(result, h('div', { class: 'banner info' }, h('span', { class: 'msg' }, `No change: ${reply.message}`)));
          toast(`No change: ${cluster} runs Kubernetes ${to} already.`, { kind: 'info', timeout: 3000 });
          return;
        }
        close();
        openOperation(reply);
      },
    });
  }

  return { el, update };
}
