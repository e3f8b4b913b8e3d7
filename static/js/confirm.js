// The one confirmation of every destructive action of the dashboard (delete, remove, detach,
// turn off, node replace/delete/reboot, cancel): a modal built on modal.js that names the
// target, asks the route's dry run (`?dry_run=true`, the DestroyPlan: what it removes, what
// depends on it, the operation's steps rehearsed) and shows it before the user confirms. While
// the plan is read the confirm button waits. When live dependents would refuse the request
// and the API allows force, the user types the target's name to enable a forced confirm
// (`force=true` is then sent); when force is not allowed the confirm stays off and says why.
// Cancel sends nothing.

import { api, isAbort, mutator } from './api.js';
import { h, fill, spinner } from './ui.js';
import { openModal } from './modal.js';
import { inUse, dependentLabel, withForce } from './in_use.js';

const TESTID = 'destroy-dialog';

function withDryRun(url) {
  return `${url}${url.includes('?') ? '&' : '?'}dry_run=true`;
}

/**
 * confirmDestroy({kind, name, url, method, body, verb, confirmText, about, extra, typeAlways,
 * danger, wide, action, signal, send, urlFor, blocked, dryRun, cancelText}) → Promise of the API's reply (null when the
 * user cancelled).
 *  kind, name: what the target is ('network', 'instance group', …) and its name: the title
 *    names both, and `name` is what the user types to force (or always, with typeAlways).
 *  url, method ('DELETE'), body: the request; its dry run is the same with `?dry_run=true`.
 *  dryRun: false for a route without a dry run (the dialog then names the target and `about`).
 *  about: nodes saying what the action does; extra: controls shown under the plan.
 *  blocked: the dialog itself knows it cannot go ahead (the confirm stays off).
 *  urlFor(): the URL to send at confirm time (e.g. with a query an extra control sets).
 *  send(url, {method, body, signal}): how to send it (default: a mutator, one
 *    Idempotency-Key per request, reused when the same request is retried).
 * testids: `destroy-dialog` (data-kind, data-name, data-action; data-plan: loading, ready,
 * failed or none), `destroy-dialog-title`, `-confirm`, `-cancel`, `-error`; `destroy-removes`
 * (each `destroy-remove`), `destroy-dependents` (each `destroy-dependent`),
 * `destroy-no-dependents`, `destroy-steps`, `destroy-would-fail`, `destroy-no-force`,
 * `destroy-typed` (the name typed to force).
 */
