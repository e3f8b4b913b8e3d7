// #/clusters/<name>/storage — what is mounted in a cluster: S3 buckets (a new one hypd makes
// and owns, or an existing one, whole or a prefix, read-only if asked) and FSx for Lustre
// file systems, each a PersistentVolume and a claim of the item's name. Listed with their
// state, what backs them and which workloads use them; added from a form whose choices and
// bounds are the API's (rules.field); removed through the one confirmation (confirm.js: the
// dry run says what goes and who uses it; force only once the user types the item's name).

import { api, isAbort, mutator, canMutate } from '../api.js';
import { h, clear, badge, toastError, guard, roleHint, spinner, opHref } from '../ui.js';
import { rules, validateName } from '../rules.js';
import { openOperation } from '../modal.js';
import { confirmDestroy } from '../confirm.js';
import { fieldSet } from '../form_fields.js';

const REFRESH_MS = 3000;
const KIND_LABELS = { s3: 'S3 bucket', fsx: 'FSx for Lustre' };

/** The form's choices and bounds, from the API's document. */
function storageRules() {
  const f = (schema, name) => rules.field(schema, name);
  return {
    kinds: f('StorageCreate', 'kind').enum,
    defaultNamespace: f('StorageCreate', 'namespace').default,
    namespace: new RegExp(f('StorageCreate', 'namespace').pattern),
    bucket: new RegExp(f('S3', 'bucket').pattern),
    fsxCapacity: { min: f('Fsx', 'storage_capacity_gib').minimum, default: f('Fsx', 'storage_capacity_gib').default },
    fsxTypes: f('Fsx', 'deployment_type').enum,
    fsxDefaultType: f('Fsx', 'deployment_type').default,
    fsxThroughput: f('Fsx', 'per_unit_storage_throughput').enum,
  };
}

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Storage', testid: 'cluster-storage-link' };

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const base = `/api/v1/clusters/${encodeURIComponent(cluster)}/storage`;
  const send = mutator();
  const R = storageRules();
  const fields = fieldSet('storage');
  const list = h('div', { testid: 'storage-list' }, h('div', { class: 'loading' }, spinner(), 'Reading the cluster…'));

  const text = (key, attrs = {}) => h('input', { type: 'text', testid: `storage-${key}`, class: 'mono', autocomplete: 'off', spellcheck: 'false', ...attrs });
  const nameIn = text('name', { placeholder: 'e.g. datasets' });
  const kindSel = h('select', { testid: 'storage-kind' }, R.kinds.map((k) => h('option', { value: k }, KIND_LABELS[k] || k)));
  const nsIn = text('namespace', { value: R.defaultNamespace });
  const bucketIn = text('bucket', { placeholder: 'leave empty: hypd makes a bucket' });
  const prefixIn = text('prefix', { placeholder: 'optional, e.g. datasets/' });
  const readOnlyIn = h('input', { type: 'checkbox', id: 'storage-read-only', testid: 'storage-read-only' });
  const capacityIn = h('input', { type: 'number', testid: 'storage-capacity', min: R.fsxCapacity.min, step: 1200, value: R.fsxCapacity.default, inputmode: 'numeric' });
  const typeSel = h('select', { testid: 'storage-deployment-type' },
    R.fsxTypes.map((t) => h('option', { value: t, selected: t === R.fsxDefaultType }, t)));
  const throughputSel = h('select', { testid: 'storage-throughput' },
    h('option', { value: '' }, 'default'), R.fsxThroughput.map((t) => h('option', { value: String(t) }, `${t} MB/s per TiB`)));
  const s3Part = h('div', { testid: 'storage-s3-fields' },
    fields.field('s3.bucket', 'Bucket', bucketIn, 'An existing bucket is mounted and never deleted by hypd; a new one is hypd\'s, deleted with the item.'),
    fields.field('s3.prefix', 'Prefix', prefixIn, 'Mount only this prefix of the bucket.'),
    h('label', { class: 'check', for: 'storage-read-only' }, readOnlyIn, ' Mount read-only'));
  const fsxPart = h('div', { testid: 'storage-fsx-fields' },
    fields.field('fsx.storage_capacity_gib', 'Capacity (GiB)', capacityIn, `${R.fsxCapacity.min} GiB or a multiple of 2400.`),
    fields.field('fsx.deployment_type', 'Deployment type', typeSel, 'PERSISTENT_2 is replicated; SCRATCH_2 is temporary.'),
    fields.field('fsx.per_unit_storage_throughput', 'Throughput', throughputSel, 'PERSISTENT_2 only.'));
  const formErr = h('div', { class: 'form-error', testid: 'storage-form-error', role: 'alert' });
  const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'storage-add' }, 'Add storage'));
  const form = h('form', { testid: 'storage-form', novalidate: true }, formErr,
    fields.field('name', 'Name (also its claim\'s)', nameIn, rules.name.rule),
    fields.field('kind', 'Kind', kindSel),
    fields.field('namespace', 'Namespace of the claim', nsIn),
    s3Part, fsxPart,
    h('div', { class: 'inline' }, submit), roleHint('adding storage', 'storage-role-hint'));
  const shape = () => {
    s3Part.hidden = kindSel.value !== 's3';
    fsxPart.hidden = kindSel.value !== 'fsx';
  };
  kindSel.addEventListener('change', shape);
  shape();

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Storage'),
      h('span', { class: 'sub' }, cluster, ' · mounted in pods by its claim, e.g. at /data'),
      h('span', { class: 'spacer' })),
    h('div', { class: 'grid-2' },
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Mounted')), list),
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Add storage')),
        h('div', { class: 'card-body' }, form))));

  async function load() {
    try {
      render(await api(base, { signal: ctx.signal }));
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  let shown = null;

  function render(data) {
    const now = JSON.stringify(data);
    if (now === shown) return; // unchanged: leave the rows (and the focus) alone
    shown = now;
    clear(list);
    const items = data.items || [];
    if (data.note) list.appendChild(h('div', { class: 'hint', testid: 'storage-note' }, data.note));
    if (!items.length) {
      list.appendChild(h('div', { class: 'empty', testid: 'storage-empty' }, 'Nothing mounted yet.'));
      return;
    }
    list.appendChild(h('div', { class: 'table-wrap' }, h('table', { class: 'data', testid: 'storage-table' },
      h('thead', null, h('tr', null, ['Item', 'State', 'Backed by', 'Used by', ''].map((t) => h('th', null, t)))),
      h('tbody', null, items.map(row)))));
  }

  function backing(item) {
    if (item.kind === 's3' && item.s3) {
      const where = `s3://${item.s3.bucket || '?'}/${item.s3.prefix || ''}`;
      return [h('span', { class: 'id' }, where),
        h('div', { class: 'sub-id' }, [item.s3.made_by_hypd ? 'made by hypd' : 'yours: never deleted by hypd',
          item.s3.read_only ? 'read-only' : null].filter(Boolean).join(' · '))];
    }
    if (item.kind === 'fsx' && item.fsx) {
      return [h('span', { class: 'id' }, item.fsx.file_system_id || 'being made'),
        h('div', { class: 'sub-id' }, [item.fsx.capacity_gib ? `${item.fsx.capacity_gib} GiB` : null,
          item.fsx.deployment_type, item.fsx.lifecycle].filter(Boolean).join(' · '))];
    }
    return '—';
  }

  function row(item) {
    const users = item.users || [];
    return h('tr', { testid: `storage-row-${item.name}`, dataset: { state: item.state || '' } },
      h('td', null, h('b', { class: 'id' }, item.name),
        h('div', { class: 'sub-id' }, `${KIND_LABELS[item.kind] || item.kind} · claim ${item.namespace || '?'}/${item.claim || item.name}`)),
      h('td', null, badge(item.state || 'unknown', { testid: `storage-state-${item.name}` }),
        item.operation_id ? h('a', { href: opHref(item.operation_id), class: 'sub-id', 'aria-label': `last operation of storage ${item.name}` }, ' operation') : null,
        item.message ? h('div', { class: 'sub-id', testid: `storage-message-${item.name}` }, item.message) : null),
      h('td', { testid: `storage-backing-${item.name}` }, backing(item)),
      h('td', { testid: `storage-users-${item.name}` }, users.length ? users.join(', ') : h('span', { class: 'faint' }, 'nothing')),
      h('td', { class: 'actions' }, ['creating', 'deleting'].includes(item.state) ? null : removeButton(item)));
  }

  function removeButton(item) {
    const btn = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `storage-remove-${item.name}` }, 'Remove'));
    btn.addEventListener('click', () => openRemove(item));
    return btn;
  }

  function openRemove(item) {
    if (!canMutate()) return;
    confirmDestroy({
      kind: 'storage', name: item.name, verb: 'Remove', action: 'storage-remove', signal: ctx.signal,
      url: `${base}/${encodeURIComponent(item.name)}`,
      about: h('p', null, item.deletes_data
        ? 'Unmounts it and deletes what hypd made for it, with the data on it.'
        : 'Unmounts it; the data stays where it is (hypd did not make it).'),
    }).then((reply) => { if (reply) { openOperation(reply); load(); } });
  }

  /** The request the form asks for, or null (the fields say why). */
  function body() {
    const out = { name: nameIn.value.trim(), kind: kindSel.value, namespace: nsIn.value.trim() || R.defaultNamespace };
    let ok = true;
    const bad = (key, msg) => { fields.setError(key, msg); ok = false; };
    const why = validateName(out.name);
    if (why) bad('name', why);
    if (!R.namespace.test(out.namespace)) bad('namespace', 'Not a Kubernetes namespace name.');
    if (out.kind === 's3') {
      const s3 = { read_only: readOnlyIn.checked };
      const bucket = bucketIn.value.trim();
      if (bucket && !R.bucket.test(bucket)) bad('s3.bucket', 'Not an S3 bucket name.');
      if (bucket) s3.bucket = bucket;
      if (prefixIn.value.trim()) s3.prefix = prefixIn.value.trim();
      out.s3 = s3;
    } else {
      const gib = Number(capacityIn.value);
      if (!Number.isInteger(gib) || gib < R.fsxCapacity.min) bad('fsx.storage_capacity_gib', `At least ${R.fsxCapacity.min} GiB.`);
      out.fsx = { storage_capacity_gib: gib, deployment_type: typeSel.value };
      if (throughputSel.value) out.fsx.per_unit_storage_throughput = Number(throughputSel.value);
    }
    return ok ? out : null;
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!canMutate()) return;
    fields.clear(formErr);
    const request = body();
    if (!request) { fields.focus(); return; }
    submit.disabled = true;
    try {
      const reply = await send(base, { body: request, signal: ctx.signal });
      nameIn.value = '';
      if (reply && reply.operation) openOperation(reply);
      load();
    } catch (e) {
      if (!isAbort(e)) fields.showRefusal(e, formErr);
    } finally {
      submit.disabled = !canMutate();
    }
  });

  load();
  const timer = setInterval(load, REFRESH_MS);
  return () => clearInterval(timer);
}
