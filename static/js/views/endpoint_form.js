// The "Create an endpoint" form of #/clusters/<name>/endpoints: the decisions the API takes
// (name, kind, model — chosen from the models available in the cluster's bucket —, GPUs per
// server — the user states them —, replicas,
// instance type, service variant with a pool's models, routing for the kind, the managed
// KV cache's second tier). Choices and bounds are the API's (rules.js); the API refuses
// what a form cannot know (a model not in the bucket, the inference operator off).

import { api, isAbort, mutator } from '../api.js';
import { fieldSet } from '../form_fields.js';
import { h, guard, roleHint, toastError } from '../ui.js';
import { rules, validateName } from '../rules.js';

/** The form; `onSent(reply, name)` runs after the API accepted a create. */
export function endpointForm(cluster, ctx, onSent) {
  const r = rules.endpoints;
  const send = mutator();
  const fields = fieldSet('ep'); // error lines `error-ep-<field>`
  const input = (id, attrs = {}) => h('input', { type: 'text', id: `ep-${id}`, testid: `ep-${id}`, class: 'mono', autocomplete: 'off', spellcheck: 'false', ...attrs });
  const nameIn = input('name', { placeholder: 'e.g. chat' });
  const kindSel = h('select', { id: 'ep-kind', testid: 'ep-kind' }, r.kinds.map((k) => h('option', { value: k, selected: k === 'vllm' }, k)));
  const modelIn = h('select', { id: 'ep-model', testid: 'ep-model' }, h('option', { value: '' }, 'Reading the bucket…'));
  const modelHint = h('div', { class: 'hint', testid: 'ep-model-hint' });
  const gpusIn = input('gpus', { type: 'number', min: r.gpus.min, max: r.gpus.max, step: 1, placeholder: 'GPUs per server' });
  const replicasIn = input('replicas', { type: 'number', min: r.replicas.min, max: r.replicas.max, step: 1, value: String(r.replicas.default) });
  const typeIn = input('instance-type', { placeholder: 'ml.g5.12xlarge (optional; required for managed)' });
  const serviceSel = h('select', { id: 'ep-service', testid: 'ep-service' }, r.services.map((s) => h('option', { value: s, selected: s === r.defaultService }, s)));
  const poolIn = h('div', { id: 'ep-pool-models', testid: 'ep-pool-models', class: 'checks-inline', role: 'group', 'aria-label': 'Pool models' });
  const routingSel = h('select', { id: 'ep-routing', testid: 'ep-routing' });
  const l2Box = h('input', { type: 'checkbox', id: 'ep-kv-l2', testid: 'ep-kv-l2' });
  const formErr = h('div', { class: 'form-error', testid: 'ep-form-error', role: 'alert' });
  const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'ep-create' }, 'Create endpoint'));
  const { field } = fields;
  const serviceField = field('service', 'Service', serviceSel, 'in_cluster: a ClusterIP Service; load_balancer: an NLB; pool: warm workers, one Service per model.');
  const poolHint = h('div', { class: 'hint', id: 'ep-pool-models-hint' }, 'The models its workers serve, one Service each.');
  const poolField = h('div', { class: 'field' }, h('div', { class: 'label' }, 'Pool models'), poolIn, poolHint,
    fields.line('pool_models', poolIn, poolHint.id));
  const routingField = field('routing', 'Routing', routingSel);
  const l2Field = h('div', { class: 'field' }, h('label', { for: 'ep-kv-l2' }, l2Box, ' Tiered storage as the KV cache\'s second tier'),
    fields.line('kv_cache_l2', l2Box));
  const form = h('form', { testid: 'ep-form', novalidate: true }, formErr,
    field('name', 'Name', nameIn),
    field('kind', 'Kind', kindSel, 'managed: the HyperPod inference operator serves it; vllm, sglang: a Deployment hypd makes.'),
    field('model', 'Model', modelIn), modelHint,
    h('div', { class: 'field-row' },
      field('gpus', 'GPUs per server', gpusIn, 'State it: hypd never guesses it.'),
      field('replicas', 'Replicas', replicasIn)),
    field('instance_type', 'Instance type', typeIn),
    serviceField, poolField, routingField, l2Field,
    h('div', { class: 'inline' }, submit), roleHint('creating an endpoint', 'ep-role-hint'));

  function shape() {
    const kind = kindSel.value;
    const managed = kind === 'managed';
    serviceField.hidden = managed;
    poolField.hidden = managed || serviceSel.value !== 'pool';
    l2Field.hidden = !managed;
    const routes = (r.routingByKind || {})[kind] || [];
    routingSel.replaceChildren(h('option', { value: '' }, 'Default'), routes.map((p) => h('option', { value: p }, p)));
    routingField.hidden = !routes.length;
  }
  /** The models the bucket holds, ready to serve: the model's and the pool's choices. */
  async function loadModels() {
    try {
      const data = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/models`, { signal: ctx.signal });
      const ready = (data.items || []).filter((m) => m.state === 'available').map((m) => m.name);
      const chosen = modelIn.value;
      const pooled = new Set([...poolIn.querySelectorAll('input:checked')].map((b) => b.value));
      modelIn.replaceChildren(h('option', { value: '' }, ready.length ? 'Choose a model' : 'No model in the bucket yet'),
        ...ready.map((m) => h('option', { value: m, selected: m === chosen }, m)));
      poolIn.replaceChildren(...ready.map((m) => h('label', { class: 'check' },
        h('input', { type: 'checkbox', value: m, testid: `ep-pool-model-${m}`, checked: pooled.has(m) }), ` ${m}`)));
      modelHint.replaceChildren(ready.length ? '' : 'Download one first: ',
        ready.length ? '' : h('a', { href: `#/clusters/${encodeURIComponent(cluster)}/models` }, 'Models →'));
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }
  modelIn.addEventListener('focus', loadModels);
  loadModels();

  kindSel.addEventListener('change', shape);
  serviceSel.addEventListener('change', shape);
  shape();

  function problems(body) {
    const out = {};
    const nameWhy = validateName(body.name);
    if (nameWhy) out.name = nameWhy;
    if (!body.model) out.model = 'Choose a model from the cluster\'s bucket.';
    if (!(body.gpus >= r.gpus.min && body.gpus <= r.gpus.max)) out.gpus = `From ${r.gpus.min} to ${r.gpus.max}.`;
    if (!(body.replicas >= r.replicas.min && body.replicas <= r.replicas.max)) out.replicas = `From ${r.replicas.min} to ${r.replicas.max}.`;
    if (body.instance_type && !r.instanceType.test(body.instance_type)) out.instance_type = 'A HyperPod type such as ml.g5.12xlarge.';
    if (body.service === 'pool' && !(body.pool_models || []).length) out.pool_models = 'Choose the pool\'s models.';
    return out;
  }

  function request() {
    const kind = kindSel.value;
    const body = { name: nameIn.value.trim(), kind, model: modelIn.value,
      gpus: Number(gpusIn.value), replicas: Number(replicasIn.value) };
    if (typeIn.value.trim()) body.instance_type = typeIn.value.trim();
    if (kind === 'managed') body.kv_cache_l2 = l2Box.checked;
    else body.service = serviceSel.value;
    if (body.service === 'pool') body.pool_models = [...poolIn.querySelectorAll('input:checked')].map((b) => b.value);
    if (!routingField.hidden && routingSel.value) body.routing = routingSel.value;
    return body;
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fields.clear(formErr);
    const body = request();
    if (!fields.show(problems(body))) return;
    submit.disabled = true;
    try {
      const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/endpoints`, { body, signal: ctx.signal });
      nameIn.value = '';
      onSent(reply, body.name);
    } catch (e) {
      if (isAbort(e)) return;
      fields.showRefusal(e, formErr);
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
