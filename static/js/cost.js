// An hourly cost as the API prices it (cloud/pricing.py: the AWS Price List): the total,
// each item with its source, and the items without a figure saying why — never a guessed
// figure. The plan's estimate (#/clusters/new) and what a stopped create left in AWS
// (#/clusters/<name>) are shown by the same code. `prefix` names the test ids:
// `<prefix>-total`, `<prefix>-items`, `<prefix>-item-<kind>`, `<prefix>-none-<kind>`,
// `<prefix>-sku-<kind>`, `<prefix>-note`, `<prefix>-source`.

import { h, badge, timeEl } from './ui.js';

const NO_FIGURE = {
  spot: { label: 'spot price', title: 'Spot capacity is billed at the current spot price, which moves' },
  'training-plan': { label: 'prepaid', title: 'Paid up front when the training plan was bought' },
  unknown: { label: 'price unknown', title: 'The AWS Price List could not give this price' },
};
export const HOURS_PER_MONTH = 730;

export function money(v, currency = 'USD', digits = null) {
  const x = Number(v);
  if (Number.isNaN(x)) return '—';
  const d = digits !== null ? digits : x !== 0 && Math.abs(x) < 1 ? 3 : 2;
  try {
    return x.toLocaleString(undefined, { style: 'currency', currency, minimumFractionDigits: d, maximumFractionDigits: d });
  } catch {
    return `${x.toFixed(d)} ${currency}`;
  }
}

/** The total per hour (and per month), the items, the note. */
export function costBody(cost, prefix) {
  const total = Number(cost.hourly_usd || 0);
  const cur = cost.currency || 'USD';
  return [
    h('div', { class: 'cost-total' },
      h('span', { class: 'big', testid: `${prefix}-total` }, money(total, cur)),
      h('span', { class: 'muted' }, ' per hour'),
      !cost.complete ? h('span', { class: 'cost-partial', title: 'Items without a figure (spot, prepaid, or a price that could not be read) are not in the total' }, ' + items without a figure') : null),
    h('div', { class: 'muted cost-month' }, `≈ ${money(total * HOURS_PER_MONTH, cur, 0)} per month if it runs all ${HOURS_PER_MONTH} hours`),
    h('table', { class: 'mini cost-items', testid: `${prefix}-items` },
      h('tbody', null, (cost.items || []).map((it) => costRow(it, cur, prefix)))),
    h('p', { class: 'cost-note', testid: `${prefix}-note` }, cost.note || 'An estimate, not a bill.'),
  ];
}

/** Where the figures came from and when hypd read them (each is kept a day). */
export function costSource(cost, prefix) {
  const from = cost.source === 'aws-price-list' ? 'AWS Price List' : (cost.source || 'no source');
  return h('span', { class: 'sub', testid: `${prefix}-source`, dataset: { source: cost.source || '', fetchedAt: cost.fetched_at || '' } },
    cost.fetched_at ? [`${from} · read `, timeEl(cost.fetched_at)] : `${from} · no price could be read`);
}

function costRow(it, cur, prefix) {
  const none = NO_FIGURE[it.basis];
  const src = it.source;
  return h('tr', { testid: `${prefix}-item-${it.kind}`, dataset: { kind: it.kind || '', basis: it.basis || '' } },
    h('td', null, it.name,
      it.note ? h('div', { class: 'faint note' }, it.note) : null,
      src ? h('div', { class: 'faint note', testid: `${prefix}-sku-${it.kind}`, title: src.description || '' },
        `${src.usage_type || src.service_code} · SKU ${src.sku}${src.effective_date ? ` · since ${src.effective_date.slice(0, 10)}` : ''}`) : null),
    h('td', { class: 'num faint' }, it.unit_usd != null ? `${it.quantity} × ${money(it.unit_usd, cur)}` : `${it.quantity} ×`),
    h('td', { class: 'num' }, it.hourly_usd != null ? money(it.hourly_usd, cur)
      : badge(none ? none.label : 'no figure', { class: `plain ${it.basis === 'unknown' ? 'tone-red' : 'tone-amber'}`, title: none ? none.title : '', testid: `${prefix}-none-${it.kind}` })));
}
