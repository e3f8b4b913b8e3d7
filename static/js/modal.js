// A modal confirmation (<dialog>) with a form: title, content, an error line, Cancel and a
// confirm button that shows a spinner while its submit runs. The dashboard's mutating
// dialogs (instance groups, node actions, cluster software) are built on it.

import { isAbort } from './api.js';
import { h, spinner } from './ui.js';
import { fieldSet } from './form_fields.js';

/**
 * openModal({testid, title, content, confirmText, cancelText, danger, wide, signal, onSubmit,
 * onError, canConfirm, fields}) testids: `<testid>` (the dialog), `<testid>-title`, `<testid>-error`,
 * `<testid>-cancel`, `<testid>-confirm`. onSubmit({close, error}) may throw: an ApiError's
 * refusal is shown the one way (form_fields.js) unless onError(err, errorEl) handles it (a
 * dialog with its own fieldSet). canConfirm(), when given, decides whether the confirm
 * button is enabled once a submit has settled (the caller keeps it up to date otherwise).
 * fields: {key: input} — a 422's `details` for a key (the API's field name, dotted when
 * nested) is shown on that input's own error line (`error-<testid>-<key>`, aria-invalid),
 * the rest on the dialog's error line; all cleared at the next submit.
 * Answers {dlg, confirmBtn, error, close}.
 */
export function openModal({ testid, title, content, confirmText, cancelText = 'Cancel', danger = false, wide = false, signal, onSubmit, onError, canConfirm, fields = {} }) {
  const error = h('div', { class: 'form-error', testid: `${testid}-error`, role: 'alert' });
  const confirmBtn = h('button', { type: 'submit', class: danger ? 'btn btn-danger solid' : 'btn btn-primary', testid: `${testid}-confirm` }, confirmText);
  const cancelBtn = h('button', { type: 'button', class: 'btn', testid: `${testid}-cancel` }, cancelText);
  const form = h('form', { class: 'modal-body', novalidate: true },
    h('h2', { id: `${testid}-title`, testid: `${testid}-title` }, title), content, error,
    h('div', { class: 'modal-actions' }, cancelBtn, confirmBtn));
  // each field's own error line, right after its input
  const fieldLines = fieldSet(testid);
  for (const [key, input] of Object.entries(fields)) input.after(fieldLines.line(key, input));
  const dlg = h('dialog', { class: `modal${wide ? ' wide' : ''}`, testid, 'aria-labelledby': `${testid}-title` }, form);
  document.body.appendChild(dlg);

  const close = () => { if (dlg.open) dlg.close(); };
  dlg.addEventListener('close', () => dlg.remove());
  if (signal) signal.addEventListener('abort', close, { once: true });
  cancelBtn.addEventListener('click', close);
  let busy = false;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (busy || confirmBtn.disabled) return;
    busy = true;
    const label = [...confirmBtn.childNodes];
    confirmBtn.disabled = true;
    confirmBtn.replaceChildren(spinner(), 'Sending…');
    fieldLines.clear(error);
    try {
      await onSubmit({ close, error });
    } catch (ex) {
      if (isAbort(ex)) return;
      if (onError) onError(ex, error);
      else fieldLines.showRefusal(ex, error);
    } finally {
      busy = false;
      if (dlg.open) {
        confirmBtn.replaceChildren(...label);
        confirmBtn.disabled = canConfirm ? !canConfirm() : false;
      }
    }
  });
  dlg.showModal();
  return { dlg, confirmBtn, error, close };
}

/** After a 202 mutation reply: open its operation's live progress panel. Answers whether
 * there was an operation to open. */
export function openOperation(reply) {
  const op = reply && reply.operation;
  if (!op || !op.id) return false;
  location.hash = `#/operations/${encodeURIComponent(op.id)}`;
  return true;
}
