// The cluster page's Advanced features panel: each managed feature as it actually is
// (GET /clusters/<c>/features), a toggle per feature, tiered checkpointing's memory share and
// autoscaling's per-group min/max. Apply sends only what the user touched — one PATCH per
// touched feature (each is its own operation) — and shows "no change" when the cluster was
// already as asked. Turning a feature off asks first through the one confirmation
// (confirm.js): what uses it is listed from the dry run, and force is sent only once the user
// types the feature's name.

import { api, isAbort, uuid4, canMutate } from '../api.js';
import { refusedFields, withFieldError } from '../form_fields.js';
import { h, clear, fill, badge, guard, toastError } from '../ui.js';
import { waitOperation } from '../feed.js';
import { rules } from '../rules.js';
import { confirmDestroy } from '../confirm.js';

const LABELS = {
  training_operator: 'Training operator',
  inference_operator: 'Inference operator',
  tiered_checkpointing: 'Managed tiered checkpointing',
  autoscaling: 'Managed autoscaling',
  observability: 'Observability',
  task_governance: 'Task governance',
  spaces: 'Spaces (JupyterLab, Code Editor)',
};
const MECHANISMS = { 'pod-identity': 'EKS Pod Identity', irsa: 'IRSA (OIDC)', hyperpod: 'the cluster\'s ClusterRole' };
const FOLLOW_MS = 1500;

