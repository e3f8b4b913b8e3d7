// Spend over time as a person would rather look at it than read it: one bar per UTC day of
// the month (the cost read's `days`), the budget's daily share as a line when there is one,
// and the same figures as a table under "As a table" for those who read them (and for
// screen readers: the chart itself is one labelled image). testids: `<prefix>-chart`,
// `<prefix>-bar` (each, data-date, data-usd), `<prefix>-table`.
// `teamSpendChart` stacks the same per team (the cost read's `teams[].days`): one segment per
// team and day (`<prefix>-bar`, data-team too), a legend, and a table with a column per team.

import { h } from './ui.js';
import { money } from './cost.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 620;
const HEIGHT = 140;
const AXIS = 18;

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === 'testid') el.setAttribute('data-testid', v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function table(prefix, heads, rows) {
  return h('details', { class: 'spend-table' },
    h('summary', null, 'As a table'),
    h('table', { class: 'mini', testid: `${prefix}-table` },
      h('thead', null, h('tr', null, heads.map((t, i) => h('th', { scope: 'col', class: i ? 'num' : null }, t)))),
      h('tbody', null, rows.map((r) => h('tr', null, r.map((c, i) => h('td', { class: i ? 'num' : null }, c)))))));
}

function ticksOf(dates, slot) {
  return dates.map((d, i) => ((i % 5 === 0 || i === dates.length - 1)
    ? s('text', { x: (i * slot + slot / 2).toFixed(1), y: HEIGHT - 4, class: 'spend-tick', 'text-anchor': 'middle' }, d.slice(8))
    : null));
}

/** days: [{date, usd}]; perDay: the budget's share of a day (null: none). */
export function spendChart(days, { prefix, perDay = null, currency = 'USD' }) {
  const top = Math.max(...days.map((d) => d.usd), perDay || 0, 0.01);
  const slot = WIDTH / Math.max(days.length, 1);
  const barW = Math.max(2, slot * 0.7);
  const y = (usd) => HEIGHT - AXIS - (usd / top) * (HEIGHT - AXIS - 12);
  const total = days.reduce((sum, d) => sum + d.usd, 0);
  const highest = days.reduce((best, d) => (d.usd > best.usd ? d : best), days[0] || { usd: 0, date: '' });
  const label = `Spend per day this month: ${money(total, currency)} over ${days.length} day(s)`
    + (highest.date ? `, highest ${money(highest.usd, currency)} on ${highest.date}` : '')
    + (perDay ? `; the budget allows ${money(perDay, currency)} a day` : '');
  const bars = days.map((d, i) => s('rect', {
    x: (i * slot + (slot - barW) / 2).toFixed(1), y: y(d.usd).toFixed(1), width: barW.toFixed(1),
    height: Math.max(0, HEIGHT - AXIS - y(d.usd)).toFixed(1), class: 'spend-bar',
    testid: `${prefix}-bar`, 'data-date': d.date, 'data-usd': d.usd,
  }, s('title', null, `${d.date}: ${money(d.usd, currency)}`)));
  const ticks = ticksOf(days.map((d) => d.date), slot);
  const budgetLine = perDay ? [
    s('line', { x1: 0, x2: WIDTH, y1: y(perDay).toFixed(1), y2: y(perDay).toFixed(1), class: 'spend-budget' }),
    s('text', { x: WIDTH - 2, y: (y(perDay) - 3).toFixed(1), class: 'spend-tick', 'text-anchor': 'end' }, `budget ${money(perDay, currency)}/day`),
  ] : [];
  const svg = s('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': label, class: 'spend-chart',
    testid: `${prefix}-chart`, preserveAspectRatio: 'none',
  }, s('text', { x: 2, y: 10, class: 'spend-tick' }, money(top, currency)), bars, ticks, budgetLine);
  return h('figure', { class: 'spend' }, svg,
    table(prefix, ['Day (UTC)', 'Spent, at least'], days.map((d) => [d.date, money(d.usd, currency)])));
}

const TEAM_COLOURS = 6;

/** teams: [{team, days: [{date, usd}]}], each over the same days: stacked bars per day. */
export function teamSpendChart(teams, { prefix, currency = 'USD' }) {
  const dates = (teams[0] ? teams[0].days : []).map((d) => d.date);
  const usd = (t, i) => (t.days[i] ? t.days[i].usd : 0);
  const perDay = dates.map((_, i) => teams.reduce((sum, t) => sum + usd(t, i), 0));
  const top = Math.max(...perDay, 0.01);
  const slot = WIDTH / Math.max(dates.length, 1);
  const barW = Math.max(2, slot * 0.7);
  const scale = (v) => (v / top) * (HEIGHT - AXIS - 12);
  const totals = teams.map((t) => t.days.reduce((sum, d) => sum + d.usd, 0));
  const label = `Spend per day per team this month: ${teams.map((t, k) => `${t.team} ${money(totals[k], currency)}`).join(', ')}`;
  const bars = dates.map((date, i) => {
    let base = HEIGHT - AXIS;
    return teams.map((t, k) => {
      const tall = scale(usd(t, i));
      base -= tall;
      return s('rect', {
        x: (i * slot + (slot - barW) / 2).toFixed(1), y: base.toFixed(1), width: barW.toFixed(1), height: tall.toFixed(1),
        class: `spend-bar spend-team-${k % TEAM_COLOURS}`, testid: `${prefix}-bar`, 'data-date': date, 'data-team': t.team, 'data-usd': usd(t, i),
      }, s('title', null, `${date}, ${t.team}: ${money(usd(t, i), currency)}`));
    });
  }).flat();
  const svg = s('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': label, class: 'spend-chart',
    testid: `${prefix}-chart`, preserveAspectRatio: 'none',
  }, s('text', { x: 2, y: 10, class: 'spend-tick' }, money(top, currency)), bars, ticksOf(dates, slot));
  const legend = h('ul', { class: 'spend-legend', testid: `${prefix}-legend` }, teams.map((t, k) => h('li', null,
    h('span', { class: `spend-swatch spend-team-${k % TEAM_COLOURS}`, 'aria-hidden': 'true' }), ` ${t.team}`)));
  return h('figure', { class: 'spend' }, svg, legend,
    table(prefix, ['Day (UTC)', ...teams.map((t) => t.team)],
      dates.map((date, i) => [date, ...teams.map((t) => money(usd(t, i), currency))])));
}
