// The add-instance-group request: labels and taints as typed (one per line), and what is
// wrong with a body by the API's rules (rules.group), checked before anything is sent. The
// API checks again; its 422 lands on the same fields.

import { rules } from '../rules.js';
import { efaProblem } from '../capacity_fields.js';

const lines = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean);

/** "key=value" per line → {value: {key: value}, error} */
export function parseLabels(text) {
  const value = {};
  for (const line of lines(text)) {
    const i = line.indexOf('=');
    const key = (i < 0 ? line : line.slice(0, i)).trim();
    const val = i < 0 ? '' : line.slice(i + 1).trim();
    if (!rules.group.labelKey.test(key)) return { value, error: `Not a label key: ${key || line}` };
    if (!rules.group.labelValue.test(val)) return { value, error: `Not a label value: ${val}` };
    value[key] = val;
  }
  return { value, error: '' };
}

/** "key=value:Effect" or "key:Effect" per line → {value: [{key, value?, effect}], error} */
export function parseTaints(text) {
  const value = [];
  const effects = rules.group.taintEffects;
  for (const line of lines(text)) {
    const j = line.lastIndexOf(':');
    const effect = j < 0 ? '' : line.slice(j + 1).trim();
    const kv = j < 0 ? line : line.slice(0, j);
    const i = kv.indexOf('=');
    const key = (i < 0 ? kv : kv.slice(0, i)).trim();
    const val = i < 0 ? null : kv.slice(i + 1).trim();
    if (!effects.includes(effect)) return { value, error: `${line}: end with :effect, one of ${effects.join(', ')}` };
    if (!rules.group.labelKey.test(key)) return { value, error: `Not a taint key: ${key || line}` };
    if (val !== null && !rules.group.labelValue.test(val)) return { value, error: `Not a taint value: ${val}` };
    value.push(val === null || val === '' ? { key, effect } : { key, value: val, effect });
  }
  if (value.length > rules.group.maxTaints) return { value, error: `At most ${rules.group.maxTaints} taints.` };
  return { value, error: '' };
}

/** {field: message} for what the API would refuse in `body`. */
export function groupBodyProblems(body, { type, existing, nameProblem }) {
  const p = {};
  const g = rules.group;
  if (nameProblem) p.name = nameProblem;
  else if (existing.has(body.name)) p.name = `The cluster has an instance group named ${body.name} already.`;
  if (!body.instance_type) p.instance_type = 'Choose an instance type offered in the zone.';
  if (!Number.isInteger(body.instance_count) || body.instance_count < g.count.min || body.instance_count > g.count.max) {
    p.instance_count = `A whole number from ${g.count.min} to ${g.count.max}.`;
  }
  if ('training_plan_arn' in body && !rules.trainingPlanArn.test(body.training_plan_arn)) {
    p.training_plan_arn = body.training_plan_arn ? 'Not a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>).' : 'Enter the training plan ARN.';
  }
  const efaWhy = efaProblem(body.efa_mode, type, g.efaMinInterfaces);
  if (efaWhy) p.efa_mode = efaWhy;
  if ('subnet_id' in body && !g.subnetId.test(body.subnet_id)) p.subnet_id = 'Not a subnet id (subnet-…).';
  if ('volume_size_gb' in body && (!Number.isInteger(body.volume_size_gb) || body.volume_size_gb < g.volumeGb.min || body.volume_size_gb > g.volumeGb.max)) {
    p.volume_size_gb = `A whole number of GB from ${g.volumeGb.min} to ${g.volumeGb.max}, or empty for none.`;
  }
  return p;
}
