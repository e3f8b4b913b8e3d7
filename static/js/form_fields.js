// A form's fields and their errors, the one way: each input labelled, described by its hint
// and its error line (`error-<prefix>-<field>`, role=alert), aria-invalid while it shows a
// refusal; the API's field details (a 422's `details.fields`, dotted for nested fields) land
// on their field's line, the rest on the form's own line; a successful submit clears them.

import { h } from './ui.js';
import { fieldErrors } from './api.js';

/**
 * fieldSet(prefix) → {field(key, label, input, hint), setError(key, msg), clear(), focus(),
 * showRefusal(err, formErrEl)}. `key` is the API's field name (top level: `s3` for
 * `s3.bucket` unless `s3.bucket` has its own field).
 */
export function fieldSet(prefix) {
  const inputs = {};
  const lines = {};
  const id = (key) => `${prefix}-${key.replace(/[._]/g, '-')}`;

  function field(key, label, input, hint = null) {
    inputs[key] = input;
    if (!input.id) input.id = id(key);
    const line = h('div', { class: 'err', id: `${id(key)}-error`, testid: `error-${prefix}-${key}`, role: 'alert' });
    lines[key] = line;
    input.setAttribute('aria-describedby', hint ? `${id(key)}-hint ${id(key)}-error` : `${id(key)}-error`);
    return h('div', { class: 'field' }, h('label', { for: input.id }, label), input,
      hint ? h('div', { class: 'hint', id: `${id(key)}-hint` }, hint) : null, line);
  }

  /** Show `msg` on a field; an empty msg clears it. False when the form has no such field. */
  function setError(key, msg) {
    if (!lines[key]) return false;
    lines[key].textContent = msg || '';
    inputs[key].setAttribute('aria-invalid', msg ? 'true' : 'false');
    return true;
  }

  function clear(formErr) {
    if (formErr) formErr.textContent = '';
    for (const key of Object.keys(lines)) setError(key, '');
  }

  /** Focus the first field that shows an error. */
  function focus() {
    const bad = Object.values(inputs).find((el) => el.getAttribute('aria-invalid') === 'true');
    if (bad) bad.focus();
  }

  /** An ApiError on the fields it names (the nested name first, then its top level), the
   * rest — or the message when it names none — on the form's line. */
  function showRefusal(err, formErr) {
    const details = err.details && err.details.fields ? { fields: err.details.fields } : err.details;
    const other = [];
    for (const [key, msg] of Object.entries(fieldErrors(details))) {
      const top = key.split('.')[0];
      const words = msg.startsWith(`${top}: `) ? msg.slice(top.length + 2) : msg;
      if (!setError(key, msg) && !setError(top, words)) other.push(`${key}: ${msg}`);
    }
    const named = Object.values(inputs).some((el) => el.getAttribute('aria-invalid') === 'true');
    formErr.textContent = other.length ? other.join(' ') : named ? '' : err.message;
    focus();
  }

  return { field, setError, clear, focus, showRefusal, inputs };
}
