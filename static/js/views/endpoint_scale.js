// An endpoint row's "Scale" on #/clusters/<name>/endpoints: its replicas, or its autoscaling
// bounds when it autoscales, changed in place by an explicit diff (PATCH with only what
// changed). The bounds are the API's (rules.field); what the cluster can never hold is
// refused with the numbers (422 exceeds_capacity), "already as asked" sends nothing.

import { mutator } from '../api.js';
import { h } from '../ui.js';
import { openModal } from '../modal.js';
import { rules } from '../rules.js';
import { fieldSet } from '../form_fields.js';

/** openScale(cluster, ep, signal, onSent(reply)): the dialog; onSent gets the 202's reply. */
export function openScale(cluster, ep, signal, onSent) {
  const patchField = (name) => rules.field('EndpointPatch', name);
  const bounds = (name) => rules.field('EndpointAutoscalingPatch', name);
  const send = mutator();
  const fields = fieldSet('scale');
  const number = (key, b, value, attrs = {}) => h('input', {
    type: 'number', testid: `scale-${key.replace(/^autoscaling\./, '')}`, class: 'mono',
    min: b.minimum, max: b.maximum, value: value ?? '', inputmode: 'numeric', ...attrs,
  });
  const auto = ep.autoscaling || null;
  const inputs = auto
    ? { 'autoscaling.min': number('autoscaling.min', bounds('min'), auto.min, { step: 1 }),
      'autoscaling.max': number('autoscaling.max', bounds('max'), auto.max, { step: 1 }),
      'autoscaling.target': number('autoscaling.target', bounds('target'), auto.target, { step: 'any' }) }
    : { replicas: number('replicas', patchField('replicas'), ep.replicas, { step: 1 }) };
  const labels = { replicas: 'Replicas (servers)', 'autoscaling.min': 'Fewest servers',
    'autoscaling.max': 'Most servers', 'autoscaling.target': 'Load per server aimed at' };
  const content = h('div', null,
    h('p', null, auto ? `It autoscales between ${auto.min} and ${auto.max} servers now.` : `It runs ${ep.replicas ?? 0} servers now.`),
    Object.entries(inputs).map(([key, input]) => fields.field(key, labels[key], input,
      `${input.min}${input.max ? ` to ${input.max}` : ' or more'}`)));

  /** Only what changed (the API's explicit diff); null when a value is not a number. */
  function diff() {
    const out = {};
    for (const [key, input] of Object.entries(inputs)) {
      const v = Number(input.value);
      if (input.value.trim() === '' || Number.isNaN(v)) {
        fields.setError(key, 'Enter a number.');
        return null;
      }
      const [top, sub] = key.split('.');
      const before = sub ? auto[sub] : ep[top];
      if (v === before) continue;
      if (sub) (out[top] = out[top] || {})[sub] = v; else out[top] = v;
    }
    return out;
  }

  return openModal({
    testid: 'scale-dialog', title: `Scale endpoint ${ep.name}`, confirmText: 'Scale', signal, content,
    onSubmit: async ({ close, error }) => {
      fields.clear(error);
      const body = diff();
      if (body === null) { fields.focus(); return; }
      if (!Object.keys(body).length) { error.textContent = 'Nothing changed.'; return; }
      const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/endpoints/${encodeURIComponent(ep.name)}`,
        { method: 'PATCH', body, signal });
      close();
      onSent(reply);
    },
    onError: (err, errorEl) => fields.showRefusal(err, errorEl),
  });
}
