// The preflight card (quotas, training-plan reservations): one rendering for the cluster
// create form's plan and the add-instance-group form.

import { h, badge } from './ui.js';
import { num } from './capacity_fields.js';

/** A card of preflight checks {ok, checks: [{name, ok, status, message, required, available,
 * how_to_fix}]}: `plan-preflight` (data-ok), `preflight-<check>`, `preflight-fix-<check>`. */
export function preflightCard(pf) {
  const checks = pf.checks || [];
  const failed = checks.filter((c) => !c.ok);
  return h('div', { class: `card preflight ${pf.ok ? 'ok' : 'bad'}`, testid: 'plan-preflight', dataset: { ok: pf.ok ? '1' : '' } },
    h('div', { class: 'card-head' }, h('h2', null, 'Preflight'),
      pf.ok ? badge('passed', { class: 'tone-green' }) : badge(`${failed.length} failed`, { class: 'tone-red' }),
      h('span', { class: 'spacer' }), h('span', { class: 'sub' }, 'quotas and reservations, read-only')),
    h('ul', { class: 'checks' }, checks.length
      ? checks.map((c) => h('li', { testid: `preflight-${c.name}`, dataset: { status: c.status || (c.ok ? 'pass' : 'fail'), ok: c.ok ? '1' : '' }, class: c.ok ? 'ok' : 'bad' },
        h('span', { class: 'mark', 'aria-hidden': 'true' }, c.ok ? '✓' : '✕'),
        h('div', null,
          h('div', { class: 'check-name' }, c.name.replace(/_/g, ' '),
            c.required != null ? h('span', { class: 'faint' }, `  need ${c.required}${c.available != null ? `, have ${num(c.available)}` : ''}`) : null),
          h('div', { class: 'check-msg' }, c.message),
          !c.ok && c.how_to_fix ? h('div', { class: 'fix', testid: `preflight-fix-${c.name}` }, h('b', null, 'How to fix: '), c.how_to_fix) : null)))
      : h('li', { class: 'faint' }, 'No checks reported.')));
}
