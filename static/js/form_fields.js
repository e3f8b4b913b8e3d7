// A form's fields and their errors, the one way: each input labelled, described by its hint
// and its error line (`error-<prefix>-<field>`, role=alert), aria-invalid while it shows a
// refusal; the API's field details (a 422's `details.fields`, dotted for nested fields) land
// on their field's line (or its nearest parent the form has), the rest on the form's own
// line; the focus goes to the first field in error; the next submit clears them. Every form
// uses it, so a refusal reads and behaves the same on every page.

import { h } from './ui.js';
import { fieldErrors } from './api.js';

/**
 * fieldSet(prefix) → {field(key, label, input, hint), line(key, input, hintId), setError(key,
 * msg), show(problems), clear(formErr), focus(), showRefusal(err, formErr, as), inputs}.
 * `key` is the API's field name (`s3.bucket` for a nested field; a refusal of
 * `s3.bucket` lands on `s3` when the form has no `s3.bucket` field).
 */
export function fieldSet(prefix) {
  const inputs = {};
  const lines = {};
  const id = (key) => fieldId(prefix, key);

  /** The error line of a field the form lays out itself (a radio group, a field in a row or
   * shown only for one choice): `input` is what turns aria-invalid (a radio group's box is
   * fine), described by `hintId` (when it has a hint) and the line. */
  function line(key, input, hintId = null) {
    inputs[key] = input;
    const el = h('div', { class: 'err', id: `${id(key)}-error`, testid: `error-${prefix}-${key}`, role: 'alert' });
    lines[key] = el;
    input.setAttribute('aria-describedby', hintId ? `${hintId} ${el.id}` : el.id);
    return el;
  }

  /** A labelled field: label, input, hint (words, or an element the form keeps), error line. */
  function field(key, label, input, hint = null) {
    if (!input.id) input.id = id(key);
    let hintEl = null;
    if (hint instanceof Node) {
      hintEl = hint;
      if (!hintEl.id) hintEl.id = `${id(key)}-hint`;
    } else if (hint) {
      hintEl = h('div', { class: 'hint', id: `${id(key)}-hint` }, hint);
    }
    const err = line(key, input, hintEl && hintEl.id);
    return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hintEl, err);
  }

  /** Show `msg` on a field; an empty msg clears it. False when the form has no such field. */
  function setError(key, msg) {
    if (!lines[key]) return false;
    lines[key].textContent = msg || '';
    inputs[key].setAttribute('aria-invalid', msg ? 'true' : 'false');
    return true;
  }

  const bad = () => Object.values(inputs).filter((el) => el.getAttribute('aria-invalid') === 'true');

  /** The form's own check: `problems` ({key: message}) on their fields, the focus on the
   * first; true when there is none. */
  function show(problems) {
    for (const [key, msg] of Object.entries(problems)) if (msg) setError(key, msg);
    focus();
    return !bad().length;
  }

  function clear(formErr) {
    if (formErr) formErr.textContent = '';
    for (const key of Object.keys(lines)) setError(key, '');
  }

  /** Focus the first field (in the page's order) that shows an error; a radio group's first
   * enabled choice. */
  function focus() {
    const first = bad().filter((el) => !el.closest('[hidden]'))
      .sort((a, b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1))[0];
    if (!first) return;
    const target = first.matches('input, select, textarea')
      ? first : first.querySelector('input:not([disabled]), select, textarea');
    if (target && !target.disabled) target.focus();
  }

  /** The field an API name lands on: itself, else its nearest parent the form has. */
  function placeOf(name) {
    const parts = name.split('.');
    for (; parts.length; parts.pop()) if (lines[parts.join('.')]) return parts.join('.');
    return null;
  }

  /** An ApiError: a 422's field details on the fields they name (several messages for one
   * field said together; `as(name)` renames an API field to the form's, for a form that asks
   * it differently), the rest — or the message when it names none — on the form's line. */
  function showRefusal(err, formErr, as = (name) => name) {
    const said = {};
    const other = [];
    for (const [name, msg] of Object.entries(refusedFields(err))) {
      const key = placeOf(as(name));
      if (key === null) { other.push(`${name}: ${msg}`); continue; }
      const words = msg.startsWith(`${key}: `) ? msg.slice(key.length + 2) : msg;
      said[key] = said[key] ? `${said[key]} ${words}` : words;
    }
    for (const [key, msg] of Object.entries(said)) setError(key, msg);
    formErr.textContent = other.length ? other.join(' ') : Object.keys(said).length ? '' : err.message;
    focus();
  }

  return { field, line, setError, show, clear, focus, showRefusal, inputs };
}

const fieldId = (prefix, key) => `${prefix}-${key.replace(/[._]/g, '-')}`;

/** A refusal's messages by field ({name: message}, dotted for nested fields): a 422's
 * details (its `fields` when it has numbers beside them); none for any other error. */
export function refusedFields(err) {
  const raw = err && err.status === 422 ? err.details : null;
  return fieldErrors(raw && raw.fields ? { fields: raw.fields } : raw);
}

/** For a view that re-renders its inputs from its state (a card, a table row) and keeps the
 * last refusal there: `input` with that field's message on its line, as fieldSet shows it
 * (`error-<prefix>-<key>`, aria-invalid); the input alone when there is none. */
export function withFieldError(prefix, key, input, msg) {
  if (!msg) return [input];
  const line = h('span', { class: 'err', id: `${fieldId(prefix, key)}-error`, testid: `error-${prefix}-${key}`, role: 'alert' }, msg);
  input.setAttribute('aria-invalid', 'true');
  input.setAttribute('aria-describedby', line.id);
  return [input, line];
}
