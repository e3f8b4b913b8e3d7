// The cluster page's account of a create (or delete) that stopped short: what happened, in
// the API's words (GET /clusters/<name> `state`), what it left in AWS with the hourly cost of
// it (`left_in_aws`, priced as the plan is), and the two ways on (`next_actions`): Resume
// retries the operation that stopped, Delete removes what was made (the delete dialog).

import { api, isAbort, uuid4, canMutate } from '../api.js';
import { h, clear, fill, badge, guard, toastError, idEl } from '../ui.js';
import { costBody, costSource } from '../cost.js';
import { openDeleteDialog } from './clusters.js';

const TYPE_TEXT = {
  vpc: 'VPC', subnet: 'subnet', internet_gateway: 'internet gateway', nat_gateway: 'NAT gateway',
  elastic_ip: 'Elastic IP', route_table: 'route table', security_group: 'security group',
  vpc_endpoint: 'VPC endpoint', iam_role: 'IAM role', oidc_provider: 'OIDC provider',
  s3_bucket: 'S3 bucket', eks_cluster: 'EKS cluster', hyperpod_cluster: 'HyperPod cluster',
  fsx_file_system: 'FSx file system',
};

/** mountLeftovers(box, ctx, {onDeleted}) → {render(cluster, runningOp)} */
export function mountLeftovers(box, ctx, { onDeleted }) {
  let resuming = false;

  function render(c, busy) {
    const state = c.state || {};
    const left = c.left_in_aws;
    if (!left && !(c.next_actions || []).length) { clear(box); return; }
    fill(box,
      h('div', { class: 'banner unhappy', role: 'status', testid: 'cluster-state', dataset: { status: state.status || '' } },
        h('div', { class: 'msg' }, h('b', null, headline(state)), ' — ', state.summary || '')),
      left ? card(c, left, busy) : actions(c, busy));
  }

  function headline(state) {
    return {
      create_cancelled: 'Create cancelled', create_failed: 'Create failed', stage_cancelled: 'Stage re-run cancelled',
      stage_failed: 'Stage re-run failed', incomplete: 'Create not finished', delete_failed: 'Delete failed',
      delete_cancelled: 'Delete cancelled',
    }[state.status] || state.status;
  }

  function card(c, left, busy) {
    const items = left.items || [];
    const billed = items.filter((i) => i.billed_hourly);
    return h('div', { class: 'card left-card', testid: 'cluster-left', dataset: { hourly: String(left.cost ? left.cost.hourly_usd : ''), items: String(items.length) } },
      h('div', { class: 'card-head' }, h('h2', null, 'Left in AWS'),
        h('span', { class: 'sub' }, `${items.length} made by hypd and still there${billed.length ? `, ${billed.length} billed by the hour` : ''}; read from AWS now`),
        h('span', { class: 'spacer' }), left.cost ? costSource(left.cost, 'left-cost') : null),
      h('div', { class: 'card-body left-grid' },
        h('div', null, left.cost ? costBody(left.cost, 'left-cost') : null),
        h('div', { class: 'table-wrap' },
          h('table', { class: 'data mini-data', testid: 'cluster-left-items' },
            h('thead', null, h('tr', null, h('th', null, 'What'), h('th', null, 'Id'), h('th', null, 'State'), h('th', null, 'Made by'))),
            h('tbody', null, items.map(itemRow))),
          (left.gone || []).length
            ? h('div', { class: 'faint', testid: 'cluster-left-gone' }, `${left.gone.length} more it made are gone already: `,
              left.gone.map((g) => `${TYPE_TEXT[g.type] || g.type} ${g.id}`).join(', '))
            : null)),
      h('div', { class: 'card-foot' }, actions(c, busy)));
  }

  function itemRow(i) {
    return h('tr', { testid: `left-item-${i.type}`, dataset: { type: i.type, id: i.id, billed: i.billed_hourly ? '1' : '' } },
      h('td', { class: 'nowrap' }, TYPE_TEXT[i.type] || i.type,
        i.billed_hourly ? badge('billed hourly', { class: 'plain tone-amber', testid: 'left-billed' }) : null),
      h('td', null, idEl(i.id),
        (i.nodes || []).length ? h('div', { class: 'sub-id' }, i.nodes.map((n) => `${n.count} × ${n.instance_type} (${n.instance_group})`).join(', ')) : null),
      h('td', null, i.exists === null ? badge('unknown', { class: 'plain tone-red', title: i.note || '' }) : (i.state || '—')),
      h('td', { class: 'faint nowrap' }, `${i.stage} · ${i.step}`));
  }

  // The ways on, as the API names them: each button says the route it calls.
  function actions(c, busy) {
    const byAction = Object.fromEntries((c.next_actions || []).map((a) => [a.action, a]));
    const resume = byAction.resume;
    const del = byAction.delete;
    const why = busy ? `Wait for ${busy.kind} ${busy.id} to finish` : null;
    return h('div', { class: 'left-actions', testid: 'cluster-next-actions' },
      resume ? guard(h('button', {
        type: 'button', class: 'btn btn-primary', testid: 'cluster-resume', disabled: !!busy || resuming,
        title: why || `${resume.why} (${resume.rest.method} ${resume.rest.path})`,
        onclick: () => doResume(resume),
      }, resuming ? 'Resuming…' : resume.title)) : null,
      del ? guard(h('button', {
        type: 'button', class: 'btn btn-danger', testid: 'cluster-delete-made', disabled: !!busy,
        title: why || `${del.why} (${del.rest.method} ${del.rest.path})`,
        onclick: () => openDeleteDialog(c, { signal: ctx.signal, onForgotten: onDeleted }),
      }, del.title)) : null,
      h('span', { class: 'faint' }, [resume, del].filter(Boolean).map((a) => `${a.rest.method} ${a.rest.path}`).join('  |  ')));
  }

  async function doResume(action) {
    if (!canMutate() || resuming) return;
    resuming = true;
    try {
      const reply = await api(action.rest.path, { method: action.rest.method, headers: { 'Idempotency-Key': uuid4() }, signal: ctx.signal });
      const op = reply && reply.operation;
      if (op && op.id) location.hash = `#/operations/${encodeURIComponent(op.id)}`;
    } catch (e) {
      if (!isAbort(e)) toastError(e, 'Resume: ');
    } finally {
      resuming = false;
    }
  }

  return { render };
}
