// The cluster page's Cost panel (GET /clusters/<c>/cost): what the cluster costs per hour
// now, item by item from the AWS Price List (the same rows as a plan's: cost.js), a lower
// bound of what it has cost since it was made, from its own history, and its monthly budget
// against this month's share of that (set and cleared here: PUT/DELETE …/budget, answered at
// once: budget_box.js), and per team what its admitted work costs (node-hours by dominant
// share × price) as a chart of spend per day per team and a table. Read once when the page
// opens and on Refresh: prices are cached a day, the node list is AWS's now.

import { api, isAbort } from '../api.js';
import { h, fill, timeEl } from '../ui.js';
import { costBody, costSource, money } from '../cost.js';
import { spendChart, teamSpendChart } from '../spend_chart.js';
import { budgetBox, daysInMonth } from '../budget_box.js';

export function mountCost(box, ctx, name) {
  const path = `/api/v1/clusters/${encodeURIComponent(name)}/cost`;
  const refresh = h('button', { type: 'button', class: 'btn btn-sm', testid: 'cost-refresh', onclick: () => load() }, 'Refresh');

  async function load() {
    fill(box, h('div', { class: 'faint card-body' }, 'Pricing what runs…'));
    try {
      const cost = await api(path, { signal: ctx.signal });
      render(cost);
    } catch (e) {
      if (isAbort(e)) return;
      fill(box, h('div', { class: 'empty', testid: 'cost-error' }, `Cannot price it now: ${e.message}`), refresh);
    }
  }

  function render(cost) {
    const acc = cost.accrued;
    fill(box,
      h('div', { class: 'card-body', testid: 'cost-now' }, costBody(cost.hourly, 'cost-now'),
        h('div', null, costSource(cost.hourly, 'cost-now'), ' ', refresh)),
      h('div', { class: 'card-body', testid: 'cost-accrued' },
        h('h3', null, 'So far'),
        h('div', { class: 'cost-total' },
          h('span', { class: 'big', testid: 'cost-accrued-total' }, money(acc.usd, acc.currency)),
          h('span', { class: 'muted' }, ' at least, as of '), timeEl(cost.as_of),
          !acc.complete ? h('span', { class: 'cost-partial' }, ' + items without a figure') : null),
        h('table', { class: 'mini cost-items', testid: 'cost-accrued-items' },
          h('tbody', null, acc.items.map((it) => h('tr', { testid: `cost-accrued-item-${it.kind}` },
            h('td', null, it.name, it.note ? h('div', { class: 'faint note' }, it.note) : null),
            h('td', { class: 'num faint' }, `${it.hours.toLocaleString()} h`, it.since ? [' since ', timeEl(it.since)] : null),
            h('td', { class: 'num' }, it.usd != null ? money(it.usd, acc.currency) : 'no figure'))))),
        h('p', { class: 'cost-note' }, acc.note)),
      h('div', { class: 'card-body', testid: 'cost-days' },
        h('h3', null, 'This month by day'),
        spendChart(cost.days, {
          prefix: 'cost-days', currency: acc.currency,
          perDay: cost.budget.monthly_usd != null ? cost.budget.monthly_usd / daysInMonth(cost.month_start) : null,
        })),
      teamsOf(cost),
      budgetOf(cost));
  }

  function budgetOf(cost) {
    return budgetBox(cost.budget, {
      path: `/api/v1/clusters/${encodeURIComponent(name)}/budget`, subject: name, name,
      box: 'cost-budget', counted: 'from the cluster\'s own history', signal: ctx.signal, onChange: load,
    });
  }

  function teamsOf(cost) {
    if (!cost.teams.length) return null;
    const cur = cost.accrued.currency;
    return h('div', { class: 'card-body', testid: 'cost-teams' },
      h('h3', null, 'Teams this month by day'),
      teamSpendChart(cost.teams, { prefix: 'cost-teams', currency: cur }),
      h('table', { class: 'mini cost-items', testid: 'cost-teams-items' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Team'), h('th', { scope: 'col', class: 'num' }, 'Now, per hour'),
          h('th', { scope: 'col', class: 'num' }, 'This month'), h('th', { scope: 'col' }, 'Budget'))),
        h('tbody', null, cost.teams.map((t) => h('tr', { testid: `cost-team-${t.team}` },
          h('td', null, t.team, t.quota ? null : h('div', { class: 'faint note' }, 'no quota now')),
          h('td', { class: 'num' }, money(t.hourly.usd, cur), t.hourly.items.map((it) => h('div', { class: 'faint note' },
            `${it.share.toLocaleString()} × ${it.instance_type}`, it.unit_usd == null ? ` (${it.basis})` : null))),
          h('td', { class: 'num' }, money(t.month.usd, cur), h('div', { class: 'faint note' }, `${t.month.node_hours.toLocaleString()} node-hours`)),
          h('td', { 'data-state': t.budget.state }, t.budget.monthly_usd == null ? 'none'
            : `${money(t.budget.monthly_usd, cur)} · ${t.budget.state}`))))),
      h('p', { class: 'cost-note' }, cost.teams[0].month.note, ' Team budgets are set on the Teams page.'));
  }

  load();
}
