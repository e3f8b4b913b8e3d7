// #/clusters/<name> — one cluster: EKS and HyperPod state, its state in words (a cancelled or
// failed create says so), each stage with an honest mark and a Re-run button, after a stopped
// create what is left in AWS with its hourly cost and the two ways on (Resume, Delete),
// instance groups, nodes by health (both linking to the capacity page, where they change),
// the Advanced features panel, Diagnostics (read-only, on request), recent HyperPod events, kubeconfig download.

import { api, isAbort, uuid4, canMutate } from '../api.js';
import { h, clear, fill, badge, idEl, toastError, guard, roleHint, loading, absTime, relTime, whenVisible, duration, parseTime, shortId } from '../ui.js';
import { stageTitle, stageBlurb, stageMark, stageExpected } from '../stages.js';
import { mountLeftovers } from './cluster_left.js';
import { rules } from '../rules.js';
import { openDeleteDialog, setActive, downloadKubeconfig, opCell } from './clusters.js';
import { capacityHref } from '../capacity/links.js';
import { mountFeatures } from './cluster_features.js';
import { mountDiagnostics } from './cluster_diagnostics.js';
import { mountCost } from './cluster_cost.js';

const REFRESH_MS = 15000;
const REFRESH_BUSY_MS = 3000;
const TRANSITIONAL = /^(creating|updating|deleting|pending|systemupdating|rollingback)$/i;
const MAX_EVENTS = 50;
const KIND_TEXT = { 'cluster.create': 'create', 'cluster.stage': 're-run', 'cluster.delete': 'delete' };

