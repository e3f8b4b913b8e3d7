// "Used by": what a destructive request would break, as the API names it — a 409 in_use's
// details, or a dry run's plan — and, where the API allows force, the one control that asks
// before a forced request: a box the user ticks after reading the list. Every delete, detach
// and turn-off control of the dashboard shows its refusal through this.

import { api } from './api.js';
import { h, fill } from './ui.js';

/** The details of a 409 in_use ApiError (null for any other error). */
export function inUse(err) {
  return err && err.status === 409 && err.code === 'in_use' && err.details
    && Array.isArray(err.details.dependents) ? err.details : null;
}

function label(d) {
  const where = d.namespace ? `${d.namespace}/` : '';
  return `${String(d.kind).replace(/_/g, ' ')} ${where}${d.name}`;
}

/**
 * usedBy(testid, {forceText}) → {el, show(details), forced(), clear(), onError(err, errorEl)}
 * testids: `<testid>-used-by` (the box), `<testid>-dependent` (each dependent: its kind,
 * name and why), `<testid>-force` (the checkbox, only when force is allowed),
 * `<testid>-no-force` (the note when it is not). `forced()` says whether the user ticked it:
 * the caller then adds `force=true` to its next request.
 */
export function usedBy(testid, { forceText = 'Go ahead anyway' } = {}) {
  const box = h('div', { class: 'used-by', testid: `${testid}-used-by`, hidden: true, role: 'alert' });
  let force = null;
  return {
    el: box,
    show(details) {
      const items = details.dependents || [];
      const more = (details.total || items.length) - items.length;
      const ticked = Boolean(force && force.checked); // a later answer keeps the user's tick
      force = details.force_allowed
        ? h('input', { type: 'checkbox', testid: `${testid}-force`, checked: ticked })
        : null;
      fill(box,
        h('div', { class: 'used-by-title' }, `Used by ${details.total || items.length}:`),
        h('ul', { class: 'used-by-list' }, items.map((d) => h('li', { testid: `${testid}-dependent`, dataset: { kind: d.kind, name: d.name } },
          h('b', { class: 'id' }, label(d)), h('span', { class: 'faint' }, ` — ${d.why}`))),
          more > 0 ? h('li', { class: 'faint' }, `and ${more} more`) : null),
        force
          ? h('label', { class: 'check danger-check' }, force,
            h('span', null, h('b', null, forceText), h('span', { class: 'faint' }, ' — what is listed above breaks.')))
          : h('div', { class: 'muted', testid: `${testid}-no-force` },
            'Remove or stop them first: this cannot be forced.'));
      box.hidden = false;
    },
    forced() {
      return Boolean(force && force.checked);
    },
    /** A dialog's onError: the refusal's message, and its dependents when it is in_use. */
    onError(err, errorEl) {
      errorEl.textContent = err.message;
      const refused = inUse(err);
      if (refused) this.show(refused);
    },
    clear() {
      force = null;
      box.hidden = true;
      fill(box);
    },
  };
}

/** `url` with `force=true` added when the user ticked the box. */
export function withForce(url, forced) {
  if (!forced) return url;
  return `${url}${url.includes('?') ? '&' : '?'}force=true`;
}

/**
 * Ask the route's dry run (`?dry_run=true`: what would be removed and what would break,
 * changing nothing) and show its dependents in `used` when the request would be refused, so
 * the user sees them before confirming. A failing dry run shows nothing: the request itself
 * will say why.
 */
export async function preview(used, url, { method = 'DELETE', body, signal } = {}) {
  try {
    const plan = await api(`${url}${url.includes('?') ? '&' : '?'}dry_run=true`, { method, body, signal });
    if (plan && plan.refused) used.show(plan);
    return plan;
  } catch (e) {
    return null;
  }
}
