// #/clusters/import — adopt an existing EKS cluster (and the HyperPod cluster on it) that hypd
// did not make: read-only as far as AWS goes (listed, usable, its kubeconfig read; deleting
// it in hypd only forgets it). The names' rules are the API's (rules.field); AWS is asked
// whether the clusters exist, and its answer (404, 409 for one hypd made) is shown as it is.

import { isAbort, mutator, canMutate } from '../api.js';
import { h, guard, roleHint, regionSelect } from '../ui.js';
import { rules } from '../rules.js';
import { clusterHref } from '../stages.js';
import { fieldSet } from '../form_fields.js';

export function mount(root, ctx) {
  const f = (name) => rules.field('ClusterImport', name);
  const eksName = new RegExp(f('name').pattern);
  const hyperpodName = new RegExp(f('hyperpod_cluster').pattern);
  const send = mutator();
  const fields = fieldSet('import');
  const text = (key, attrs) => h('input', { type: 'text', testid: `import-${key}`, class: 'mono', autocomplete: 'off', spellcheck: 'false', ...attrs });
  const nameIn = text('name', { placeholder: 'the EKS cluster\'s name' });
  const regionIn = regionSelect({ testid: 'import-region' });
  const hpIn = text('hyperpod', { placeholder: 'optional' });
  const formErr = h('div', { class: 'form-error', testid: 'import-form-error', role: 'alert' });
  const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'import-submit' }, 'Import'));
  const form = h('form', { testid: 'import-form', novalidate: true }, formErr,
    fields.field('name', 'EKS cluster', nameIn, 'As EKS names it, in the region below.'),
    fields.field('region', 'Region', regionIn),
    fields.field('hyperpod_cluster', 'HyperPod cluster on it', hpIn, 'Its nodes, groups and events are read too.'),
    h('div', { class: 'inline' }, submit), roleHint('importing a cluster', 'import-role-hint'));

  root.append(
    h('div', { class: 'crumbs' }, h('a', { href: '#/clusters' }, '← Clusters')),
    h('div', { class: 'page-head' }, h('h1', null, 'Import a cluster'),
      h('span', { class: 'sub' }, 'one hypd did not make: hypd reads it and runs work on it; it never changes or deletes it in AWS')),
    h('div', { class: 'card narrow' }, h('div', { class: 'card-body' }, form)));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!canMutate()) return;
    fields.clear(formErr);
    const body = { name: nameIn.value.trim() };
    if (regionIn.value) body.region = regionIn.value;
    if (hpIn.value.trim()) body.hyperpod_cluster = hpIn.value.trim();
    let ok = true;
    const bad = (key, msg) => { fields.setError(key, msg); ok = false; };
    if (!eksName.test(body.name)) bad('name', body.name ? 'Not an EKS cluster name.' : 'Enter the EKS cluster\'s name.');
    if (body.hyperpod_cluster && !hyperpodName.test(body.hyperpod_cluster)) bad('hyperpod_cluster', 'Not a HyperPod cluster name.');
    if (!ok) { fields.focus(); return; }
    submit.disabled = true;
    try {
      const imported = await send('/api/v1/clusters/import', { body, signal: ctx.signal });
      location.hash = clusterHref(imported.name);
    } catch (e) {
      if (!isAbort(e)) fields.showRefusal(e, formErr);
    } finally {
      submit.disabled = !canMutate();
    }
  });
}
