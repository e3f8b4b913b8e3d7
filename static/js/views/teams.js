// #/clusters/<name>/teams — teams sharing the cluster (SageMaker task governance): each team's
// compute quota and its state, its namespace and what Kueue admitted; the cluster's scheduler
// config (priority classes, fair share), editable in place; a new team's form (its bounds from
// the API's document through rules.field, the API's refusals on their fields through
// form_fields.js); a team's Edit changes its quota and sharing by an explicit diff
// (team_edit.js); deletes through confirm.js (the dry run first). Each team's spend this
// month and its monthly budget (budget_box.js, the cost panel's own form) from one cost
// read (GET /clusters/<c>/cost: its `teams`), read when the page opens, on Refresh and
// after a budget changes — not every few seconds, as it prices what runs.

import { api, isAbort, mutator, canMutate } from '../api.js';
import { h, clear, badge, toastError, guard, roleHint, spinner, opHref } from '../ui.js';
import { rules } from '../rules.js';
import { openOperation } from '../modal.js';
import { confirmDestroy } from '../confirm.js';
import { fieldSet } from '../form_fields.js';
import { openTeamEdit } from './team_edit.js';
import { budgetBox } from '../budget_box.js';
import { money } from '../cost.js';

const REFRESH_MS = 3000;

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Teams', testid: 'cluster-teams-link' };

function teamRules() {
  const f = (name) => rules.field('TeamCreate', name);
  const bounds = (name) => ({ min: f(name).minimum, max: f(name).maximum, default: f(name).default });
  const pc = (name) => rules.field('PriorityClass', name);
  return {
    name: { pattern: new RegExp(f('name').pattern), max: f('name').maxLength, rule: f('name').description },
    borrow: bounds('borrow_limit_percent'),
    weight: bounds('fair_share_weight'),
    lend: f('lend_idle').default,
    preempt: f('may_preempt').default,
    classes: { max: rules.field('SchedulerPut', 'priority_classes').maxItems, weight: { min: pc('weight').minimum, max: pc('weight').maximum } },
  };
}

