// The cluster page's Cost panel (GET /clusters/<c>/cost): what the cluster costs per hour
// now, item by item from the AWS Price List (the same rows as a plan's: cost.js), a lower
// bound of what it has cost since it was made, from its own history, and its monthly budget
// against this month's share of that (set and cleared here: PUT/DELETE …/budget, answered at
// once). Read once when the page opens and on Refresh: prices are cached a day, the node
// list is AWS's now.

import { api, isAbort, mutator } from '../api.js';
import { h, fill, timeEl, guard, roleHint } from '../ui.js';
import { costBody, costSource, money } from '../cost.js';
import { fieldSet } from '../form_fields.js';
import { spendChart } from '../spend_chart.js';
import { confirmDestroy } from '../confirm.js';
import { rules, words } from '../rules.js';

function daysInMonth(monthStart) {
  const d = new Date(monthStart);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
}

/** What each budget state (the API's words) says on the panel. */
function stateWords(b) {
  const state = words(rules.field('Budget', 'state').enum);
  return {
    [state.UNDER]: 'Under budget',
    [state.WARNING]: `Warning: past ${Math.round(b.warn_at[0] * 100)} % of the budget`,
    [state.EXCEEDED]: 'Over budget',
  }[b.state];
}

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
      budgetBox(cost));
  }

  function budgetBox(cost) {
    const b = cost.budget;
    const budgetPath = `/api/v1/clusters/${encodeURIComponent(name)}/budget`;
    const bounds = rules.field('BudgetSet', 'monthly_usd');
    const fields = fieldSet('budget');
    const formErr = h('div', { class: 'err', testid: 'budget-form-error', role: 'alert' });
    const amount = h('input', {
      type: 'number', step: '0.01', min: String(bounds.minimum), max: String(bounds.maximum),
      required: true, testid: 'budget-amount', value: b.monthly_usd != null ? String(b.monthly_usd) : '',
    });
    const send = mutator();
    const set = guard(h('button', { type: 'submit', class: 'btn btn-sm', testid: 'budget-set' },
      b.monthly_usd != null ? 'Change budget' : 'Set budget'));
    const form = h('form', {
      class: 'inline budget-form', testid: 'budget-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        fields.clear(formErr);
        set.disabled = true;
        try {
          await send(budgetPath, { method: 'PUT', body: { monthly_usd: Number(amount.value) }, signal: ctx.signal });
          load();
        } catch (e) {
          if (isAbort(e)) return;
          fields.showRefusal(e, formErr);
        } finally {
          set.disabled = false;
        }
      },
    }, fields.field('monthly_usd', 'Budget per month (USD)', amount,
      'Warned once at 80 % and at 100 % of it each month (here, in the audit log and a metric).'),
    h('div', { class: 'inline' }, set), formErr);
    const clearBtn = b.monthly_usd == null ? null : guard(h('button', {
      type: 'button', class: 'btn btn-sm btn-danger', testid: 'budget-clear',
      onclick: async () => {
        const reply = await confirmDestroy({
          kind: 'budget', name, url: budgetPath, verb: 'Clear', dryRun: false, action: 'clear-budget', signal: ctx.signal,
          about: h('p', null, `Clears the monthly budget of ${name} and this month's warnings. `
            + 'What the cluster costs is not touched.'),
        });
        if (reply) load();
      },
    }, 'Clear budget'));
    return h('div', { class: 'card-body', testid: 'cost-budget', 'data-state': b.state },
      h('h3', null, 'Monthly budget'),
      b.monthly_usd == null
        ? h('p', { class: 'muted', testid: 'budget-unset' },
          `No budget. This month so far: at least ${money(b.spent_usd)}.`)
        : [
          h('div', { class: 'budget-line' },
            h('meter', {
              min: '0', max: String(b.monthly_usd), value: String(Math.min(b.spent_usd, b.monthly_usd)),
              low: String(b.warn_at[0] * b.monthly_usd), high: String(b.warn_at[0] * b.monthly_usd),
              optimum: '0', 'aria-label': 'Spent this month against the budget', testid: 'budget-meter',
            }),
            h('span', { testid: 'budget-summary' },
              ` ${money(b.spent_usd)} of ${money(b.monthly_usd)} this month (${Math.round(b.fraction * 100)} %)`)),
          h('div', { class: `budget-state budget-${b.state}`, role: 'status', testid: 'budget-state' },
            stateWords(b),
            b.warnings.length ? h('span', { class: 'faint' }, ' · warned ',
              b.warnings.map((w, i) => [i ? ', ' : '', `${Math.round(w.at * 100)} % `, timeEl(w.raised_at)])) : null),
          h('p', { class: 'faint note' }, 'Set by ', b.set_by, ' ', timeEl(b.set_at),
            '. Counted from 00:00 UTC on the first of the month, from the cluster\'s own history.'),
        ],
      form, clearBtn, roleHint('setting a budget', 'budget-role-hint'));
  }

  load();
}
