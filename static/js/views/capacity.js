// #/clusters/<name>/capacity — a cluster's capacity: instance groups (add, change count,
// delete), nodes (health at a glance, filters, pages, bulk reboot / replace / delete, one node
// in full), node software update and Kubernetes upgrade. Every change is an operation whose
// live progress panel opens; viewers see everything with the changing controls disabled.

import { api, isAbort } from '../api.js';
import { h, fill, clear, badge, toastError, roleHint, loading, opHref, whenVisible } from '../ui.js';
import { clusterHref } from '../stages.js';
import { groupsCard } from '../capacity/groups.js';
import { nodesCard } from '../capacity/nodes.js';
import { softwareButtons } from '../capacity/software.js';
import { rules } from '../rules.js';

const REFRESH_MS = 15000;
const REFRESH_BUSY_MS = 4000;
const KIND_TEXT = {
  'instance_group.create': 'Adding instance group', 'instance_group.update': 'Changing instance group',
  'instance_group.delete': 'Deleting instance group', 'nodes.reboot': 'Rebooting nodes',
  'nodes.replace': 'Replacing nodes', 'nodes.delete': 'Deleting nodes',
  'cluster.software_update': 'Updating node software', 'cluster.kubernetes_upgrade': 'Upgrading Kubernetes',
};

export function mount(root, ctx) {
  const name = ctx.params[0];
  const state = { c: null, running: [], loaded: false };
  const head = h('div', { class: 'page-head-block' });
  const activity = h('div', { testid: 'capacity-activity' });
  const software = softwareButtons({ cluster: name, signal: ctx.signal });
  const groups = groupsCard({ cluster: name, signal: ctx.signal });
  const nodes = nodesCard({ cluster: name, signal: ctx.signal, query: ctx.query, path: ctx.path });
  const body = h('div', null, loading(`Reading cluster ${name}…`));
  const layout = h('div', null, head, activity, groups.el, nodes.el);
  root.append(h('div', { class: 'crumbs' },
    h('a', { href: '#/clusters', testid: 'back-to-clusters' }, '← Clusters'), ' / ',
    h('a', { href: clusterHref(name), testid: 'back-to-cluster', class: 'id' }, name)), body);

  async function load() {
    const enc = encodeURIComponent(name);
    try {
      const [c, ops] = await Promise.all([
        api(`/api/v1/clusters/${enc}`, { signal: ctx.signal }),
        api(`/api/v1/operations?target=${encodeURIComponent(`cluster/${name}`)}&limit=50`, { signal: ctx.signal })
          .catch((e) => { if (isAbort(e)) throw e; return null; }),
      ]);
      state.c = c;
      if (ops) state.running = (ops.items || []).filter((op) => !rules.finished.has(op.status) && inCluster(op.target));
      const refused = c.imported ? 'Imported clusters are read, never changed.' : '';
      await groups.load(refused);
      nodes.setRefused(refused);
      const names = groups.groups().map((g) => g.name);
      nodes.setGroups(names);
      nodes.setSummary(c.nodes);
      software.update(c, names);
      renderHead();
      renderActivity();
      if (!state.loaded) { state.loaded = true; body.replaceChildren(layout); nodes.load(); }
    } catch (e) {
      if (isAbort(e)) return;
      if (e.status === 404) {
        body.replaceChildren(h('div', { class: 'card', testid: 'cluster-missing' },
          h('div', { class: 'empty' }, e.message, '. ', h('a', { href: '#/clusters' }, 'Back to clusters'))));
        return;
      }
      if (!state.loaded) body.replaceChildren(h('div', { class: 'card' }, h('div', { class: 'empty' }, e.message)));
      toastError(e);
    } finally {
      schedule();
    }
  }

  const inCluster = (target) => target === `cluster/${name}` || String(target || '').startsWith(`cluster/${name}/`);

  function renderHead() {
    const c = state.c;
    fill(head,
      h('div', { class: 'page-head' },
        h('div', { class: 'op-title' },
          h('h1', null, 'Capacity of ', h('span', { class: 'id cluster-title', testid: 'capacity-title' }, c.name)),
          c.imported ? badge('imported', { class: 'plain tone-violet' }) : null),
        h('span', { class: 'spacer' }),
        software.el),
      roleHint('adding or changing instance groups, acting on nodes or updating cluster software', 'capacity-role-hint'),
      h('div', { class: 'meta' },
        h('span', null, 'region ', h('b', { class: 'id' }, c.region || '—')),
        h('span', null, 'Kubernetes ', h('b', { class: 'id', testid: 'capacity-k8s-version' }, (c.eks && c.eks.version) || '—')),
        h('span', null, 'HyperPod ', c.hyperpod ? badge(c.hyperpod.status, { testid: 'capacity-hp-status' }) : h('b', null, 'none'))),
      c.imported ? h('div', { class: 'banner info' }, h('span', { class: 'msg' }, 'Imported cluster: hypd reads its capacity but does not change it.')) : null);
  }

  function renderActivity() {
    clear(activity);
    if (!state.running.length) return;
    activity.appendChild(h('div', { class: 'banner info activity' },
      h('div', { class: 'msg' }, state.running.map((op) => h('span', { class: 'activity-op', dataset: { op: op.id, kind: op.kind } },
        h('b', null, KIND_TEXT[op.kind] || op.kind), ' ', h('span', { class: 'id' }, op.target), ' — ',
        h('a', { href: opHref(op.id), testid: 'capacity-activity-link' }, 'follow progress →'))))));
  }

  let timer = null;
  function schedule() {
    clearTimeout(timer);
    if (ctx.signal.aborted) return;
    const busy = state.running.length || groups.busy();
    timer = setTimeout(() => {
      if (document.hidden) { schedule(); return; }
      load();
      if (state.loaded) nodes.load();
    }, busy ? REFRESH_BUSY_MS : REFRESH_MS);
  }

  load();
  const stopVisible = whenVisible(load);
  return () => {
    clearTimeout(timer);
    stopVisible();
  };
}