export function confirmDestroy({
  kind, name, url, method = 'DELETE', body, verb = 'Delete', confirmText, about = null, extra = null,
  typeAlways = false, danger = true, wide = false, action = '', signal, send = mutator(), urlFor = null,
  blocked: refusedHere = false, dryRun = true, cancelText,
}) {
  const label = confirmText || `${verb} ${kind}`;
  const state = { plan: null, loading: dryRun, refused: null };
  const planBox = h('div', { class: 'destroy-plan', testid: 'destroy-plan', 'aria-live': 'polite' });
  const typed = h('input', {
    type: 'text', class: 'mono', id: 'destroy-typed', testid: 'destroy-typed',
    autocomplete: 'off', spellcheck: 'false', placeholder: name,
  });
  const typedLabel = h('label', { for: 'destroy-typed' });
  const typeField = h('div', { class: 'field', hidden: true }, typedLabel, typed);
  const content = h('div', { class: 'destroy-body' },
    about, planBox, extra, typeField);

  let resolve;
  const done = new Promise((r) => { resolve = r; });
  let reply = null;

  /** Live dependents refuse it: the plan's or a 409 in_use's. */
  const refusal = () => state.refused || (state.plan && state.plan.refused ? state.plan : null);
  const forcing = () => Boolean(refusal() && refusal().force_allowed);
  const blocked = () => refusedHere || Boolean(refusal() && !refusal().force_allowed);
  const mustType = () => typeAlways || forcing();
  const canConfirm = () => {
    typeField.hidden = !mustType();
    typedLabel.replaceChildren('Type ', h('code', null, name),
      forcing() ? ` to ${verb.toLowerCase()} it anyway: what is listed above breaks` : ' to confirm');
    modal.confirmBtn.textContent = forcing() ? `${verb} anyway` : label;
    return !state.loading && !blocked() && (!mustType() || typed.value.trim() === name);
  };
  const gate = () => { modal.confirmBtn.disabled = !canConfirm(); };

  const modal = openModal({
    testid: TESTID, title: `${verb} ${kind} ${name}?`, content, confirmText: label, cancelText, danger, wide, signal,
    canConfirm: () => canConfirm(),
    async onSubmit({ close }) {
      if (!canConfirm()) return;
      const target = urlFor ? urlFor() : url;
      reply = await send(withForce(target, forcing()), { method, body, signal });
      close();
    },
    onError(err, errorEl) {
      errorEl.textContent = err.message;
      const refused = inUse(err);
      if (refused) {
        state.refused = { ...refused, refused: true };
        showPlan({ ...(state.plan || {}), ...refused, refused: true });
      }
    },
  });
  Object.assign(modal.dlg.dataset, { kind, name, action, plan: dryRun ? 'loading' : 'none' });
  modal.dlg.addEventListener('close', () => resolve(reply));
  typed.addEventListener('input', gate);
  gate();
  if (typeAlways) typed.focus(); // otherwise the dialog's first control, Cancel, has it

  function showPlan(plan) {
    const removes = plan.removes || [];
    const deps = plan.dependents || [];
    const more = (plan.total || deps.length) - deps.length;
    const steps = plan.steps || [];
    fill(planBox,
      removes.length ? [
        h('div', { class: 'plan-title' }, 'It removes:'),
        // a long list scrolls in its own box (reachable by keyboard), so the buttons stay near
        h('ul', { class: 'plain-list destroy-removes', testid: 'destroy-removes', tabindex: 0, 'aria-label': 'What it removes' },
          removes.map((r) => h('li', { testid: 'destroy-remove' }, r)))] : null,
      deps.length ? h('div', { class: 'used-by', testid: 'destroy-dependents', role: 'alert' },
        h('div', { class: 'used-by-title' }, `Depends on it (${plan.total || deps.length}):`),
        h('ul', { class: 'used-by-list' }, deps.map((d) => h('li', { testid: 'destroy-dependent', dataset: { kind: d.kind, name: d.name } },
          h('b', { class: 'id' }, dependentLabel(d)), h('span', { class: 'muted' }, ` — ${d.why}`))),
        more > 0 ? h('li', { class: 'muted' }, `and ${more} more`) : null),
        plan.refused && !plan.force_allowed
          ? h('div', { class: 'muted', testid: 'destroy-no-force' }, 'Remove or stop them first: this cannot be forced.')
          : null)
        : h('p', { class: 'muted', testid: 'destroy-no-dependents' }, 'Nothing depends on it.'),
      steps.length ? h('details', { class: 'destroy-steps', testid: 'destroy-steps' },
        h('summary', null, `${steps.length} step${steps.length === 1 ? '' : 's'} rehearsed`,
          plan.changes != null ? `, ${plan.changes} call${plan.changes === 1 ? '' : 's'} that change` : ''),
        h('ol', null, steps.map((s) => h('li', null, s.title || s.step)))) : null,
      // a refusal is said above, by its dependents; would_fail is for any other stop
      plan.would_fail && !plan.refused ? h('p', { class: 'form-error', testid: 'destroy-would-fail' },
        `It would stop at ${plan.would_fail.step}: ${plan.would_fail.message || ''}`) : null);
    gate();
  }

  if (dryRun) {
    fill(planBox, h('p', { class: 'muted' }, spinner(), ' Asking what it would remove and what depends on it…'));
    api(withDryRun(urlFor ? urlFor() : url), { method, body, signal }).then((plan) => {
      state.plan = plan || {};
      modal.dlg.dataset.plan = 'ready';
      showPlan(state.plan);
    }, (e) => {
      if (isAbort(e)) return;
      modal.dlg.dataset.plan = 'failed'; // the request itself will say why it is refused
      fill(planBox, h('p', { class: 'muted', testid: 'destroy-plan-failed' }, `What it would remove could not be read: ${e.message}`));
    }).finally(() => {
      state.loading = false;
      gate();
    });
  }
  return done;
}