export function mount(root, ctx) {
  const name = ctx.params[0];
  const state = { c: null, ops: [], active: null, inflight: false, rerunning: null };

  const body = h('div', null, loading(`Reading cluster ${name}…`));
  root.append(h('div', { class: 'crumbs' }, h('a', { href: '#/clusters', testid: 'back-to-clusters' }, '← Clusters')), body);

  const head = h('div', { class: 'page-head-block' });
  const activity = h('div', { testid: 'cluster-activity-banner' });
  const leftBox = h('div', { testid: 'cluster-left-box' });
  const stagesBox = h('ol', { class: 'stage-list', testid: 'cluster-stages' });
  const groupsBody = h('tbody', { testid: 'cluster-groups-body' });
  const eventsList = h('ul', { class: 'events hp-events', testid: 'cluster-events', tabindex: 0, 'aria-label': 'HyperPod events' }); // scrolls: reachable by keyboard
  const statusBox = h('dl', { class: 'kv', testid: 'cluster-status' });
  const nodesBox = h('div', { class: 'card-body', testid: 'cluster-nodes' });
  const featuresBox = h('div', { testid: 'cluster-features' });
  const diagnosticsBox = h('div', { testid: 'cluster-diagnostics' });
  const costBox = h('div', { testid: 'cluster-cost-body' });
  const linksBox = h('div', { class: 'card-body links', testid: 'cluster-links' });
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'cluster-refresh', onclick: () => load() }, 'Refresh');
  const updated = h('span', { class: 'sub', testid: 'cluster-updated' });
  const stagesNote = h('span', { class: 'sub' });

  const layout = h('div', null,
    head,
    activity,
    leftBox,
    h('div', { class: 'grid-detail' },
      h('div', null,
        h('div', { class: 'card', testid: 'cluster-stages-card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Stages'), stagesNote, h('span', { class: 'spacer' }), updated, refreshBtn),
          stagesBox),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'On this cluster')),
          h('nav', { class: 'card-body links', testid: 'cluster-pages', 'aria-label': 'This cluster\'s pages' },
            ...(ctx.clusterPages || []).flatMap((p, i) => [i ? ' · ' : null,
              h('a', { href: `#/clusters/${encodeURIComponent(name)}/${p.path}`, testid: p.testid }, `${p.text} →`)]))),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Instance groups'), h('span', { class: 'spacer' }),
            h('a', { href: capacityHref(name), testid: 'cluster-capacity-link' }, 'Add, change, delete →')),
          h('div', { class: 'table-wrap' },
            h('table', { class: 'data', testid: 'cluster-groups' },
              h('thead', null, h('tr', null,
                h('th', null, 'Group'), h('th', null, 'Instance type'), h('th', { class: 'num' }, 'Count'),
                h('th', null, 'Capacity'), h('th', null, 'Network'), h('th', null, 'Status'))),
              groupsBody))),
        h('div', { class: 'card', testid: 'cluster-cost' },
          h('div', { class: 'card-head' }, h('h2', null, 'Cost'), h('span', { class: 'spacer' }),
            h('span', { class: 'sub' }, 'while it runs: AWS list prices, not a bill')),
          costBox),
        h('div', { class: 'card', testid: 'advanced-features' },
          h('div', { class: 'card-head' }, h('h2', null, 'Advanced features'), h('span', { class: 'spacer' }),
            h('span', { class: 'sub' }, 'as the cluster has them now')),
          featuresBox),
        h('div', { class: 'card', testid: 'diagnostics' },
          h('div', { class: 'card-head' }, h('h2', null, 'Diagnostics'), h('span', { class: 'spacer' }),
            h('span', { class: 'sub' }, 'read-only: findings, evidence, next commands')),
          diagnosticsBox),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Recent HyperPod events'), h('span', { class: 'spacer' }),
            h('span', { class: 'sub' }, 'newest first')),
          eventsList)),
      h('div', null,
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Status')),
          h('div', { class: 'card-body' }, statusBox)),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Nodes'), h('span', { class: 'spacer' }),
            h('a', { href: capacityHref(name), testid: 'cluster-nodes-link' }, 'Nodes and actions →')),
          nodesBox),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Operations')),
          linksBox))));

  const features = mountFeatures(featuresBox, ctx, name);
  const leftovers = mountLeftovers(leftBox, ctx, { onDeleted: () => load() });
  mountDiagnostics(diagnosticsBox, ctx, name);
  mountCost(costBox, ctx, name);

  // ---------- load ----------

  async function load() {
    if (state.inflight) return;
    state.inflight = true;
    try {
      const enc = encodeURIComponent(name);
      const [c, ops, active] = await Promise.all([
        api(`/api/v1/clusters/${enc}`, { signal: ctx.signal }),
        api(`/api/v1/operations?target=${encodeURIComponent(`cluster/${name}`)}&limit=50`, { signal: ctx.signal })
          .catch((e) => { if (isAbort(e)) throw e; return null; }),
        api('/api/v1/active-cluster', { signal: ctx.signal }).catch((e) => { if (isAbort(e)) throw e; return null; }),
      ]);
      if (state.c) features.refresh();
      state.c = c;
      if (ops) state.ops = (ops.items || []).filter((op) => op.target === `cluster/${name}`);
      if (active) state.active = active.name;
      updated.textContent = `updated ${new Date().toLocaleTimeString(undefined, { hour12: false })}`;
      render();
    } catch (e) {
      if (isAbort(e)) return;
      if (e.status === 404) {
        body.replaceChildren(h('div', { class: 'card', testid: 'cluster-missing' },
          h('div', { class: 'empty' }, e.message, '. ', h('a', { href: '#/clusters' }, 'Back to clusters'))));
        state.c = null;
        return;
      }
      updated.textContent = 'refresh failed';
      if (!state.c) body.replaceChildren(h('div', { class: 'card' }, h('div', { class: 'empty' }, e.message)));
      toastError(e);
    } finally {
      state.inflight = false;
      schedule();
    }
  }

  const running = () => state.ops.find((op) => !rules.finished.has(op.status)) || null;

  // ---------- render ----------

  function render() {
    const c = state.c;
    renderHead(c);
    renderActivity();
    leftovers.render(c, running());
    renderStages(c);
    renderGroups(c);
    renderNodes(c);
    renderEvents(c);
    renderStatus(c);
    renderLinks();
    if (body.firstChild !== layout) body.replaceChildren(layout);
  }

  function renderHead(c) {
    const isActive = state.active === c.name;
    const hasEks = !!c.eks;
    const del = running() && running().kind === 'cluster.delete';
    const activate = guard(h('button', {
      type: 'button', class: 'btn', testid: 'cluster-activate', disabled: isActive,
      title: isActive ? 'Already your active cluster' : 'Make it your active cluster (per token)',
      onclick: async () => {
        if (!canMutate()) return;
        try {
          await setActive(c.name, ctx.signal);
          state.active = c.name;
          renderHead(state.c);
        } catch (e) { if (!isAbort(e)) toastError(e, 'Set active: '); }
      },
    }, isActive ? '★ Active' : 'Set active'));
    const kube = h('button', {
      type: 'button', class: 'btn', testid: 'cluster-kubeconfig', disabled: !hasEks,
      title: hasEks ? 'Download a kubeconfig file (YAML) that signs in with aws eks get-token' : 'There is no EKS cluster yet',
    }, 'Download kubeconfig');
    kube.addEventListener('click', async () => {
      kube.disabled = true;
      try { await downloadKubeconfig(c.name, ctx.signal); } catch (e) { if (!isAbort(e)) toastError(e, 'Kubeconfig: '); } finally { kube.disabled = false; }
    });
    const delBtn = guard(h('button', {
      type: 'button', class: 'btn btn-danger', testid: `cluster-delete-${c.name}`, disabled: !!del,
      title: c.imported ? 'Stop listing it; AWS is not touched' : 'Delete everything hypd made for this cluster',
      onclick: () => openDeleteDialog(c, { signal: ctx.signal, onForgotten: () => { location.hash = '#/clusters'; } }),
    }, c.imported ? 'Forget' : 'Delete'));
    fill(head,
      h('div', { class: 'page-head' },
        h('div', { class: 'op-title' },
          h('h1', { class: 'id cluster-title', testid: 'cluster-title' }, c.name),
          isActive ? h('span', { class: 'active-mark', testid: 'cluster-active' }, '★ active') : null,
          c.imported ? badge('imported', { class: 'plain tone-violet', testid: 'cluster-imported' }) : null),
        h('span', { class: 'spacer' }),
        activate, kube, delBtn),
      roleHint('re-running stages, activating or deleting', 'cluster-role-hint'),
      h('div', { class: 'meta' },
        h('span', null, 'region ', h('b', { class: 'id', testid: 'cluster-region' }, c.region || '—')),
        h('span', null, 'EKS ', c.eks ? badge(c.eks.status, { testid: 'cluster-eks-status' }) : h('b', { testid: 'cluster-eks-status' }, 'none')),
        h('span', null, 'HyperPod ', c.hyperpod ? badge(c.hyperpod.status, { testid: 'cluster-hp-status' }) : h('b', { testid: 'cluster-hp-status' }, 'none')),
        h('span', null, 'nodes ', h('b', { testid: 'cluster-nodes-total' }, String((c.nodes && c.nodes.total) || 0))),
        c.state ? h('span', { title: c.state.summary || '' }, 'state ', badge(c.state.status.replace(/_/g, ' '), { testid: 'cluster-state-status', dataset: { status: c.state.status } })) : null),
      c.hyperpod && c.hyperpod.failure_message
        ? h('div', { class: 'banner', role: 'alert', testid: 'cluster-failure' },
          h('div', null, h('b', null, 'HyperPod reports a failure'), h('div', { class: 'msg' }, c.hyperpod.failure_message)))
        : null);
  }

  function renderActivity() {
    const op = running();
    if (!op) { clear(activity); delete activity.dataset.op; return; }
    activity.dataset.op = op.id;
    const what = op.kind === 'cluster.stage' ? `Re-running the ${op.params && op.params.stage} stage`
      : op.kind === 'cluster.delete' ? 'Deleting this cluster' : op.kind === 'cluster.create' ? 'Creating this cluster' : op.kind;
    fill(activity, h('div', { class: 'banner info activity' },
      h('div', { class: 'msg' }, h('b', null, what), ' — ', opCell(op), ' ',
        h('a', { href: `#/operations/${encodeURIComponent(op.id)}`, testid: 'cluster-activity-link' }, 'follow progress →'))));
  }

  function renderStages(c) {
    clear(stagesBox);
    if (c.imported) {
      stagesNote.textContent = '';
      stagesBox.appendChild(h('li', { class: 'empty', testid: 'cluster-stages-imported' },
        'Imported read-only: hypd did not create this cluster, so it has no stages to re-run.'));
      return;
    }
    const stages = (c.stages && c.stages.length ? c.stages : rules.stages.map((s) => ({ name: s, status: rules.stage.NOT_RUN, steps: [] })));
    const done = stages.filter((s) => s.status === rules.stage.SUCCEEDED).length;
    const skipped = stages.filter((s) => s.status === rules.stage.SKIPPED).length;
    stagesNote.textContent = `${done} of ${stages.length} succeeded${skipped ? ` · ${skipped} skipped` : ''}`;
    const busy = running();
    stages.forEach((s, i) => stagesBox.appendChild(stageRow(s, i, busy)));
  }

  function stageRow(s, i, busy) {
    const steps = s.steps || [];
    const ok = steps.filter((x) => x.phase === rules.phase.SUCCEEDED).length;
    const failedStep = steps.find((x) => x.phase === rules.phase.FAILED);
    const error = s.error || (failedStep && failedStep.detail ? { step: failedStep.name, message: failedStep.detail } : null);
    const rerunBusy = state.rerunning === s.name;
    const btn = guard(h('button', {
      type: 'button', class: s.status === rules.stage.FAILED ? 'btn btn-sm btn-primary' : 'btn btn-sm', testid: `stage-rerun-${s.name}`,
      disabled: !!busy || !!state.rerunning,
      title: busy ? `Wait for ${busy.kind} ${busy.id} to finish` : 'Run this stage again on its own: it adopts what exists and makes only what is missing',
    }, rerunBusy ? 'Starting…' : 'Re-run'));
    btn.addEventListener('click', () => rerun(s.name));
    return h('li', { class: 'stage-row', testid: `stage-${s.name}`, dataset: { stage: s.name, status: s.status } },
      h('span', { class: 'idx', testid: `stage-mark-${s.name}` }, stageMark(s.status, i)),
      h('div', { class: 'stage-main' },
        h('div', { class: 'stage-title' }, stageTitle(s.name), h('span', { class: 'name' }, s.name)),
        h('div', { class: 'stage-blurb' }, stageBlurb(s.name)),
        s.status === rules.stage.RUNNING || s.status === rules.stage.PENDING || s.status === rules.stage.NOT_RUN
          ? h('div', { class: 'faint stage-expected', testid: `stage-expected-${s.name}` }, stageExpected(s.name, runningFor(s), duration))
          : null,
        steps.length
          ? h('div', { class: 'step-dots', title: steps.map((x) => `${x.name}: ${x.phase}`).join('\n') },
            steps.map((x) => h('span', { class: 'dot', dataset: { phase: x.phase }, title: `${x.name}: ${x.phase}` })),
            h('span', { class: 'faint' }, ` ${ok}/${steps.length} steps`))
          : null,
        error ? h('div', { class: 'stage-error', testid: `stage-error-${s.name}` }, `${error.step}: ${error.message}`) : null,
        s.status === rules.stage.SKIPPED ? h('div', { class: 'faint stage-skip' }, 'skipped: a cancel came before it; nothing of it ran') : null),
      h('div', { class: 'stage-side' },
        s.operation_id
          ? h('a', { href: `#/operations/${encodeURIComponent(s.operation_id)}`, class: 'id faint', testid: `stage-op-${s.name}`, title: 'The operation that last ran this stage' }, shortId(s.operation_id))
          : null,
        badge(s.status, { testid: `stage-status-${s.name}` }),
        btn));
  }

  async function rerun(stage) {
    if (!canMutate() || state.rerunning) return;
    state.rerunning = stage;
    renderStages(state.c);
    try {
      const reply = await api(`/api/v1/clusters/${encodeURIComponent(name)}/stages/${encodeURIComponent(stage)}/run`, {
        method: 'POST', headers: { 'Idempotency-Key': uuid4() }, signal: ctx.signal,
      });
      const op = reply && reply.operation;
      if (op && op.id) {
        location.hash = `#/operations/${encodeURIComponent(op.id)}`;
        return;
      }
      load();
    } catch (e) {
      if (isAbort(e)) return;
      toastError(e, `Re-run ${stage}: `);
      state.rerunning = null;
      if (state.c) renderStages(state.c);
    }
  }

  function renderGroups(c) {
    clear(groupsBody);
    const groups = c.instance_groups || [];
    if (!groups.length) {
      groupsBody.appendChild(h('tr', null, h('td', { colspan: 6 },
        h('div', { class: 'empty', testid: 'cluster-groups-empty' }, c.hyperpod ? 'No instance groups.' : 'No HyperPod cluster yet.'))));
      return;
    }
    for (const g of groups) {
      const dhc = (g.deep_health_checks || []).length;
      groupsBody.appendChild(h('tr', { testid: `group-row-${g.name}`, dataset: { name: g.name } },
        h('td', null, h('b', { class: 'id' }, g.name),
          dhc ? h('span', { class: 'sub-id', title: g.deep_health_checks.join(', ') }, 'deep health checks') : null),
        h('td', null, h('span', { class: 'id' }, g.instance_type || '—')),
        h('td', { class: 'num nowrap', testid: 'group-count' },
          `${g.current_count ?? '—'}`, h('span', { class: 'faint' }, ` / ${g.target_count ?? '—'}`),
          g.min_count != null ? h('span', { class: 'sub-id' }, `min ${g.min_count}`) : null),
        h('td', null, badge(g.capacity_type || rules.defaultCapacityType, { class: 'plain' }),
          g.training_plan_arn ? h('span', { class: 'sub-id trunc', title: g.training_plan_arn }, g.training_plan_arn.split('/').pop()) : null),
        h('td', null, h('span', { class: 'id', testid: 'group-efa-mode' }, g.efa_mode || 'default'),
          (g.subnet_ids || []).length ? h('span', { class: 'sub-id', title: g.subnet_ids.join('\n') }, g.subnet_ids.join(', ')) : null),
        h('td', null, badge(g.status))));
    }
  }

  function renderNodes(c) {
    const nodes = c.nodes || { total: 0, by_status: {} };
    const entries = Object.entries(nodes.by_status || {}).sort((a, b) => b[1] - a[1]);
    const total = nodes.total || 0;
    const bar = h('div', { class: 'bar nodes-bar', role: 'img', 'aria-label': entries.map(([k, v]) => `${v} ${k}`).join(', ') || 'no nodes' });
    for (const [k, v] of entries) {
      const seg = h('span', { class: `seg node-${nodeTone(k)}`, title: `${v} ${k}` });
      seg.style.width = `${total ? (100 * v) / total : 0}%`;
      bar.appendChild(seg);
    }
    fill(nodesBox,
      h('div', { class: 'nodes-total' }, h('span', { class: 'big' }, String(total)), h('span', { class: 'muted' }, total === 1 ? ' node' : ' nodes')),
      total ? bar : null,
      entries.length
        ? h('ul', { class: 'node-counts' }, entries.map(([k, v]) => h('li', { testid: `nodes-${k}`, dataset: { status: k, count: String(v) } },
          h('span', { class: `sw node-${nodeTone(k)}` }), h('span', null, k), h('b', null, String(v)))))
        : h('div', { class: 'faint' }, c.hyperpod ? 'No nodes reported.' : 'No HyperPod cluster yet.'));
  }

  function renderEvents(c) {
    clear(eventsList);
    const events = (c.events || []).slice(0, MAX_EVENTS);
    for (const ev of events) {
      const level = String(ev.level || 'Info').toLowerCase();
      eventsList.appendChild(h('li', { testid: 'cluster-event', dataset: { level } },
        h('time', { datetime: ev.at || '', title: absTime(ev.at) }, shortTime(ev.at)),
        h('div', { class: 'what' },
          level !== 'info' ? badge(ev.level, { class: `plain tone-${level === 'error' ? 'red' : 'amber'}` }) : null,
          ' ', ev.description || '',
          ev.instance_group || ev.instance_id
            ? h('div', { class: 'd id' }, [ev.instance_group, ev.instance_id].filter(Boolean).join(' · '))
            : null)));
    }
  }

  // EKS's support of the version: extended support is billed on top of the cluster hour,
  // ended means EKS upgrades the cluster itself (vocabulary/kubernetes_versions.py).
  function supportBadge(support) {
    if (!support) return null;
    const [text, tone, title] = {
      standard: [`standard support until ${support.end_of_standard_support}`, 'faint',
        `extended support, billed on top of the cluster hour, from ${support.end_of_standard_support}`],
      extended: [`extended support until ${support.end_of_extended_support}`, 'tone-amber',
        `past EKS standard support since ${support.end_of_standard_support}: extended support is billed on top of the cluster hour; upgrade to stop it`],
      ended: ['EKS support ended', 'tone-red',
        `EKS ended support on ${support.end_of_extended_support} and upgrades such clusters itself`],
    }[support.support] || [support.support, 'faint', ''];
    return badge(text, { class: `plain ${tone}`, title, testid: 'status-k8s-support', dataset: { support: support.support } });
  }

  function renderStatus(c) {
    const rows = [];
    const eks = c.eks;
    rows.push(['EKS', eks ? badge(eks.status) : h('span', { class: 'faint' }, 'not created')]);
    if (eks) {
      rows.push(['version', [eks.version || '—', ' ', supportBadge(eks.support)]]);
      rows.push(['endpoint', eks.endpoint ? h('span', { class: 'id' }, eks.endpoint) : '—']);
      rows.push(['EKS ARN', idEl(eks.arn)]);
    }
    const hp = c.hyperpod;
    rows.push(['HyperPod', hp ? badge(hp.status) : h('span', { class: 'faint' }, 'not created')]);
    if (hp) {
      rows.push(['node recovery', hp.node_recovery || '—']);
      rows.push(['provisioning', hp.node_provisioning_mode || '—']);
      rows.push(['autoscaling', [hp.autoscaling ? h('span', { class: 'id' }, typeof hp.autoscaling === 'object' ? Object.entries(hp.autoscaling).map(([k, v]) => `${k}=${v}`).join(' ') : String(hp.autoscaling)) : h('span', { class: 'faint' }, 'off'),
        h('span', { class: 'sub-id', testid: 'status-autoscaling-scope' }, 'HyperPod instance groups only, not general EC2 capacity')]]);
      rows.push(['HyperPod ARN', idEl(hp.arn)]);
    }
    clear(statusBox).append(...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', { dataset: { k } }, v)]));
  }

  function renderLinks() {
    const create = state.ops.find((op) => op.kind === 'cluster.create');
    const recent = state.ops.slice(0, 6);
    fill(linksBox,
      h('div', { class: 'last-create' }, h('span', { class: 'muted' }, 'Last create '),
        create
          ? [h('a', { href: `#/operations/${encodeURIComponent(create.id)}`, class: 'id', testid: 'cluster-create-op', title: create.id }, shortId(create.id)), ' ', badge(create.status)]
          : h('span', { class: 'faint', testid: 'cluster-create-op' }, state.c && state.c.imported ? 'imported: none' : 'none found')),
      recent.length
        ? h('ul', { class: 'op-mini', testid: 'cluster-ops' }, recent.map((op) => h('li', null,
          h('a', { href: `#/operations/${encodeURIComponent(op.id)}`, title: op.id },
            KIND_TEXT[op.kind] || op.kind, op.kind === 'cluster.stage' && op.params && op.params.stage ? ` ${op.params.stage}` : ''),
          badge(op.status),
          h('span', { class: 'faint nowrap' }, relTime(op.created_at)))))
        : null,
      h('a', { class: 'all-ops', href: `#/operations?target=${encodeURIComponent(`cluster/${name}`)}` }, 'All operations on this cluster →'));
  }

  // ---------- refresh ----------

  let timer = null;
  function schedule() {
    clearTimeout(timer);
    if (ctx.signal.aborted || (!state.c && !state.inflight && body.querySelector('[data-testid=cluster-missing]'))) return;
    const c = state.c;
    const busy = running()
      || (c && c.stages || []).some((s) => s.status === rules.stage.RUNNING)
      || (c && c.eks && TRANSITIONAL.test(c.eks.status || ''))
      || (c && c.hyperpod && TRANSITIONAL.test(c.hyperpod.status || ''));
    timer = setTimeout(() => { if (!document.hidden) load(); else schedule(); }, busy ? REFRESH_BUSY_MS : REFRESH_MS);
  }

  load();
  const stopVisible = whenVisible(load);
  return () => {
    clearTimeout(timer);
    stopVisible();
  };
}

function shortTime(t) {
  const ms = Date.parse(t || '');
  if (Number.isNaN(ms)) return '—';
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

function nodeTone(status) {
  const s = String(status).toLowerCase();
  if (s === 'running') return 'ok';
  if (/fail|unhealthy|error/.test(s)) return 'bad';
  if (/pending|updating|check|launch/.test(s)) return 'run';
  return 'other';
}

/** How long a running stage has run (since its first step started); null otherwise. */
function runningFor(stage) {
  if (stage.status !== rules.stage.RUNNING) return null;
  const starts = (stage.steps || []).map((x) => parseTime(x.started_at)).filter((t) => t !== null);
  return starts.length ? Date.now() - Math.min(...starts) : null;
}
