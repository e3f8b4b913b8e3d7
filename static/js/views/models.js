// #/clusters/<name>/models — the models in a cluster's bucket, and downloads with their
// progress (files and bytes as they reach the bucket): from the Hugging Face hub (a hub
// token is named by its Secret) or copied from an S3 prefix; and a model's removal (refused,
// 409 in_use, while endpoints serve it: listed, forced only once the user types its name).

import { api, isAbort, mutator, canMutate } from '../api.js';
import { fieldSet } from '../form_fields.js';
import { h, clear, badge, toastError, guard, roleHint, spinner, opHref } from '../ui.js';
import { rules } from '../rules.js';
import { openOperation } from '../modal.js';
import { confirmDestroy } from '../confirm.js';

const REFRESH_MS = 2000;

function size(bytes) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes || 0;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) { n /= 1024; u += 1; }
  return `${n.toFixed(u ? 1 : 0)} ${units[u]}`;
}

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Models', testid: 'cluster-models-link' };

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const send = mutator();
  const list = h('div', { testid: 'models-list' }, h('div', { class: 'loading' }, spinner(), 'Reading the bucket…'));
  // each field by the API's name: its error line is `error-model-<field>` (form_fields.js)
  const fields = fieldSet('model');
  const field = (key, id, label, attrs = {}) => {
    const input = h('input', { type: 'text', id: `model-${id}`, testid: `model-${id}`, class: 'mono', autocomplete: 'off', spellcheck: 'false', ...attrs });
    return [input, fields.field(key, label, input)];
  };
  const [nameIn, nameField] = field('name', 'name', 'Name in the bucket (models/<name>/)', { placeholder: 'e.g. llama-3-8b' });
  const [repoIn, repoField] = field('repo', 'repo', 'Hugging Face id', { placeholder: 'org/model' });
  const [revIn, revField] = field('revision', 'revision', 'Revision', { value: rules.downloads.defaultRevision });
  const [s3In, s3Field] = field('s3_uri', 's3-uri', 'S3 prefix to copy', { placeholder: 's3://bucket/prefix' });
  const sourceSel = h('select', { id: 'model-source', testid: 'model-source' },
    rules.downloads.sources.map((v) => h('option', { value: v }, { huggingface: 'Hugging Face hub', s3: 'S3 prefix' }[v] || v)));
  const sourceField = fields.field('source', 'Source', sourceSel);
  const [secretIn, secretField] = field('hub_token_secret.name', 'secret', 'Hub token: Secret name (optional, default namespace)');
  const [keyIn, keyField] = field('hub_token_secret.key', 'secret-key', 'Its key', { value: 'token' });
  const formErr = h('div', { class: 'form-error', testid: 'model-form-error', role: 'alert' });
  const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'model-download' }, 'Download'));
  const hubOnly = [repoField, revField, secretField, keyField,
    h('div', { class: 'hint' }, 'The token stays in its Kubernetes Secret: hypd passes only the reference.')];
  const s3Only = [s3Field, h('div', { class: 'hint' }, 'The download\'s role may read this prefix only while it copies.')];
  const form = h('form', { testid: 'model-form', novalidate: true }, formErr, nameField, sourceField, hubOnly, s3Only,
    h('div', { class: 'inline' }, submit), roleHint('downloading a model', 'model-role-hint'));
  const shape = () => {
    for (const el of hubOnly) el.hidden = sourceSel.value !== 'huggingface';
    for (const el of s3Only) el.hidden = sourceSel.value !== 's3';
  };
  sourceSel.addEventListener('change', shape);
  shape();

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Models'),
      h('span', { class: 'sub' }, cluster, ' · ', h('a', { href: `#/clusters/${encodeURIComponent(cluster)}/endpoints`, testid: 'models-endpoints-link' }, 'Endpoints →')),
      h('span', { class: 'spacer' })),
    h('div', { class: 'grid-2' },
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'In the bucket')), list),
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Download a model')),
        h('div', { class: 'card-body' }, form))));

  async function load() {
    try {
      const data = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/models`, { signal: ctx.signal });
      render(data);
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  function render(data) {
    clear(list);
    const items = data.items || [];
    list.appendChild(h('div', { class: 'hint' }, h('span', { class: 'id' }, `s3://${data.bucket}/models/`)));
    if (!items.length) {
      list.appendChild(h('div', { class: 'empty', testid: 'models-empty' }, 'No models yet.'));
      return;
    }
    list.appendChild(h('table', { class: 'data', testid: 'models-table' },
      h('thead', null, h('tr', null, ['Model', 'State', 'Files', 'Size', ''].map((t) => h('th', null, t)))),
      h('tbody', null, items.map((m) => h('tr', { testid: `model-row-${m.name}` },
        h('td', null, h('b', { class: 'id' }, m.name)),
        h('td', null, badge(m.state, { testid: `model-state-${m.name}` }),
          m.operation_id ? h('a', { href: opHref(m.operation_id), class: 'sub-id' }, ' operation') : null,
          m.message ? h('div', { class: 'sub-id' }, m.message) : null),
        h('td', { class: 'num', testid: `model-files-${m.name}` }, `${m.files}`),
        h('td', { class: 'num', testid: `model-bytes-${m.name}` }, size(m.bytes)),
        h('td', { class: 'actions' }, m.state === 'available' ? removeButton(m) : null))))));
  }

  function removeButton(m) {
    const btn = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `model-remove-${m.name}` }, 'Remove'));
    btn.addEventListener('click', () => openRemove(m));
    return btn;
  }

  function openRemove(m) {
    if (!canMutate()) return;
    confirmDestroy({
      kind: 'model', name: m.name, verb: 'Remove', action: 'model-remove', signal: ctx.signal,
      url: `/api/v1/clusters/${encodeURIComponent(cluster)}/models/${encodeURIComponent(m.name)}`,
      about: h('p', null, `Deletes every file under models/${m.name}/ (${m.files} files, ${size(m.bytes)}) from the cluster's bucket, for good.`),
    }).then(openOperation);
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fields.clear(formErr);
    const body = { name: nameIn.value.trim(), source: sourceSel.value };
    if (body.source === 's3') {
      body.s3_uri = s3In.value.trim();
      if (!fields.show({ s3_uri: rules.downloads.s3Uri.test(body.s3_uri) ? '' : 'An S3 prefix: s3://bucket/prefix' })) return;
    } else {
      body.repo = repoIn.value.trim();
      body.revision = revIn.value.trim() || rules.downloads.defaultRevision;
      if (secretIn.value.trim()) body.hub_token_secret = { name: secretIn.value.trim(), key: keyIn.value.trim() };
    }
    submit.disabled = true;
    try {
      await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/models`, { body, signal: ctx.signal });
      nameIn.value = '';
      load();
    } catch (e) {
      if (isAbort(e)) return;
      // a Secret without the key is the Secret's refusal: shown on its name
      fields.showRefusal(e, formErr, (name) => (name === 'hub_token_secret' ? 'hub_token_secret.name' : name));
    } finally {
      submit.disabled = false;
    }
  });

  load();
  const timer = setInterval(load, REFRESH_MS);
  return () => clearInterval(timer);
}
