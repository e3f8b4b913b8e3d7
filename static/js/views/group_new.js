// #/clusters/<name>/capacity/add-group — add an instance group: the decisions the API takes
// (name; zone, or an existing subnet of the cluster's VPC; an instance type offered there;
// count; capacity type with a training plan's ARN; EFA mode; threads per core; an EBS volume;
// labels and taints; deep health checks). "Check" validates and runs the preflight (quotas,
// the plan); "Add instance group" sends exactly the checked request and opens its progress.

import { api, isAbort, mutator, canMutate } from '../api.js';
import { fieldSet } from '../form_fields.js';
import { h, fill, badge, toastError, guard, roleHint, spinner, section } from '../ui.js';
import { rules, validateName } from '../rules.js';
import {
  capacityChoices, capacityBox, efaBox, radioGroup, radioValue, fillZoneSelect, fillTypeSelect, fillTypeInfo,
  updateEfaBox, efaModeFor, totalText,
} from '../capacity_fields.js';
import { preflightCard } from '../preflight.js';
import { money, HOURS_PER_MONTH } from '../cost.js';
import { capacityHref } from '../capacity/links.js';
import { parseLabels, parseTaints, groupBodyProblems } from '../capacity/group_body.js';

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const send = mutator();
  const state = { c: null, existing: new Set(), types: [], typesReq: 0, check: null, checking: false, adding: false };

  const fields = fieldSet('ig');
  const nameIn = h('input', { type: 'text', id: 'ig-name', testid: 'ig-name', class: 'mono', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. spot-workers' });
  const azSel = h('select', { id: 'ig-az', testid: 'ig-az', disabled: true }, h('option', { value: '' }, 'Loading zones…'));
  const placement = radioGroup({
    name: 'placement', label: 'Placement', testid: 'ig-placement', prefix: 'placement-', checked: 'zone',
    choices: [{ value: 'zone', label: 'New subnet in the zone' }, { value: 'subnet', label: 'Existing subnet' }],
  });
  const subnetIn = h('input', { type: 'text', id: 'ig-subnet', testid: 'ig-subnet', class: 'mono', autocomplete: 'off', spellcheck: 'false', placeholder: 'subnet-0123456789abcdef0' });
  const subnetField = fields.field('subnet_id', 'Subnet id', subnetIn,
    'A subnet of the cluster\'s VPC, in the zone chosen above; the group\'s nodes take their addresses from it.');
  subnetField.hidden = true;
  subnetField.dataset.testid = 'ig-subnet-field';
  const typeSel = h('select', { id: 'ig-type', testid: 'ig-type', disabled: true }, h('option', { value: '' }, 'Choose a zone first'));
  const typeInfo = h('div', { class: 'type-info', testid: 'ig-type-info' });
  const countIn = h('input', { type: 'number', id: 'ig-count', testid: 'ig-count', class: 'mono', min: rules.group.count.min, max: rules.group.count.max, step: 1, value: '1' });
  const totalNote = h('div', { class: 'hint', testid: 'ig-total' });
  const choices = capacityChoices(rules.group.capacityTypes);
  const capBox = capacityBox(rules.group.capacityTypes, rules.group.defaultCapacityType, 'ig-capacity');
  const capHint = h('div', { class: 'hint', testid: 'ig-capacity-hint' });
  const planIn = h('input', { type: 'text', id: 'ig-training-plan', testid: 'ig-training-plan', class: 'mono', autocomplete: 'off', spellcheck: 'false', placeholder: 'arn:aws:sagemaker:…:training-plan/…' });
  const planField = fields.field('training_plan_arn', 'Training plan ARN', planIn,
    'The plan\'s zone wins: the group is placed where the plan reserves capacity, and another zone is refused.');
  planField.hidden = true;
  planField.dataset.testid = 'ig-training-plan-field';
  const efa = efaBox(rules.group.efaModes, 'ig-efa');
  const efaHint = h('div', { class: 'hint', testid: 'ig-efa-hint' });
  const threadsSel = h('select', { id: 'ig-threads', testid: 'ig-threads' }, h('option', { value: '' }, 'Default'),
    rules.group.threadsPerCore.map((n) => h('option', { value: String(n) }, String(n))));
  const volumeIn = h('input', { type: 'number', id: 'ig-volume', testid: 'ig-volume', class: 'mono', min: rules.group.volumeGb.min, max: rules.group.volumeGb.max, step: 1, placeholder: 'none' });
  const labelsIn = h('textarea', { id: 'ig-labels', testid: 'ig-labels', class: 'mono', rows: 2, spellcheck: 'false', placeholder: 'team=research\nworkload=batch' });
  const taintsIn = h('textarea', { id: 'ig-taints', testid: 'ig-taints', class: 'mono', rows: 2, spellcheck: 'false', placeholder: `spot=true:${rules.group.taintEffects[0]}` });
  const deepBox = h('input', { type: 'checkbox', id: 'ig-deep-health', testid: 'ig-deep-health' });
  const formErr = h('div', { class: 'form-error', testid: 'ig-form-error', role: 'alert' });
  const checkBtn = h('button', { type: 'button', class: 'btn', testid: 'ig-check' }, 'Check preflight');
  const addBtn = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'ig-create', disabled: true }, 'Add instance group'));
  const addHint = h('div', { class: 'hint action-hint', testid: 'ig-create-hint' });
  const panel = h('div', { class: 'plan-panel', testid: 'ig-check-panel' });

  const field = (key, label, input, hint) => fields.field(key, label, input, hint);
  // a radio group has no one input to label: its box is named (aria-label) and turns invalid
  const group = (key, label, box, hint = null) => h('div', { class: 'field' }, h('span', { class: 'label' }, label), box,
    hint ? h('div', { class: 'hint' }, hint) : null, key ? fields.line(key, box) : null);
  const form = h('form', { testid: 'ig-form', novalidate: true },
    formErr,
    section('Group',
      field('name', 'Name', nameIn, 'Names the instance group; fixed once made.'),
      field('availability_zone', 'Availability zone', azSel),
      group(null, 'Placement', placement, 'hypd makes the group\'s own /20 subnet in the zone and routes it; or name an existing subnet. Never CIDRs or route tables.'),
      subnetField),
    section('Capacity',
      field('instance_type', 'Instance type', typeSel), typeInfo,
      field('instance_count', 'Instance count', countIn), totalNote,
      group('capacity_type', 'Capacity type', capBox), capHint,
      planField,
      h('div', { class: 'hint field-note' }, 'Instance type, capacity type, EFA mode and placement are fixed for the group\'s life; only the count (and labels, taints, threads, health checks) can change later.')),
    section('Nodes',
      group('efa_mode', 'EFA mode', efa), efaHint,
      h('div', { class: 'field-row' },
        field('threads_per_core', 'Threads per core', threadsSel, '2 turns SMT on, for types that have it.'),
        field('volume_size_gb', 'Extra EBS volume (GB)', volumeIn, 'Per node, at /opt/sagemaker.')),
      field('labels', 'Kubernetes labels', labelsIn, 'key=value, one per line.'),
      field('taints', 'Kubernetes taints', taintsIn, `key=value:effect or key:effect, one per line; effect one of ${rules.group.taintEffects.join(', ')}.`),
      h('div', { class: 'field' }, h('label', { class: 'check strong-check', for: 'ig-deep-health' }, deepBox,
        h('span', null, h('b', null, 'Deep health checks'), h('span', { class: 'faint' }, ' — stress and connectivity checks (GPU, EFA) before nodes accept work; AWS refuses other changes to the cluster while they run.'))),
      fields.line('deep_health_checks', deepBox))),
    h('div', { class: 'form-actions' }, checkBtn, addBtn), addHint,
    roleHint('adding an instance group', 'ig-role-hint'));

  root.append(
    h('div', { class: 'crumbs' }, h('a', { href: capacityHref(cluster), testid: 'back-to-capacity' }, `← Capacity of ${cluster}`)),
    h('div', { class: 'page-head' }, h('h1', null, 'Add an instance group to ', h('span', { class: 'id' }, cluster)),
      h('span', { class: 'sub' }, 'capacity added to the cluster by one HyperPod UpdateCluster')),
    h('div', { class: 'grid-form' },
      h('div', { class: 'card', testid: 'ig-form-card' },
        h('div', { class: 'card-head' }, h('h2', null, 'Decisions'), h('span', { class: 'spacer' }), h('span', { class: 'sub' }, 'nothing changes until you press Add')),
        h('div', { class: 'card-body' }, form)),
      panel));

  // ---------- cluster, zones, types ----------

  async function loadCluster() {
    try {
      const [c, groups] = await Promise.all([
        api(`/api/v1/clusters/${encodeURIComponent(cluster)}`, { signal: ctx.signal }),
        api(`/api/v1/clusters/${encodeURIComponent(cluster)}/instance-groups`, { signal: ctx.signal })
          .catch((e) => { if (isAbort(e)) throw e; formErr.textContent = e.message; return { items: [] }; }),
      ]);
      state.c = c;
      state.existing = new Set((groups.items || []).map((g) => g.name));
      const zone = (groups.items || []).map((g) => g.availability_zone).find(Boolean) || '';
      const data = await api(`/api/v1/discovery/availability-zones?region=${encodeURIComponent(c.region)}`, { signal: ctx.signal });
      fillZoneSelect(azSel, (data && data.items) || []);
      if (zone && [...azSel.options].some((o) => o.value === zone)) { azSel.value = zone; loadTypes(); }
    } catch (e) {
      if (isAbort(e)) return;
      formErr.textContent = e.message;
      fill(azSel, h('option', { value: '' }, 'Could not load zones'));
    }
    changed();
  }

  async function loadTypes() {
    const req = ++state.typesReq;
    const az = azSel.value;
    const want = typeSel.value;
    state.types = [];
    typeSel.disabled = true;
    fill(typeSel, h('option', { value: '' }, az ? `Loading types offered in ${az}…` : 'Choose a zone first'));
    renderType();
    if (!az) return;
    try {
      const q = new URLSearchParams({ availability_zone: az, region: state.c.region });
      const data = await api(`/api/v1/discovery/instance-types?${q}`, { signal: ctx.signal });
      if (req !== state.typesReq) return;
      state.types = ((data && data.items) || []).filter((t) => t.name);
      fillTypeSelect(typeSel, state.types, az, want);
    } catch (e) {
      if (isAbort(e) || req !== state.typesReq) return;
      fill(typeSel, h('option', { value: '' }, 'Could not load instance types'));
      fields.setError('instance_type', e.message);
    }
    renderType();
    changed();
  }

  const selectedType = () => state.types.find((t) => t.name === typeSel.value) || null;

  function renderType() {
    const t = selectedType();
    fillTypeInfo(typeInfo, t, 'ig-type-efa');
    const { text, warn } = updateEfaBox(efa, t, rules.group.efaMinInterfaces);
    efaHint.textContent = text;
    efaHint.classList.toggle('warn', warn);
  }

  // ---------- body, check, add ----------

  function buildBody() {
    const body = {
      name: nameIn.value.trim(), instance_type: typeSel.value, instance_count: Number(countIn.value),
      capacity_type: radioValue(capBox), deep_health_checks: deepBox.checked,
    };
    const efaMode = efaModeFor(efa, selectedType());
    if (efaMode) body.efa_mode = efaMode; // a type without EFA gets none
    if (radioValue(placement) === 'subnet') body.subnet_id = subnetIn.value.trim();
    else if (azSel.value) body.availability_zone = azSel.value;
    if (body.capacity_type === rules.capacity.TRAINING_PLAN) body.training_plan_arn = planIn.value.trim();
    if (threadsSel.value) body.threads_per_core = Number(threadsSel.value);
    if (volumeIn.value.trim()) body.volume_size_gb = Number(volumeIn.value);
    const labels = parseLabels(labelsIn.value);
    if (Object.keys(labels.value).length || labels.error) body.labels = labels.value;
    const taints = parseTaints(taintsIn.value);
    if (taints.value.length || taints.error) body.taints = taints.value;
    return { body, parseErrors: { labels: labels.error, taints: taints.error } };
  }

  function validate() {
    const { body, parseErrors } = buildBody();
    const problems = groupBodyProblems(body, { type: selectedType(), existing: state.existing, nameProblem: validateName(body.name) });
    for (const [k, v] of Object.entries(parseErrors)) if (v) problems[k] = v;
    if (!azSel.value) problems.availability_zone = 'Choose the zone (it lists the instance types offered there).';
    return fields.show(problems) ? body : null;
  }

  async function check() {
    if (state.checking) return;
    fields.clear(formErr);
    const body = validate();
    if (!body) { state.check = null; renderPanelEmpty(); updateAdd(); return; }
    state.checking = true;
    checkBtn.disabled = true;
    checkBtn.replaceChildren(spinner(), 'Checking…');
    fill(panel, h('div', { class: 'card' }, h('div', { class: 'loading', testid: 'ig-check-loading' }, spinner(), 'Checking quotas and reservations…')));
    try {
      const q = new URLSearchParams({ instance_type: body.instance_type, count: String(body.instance_count), capacity_type: body.capacity_type, region: state.c.region });
      if (body.training_plan_arn) q.set('training_plan_arn', body.training_plan_arn);
      const pf = await api(`/api/v1/preflight?${q}`, { signal: ctx.signal });
      state.check = { json: JSON.stringify(body), body, pf };
      renderPanel();
    } catch (e) {
      if (isAbort(e)) return;
      state.check = null;
      fields.showRefusal(e, formErr);
      renderPanelEmpty();
    } finally {
      state.checking = false;
      checkBtn.disabled = false;
      checkBtn.replaceChildren(state.check ? 'Check again' : 'Check preflight');
      updateAdd();
    }
  }

  const current = () => !!state.check && JSON.stringify(buildBody().body) === state.check.json;

  function updateAdd() {
    const ready = !!state.check && current() && state.check.pf.ok;
    if (canMutate()) addBtn.disabled = !ready || state.adding || state.checking;
    addHint.dataset.state = !state.check ? 'no-check' : !current() ? 'stale' : !state.check.pf.ok ? 'preflight' : 'ready';
    addHint.textContent = !canMutate() ? ''
      : state.adding ? 'Submitting…'
        : !state.check ? 'Check first: Add sends exactly the checked request.'
          : !current() ? 'The inputs changed since the check: check again.'
            : !state.check.pf.ok ? 'Preflight failed: fix what it reports and check again.'
              : 'Adding runs as an operation you follow on its progress panel.';
  }

  async function add() {
    if (!canMutate() || state.adding || !state.check || !current() || !state.check.pf.ok) return;
    state.adding = true;
    addBtn.replaceChildren(spinner(), 'Adding…');
    updateAdd();
    try {
      const reply = await send(`/api/v1/clusters/${encodeURIComponent(cluster)}/instance-groups`, { body: state.check.body, signal: ctx.signal });
      location.hash = reply && reply.operation ? `#/operations/${encodeURIComponent(reply.operation.id)}` : capacityHref(cluster);
      return;
    } catch (e) {
      if (isAbort(e)) return;
      if (e.status === 412 && e.details && e.details.preflight) {
        state.check.pf = e.details.preflight;
        renderPanel();
        formErr.textContent = `Preflight failed when adding: ${e.message}`;
      } else fields.showRefusal(e, formErr);
      toastError(e, 'Add refused: ');
    } finally {
      state.adding = false;
      addBtn.replaceChildren('Add instance group');
      updateAdd();
    }
  }

  function renderPanelEmpty() {
    fill(panel, h('div', { class: 'card plan-empty', testid: 'ig-check-empty' }, h('div', { class: 'card-body' },
      h('h2', null, 'Check before you add'),
      h('p', null, 'Make the decisions on the left, then ', h('b', null, 'Check preflight'), ': hypd reads the service quotas for the type, count and capacity type (and the training plan\'s reservation) without changing anything.'),
      h('p', { class: 'muted' }, 'The same checks run again when you add; a shortfall is refused before anything is sent to AWS.'))));
  }

  function renderPanel() {
    const { body, pf } = state.check;
    const t = state.types.find((x) => x.name === body.instance_type);
    fill(panel,
      h('div', { class: `card plan-summary ${pf.ok ? 'ok' : 'bad'}`, testid: 'ig-summary', dataset: { ok: pf.ok ? '1' : '' } },
        h('div', { class: 'card-body summary-body' },
          h('div', null,
            h('div', { class: 'summary-title' }, 'Instance group ', h('b', { class: 'id' }, body.name)),
            h('div', { class: 'muted' }, totalText(t, body.instance_count) || `${body.instance_count} × ${body.instance_type}`,
              ` · ${body.capacity_type} · ${body.efa_mode || 'no EFA'} · ${body.subnet_id || body.availability_zone}`),
            addsLine(pf.adds)),
          h('span', { class: 'spacer' }),
          badge(pf.ok ? 'ready to add' : 'preflight failed', { class: `lg ${pf.ok ? 'tone-green' : 'tone-red'}`, testid: 'ig-verdict' }))),
      preflightCard(pf));
  }

  /** What the group adds per hour, as the preflight priced it (never a guessed figure). */
  function addsLine(adds) {
    if (!adds) return null;
    const [item] = adds.items || [];
    const text = adds.complete
      ? `Adds ${money(adds.hourly_usd, adds.currency)} per hour (≈ ${money(adds.hourly_usd * HOURS_PER_MONTH, adds.currency, 0)} a month), AWS list price`
      : `Adds no hourly list price: ${(item && item.note) || 'the price could not be read'}`;
    return h('div', { class: 'muted', testid: 'ig-adds', dataset: { hourly: adds.complete ? Number(adds.hourly_usd).toFixed(4) : '' } }, text);
  }

  function changed() {
    const cap = radioValue(capBox);
    planField.hidden = cap !== rules.capacity.TRAINING_PLAN;
    capHint.textContent = (choices.find((c) => c.value === cap) || choices[0]).hint;
    subnetField.hidden = radioValue(placement) !== 'subnet';
    totalNote.textContent = totalText(selectedType(), Number(countIn.value)) || `${rules.group.count.min}–${rules.group.count.max} instances.`;
    panel.classList.toggle('stale', !!state.check && !current());
    updateAdd();
  }

  azSel.addEventListener('change', () => { fields.setError('availability_zone', ''); loadTypes(); });
  typeSel.addEventListener('change', () => { fields.setError('instance_type', ''); renderType(); });
  nameIn.addEventListener('blur', () => { if (nameIn.value) fields.setError('name', validateName(nameIn.value.trim())); });
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  checkBtn.addEventListener('click', check);
  form.addEventListener('submit', (e) => { e.preventDefault(); add(); });

  renderPanelEmpty();
  loadCluster();
  return null;
}
