// The first steps a person takes, ticked from the real state: a network, a cluster, a
// training job, an endpoint. Shown on the clusters page until every step is done, each
// step linking to the form that does it (DESIGN: a first run that leads).

import { api, isAbort, canMutate } from './api.js';
import { h, fill } from './ui.js';
import { clusterHref } from './stages.js';

/** A card (testid `first-steps`) that fills itself in; `clusters` are the names listed. */
export function firstSteps(ctx, clusters, active) {
  const list = h('ol', { class: 'first-steps' });
  const card = h('div', { class: 'card', testid: 'first-steps', hidden: true },
    h('div', { class: 'card-head' }, h('h2', null, 'First steps'),
      h('span', { class: 'sub' }, canMutate() ? 'each step links to its form'
        : 'an operator takes them; you can follow each one')),
    list);
  const where = active && clusters.includes(active) ? active : clusters[0];
  const reads = [
    api('/api/v1/networks', { signal: ctx.signal }).then((r) => (r.items || []).length > 0),
    Promise.resolve(clusters.length > 0),
    where ? api(`/api/v1/clusters/${encodeURIComponent(where)}/jobs`, { signal: ctx.signal })
      .then((r) => (r.items || []).length > 0) : Promise.resolve(false),
    where ? api(`/api/v1/clusters/${encodeURIComponent(where)}/endpoints`, { signal: ctx.signal })
      .then((r) => (r.items || []).length > 0) : Promise.resolve(false),
  ].map((p) => p.catch((e) => { if (isAbort(e)) throw e; return null; }));
  Promise.all(reads).then(([network, cluster, job, endpoint]) => {
    const base = where ? clusterHref(where) : null;
    const steps = [
      ['network', network, 'A network', '#/networks',
        'a VPC with subnets in two zones (or let the cluster make its own)'],
      ['cluster', cluster, 'A cluster', '#/clusters/new', 'EKS and HyperPod, stage by stage'],
      ['job', job, 'A training job', base && `${base}/jobs`, 'on the cluster, with /s3 mounted'],
      ['endpoint', endpoint, 'An endpoint', base && `${base}/endpoints`, 'a model served on it'],
    ];
    card.dataset.settled = '1';
    if (steps.every(([, done]) => done)) return; // nothing left to lead to
    fill(list, ...steps.map(([key, done, title, href, what]) => h('li', {
      testid: `first-step-${key}`, dataset: { done: done ? '1' : done === null ? '?' : '' },
      class: done ? 'done' : '',
    },
    h('span', { class: 'tick', 'aria-hidden': 'true' }, done ? '✓' : '○'),
    href ? h('a', { href }, title) : h('span', null, title),
    h('span', { class: 'sub' }, ` — ${done ? 'done' : done === null ? 'could not be read' : what}`))));
    card.hidden = false;
  }).catch((e) => { if (!isAbort(e)) console.warn(e); });
  return card;
}
