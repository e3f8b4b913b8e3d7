// The cluster page's Cost panel (GET /clusters/<c>/cost): what the cluster costs per hour
// now, item by item from the AWS Price List (the same rows as a plan's: cost.js), and a
// lower bound of what it has cost since it was made, from its own history. Read once when
// the page opens and on Refresh: prices are cached a day, the node list is AWS's now.

import { api, isAbort } from '../api.js';
import { h, fill, timeEl } from '../ui.js';
import { costBody, costSource, money } from '../cost.js';

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
        h('p', { class: 'cost-note' }, acc.note)));
  }

  load();
}
