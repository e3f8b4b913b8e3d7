// A team row's "Edit" on #/clusters/<name>/teams: the team's quota counts, borrowing, lending,
// preemption and fair-share weight changed by an explicit diff (PATCH with only what changed;
// the quota is sent whole when a count changed, as update_team takes it). The bounds are the
// API's (rules.field); a refusal lands on its field; "nothing changed" sends nothing.

import { mutator } from '../api.js';
import { h } from '../ui.js';
import { openModal } from '../modal.js';
import { rules } from '../rules.js';
import { fieldSet } from '../form_fields.js';

/** openTeamEdit(cluster, team, signal, onSent(reply)): the dialog; onSent gets the 202. */
export function openTeamEdit(cluster, team, signal, onSent) {
  const f = (name) => rules.field('TeamUpdate', name);
  const count = rules.field('QuotaEntry', 'count');
  const send = mutator();
  const fields = fieldSet('team-edit');
  const number = (testid, b, value) => h('input', {
    type: 'number', testid, class: 'mono', min: b.minimum, max: b.maximum, step: 1,
    value: value ?? '', inputmode: 'numeric',
  });
  const counts = (team.quota || []).map((entry, i) => ({
    entry, input: number(`team-edit-count-${i}`, count, entry.count),
  }));
  const borrow = number('team-edit-borrow', f('borrow_limit_percent'), team.borrow_limit_percent);
  const weight = number('team-edit-weight', f('fair_share_weight'), team.fair_share_weight);
  const lend = h('input', { type: 'checkbox', id: 'team-edit-lend', testid: 'team-edit-lend', checked: !!team.lend_idle });
  const preempt = h('input', { type: 'checkbox', id: 'team-edit-preempt', testid: 'team-edit-preempt', checked: !!team.may_preempt });
  const content = h('div', null,
    counts.map(({ entry, input }, i) => fields.field(`quota.${i}.count`, `${entry.instance_type} instances`,
      input, `guaranteed to the team; ${count.minimum} or more`)),
    fields.field('borrow_limit_percent', 'Borrow up to (% of its quota)', borrow,
      `${f('borrow_limit_percent').minimum} to ${f('borrow_limit_percent').maximum}; 0: none`),
    fields.field('fair_share_weight', 'Fair-share weight', weight,
      `${f('fair_share_weight').minimum} to ${f('fair_share_weight').maximum}`),
    h('label', { class: 'check', for: 'team-edit-lend' }, lend, ' Lend its idle capacity to other teams'),
    h('label', { class: 'check', for: 'team-edit-preempt' }, preempt, ' Its work may preempt its own lower-priority work'));

  /** Only what changed; null when a number is missing. */
  function diff() {
    const out = {};
    const value = (key, input) => {
      if (input.value.trim() === '' || Number.isNaN(Number(input.value))) {
        fields.setError(key, 'Enter a number.');
        return null;
      }
      return Number(input.value);
    };
    const quota = [];
    for (const [i, { entry, input }] of counts.entries()) {
      const v = value(`quota.${i}.count`, input);
      if (v === null) return null;
      quota.push({ instance_type: entry.instance_type, count: v });
    }
    if (quota.some((q, i) => q.count !== team.quota[i].count)) out.quota = quota;
    for (const [key, input] of [['borrow_limit_percent', borrow], ['fair_share_weight', weight]]) {
      const v = value(key, input);
      if (v === null) return null;
      if (v !== team[key]) out[key] = v;
    }
    if (lend.checked !== !!team.lend_idle) out.lend_idle = lend.checked;
    if (preempt.checked !== !!team.may_preempt) out.may_preempt = preempt.checked;
    return out;
  }

  return openModal({
    testid: 'team-edit-dialog', title: `Edit team ${team.name}`, confirmText: 'Save', signal, content,
    onSubmit: async ({ close, error }) => {
      fields.clear(error);
      const body = diff();
      if (body === null) { fields.focus(); return; }
      if (!Object.keys(body).length) { error.textContent = 'Nothing changed.'; return; }
      const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/teams/${encodeURIComponent(team.name)}`,
        { method: 'PATCH', body, signal });
      close();
      onSent(reply);
    },
    onError: (err, errorEl) => fields.showRefusal(err, errorEl),
  });
}
