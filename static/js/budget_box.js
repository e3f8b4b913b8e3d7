// A monthly budget as the dashboard shows and sets it, the one way for every budget: a
// cluster's (the cost panel) and a team's (the Teams page). Its state against this month's
// spend (a meter, the state in words, the warnings raised), the form that sets it
// (PUT …/budget, answered at once; refusals on the field through form_fields.js) and Clear
// through the one confirm dialog (confirm.js). testids, from `prefix` ('budget' on the cost
// panel, 'team-budget-<team>' on the Teams page): `<prefix>-form`, `-amount`, `-set`,
// `-clear`, `-unset`, `-meter`, `-summary`, `-state`, `-form-error`, `-role-hint`; the box
// itself `box` (data-state).

import { isAbort, mutator } from './api.js';
import { h, timeEl, guard, roleHint } from './ui.js';
import { money } from './cost.js';
import { fieldSet } from './form_fields.js';
import { confirmDestroy } from './confirm.js';
import { rules, words } from './rules.js';

/** Days in the month that starts at `monthStart` (ISO): a budget's share of one day. */
export function daysInMonth(monthStart) {
  const d = new Date(monthStart);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
}

/** What each budget state (the API's words) says. */
function stateWords(b) {
  const state = words(rules.field('Budget', 'state').enum);
  return {
    [state.UNDER]: 'Under budget',
    [state.WARNING]: `Warning: past ${Math.round(b.warn_at[0] * 100)} % of the budget`,
    [state.EXCEEDED]: 'Over budget',
  }[b.state];
}

/**
 * budgetBox(b, opts): `b` a Budget read; opts {path (the budget's URL), subject (words: "the
 * cluster gpu-a", "team vision"), name (typed in the confirm dialog), kind (the dialog's
 * noun), prefix, box (the box's testid), counted (how the spend is counted, words), heading,
 * signal, onChange (after a set or clear)}.
 */
export function budgetBox(b, opts) {
  const { path, subject, name, kind = 'budget', prefix = 'budget', box = prefix, counted, heading = 'Monthly budget', signal, onChange } = opts;
  const t = (what) => `${prefix}-${what}`;
  const bounds = rules.field('BudgetSet', 'monthly_usd');
  const fields = fieldSet(prefix);
  const formErr = h('div', { class: 'err', testid: t('form-error'), role: 'alert' });
  const amount = h('input', {
    type: 'number', step: '0.01', min: String(bounds.minimum), max: String(bounds.maximum),
    required: true, testid: t('amount'), value: b.monthly_usd != null ? String(b.monthly_usd) : '',
  });
  const send = mutator();
  const set = guard(h('button', { type: 'submit', class: 'btn btn-sm', testid: t('set') },
    b.monthly_usd != null ? 'Change budget' : 'Set budget'));
  const form = h('form', {
    class: 'inline budget-form', testid: t('form'),
    onsubmit: async (ev) => {
      ev.preventDefault();
      fields.clear(formErr);
      set.disabled = true;
      try {
        await send(path, { method: 'PUT', body: { monthly_usd: Number(amount.value) }, signal });
        onChange();
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
    type: 'button', class: 'btn btn-sm btn-danger', testid: t('clear'),
    onclick: async () => {
      const reply = await confirmDestroy({
        kind, name, url: path, verb: 'Clear', dryRun: false, action: 'clear-budget', signal,
        about: h('p', null, `Clears the monthly budget of ${subject} and this month's warnings. `
          + 'What it costs is not touched.'),
      });
      if (reply) onChange();
    },
  }, 'Clear budget'));
  return h('div', { class: 'card-body', testid: box, 'data-state': b.state },
    heading ? h('h3', null, heading) : null,
    b.monthly_usd == null
      ? h('p', { class: 'muted', testid: t('unset') },
        `No budget. This month so far: at least ${money(b.spent_usd)}.`)
      : [
        h('div', { class: 'budget-line' },
          h('meter', {
            min: '0', max: String(b.monthly_usd), value: String(Math.min(b.spent_usd, b.monthly_usd)),
            low: String(b.warn_at[0] * b.monthly_usd), high: String(b.warn_at[0] * b.monthly_usd),
            optimum: '0', 'aria-label': `Spent this month against the budget of ${subject}`, testid: t('meter'),
          }),
          h('span', { testid: t('summary') },
            ` ${money(b.spent_usd)} of ${money(b.monthly_usd)} this month (${Math.round(b.fraction * 100)} %)`)),
        h('div', { class: `budget-state budget-${b.state}`, role: 'status', testid: t('state') },
          stateWords(b),
          b.warnings.length ? h('span', { class: 'faint' }, ' · warned ',
            b.warnings.map((w, i) => [i ? ', ' : '', `${Math.round(w.at * 100)} % `, timeEl(w.raised_at)])) : null),
        h('p', { class: 'faint note' }, 'Set by ', b.set_by, ' ', timeEl(b.set_at),
          `. Counted from 00:00 UTC on the first of the month, ${counted}.`),
      ],
    form, clearBtn, roleHint('setting a budget', t('role-hint')));
}
