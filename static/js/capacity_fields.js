// Capacity decisions shared by the cluster create form and the add-instance-group form: how
// capacity types and EFA modes are shown, the zone and instance-type selects (types grouped by
// family, from discovery) and what a type offers. Which values exist is the API's (rules.js);
// this module is presentation only.

import { h, clear, fill, badge } from './ui.js';

// How each capacity type the API accepts is shown (keyed by the API's values).
const CAPACITY_TEXT = {
  'on-demand': { label: 'On-demand', hint: 'Billed per instance-hour while it runs.' },
  spot: { label: 'Spot', hint: 'Cheaper, but AWS can reclaim instances; no fixed price. Excludes elastic training, managed tiered checkpointing and checkpointless training.' },
  'training-plan': { label: 'Training plan', hint: 'Capacity reserved by a SageMaker training plan, paid up front.' },
};
const EFA_TEXT = { efa: 'EFA', 'efa-only': 'EFA-only' };

export function capacityChoices(values) {
  return values.map((value) => ({ value, label: value, hint: '', ...CAPACITY_TEXT[value] }));
}

export function capacityLabel(value) {
  return (CAPACITY_TEXT[value] && CAPACITY_TEXT[value].label) || value;
}

export function efaLabel(value) {
  return EFA_TEXT[value] || value;
}

/** A segmented radio group: `name` is the inputs' name, each input `testid` `${prefix}${value}`. */
export function radioGroup({ name, label, testid, prefix, choices, checked }) {
  return h('div', { class: 'seg', role: 'radiogroup', 'aria-label': label, testid },
    choices.map((c) => h('label', { class: 'seg-opt', title: c.hint || '' },
      h('input', { type: 'radio', name, value: c.value, testid: `${prefix}${c.value}`, checked: c.value === checked }),
      h('span', null, c.label))));
}

export function radioValue(box) {
  const r = box.querySelector('input[type=radio]:checked');
  return r ? r.value : '';
}

export function capacityBox(values, checked, testid = 'cluster-capacity') {
  return radioGroup({ name: 'capacity_type', label: 'Capacity type', testid, prefix: 'capacity-', choices: capacityChoices(values), checked });
}

export function efaBox(modes, testid = 'cluster-efa') {
  return radioGroup({
    name: 'efa_mode', label: 'EFA mode', testid, prefix: 'efa-mode-',
    choices: modes.map((m) => ({ value: m, label: efaLabel(m) })), checked: modes[0],
  });
}

/** Fill a zone <select> from discovery's zones; unavailable zones are listed but disabled. */
export function fillZoneSelect(sel, zones) {
  clear(sel).appendChild(h('option', { value: '' }, zones.length ? 'Choose a zone…' : 'No zones in this region'));
  for (const z of zones) {
    const off = z.state && z.state !== 'available';
    sel.appendChild(h('option', { value: z.name, disabled: off },
      `${z.name}${z.zone_id ? `  (${z.zone_id})` : ''}${off ? ` · ${z.state}` : ''}`));
  }
  sel.disabled = !zones.length;
}

/** Fill an instance-type <select> with `types` (discovery's, offered in `zone`), grouped by
 * family; keeps `want` selected when offered. */
export function fillTypeSelect(sel, types, zone, want) {
  clear(sel);
  if (!types.length) {
    sel.appendChild(h('option', { value: '' }, `No HyperPod instance types in ${zone}`));
    sel.disabled = true;
    return;
  }
  sel.appendChild(h('option', { value: '' }, `Choose one of ${types.length} types…`));
  const families = new Map();
  for (const t of types) {
    const fam = t.name.split('.')[1] || t.name;
    if (!families.has(fam)) families.set(fam, []);
    families.get(fam).push(t);
  }
  const famKey = (f) => f.replace(/\d+/g, (d) => d.padStart(3, '0'));
  for (const fam of [...families.keys()].sort((a, b) => famKey(a).localeCompare(famKey(b)))) {
    const list = families.get(fam).sort((a, b) => (a.vcpus || 0) - (b.vcpus || 0) || a.name.localeCompare(b.name));
    const first = list[0];
    const accel = first.accelerator_name || first.accelerator || 'no accelerator';
    sel.appendChild(h('optgroup', { label: `${fam} · ${accel}` }, list.map((t) => h('option', { value: t.name }, typeLabel(t)))));
  }
  sel.disabled = false;
  if (want && types.some((t) => t.name === want)) sel.value = want;
}

