// The jobs page's MLflow card: the cluster's tracking server (GET …/mlflow) and its actions —
// create hypd's own, attach an existing one by name or ARN, detach (refused, 409 in_use,
// while jobs log to it: listed, and forced only once the user types its name), open the
// MLflow UI (a presigned URL asked for on the click and opened at once, never kept or shown).

import { api, isAbort, mutator, canMutate } from '../api.js';
import { refusedFields, withFieldError } from '../form_fields.js';
import { h, clear, badge, toast, toastError, guard, roleHint, loading } from '../ui.js';
import { waitOperation } from '../feed.js';
import { confirmDestroy } from '../confirm.js';
import { rules } from '../rules.js';

const SETTLING = new Set(['creating', 'attaching', 'detaching', 'settling']);
const REFRESH_MS = 3000;

export async function openMlflowUi(cluster, signal) {
  try {
    const reply = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/mlflow/ui-url`, { signal });
    window.open(reply.url, '_blank', 'noopener');
  } catch (e) {
    if (!isAbort(e)) toastError(e);
  }
}

export function mountMlflow(card, ctx, cluster) {
  const path = `/api/v1/clusters/${encodeURIComponent(cluster)}/mlflow`;
  const send = mutator();
  let timer = null;
  let fieldErrs = {}; // the last refusal's per-field messages (size, tracking_server), until the next send
  card.append(h('div', { class: 'card-body' }, loading('Loading MLflow…')));

  async function load(poll = true) {
    clearTimeout(timer);
    try {
      render(await api(path, { signal: ctx.signal }), poll);
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  async function change(method, body, done) {
    fieldErrs = {};
    try {
      const reply = await send(path, { method, body, signal: ctx.signal });
      toast(reply.changed === false ? reply.message : done, { kind: 'info', timeout: 3000 });
      if (reply.operation) return follow(reply.operation.id);
    } catch (e) {
      if (isAbort(e)) return;
      fieldErrs = refusedFields(e);
      toastError(e);
    }
    load();
  }

  /** A control with the last refusal's message for its field, on its own line. */
  const withError = (field, control) => withFieldError('mlflow', field, control, fieldErrs[field]);

  function openDetach(view) {
    confirmDestroy({
      kind: 'tracking server from cluster', name: cluster, verb: 'Detach', confirmText: 'Detach', url: path,
      action: 'mlflow-detach', signal: ctx.signal, send,
      about: h('p', { testid: 'mlflow-detach-about' },
        view.tracking_server ? ['Detaches tracking server ', h('b', { class: 'id' }, view.tracking_server.name), ': '] : 'Detaches what a failed attach left: ',
        'new jobs stop logging to it; the jobs\' role and identities go. ',
        view.made_by_hypd ? 'It is deleted with its runs (hypd made it).' : 'It is kept (hypd did not make it).'),
    }).then((reply) => {
      if (!reply) return;
      toast('Detaching the tracking server.', { kind: 'info', timeout: 3000 });
      if (reply.operation) follow(reply.operation.id);
    });
  }

  // the operation is long-polled (the API answers at its next change), the card re-read at
  // each change: no fixed timer stands between a step's end and what the card shows
  async function follow(opId) {
    await load(false);
    const op = await waitOperation(opId, {
      signal: ctx.signal,
      onChange: (read) => { if (!rules.finished.has(read.status)) load(false); },
    });
    if (op) load();
  }

  function render(view, poll) {
    clear(card);
    const server = view.tracking_server || {};
    const body = h('div', { class: 'card-body', testid: 'mlflow-card' },
      h('h2', null, 'MLflow ', badge(view.state, { testid: 'mlflow-state' })),
      h('p', { class: 'muted small' }, 'Jobs submitted while a tracking server is attached log to it: ',
        h('code', null, 'MLFLOW_TRACKING_URI'), ' (its ARN), ', h('code', null, 'MLFLOW_EXPERIMENT_NAME'),
        ' (the job\'s name unless its env names one), and a role allowed to log to that tracking server only.'));
    if (view.tracking_server) {
      body.append(h('dl', { class: 'kv' },
        h('dt', null, 'Tracking server'), h('dd', { testid: 'mlflow-arn' }, server.arn || server.name),
        h('dt', null, 'Status'), h('dd', null, server.status || '—'),
        h('dt', null, 'Made by hypd'), h('dd', null, view.made_by_hypd ? 'yes (detaching deletes it)' : 'no (detaching keeps it)')));
    }
    if (view.message) body.append(h('p', { class: 'muted small', testid: 'mlflow-message' }, view.message));
    if (view.operation_id) body.append(h('p', { class: 'small' }, h('a', { href: `#/operations/${view.operation_id}` }, 'last operation')));
    const actions = h('div', { class: 'actions' });
    if (view.state === 'ready' && canMutate()) {
      const open = h('button', { type: 'button', class: 'btn btn-sm', testid: 'mlflow-open' }, 'Open MLflow UI');
      open.addEventListener('click', () => openMlflowUi(cluster, ctx.signal));
      actions.append(open);
    }
    if (view.tracking_server || view.state === 'failed') {
      const detach = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: 'mlflow-detach' }, 'Detach'));
      detach.addEventListener('click', () => openDetach(view));
      actions.append(detach);
    } else if (view.state === 'none') {
      const size = guard(h('select', { testid: 'mlflow-size', 'aria-label': 'Tracking server size' }, ...['Small', 'Medium', 'Large'].map((s) => h('option', { value: s }, s))));
      const create = guard(h('button', { type: 'button', class: 'btn btn-sm btn-primary', testid: 'mlflow-create' }, 'Create tracking server'));
      create.addEventListener('click', () => change('PUT', { size: size.value }, 'Creating the tracking server (about 20 minutes on AWS).'));
      const existing = guard(h('input', { type: 'text', testid: 'mlflow-existing', 'aria-label': 'An existing tracking server', placeholder: 'existing tracking server: name or ARN' }));
      const attach = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: 'mlflow-attach' }, 'Attach'));
      attach.addEventListener('click', () => {
        if (existing.value.trim()) change('PUT', { tracking_server: existing.value.trim() }, 'Attaching the tracking server.');
      });
      actions.append(...withError('size', size), create, ...withError('tracking_server', existing), attach);
    }
    body.append(actions);
    const hint = roleHint('creating, attaching or detaching MLflow', 'mlflow-role-hint');
    if (hint) body.append(hint);
    card.append(body);
    // an operation elsewhere (another tab, an agent) or AWS settling: look again later
    if (poll && SETTLING.has(view.state) && !ctx.signal.aborted) timer = setTimeout(load, REFRESH_MS);
  }

  load();
}