const numberInput = (testid, b) => h('input', { type: 'number', testid, min: b.min, max: b.max, value: b.default ?? b.min, step: 1, inputmode: 'numeric' });

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const base = `/api/v1/clusters/${encodeURIComponent(cluster)}`;
  const send = mutator();
  const R = teamRules();
  const list = h('div', { testid: 'teams-list' }, h('div', { class: 'loading' }, spinner(), 'Reading the cluster…'));
  const schedulerBox = h('div', { class: 'card-body', testid: 'scheduler' });
  const budgets = h('div', { class: 'team-budgets', testid: 'team-budgets' }, h('div', { class: 'card-body faint' }, 'Pricing what the teams run…'));
  const budgetsRefresh = h('button', { type: 'button', class: 'btn btn-sm', testid: 'team-budgets-refresh', onclick: () => loadBudgets() }, 'Refresh');
  const form = teamForm();

  root.append(
    h('div', { class: 'page-head' }, h('h1', null, 'Teams'), h('span', { class: 'sub' }, cluster), h('span', { class: 'spacer' })),
    h('p', { class: 'field-note' }, 'Each team gets a compute quota on the cluster; the task-governance add-on runs it as a Kueue queue in namespace hyperpod-ns-<team>. The task_governance feature must be on (cluster → Features).'),
    h('div', { class: 'grid-2' },
      h('div', null,
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Teams')), list),
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Spend and budgets'), h('span', { class: 'spacer' }), budgetsRefresh), budgets)),
      h('div', null,
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Scheduler config')), schedulerBox),
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'New team')), h('div', { class: 'card-body' }, form.el)))));

  let shown = null;
  async function load() {
    try {
      const data = await api(`${base}/teams`, { signal: ctx.signal });
      const now = JSON.stringify(data);
      if (now === shown) return;
      shown = now;
      renderTeams(data.items || []);
      renderScheduler(data.scheduler);
    } catch (e) {
      if (isAbort(e)) return;
      shown = null;
      clear(list);
      list.append(h('div', { class: 'empty', testid: 'teams-unavailable' }, e.message));
    }
  }

  function renderTeams(items) {
    clear(list);
    if (!items.length) {
      list.append(h('div', { class: 'empty', testid: 'teams-empty' }, 'No teams yet. Create one with the form.'));
      return;
    }
    list.append(h('table', { class: 'data', testid: 'teams-table' },
      h('thead', null, h('tr', null, ['Team', 'State', 'Quota', 'Sharing', 'Queue', ''].map((t) => h('th', null, t)))),
      h('tbody', null, items.map(teamRow))));
  }

  function teamRow(t) {
    const q = t.queue;
    const sharing = [t.lend_idle ? 'lends idle' : 'does not lend', t.borrow_limit_percent ? `borrows ≤ ${t.borrow_limit_percent} %` : 'borrows nothing',
      t.may_preempt ? 'may preempt' : 'never preempts', `weight ${t.fair_share_weight ?? 0}`].join(' · ');
    const edit = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: `team-edit-${t.name}` }, 'Edit'));
    edit.disabled = edit.disabled || !t.managed || !t.quota || !t.quota.length;
    edit.addEventListener('click', () => {
      if (canMutate()) openTeamEdit(cluster, t, ctx.signal, (reply) => { openOperation(reply); load(); });
    });
    const del = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `team-delete-${t.name}` }, 'Delete'));
    del.addEventListener('click', () => destroy('team', t.name, `${base}/teams/${encodeURIComponent(t.name)}`, 'team-delete',
      `Team ${t.name}'s compute quota; the add-on then removes its queues.`));
    return h('tr', { testid: `team-row-${t.name}` },
      h('td', null, h('b', { class: 'id' }, t.name), h('div', { class: 'sub-id' }, t.namespace),
        h('div', { class: 'sub-id', testid: `team-members-${t.name}` },
          t.members.length ? `members: ${t.members.join(', ')}` : 'no member tokens')),
      h('td', null, badge(t.state, { testid: `team-state-${t.name}` }),
        t.operation_id ? h('a', { href: opHref(t.operation_id), class: 'sub-id', 'aria-label': `last operation of team ${t.name}` }, ' operation') : null,
        t.message ? h('div', { class: 'sub-id' }, t.message) : null),
      h('td', { testid: `team-quota-${t.name}` }, (t.quota || []).map((e) => `${e.instance_type} × ${e.count}`).join(', ') || '—'),
      h('td', { class: 'sub-id', testid: `team-sharing-${t.name}` }, sharing),
      h('td', { testid: `team-queue-${t.name}` }, !q ? '—' : q.present
        ? `${q.admitted_workloads} admitted · ${q.pending_workloads} pending` : q.message),
      h('td', { class: 'actions' }, edit, ' ', del));
  }

  // -- each team's spend this month and its budget -------------------------------------------
  async function loadBudgets() {
    try {
      const cost = await api(`${base}/cost`, { signal: ctx.signal });
      clear(budgets);
      if (!cost.teams.length) {
        budgets.append(h('div', { class: 'empty', testid: 'team-budgets-empty' }, 'No team has a quota or spend this month.'));
        return;
      }
      budgets.append(h('p', { class: 'card-body field-note' }, cost.teams[0].month.note),
        ...cost.teams.map((t) => budgetBox(t.budget, {
          path: `${base}/teams/${encodeURIComponent(t.team)}/budget`, subject: `team ${t.team}`, name: t.team,
          kind: 'team budget', prefix: `team-budget-${t.team}`,
          heading: `${t.team}: ${money(t.month.usd)} this month, ${money(t.hourly.usd)} an hour now`,
          counted: 'from what Kueue admitted for the team', signal: ctx.signal, onChange: loadBudgets,
        })));
    } catch (e) {
      if (isAbort(e)) return;
      clear(budgets);
      budgets.append(h('div', { class: 'empty', testid: 'team-budgets-error' }, `Cannot price it now: ${e.message}`));
    }
  }

  function destroy(kind, name, url, action, about) {
    if (!canMutate()) return;
    confirmDestroy({ kind, name, url, action, signal: ctx.signal, about: h('p', null, about) }).then((reply) => {
      if (!reply) return;
      openOperation(reply);
      load();
    });
  }

  // -- the scheduler config: its classes as rows of inputs, fair share, save and delete --------
  let rows = [];
  function classRow(c = { name: '', weight: 50 }) {
    const i = rows.length;
    const name = h('input', { type: 'text', class: 'mono', testid: `scheduler-class-name-${i}`, value: c.name, 'aria-label': `priority class ${i + 1} name`, autocomplete: 'off', spellcheck: 'false' });
    const weight = numberInput(`scheduler-class-weight-${i}`, { ...R.classes.weight, default: c.weight });
    weight.setAttribute('aria-label', `priority class ${i + 1} weight`);
    const row = { name, weight, el: h('div', { class: 'inline', testid: `scheduler-class-${i}` }, name, weight) };
    rows.push(row);
    return row.el;
  }

  function renderScheduler(s) {
    clear(schedulerBox);
    rows = [];
    const classes = h('div', { testid: 'scheduler-classes' }, (s ? s.priority_classes : []).map(classRow));
    const add = guard(h('button', { type: 'button', class: 'btn btn-sm', testid: 'scheduler-add-class' }, 'Add a priority class'));
    add.addEventListener('click', () => { if (rows.length < R.classes.max) classes.append(classRow()); });
    const fair = h('input', { type: 'checkbox', id: 'scheduler-fair-share', testid: 'scheduler-fair-share', checked: s ? s.fair_share : true });
    const err = h('div', { class: 'form-error', testid: 'scheduler-error', role: 'alert' });
    const save = guard(h('button', { type: 'button', class: 'btn btn-primary', testid: 'scheduler-save' }, s ? 'Save' : 'Create'));
    save.addEventListener('click', async () => {
      err.textContent = '';
      const body = { fair_share: fair.checked, priority_classes: rows.filter((r) => r.name.value.trim())
        .map((r) => ({ name: r.name.value.trim(), weight: Number(r.weight.value) })) };
      try {
        const reply = await send(`${base}/scheduler`, { method: 'PUT', body, signal: ctx.signal });
        if (reply && reply.operation) openOperation(reply);
        else err.textContent = (reply && reply.message) || '';
        shown = null;
        load();
      } catch (e) {
        if (!isAbort(e)) err.textContent = e.message;
      }
    });
    const parts = [err,
      h('div', { class: 'sub-id', testid: 'scheduler-state' }, s ? `${s.name} · ${s.status} · version ${s.version}` : 'None yet: the teams share by their quotas only.'),
      h('p', { class: 'field-note' }, 'Priority classes (name, weight 0–100: higher runs first):'), classes, add,
      h('label', { class: 'check', for: 'scheduler-fair-share' }, fair, ' Fair share of idle capacity'),
      h('div', { class: 'inline' }, save)];
    if (s) {
      const del = guard(h('button', { type: 'button', class: 'btn btn-danger', testid: 'scheduler-delete' }, 'Delete'));
      del.addEventListener('click', () => destroy('scheduler config', cluster, `${base}/scheduler`, 'scheduler-delete',
        'The cluster\'s priority classes and fair share.'));
      parts.at(-1).append(' ', del);
    }
    parts.push(roleHint('changing the scheduler config', 'scheduler-role-hint'));
    schedulerBox.append(...parts.filter(Boolean));
  }

  // -- a new team --------------------------------------------------------------------------
  function teamForm() {
    const fields = fieldSet('team');
    const name = h('input', { type: 'text', class: 'mono', testid: 'team-name', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. research' });
    const type = h('select', { testid: 'team-instance-type' }, h('option', { value: '' }, 'Reading the groups…'));
    const count = numberInput('team-count', { min: 0, max: undefined, default: 1 });
    const borrow = numberInput('team-borrow', R.borrow);
    const weight = numberInput('team-weight', R.weight);
    const lend = h('input', { type: 'checkbox', id: 'team-lend', testid: 'team-lend', checked: R.lend });
    const preempt = h('input', { type: 'checkbox', id: 'team-preempt', testid: 'team-preempt', checked: R.preempt });
    const formErr = h('div', { class: 'form-error', testid: 'team-form-error', role: 'alert' });
    const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'team-create' }, 'Create team'));
    const el = h('form', { testid: 'team-form', novalidate: true }, formErr,
      fields.field('name', 'Name', name, `Lowercase letters, digits and hyphens, at most ${R.name.max} characters.`),
      fields.field('quota.0.instance_type', 'Instance type', type),
      fields.field('quota.0.count', 'Instances guaranteed', count),
      fields.field('borrow_limit_percent', 'May borrow (% of its quota)', borrow, `${R.borrow.min} to ${R.borrow.max}; 0: none`),
      fields.field('fair_share_weight', 'Fair-share weight', weight, `${R.weight.min} to ${R.weight.max}`),
      h('label', { class: 'check', for: 'team-lend' }, lend, ' Lend its idle capacity to other teams'),
      h('label', { class: 'check', for: 'team-preempt' }, preempt, ' Its work may preempt its own lower-priority work'),
      h('div', { class: 'inline' }, submit), roleHint('creating a team', 'team-role-hint'));
    el.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      if (!canMutate()) return;
      fields.clear(formErr);
      const v = name.value.trim();
      if (!R.name.pattern.test(v) || v.length > R.name.max) { fields.setError('name', R.name.rule); fields.focus(); return; }
      const body = { name: v, quota: [{ instance_type: type.value, count: Number(count.value) }], borrow_limit_percent: Number(borrow.value),
        lend_idle: lend.checked, may_preempt: preempt.checked, fair_share_weight: Number(weight.value) };
      submit.disabled = true;
      try {
        const reply = await send(`${base}/teams`, { body, signal: ctx.signal });
        name.value = '';
        if (reply && reply.operation) openOperation(reply);
        load();
      } catch (e) {
        if (!isAbort(e)) fields.showRefusal(e, formErr);
      } finally {
        submit.disabled = !canMutate();
      }
    });
    return { el, type };
  }

  async function loadTypes() {
    try {
      const data = await api(`${base}/instance-groups`, { signal: ctx.signal });
      clear(form.type);
      const types = [...new Set((data.items || []).map((g) => g.instance_type).filter(Boolean))];
      if (!types.length) form.type.append(h('option', { value: '' }, 'The cluster has no instance group'));
      for (const t of types) form.type.append(h('option', { value: t }, t));
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  loadTypes();
  load();
  loadBudgets();
  const timer = setInterval(load, REFRESH_MS);
  return () => clearInterval(timer);
}