/** What a type offers, as badges and chips (the EFA badge carries `efaTestid`). */
export function fillTypeInfo(el, t, efaTestid) {
  if (!t) { clear(el); return; }
  fill(el,
    t.accelerator ? badge(t.accelerator, { class: 'plain' }) : null,
    t.accelerator_count ? chip(`${t.accelerator_count} × ${t.accelerator_name || t.accelerator}`) : null,
    t.accelerator_memory_gib != null ? chip(`${num(t.accelerator_memory_gib)} GiB accelerator memory`) : null,
    t.vcpus != null ? chip(`${t.vcpus} vCPU`) : null,
    t.memory_gib != null ? chip(`${num(t.memory_gib)} GiB`) : null,
    t.efa_supported
      ? badge(`EFA ×${t.max_efa_interfaces || 1}`, { class: 'plain tone-green', testid: efaTestid })
      : badge('no EFA', { class: 'plain tone-amber', testid: efaTestid }));
}

// The EFA rule is the API's (the efa_mode field's `x-hypd-min-efa-interfaces`: the EFA
// interfaces a type needs for each mode; an unset mode means EFA where the type has it and
// none where it has not). `minInterfaces` below is that map, from rules.js.

/** How many EFA interfaces a type has (a type that supports EFA has at least one). */
export function efaInterfaces(t) {
  return t && t.efa_supported ? Math.max(t.max_efa_interfaces || 0, 1) : 0;
}

/** Why type `t` cannot take EFA mode `mode` by the API's rule; '' when it can. */
export function efaProblem(mode, t, minInterfaces) {
  if (!mode || !t) return '';
  const need = minInterfaces[mode] || 0;
  const have = efaInterfaces(t);
  if (have >= need) return '';
  return have ? `${efaLabel(mode)} needs a type with ${need} or more EFA interfaces; ${t.name} has ${have}.`
    : `${t.name} has no EFA interface: leave the EFA mode unset.`;
}

/** The EFA mode to send for type `t`: the chosen one, or none for a type without EFA (the
 * API then makes the group without EFA, as it does for an unset mode). */
export function efaModeFor(box, t) {
  return efaInterfaces(t) || !t ? radioValue(box) || undefined : undefined;
}

/** Enable the EFA choices the type allows; answers the hint to show (`warn` is never set: a
 * type without EFA is accepted, its group made without EFA). */
export function updateEfaBox(box, t, minInterfaces) {
  const inputs = [...box.querySelectorAll('input[type=radio]')];
  for (const input of inputs) input.disabled = !!t && !!efaProblem(input.value, t, minInterfaces);
  const checked = inputs.find((i) => i.checked);
  const allowed = inputs.find((i) => !i.disabled);
  if (checked && checked.disabled && allowed) allowed.checked = true;
  const have = efaInterfaces(t);
  let text;
  if (!t) text = 'EFA: Elastic Fabric Adapter networking for NCCL collectives. EFA-only needs a type with several EFA interfaces.';
  else if (!have) text = `${t.name} has no EFA interface: the group is made without EFA.`;
  else if (inputs.every((i) => !i.disabled)) text = `${t.name} has ${have} EFA interfaces: EFA-only makes every interface EFA.`;
  else text = `${t.name} has ${have} EFA interface${have === 1 ? '' : 's'}, so ${inputs.filter((i) => i.disabled).map((i) => efaLabel(i.value)).join(', ')} is not available for it.`;
  return { text, warn: false };
}

/** "In total: 2 × ml.g5.8xlarge · 2 GPUs (A10G) · 64 vCPUs", or '' without a type and count. */
export function totalText(t, n) {
  if (!t || !Number.isInteger(n) || n < 1) return '';
  const parts = [`${n} × ${t.name}`];
  if (t.accelerator_count) parts.push(`${n * t.accelerator_count} ${t.accelerator === 'gpu' ? 'GPU' : 'accelerator'}${n * t.accelerator_count === 1 ? '' : 's'}${t.accelerator_name ? ` (${t.accelerator_name})` : ''}`);
  if (t.vcpus) parts.push(`${n * t.vcpus} vCPUs`);
  return `In total: ${parts.join(' · ')}`;
}

export function typeLabel(t) {
  const parts = [t.name];
  if (t.accelerator_count) parts.push(`${t.accelerator_count}× ${t.accelerator_name || t.accelerator}${t.accelerator_memory_gib ? ` ${num(t.accelerator_memory_gib)} GiB` : ''}`);
  if (t.vcpus) parts.push(`${t.vcpus} vCPU`);
  if (t.memory_gib) parts.push(`${num(t.memory_gib)} GiB`);
  parts.push(t.efa_supported ? `EFA×${t.max_efa_interfaces || 1}` : 'no EFA');
  return parts.join(' · ');
}

export function chip(text) {
  return h('span', { class: 'chip' }, text);
}

export function num(n) {
  const x = Number(n);
  if (Number.isNaN(x)) return String(n);
  return Number.isInteger(x) ? x.toLocaleString() : x.toLocaleString(undefined, { maximumFractionDigits: 1 });
}