export function mountFeatures(box, ctx, name) {
  const path = `/api/v1/clusters/${encodeURIComponent(name)}/features`;
  // fieldErrs: the last Apply's refusals per field (`<feature>.memory_percent`,
  // `<feature>.groups.<group>.<min|max>`), shown on their inputs until the next Apply
  const state = { view: null, touched: {}, results: {}, busy: false, fieldErrs: {} };
  const list = h('div', { class: 'adv-features', testid: 'features-list' }, h('div', { class: 'faint' }, 'Reading features…'));
  const apply = guard(h('button', { type: 'button', class: 'btn btn-primary btn-sm', testid: 'features-apply', disabled: true, onclick: () => send() }, 'Apply'));
  const reset = h('button', { type: 'button', class: 'btn btn-sm', testid: 'features-reset', disabled: true, onclick: () => { state.touched = {}; render(); } }, 'Reset');
  const summary = h('span', { class: 'sub', testid: 'features-touched' });
  fill(box, list, h('div', { class: 'card-foot adv-actions' }, summary, h('span', { class: 'spacer' }), reset, apply));

  async function load() {
    try {
      state.view = await api(path, { signal: ctx.signal });
      render();
    } catch (e) {
      if (isAbort(e)) return;
      fill(list, h('div', { class: 'faint', testid: 'features-error' }, e.message));
    }
  }

  // ---------- what the user touched ----------

  function actual(f) {
    const v = state.view.features[f];
    const groups = {};
    for (const g of v.groups || []) groups[g.name] = g.autoscaled ? { min: g.min, max: g.max } : null;
    return { enabled: v.enabled, memory_percent: v.memory_percent ?? null, groups };
  }

  /** Record a control's value as touched, or untouch it when it is back to the actual one. */
  function touch(f, key, value, group) {
    const base = actual(f);
    const t = state.touched[f] || {};
    if (group) {
      const was = base.groups[group];
      const keys = { ...((t.groups || {})[group] || {}) };
      if (was && value === was[key]) delete keys[key]; else keys[key] = value;
      t.groups = { ...(t.groups || {}) };
      if (Object.keys(keys).length) t.groups[group] = keys; else delete t.groups[group];
      if (!Object.keys(t.groups).length) delete t.groups;
    } else if (value === base[key]) delete t[key];
    else t[key] = value;
    if (Object.keys(t).length) state.touched[f] = t; else delete state.touched[f];
    delete state.results[f];
    renderActions();
  }

  function bodies() {
    return Object.entries(state.touched).map(([f, t]) => {
      const change = {};
      if ('enabled' in t) change.enabled = t.enabled;
      if ('memory_percent' in t && t.memory_percent !== null) change.memory_percent = t.memory_percent;
      if (t.groups) {
        change.groups = {};
        for (const [g, keys] of Object.entries(t.groups)) {
          change.groups[g] = Object.fromEntries(Object.entries(keys).filter(([, v]) => v !== null));
        }
      }
      return [f, { [f]: change }];
    });
  }

  // ---------- sending ----------

  /** A PATCH with its own Idempotency-Key (each touched feature is its own request). */
  const sendOnce = (url, { method, body, signal }) => api(url, { method, body, headers: { 'Idempotency-Key': uuid4() }, signal });

  async function send() {
    if (!canMutate() || state.busy) return;
    state.busy = true;
    state.fieldErrs = {};
    renderActions();
    for (const [f, body] of bodies()) {
      try {
        let reply;
        if (body[f].enabled === false) {
          // turning a feature off is destructive: it asks once, through the one confirmation,
          // which shows the dry run's plan and what still uses it (force: typing its name)
          state.results[f] = { text: 'asking…' };
          renderResult(f);
          reply = await confirmDestroy({
            kind: 'feature', name: f, verb: 'Turn off', confirmText: `Turn off ${LABELS[f] || f}`,
            url: path, method: 'PATCH', body, action: 'feature-off', signal: ctx.signal, send: sendOnce,
            about: h('p', null, `${LABELS[f] || f} is removed from cluster ${name}; what another enabled feature still needs is kept.`),
          });
          if (!reply) {
            state.results[f] = { text: 'not sent', tone: 'plain' };
            renderResult(f);
            continue;
          }
        } else {
          state.results[f] = { text: 'sending…' };
          renderResult(f);
          reply = await sendOnce(path, { method: 'PATCH', body, signal: ctx.signal });
        }
        delete state.touched[f];
        if (reply && reply.changed === false) {
          state.results[f] = { text: 'no change', tone: 'plain' };
        } else if (reply && reply.operation) {
          state.results[f] = { op: reply.operation.id, status: reply.operation.status };
          follow(f, reply.operation.id);
        }
      } catch (e) {
        if (isAbort(e)) return;
        state.results[f] = { text: e.message, error: true };
        Object.assign(state.fieldErrs, refusedFields(e));
        toastError(e, `${LABELS[f] || f}: `);
      }
      renderResult(f);
    }
    state.busy = false;
    load();
  }

  async function follow(f, opId) {
    const done = await waitOperation(opId, {
      signal: ctx.signal,
      retryMs: FOLLOW_MS,
      onChange: (op) => {
        state.results[f] = { op: opId, status: op.status, error: op.status === rules.status.FAILED ? (op.error && op.error.message) : null };
        renderResult(f);
      },
    });
    if (done) load();
  }

  // ---------- rendering ----------

  function render() {
    const v = state.view;
    if (!v) return;
    clear(list);
    // the API's order is alphabetical (JSON keys); show the known ones in the panel's order
    const order = [...Object.keys(LABELS).filter((f) => f in v.features),
      ...Object.keys(v.features).filter((f) => !(f in LABELS))];
    for (const f of order) list.appendChild(row(f, v.features[f]));
    renderActions();
  }

  function row(f, feature) {
    const t = state.touched[f] || {};
    const enabled = 'enabled' in t ? t.enabled : feature.enabled;
    const toggle = guard(h('input', {
      type: 'checkbox', testid: `feature-toggle-${f}`, checked: enabled,
      disabled: !!feature.operation_id, 'aria-label': `${LABELS[f] || f} on`,
      onchange: (e) => { touch(f, 'enabled', e.target.checked); render(); },
    }));
    const deps = feature.requires || [];
    return h('div', { class: 'adv-row', testid: `feature-${f}`, dataset: { enabled: feature.enabled ? '1' : '', state: feature.state, touched: state.touched[f] ? '1' : '' } },
      h('label', { class: 'adv-head' }, toggle,
        h('span', { class: 'feat-name' }, LABELS[f] || f),
        badge(feature.state, { testid: `feature-state-${f}`, class: 'plain' }),
        feature.operation_id ? h('a', { href: `#/operations/${encodeURIComponent(feature.operation_id)}`, class: 'sub', testid: `feature-op-${f}` }, 'changing…') : null),
      h('div', { class: 'feat-desc' }, feature.description || ''),
      feature.note ? h('div', { class: 'adv-note', testid: `feature-note-${f}` }, feature.note) : null,
      deps.length
        ? h('div', { class: 'adv-deps', testid: `feature-deps-${f}` }, 'Needs: ', deps.map((d, i) => [i ? ', ' : '',
          h('span', { class: d.present ? 'dep ok' : 'dep', dataset: { dep: d.name, present: d.present ? '1' : '' }, title: d.present ? `${d.name}: ${d.status || 'present'}` : `${d.name}: installed when this is turned on` }, d.name)]))
        : null,
      feature.identity
        ? h('div', { class: 'adv-deps', testid: `feature-identity-${f}` }, `Identity: ${feature.identity.role} via ${MECHANISMS[feature.identity.mechanism] || feature.identity.mechanism}`,
          feature.identity.service_account ? ` for ${feature.identity.service_account}` : '')
        : null,
      f === 'tiered_checkpointing' ? memoryField(f, feature, t) : null,
      f === 'autoscaling' ? groupsTable(f, feature, t) : null,
      h('div', { class: 'adv-result', testid: `feature-result-${f}` }));
  }

  function memoryField(f, feature, t) {
    const value = 'memory_percent' in t ? t.memory_percent : feature.memory_percent;
    return h('div', { class: 'adv-option' }, h('label', { class: 'sub', for: 'feature-memory-percent' }, 'Memory for checkpoints (%)'),
      ...withError(`${f}.memory_percent`, guard(h('input', {
        type: 'number', id: 'feature-memory-percent', min: rules.memoryPercent.min, max: rules.memoryPercent.max, testid: 'feature-memory-percent', value: value ?? '', placeholder: 'default',
        oninput: (e) => touch(f, 'memory_percent', e.target.value === '' ? null : Number(e.target.value)),
      }))));
  }

  /** An input with the last Apply's refusal of its field, on its own line. */
  const withError = (key, input) => withFieldError('feature', key, input, state.fieldErrs[key]);

  function groupsTable(f, feature, t) {
    const groups = feature.groups || [];
    if (!groups.length) return h('div', { class: 'faint' }, 'No instance groups yet.');
    const touchedGroups = t.groups || {};
    return h('table', { class: 'data adv-groups', testid: 'autoscaling-groups' },
      h('thead', null, h('tr', null, h('th', null, 'Group'), h('th', { class: 'num' }, 'Min'), h('th', { class: 'num' }, 'Max'), h('th', { class: 'num' }, 'Current'))),
      h('tbody', null, groups.map((g) => {
        const b = { ...(g.autoscaled ? { min: g.min, max: g.max } : {}), ...(touchedGroups[g.name] || {}) };
        const input = (key) => withError(`${f}.groups.${g.name}.${key}`, guard(h('input', {
          type: 'number', min: key === 'min' ? rules.groupBounds.min : rules.groupBounds.maxMin, max: rules.groupBounds.max,
          testid: `as-${key}-${g.name}`, value: b[key] ?? '', 'aria-label': `${key === 'min' ? 'Fewest' : 'Most'} instances of group ${g.name}`,
          disabled: !g.eligible, placeholder: g.autoscaled ? '' : (key === 'min' ? '0' : '—'),
          oninput: (e) => touch(f, key, e.target.value === '' ? null : Number(e.target.value), g.name),
        })));
        return h('tr', { testid: `as-group-${g.name}`, dataset: { autoscaled: g.autoscaled ? '1' : '' } },
          h('td', null, h('b', { class: 'id' }, g.name), h('span', { class: 'sub-id' }, g.instance_type || ''),
            g.eligible ? null : h('span', { class: 'sub-id', title: g.reason || '' }, 'not eligible')),
          h('td', { class: 'num' }, ...input('min')), h('td', { class: 'num' }, ...input('max')),
          h('td', { class: 'num', testid: `as-current-${g.name}` }, `${g.current ?? '—'}`));
      })));
  }

  function renderResult(f) {
    const el = list.querySelector(`[data-testid="feature-result-${f}"]`);
    const r = state.results[f];
    if (!el) return;
    if (!r) { clear(el); return; }
    if (r.op) {
      fill(el, h('a', { href: `#/operations/${encodeURIComponent(r.op)}`, testid: `feature-result-op-${f}` }, 'operation'), ' ',
        badge(r.status, { testid: `feature-result-status-${f}` }), r.error ? h('span', { class: 'err' }, ` ${r.error}`) : null);
    } else fill(el, h('span', { class: r.error ? 'err' : 'muted' }, r.text));
  }

  function renderActions() {
    const n = Object.keys(state.touched).length;
    summary.textContent = n ? `${n} feature${n === 1 ? '' : 's'} changed` : 'nothing changed';
    if (canMutate()) apply.disabled = !n || state.busy;
    reset.disabled = !n || state.busy;
    for (const f of Object.keys(state.results)) renderResult(f);
  }

  load();
  return { refresh: () => { if (!state.busy && !Object.keys(state.touched).length) load(); } };
}
