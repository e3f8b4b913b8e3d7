// #/clusters/<name>/endpoints — a cluster's inference endpoints (created from a form, tested
// with one completion, scaled in place, deleted), and a model pool's workers with the model each serves
// (reassigned by menu: only the worker's label changes).

import { api, isAbort, mutator } from '../api.js';
import { h, clear, badge, toastError, guard, roleHint, spinner, opHref, waitingNote } from '../ui.js';
import { endpointForm } from './endpoint_form.js';
import { openInvoke, openDelete } from './endpoint_actions.js';
import { openScale } from './endpoint_scale.js';
import { rules } from '../rules.js';

const REFRESH_MS = 5000;

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Inference endpoints', testid: 'cluster-endpoints-link' };

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const send = mutator();
  const body = h('div', { testid: 'endpoints-list' }, h('div', { class: 'loading' }, spinner(), 'Reading endpoints…'));
  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Inference endpoints'),
      h('span', { class: 'sub' }, cluster, ' · ', h('a', { href: `#/clusters/${encodeURIComponent(cluster)}/models`, testid: 'endpoints-models-link' }, 'Models →')),
      h('span', { class: 'spacer' })),
    ...[roleHint('reassigning a worker', 'endpoints-role-hint')].filter(Boolean), // DOM append writes null as text
    body,
    h('div', { class: 'card', testid: 'endpoint-create-card' },
      h('div', { class: 'card-head' }, h('h2', null, 'Create an endpoint')),
      h('div', { class: 'card-body' }, endpointForm(cluster, ctx, (reply) => settle(reply)))));

  let timer = null;
  let busy = false;

  async function load() {
    try {
      const data = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/endpoints`, { signal: ctx.signal });
      if (!busy) render(data.items || [], data.note);
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  function render(items, note) {
    clear(body);
    if (note) body.appendChild(h('div', { class: 'hint', testid: 'endpoints-note' }, note));
    if (!items.length) {
      body.appendChild(h('div', { class: 'card' }, h('div', { class: 'empty', testid: 'endpoints-empty' },
        'No endpoints yet. Create one below, or with an agent (create_endpoint).')));
      return;
    }
    body.appendChild(h('div', { class: 'card' },
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data', testid: 'endpoints-table' },
          h('thead', null, h('tr', null, ['Endpoint', 'Kind', 'Model', 'Service', 'State', 'Ready', 'Address', '']
            .map((t) => h('th', null, t)))),
          h('tbody', null, items.map(row))))));
    for (const ep of items.filter((i) => i.service === 'pool')) body.appendChild(pool(ep));
  }

  function row(ep) {
    const wanted = ep.autoscaling ? `${ep.autoscaling.min}–${ep.autoscaling.max}` : `${ep.replicas ?? '—'}`;
    return h('tr', { testid: `endpoint-row-${ep.name}` },
      h('td', null, h('b', { class: 'id' }, ep.name), h('div', { class: 'sub-id' }, ep.namespace)),
      h('td', null, ep.kind),
      h('td', null, h('span', { class: 'id' }, ep.model || '—')),
      h('td', null, ep.service || 'operator'),
      h('td', null, badge(ep.state, { testid: `endpoint-state-${ep.name}` }),
        waitingNote(ep.waiting, 'Server', `endpoint-waiting-${ep.name}`),
        ep.operation_id && ['creating', 'updating', 'deleting'].includes(ep.state)
          ? h('a', { href: opHref(ep.operation_id), class: 'sub-id' }, ' progress') : null),
      h('td', { class: 'num', testid: `endpoint-ready-${ep.name}` }, `${ep.ready_replicas ?? 0} / ${wanted}`),
      h('td', null, h('span', { class: 'id' }, ep.address || (ep.services || []).join(', ') || '—'),
        ep.sagemaker_endpoint ? h('div', { class: 'sub-id', testid: `endpoint-sagemaker-${ep.name}`, title: ep.sagemaker_endpoint.arn },
          `SageMaker: ${ep.sagemaker_endpoint.arn.split('/').pop()} (${ep.sagemaker_endpoint.state || '—'})`) : null),
      h('td', { class: 'nowrap' }, actions(ep)));
  }

  function actions(ep) {
    const test = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: `endpoint-invoke-${ep.name}`, disabled: ep.state !== 'ready' }, 'Test'));
    test.addEventListener('click', () => openInvoke(cluster, ep, ctx.signal));
    const scale = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: `endpoint-scale-${ep.name}`, disabled: ['creating', 'deleting'].includes(ep.state) }, 'Scale'));
    scale.addEventListener('click', () => openScale(cluster, ep, ctx.signal, (reply) => settle(reply)));
    const remove = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `endpoint-delete-${ep.name}`, disabled: ep.state === 'deleting' }, 'Delete'));
    remove.addEventListener('click', () => openDelete(cluster, ep, ctx.signal, (reply) => settle(reply)));
    return [test, ' ', scale, ' ', remove];
  }

  function pool(ep) {
    const choices = ['unassigned', ...(ep.pool_models || [])];
    return h('div', { class: 'card', testid: `pool-${ep.name}` },
      h('div', { class: 'card-head' }, h('h2', null, `Pool ${ep.name}`),
        h('span', { class: 'sub' }, 'Which worker serves which model. Reassigning changes only the worker\'s label; the worker stays.')),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data' },
          h('thead', null, h('tr', null, ['Worker', 'Model', 'Ready', 'Node', ''].map((t) => h('th', null, t)))),
          h('tbody', null, (ep.workers || []).map((w) => worker(ep, w, choices))))));
  }

  function worker(ep, w, choices) {
    const select = guard(h('select', { testid: `worker-model-select-${w.name}`, 'aria-label': `Model for ${w.name}` },
      choices.map((m) => h('option', { value: m, selected: m === w.model }, m))));
    const button = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: `worker-reassign-${w.name}` }, 'Reassign'));
    button.addEventListener('click', async () => {
      if (select.value === w.model) return;
      busy = true;
      button.dataset.busy = '1';
      try {
        const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/endpoints/${encodeURIComponent(ep.name)}/reassign`,
          { body: { worker: w.name, model: select.value }, signal: ctx.signal });
        if (reply && reply.operation) await follow(reply.operation.id);
      } catch (e) {
        if (!isAbort(e)) toastError(e);
      } finally {
        busy = false;
        load();
      }
    });
    return h('tr', { testid: `worker-row-${w.name}` },
      h('td', null, h('span', { class: 'id' }, w.name)),
      h('td', { testid: `worker-model-${w.name}` }, w.model),
      h('td', null, w.ready ? 'yes' : 'no'),
      h('td', null, h('span', { class: 'id' }, w.node || '—')),
      h('td', { class: 'nowrap' }, select, ' ', button));
  }

  /** After a create or delete: show it now, and again as soon as its operation ends. */
  async function settle(reply) {
    load();
    if (!reply || !reply.operation) return;
    try {
      await follow(reply.operation.id);
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
    load();
  }

  async function follow(id) {
    for (;;) {
      const op = await api(`/api/v1/operations/${encodeURIComponent(id)}`, { signal: ctx.signal });
      if (rules.finished.has(op.status)) {
        if (op.status !== rules.status.SUCCEEDED) toastError(new Error((op.error && op.error.message) || op.status));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  load();
  timer = setInterval(load, REFRESH_MS);
  return () => clearInterval(timer);
}
