// #/clusters/new — the create form. It asks only the decisions (name, region, zone, instance
// type, count, capacity type, EFA mode, deep health checks, the Kubernetes version with its EKS
// support, the network — a new one with its CIDR, one hypd made (GET /api/v1/networks, each
// saying which clusters use it) or an existing VPC — and optionally an FSx file system);
// "Review plan" runs POST /api/v1/clusters?dry_run=true (plan, cost estimate, preflight) and
// "Create" sends exactly the reviewed body with an Idempotency-Key.

import { api, isAbort, uuid4, canMutate } from '../api.js';
import {
  h, fill, badge, toastError, guard, roleHint, regionSelect, spinner, section,
} from '../ui.js';
import { rules, validateName, words } from '../rules.js';
import { stageTitle, clusterHref } from '../stages.js';
import {
  capacityChoices, capacityBox as makeCapacityBox, efaBox as makeEfaBox, radioGroup, radioValue, fillZoneSelect,
  fillTypeSelect, fillTypeInfo, updateEfaBox, efaModeFor, efaProblem, totalText,
} from '../capacity_fields.js';
import { preflightCard } from '../preflight.js';
import { fieldSet } from '../form_fields.js';
import { costBody, costSource } from '../cost.js';

/** The network a cluster goes into: the radio group's values. */
const NEW_NETWORK = 'new';
const HYPD_NETWORK = 'hypd';
const EXISTING_VPC = 'existing';

export function mount(root, ctx) {
  const q = ctx.query;
  const state = {
    zonesReq: 0, typesReq: 0, types: [], existing: new Set(),
    networksReq: 0, networks: [], // hypd's finished networks in the region
    plan: null,   // {json, body, reply} of the last successful dry run
    stale: false, // inputs changed since that plan
    planning: false, creating: false,
    pending: null, // {key, json}: one Idempotency-Key per reviewed body
  };

  // ---------- fields ----------
  // each field by the API's name (`existing_vpc.vpc_id`, `fsx.…`): its error line is
  // `error-cluster-<field>` (form_fields.js)
  const fields = fieldSet('cluster');
  const field = fields.field;

  const nameIn = h('input', {
    type: 'text', id: 'cluster-name', testid: 'cluster-name', class: 'mono', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'e.g. llm-train', maxlength: 64, value: q.get('name') || '',
  });
  const regionIn = regionSelect({ id: 'cluster-region', testid: 'cluster-region' }, q.get('region') || '');
  const azSel = h('select', { id: 'cluster-az', testid: 'cluster-az', disabled: true },
    h('option', { value: '' }, 'Loading zones…'));
  const typeSel = h('select', { id: 'cluster-type', testid: 'cluster-type', disabled: true },
    h('option', { value: '' }, 'Choose a zone first'));
  const typeInfo = h('div', { class: 'type-info', testid: 'cluster-type-info' });
  const countIn = h('input', {
    type: 'number', id: 'cluster-count', testid: 'cluster-count', class: 'mono', min: 1, max: rules.instanceCount.max, step: 1,
    value: q.get('count') || '1', inputmode: 'numeric',
  });
  const totalNote = h('div', { class: 'hint', testid: 'cluster-total' });

  const capacity = capacityChoices(rules.capacityTypes);
  const capacityBox = makeCapacityBox(rules.capacityTypes, rules.defaultCapacityType, 'cluster-capacity');
  const capacityHint = h('div', { class: 'hint', id: 'cluster-capacity-hint', testid: 'cluster-capacity-hint' });
  const planArnIn = h('input', {
    type: 'text', id: 'cluster-training-plan', testid: 'cluster-training-plan', class: 'mono', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'arn:aws:sagemaker:us-west-2:123456789012:training-plan/…',
  });
  const planArnField = field('training_plan_arn', 'Training plan ARN', planArnIn,
    'The reservation must cover this instance type, count and zone (preflight checks it).');
  planArnField.hidden = true;
  planArnField.dataset.testid = 'cluster-training-plan-field';

  const efaBox = makeEfaBox(rules.efaModes, 'cluster-efa');
  const efaHint = h('div', { class: 'hint', id: 'cluster-efa-hint', testid: 'cluster-efa-hint' });
  const deepBox = h('input', { type: 'checkbox', id: 'cluster-deep-health', testid: 'cluster-deep-health' });

  const versionSel = h('select', { id: 'cluster-k8s-version', testid: 'cluster-k8s-version' },
  rules.kubernetesVersions.map((v) => h('option', { value: v, selected: v === rules.defaultKubernetesVersion }, versionLabel(v))));
  const versionHint = h('div', { class: 'hint', id: 'hint-cluster-k8s-version', testid: 'cluster-k8s-version-hint' });

  const networkBox = radioGroup({
    name: 'network_choice', label: 'Network', testid: 'cluster-network-choice', prefix: 'network-choice-',
    checked: NEW_NETWORK,
    choices: [
      { value: NEW_NETWORK, label: 'New network', hint: 'hypd makes a VPC for this cluster, named after it' },
      { value: HYPD_NETWORK, label: 'A hypd network', hint: 'one made on the Networks page' },
      { value: EXISTING_VPC, label: 'An existing VPC', hint: 'give its VPC and private subnet ids' },
    ],
  });
  const cidrRule = rules.field('ClusterCreate', 'cidr');
  const cidrIn = h('input', {
    type: 'text', id: 'cluster-cidr', testid: 'cluster-cidr', class: 'mono', autocomplete: 'off', spellcheck: 'false',
    value: rules.defaultCidr, placeholder: rules.defaultCidr,
  });
  const cidrFields = h('div', { class: 'sub-fields', testid: 'cluster-cidr-fields' },
    field('cidr', 'VPC CIDR', cidrIn, h('div', { class: 'hint', testid: 'cluster-cidr-hint' },
      `Default ${rules.defaultCidr}. Allowed: a ${cidrRule.description}.`)));
  const networkSel = h('select', { id: 'cluster-network', testid: 'cluster-network' },
    h('option', { value: '' }, 'Loading networks…'));
  const networkInfo = h('div', { class: 'hint', testid: 'cluster-network-info' });
  const networkFields = h('div', { class: 'sub-fields', testid: 'cluster-network-fields', hidden: true },
    field('network', 'hypd network', networkSel, networkInfo));
  const vpcIn = h('input', {
    type: 'text', id: 'cluster-vpc-id', testid: 'cluster-vpc-id', class: 'mono', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'vpc-0123456789abcdef0',
  });
  const subnetsIn = h('textarea', {
    id: 'cluster-subnet-ids', testid: 'cluster-subnet-ids', class: 'mono', rows: 3, spellcheck: 'false',
    placeholder: 'subnet-0aaa…\nsubnet-0bbb…',
  });
  const fsxRule = (f) => rules.field('Fsx', f);
  const fsxBox = h('input', { type: 'checkbox', id: 'cluster-fsx', testid: 'cluster-fsx' });
  const fsxCapacity = h('input', {
    type: 'number', testid: 'cluster-fsx-capacity', class: 'mono', inputmode: 'numeric',
    min: fsxRule('storage_capacity_gib').minimum, max: fsxRule('storage_capacity_gib').maximum,
    value: String(fsxRule('storage_capacity_gib').default),
  });
  const fsxType = h('select', { testid: 'cluster-fsx-deployment-type' },
    fsxRule('deployment_type').enum.map((v) => h('option', { value: v, selected: v === fsxRule('deployment_type').default }, v)));
  const fsxThroughput = h('select', { testid: 'cluster-fsx-throughput' },
    h('option', { value: '' }, 'default'),
    fsxRule('per_unit_storage_throughput').enum.map((v) => h('option', { value: String(v) }, `${v} MB/s per TiB`)));
  const fsxFields = h('div', { class: 'sub-fields', testid: 'cluster-fsx-fields', hidden: true },
    field('fsx.storage_capacity_gib', 'Capacity (GiB)', fsxCapacity, fsxRule('storage_capacity_gib').description),
    field('fsx.deployment_type', 'Deployment type', fsxType, fsxRule('deployment_type').description),
    field('fsx.per_unit_storage_throughput', 'Throughput', fsxThroughput, fsxRule('per_unit_storage_throughput').description));

  const vpcFields = h('div', { class: 'sub-fields', testid: 'cluster-vpc-fields', hidden: true },
    field('existing_vpc.vpc_id', 'VPC id', vpcIn),
    field('existing_vpc.subnet_ids', 'Private subnet ids', subnetsIn,
      'One per line or comma-separated, in at least two availability zones. hypd still carves the /20 compute subnet for the instances.'));

  const formErr = h('div', { class: 'form-error', testid: 'cluster-form-error', role: 'alert' });
  const planBtn = h('button', { type: 'button', class: 'btn', testid: 'cluster-plan' }, 'Review plan');
  const createBtn = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'cluster-create', disabled: true }, 'Create cluster'));
  const createHint = h('div', { class: 'hint action-hint', testid: 'cluster-create-hint' });

  const form = h('form', { testid: 'cluster-form', novalidate: true },
    formErr,
    section('Cluster',
      field('name', 'Name', nameIn, `Names the EKS and HyperPod clusters. ${rules.name.rule}`),
      h('div', { class: 'field-row' },
        field('region', 'Region', regionIn),
        field('availability_zone', 'Availability zone', azSel)),
      h('div', { class: 'hint field-note' }, 'The zone where the accelerator instances run. hypd picks a second zone for the control plane and fills in subnets, routes and security groups itself.'),
      field('kubernetes_version', 'Kubernetes version', versionSel, versionHint)),
    section('Capacity',
      field('instance_type', 'Instance type', typeSel, typeInfo),
      field('instance_count', 'Instance count', countIn, totalNote),
      h('div', { class: 'field' }, h('span', { class: 'label' }, 'Capacity type'), capacityBox, capacityHint,
        fields.line('capacity_type', capacityBox, capacityHint.id)),
      planArnField,
      h('div', { class: 'hint field-note' }, 'Capacity type and EFA mode are fixed for the instance group\'s life.')),
    section('Network and health',
      h('div', { class: 'field' }, h('span', { class: 'label' }, 'Network'), networkBox, cidrFields, networkFields, vpcFields),
      h('div', { class: 'field' }, h('span', { class: 'label' }, 'EFA mode'), efaBox, efaHint, fields.line('efa_mode', efaBox, efaHint.id)),
      h('div', { class: 'field' },
        h('label', { class: 'check strong-check', for: 'cluster-deep-health' }, deepBox,
          h('span', null, h('b', null, 'Deep health checks'),
            h('span', { class: 'faint' }, ' — instance stress and connectivity (GPU, EFA) checks before nodes accept work; node start takes longer.'))),
        fields.line('deep_health_checks', deepBox))),
    section('Storage',
      h('div', { class: 'field' },
        h('label', { class: 'check strong-check', for: 'cluster-fsx' }, fsxBox,
          h('span', null, h('b', null, 'Also make an FSx for Lustre file system'),
            h('span', { class: 'faint' }, ' — billed per GiB-month of storage and throughput, not in the hourly estimate.'))),
        fsxFields)),
    h('div', { class: 'form-actions' }, planBtn, createBtn),
    createHint,
    roleHint('creating a cluster', 'cluster-role-hint'));

  // ---------- plan panel ----------
  const planPanel = h('div', { class: 'plan-panel', testid: 'cluster-plan-panel' });

  root.append(
    h('div', { class: 'crumbs' }, h('a', { href: '#/clusters', testid: 'back-to-clusters' }, '← Clusters')),
    h('div', { class: 'page-head' },
      h('h1', null, 'New cluster'),
      h('span', { class: 'sub' }, 'Amazon EKS for orchestration + SageMaker HyperPod for resilient accelerator capacity.'),
      h('span', { class: 'spacer' })),
    h('div', { class: 'grid-form' },
      h('div', { class: 'card', testid: 'cluster-form-card' },
        h('div', { class: 'card-head' }, h('h2', null, 'Decisions'), h('span', { class: 'spacer' }),
          h('span', { class: 'sub' }, 'nothing is created until you press Create')),
        h('div', { class: 'card-body' }, form)),
      planPanel));

  // ---------- zones and instance types ----------

  async function loadZones() {
    const req = ++state.zonesReq;
    const want = azSel.value || q.get('az') || '';
    azSel.disabled = true;
    fill(azSel, h('option', { value: '' }, 'Loading zones…'));
    resetTypes('Choose a zone first');
    const query = new URLSearchParams();
    if (regionIn.value) query.set('region', regionIn.value);
    try {
      const data = await api(`/api/v1/discovery/availability-zones?${query}`, { signal: ctx.signal });
      if (req !== state.zonesReq) return;
      const zones = (data && data.items) || [];
      fillZoneSelect(azSel, zones);
      if (want && zones.some((z) => z.name === want)) {
        azSel.value = want;
        loadTypes();
      }
    } catch (e) {
      if (isAbort(e) || req !== state.zonesReq) return;
      fill(azSel, h('option', { value: '' }, 'Could not load zones'));
      fields.setError('availability_zone', `Could not load zones: ${e.message}`);
    }
    changed();
  }

  function resetTypes(text) {
    state.typesReq++;
    state.types = [];
    typeSel.disabled = true;
    fill(typeSel, h('option', { value: '' }, text));
    renderTypeInfo();
  }

  async function loadTypes() {
    const az = azSel.value;
    const want = typeSel.value || q.get('type') || '';
    if (!az) { resetTypes('Choose a zone first'); changed(); return; }
    resetTypes(`Loading types offered in ${az}…`);
    const req = state.typesReq;
    const query = new URLSearchParams({ availability_zone: az });
    if (regionIn.value) query.set('region', regionIn.value);
    try {
      const data = await api(`/api/v1/discovery/instance-types?${query}`, { signal: ctx.signal });
      if (req !== state.typesReq) return;
      state.types = ((data && data.items) || []).filter((t) => t.name);
      fillTypes(want);
    } catch (e) {
      if (isAbort(e) || req !== state.typesReq) return;
      fill(typeSel, h('option', { value: '' }, 'Could not load instance types'));
      fields.setError('instance_type', `Could not load instance types: ${e.message}`);
    }
    changed();
  }

  function fillTypes(want) {
    fillTypeSelect(typeSel, state.types, azSel.value, want);
    renderTypeInfo();
  }

  function selectedType() {
    return state.types.find((t) => t.name === typeSel.value) || null;
  }

  function renderTypeInfo() {
    const t = selectedType();
    fields.setError('instance_type', '');
    fillTypeInfo(typeInfo, t, 'cluster-type-efa');
    updateEfa(t);
    updateTotal();
  }

  function updateEfa(t) {
    const { text, warn } = updateEfaBox(efaBox, t, rules.efaMinInterfaces);
    efaHint.textContent = text;
    efaHint.classList.toggle('warn', warn);
  }

  function updateTotal() {
    const text = totalText(selectedType(), Number(countIn.value));
    totalNote.textContent = text || `Instances in the first instance group (${rules.instanceCount.min}–${rules.instanceCount.max}).`;
  }

  // ---------- hypd's networks ----------

  async function loadNetworks() {
    const req = ++state.networksReq;
    const want = networkSel.value || q.get('network') || '';
    const query = new URLSearchParams();
    if (regionIn.value) query.set('region', regionIn.value);
    try {
      const data = await api(`/api/v1/networks?${query}`, { signal: ctx.signal });
      if (req !== state.networksReq) return;
      // only a finished network can take a cluster (its NAT gateway is every node's way out)
      state.networks = ((data && data.items) || []).filter((n) => n.state === 'available' && privateSubnets(n).length >= 2);
      fill(networkSel, state.networks.length
        ? [h('option', { value: '' }, 'Choose a network…'), ...state.networks.map((n) => h('option', { value: n.name }, networkLabel(n)))]
        : h('option', { value: '' }, 'hypd has no finished network in this region'));
      if (want && state.networks.some((n) => n.name === want)) networkSel.value = want;
    } catch (e) {
      if (isAbort(e) || req !== state.networksReq) return;
      state.networks = [];
      fill(networkSel, h('option', { value: '' }, 'Could not load networks'));
      fields.setError('network', `Could not load hypd's networks: ${e.message}`);
    }
    changed();
  }

  function renderNetworkInfo() {
    const n = chosenNetwork();
    if (!n) {
      networkInfo.textContent = state.networks.length ? 'Networks made on the Networks page; the cluster\'s instances get their own /20 subnet in it.' : '';
      return;
    }
    const zones = n.availability_zones.map((z) => `${z}: ${n.subnets.filter((s) => s.availability_zone === z && s.role === 'private').map((s) => s.id).join(', ')}`);
    fill(networkInfo,
      h('div', null, 'VPC ', h('span', { class: 'id', testid: 'cluster-network-vpc' }, n.vpc_id), ` (${n.cidr}); private subnets — ${zones.join('; ')}`),
      h('div', { testid: 'cluster-network-used-by' }, usedByText(n)));
  }

  // ---------- body, validation, errors ----------

  const subnetList = () => subnetsIn.value.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

  function buildBody() {
    const body = {
      name: nameIn.value.trim(),
      availability_zone: azSel.value,
      instance_type: typeSel.value,
      instance_count: Number(countIn.value),
      capacity_type: radioValue(capacityBox) || rules.defaultCapacityType,
      deep_health_checks: deepBox.checked,
    };
    const efaMode = efaModeFor(efaBox, selectedType());
    if (efaMode) body.efa_mode = efaMode; // a type without EFA gets none
    if (regionIn.value) body.region = regionIn.value;
    if (body.capacity_type === rules.capacity.TRAINING_PLAN) body.training_plan_arn = planArnIn.value.trim();
    body.kubernetes_version = versionSel.value;
    const choice = radioValue(networkBox);
    if (choice === NEW_NETWORK && cidrIn.value.trim()) body.cidr = cidrIn.value.trim();
    if (choice === EXISTING_VPC) body.existing_vpc = { vpc_id: vpcIn.value.trim(), subnet_ids: subnetList() };
    if (choice === HYPD_NETWORK) {
      const n = chosenNetwork();
      body.existing_vpc = n ? { vpc_id: n.vpc_id, subnet_ids: privateSubnets(n) } : null;
    }
    if (fsxBox.checked) {
      body.fsx = { storage_capacity_gib: Number(fsxCapacity.value), deployment_type: fsxType.value };
      if (fsxThroughput.value) body.fsx.per_unit_storage_throughput = Number(fsxThroughput.value);
    }
    return body;
  }

  function chosenNetwork() {
    return state.networks.find((n) => n.name === networkSel.value) || null;
  }

  function clientValidate(body) {
    const problems = {};
    const nameErr = validateName(body.name);
    if (nameErr) problems.name = nameErr;
    else if (state.existing.has(body.name)) problems.name = `A cluster named ${body.name} exists already.`;
    if (!body.availability_zone) problems.availability_zone = 'Choose an availability zone.';
    const t = selectedType();
    if (!body.instance_type) problems.instance_type = body.availability_zone ? 'Choose an instance type.' : 'Choose a zone, then an instance type.';
    if (!Number.isInteger(body.instance_count) || body.instance_count < rules.instanceCount.min || body.instance_count > rules.instanceCount.max) {
      problems.instance_count = `A whole number from ${rules.instanceCount.min} to ${rules.instanceCount.max}.`;
    }
    if (body.capacity_type === rules.capacity.TRAINING_PLAN) {
      if (!body.training_plan_arn) problems.training_plan_arn = 'Enter the training plan ARN.';
      else if (!rules.trainingPlanArn.test(body.training_plan_arn)) problems.training_plan_arn = 'Not a training plan ARN (arn:aws:sagemaker:<region>:<account>:training-plan/<name>).';
    }
    const efaWhy = efaProblem(body.efa_mode, t, rules.efaMinInterfaces);
    if (efaWhy) problems.efa_mode = efaWhy;
    if (radioValue(networkBox) === HYPD_NETWORK && !body.existing_vpc) {
      problems.network = state.networks.length ? 'Choose one of hypd\'s networks.' : 'hypd has no finished network in this region: choose another network option.';
    } else if (body.existing_vpc) {
      if (!rules.vpcId.test(body.existing_vpc.vpc_id)) problems['existing_vpc.vpc_id'] = 'Not a VPC id (vpc-…).';
      const bad = body.existing_vpc.subnet_ids.filter((s) => !rules.subnetId.test(s));
      if (bad.length) problems['existing_vpc.subnet_ids'] = `Not subnet ids: ${bad.join(', ')}`;
      else if (body.existing_vpc.subnet_ids.length < 2) problems['existing_vpc.subnet_ids'] = 'Give subnets in at least two availability zones.';
    }
    if (body.fsx) {
      const cap = fsxRule('storage_capacity_gib');
      if (!Number.isInteger(body.fsx.storage_capacity_gib) || body.fsx.storage_capacity_gib < cap.minimum || body.fsx.storage_capacity_gib > cap.maximum) {
        problems['fsx.storage_capacity_gib'] = `A whole number of GiB from ${cap.minimum} to ${cap.maximum}.`;
      }
    }
    return fields.show(problems);
  }

  /** The form's field for an API field: a hypd network is sent as its VPC and subnets, so
   * their refusal is the network's. */
  function asField(name) {
    if (!name.startsWith('existing_vpc')) return name;
    if (radioValue(networkBox) === HYPD_NETWORK) return 'network';
    return name === 'existing_vpc' ? 'existing_vpc.vpc_id' : name;
  }

  /** A refusal on its fields (form_fields.js); a taken name also on the name. */
  function showApiError(err) {
    fields.showRefusal(err, formErr, asField);
    if (err.status === 409 && err.details && err.details.name) fields.setError('name', err.message);
  }

  // ---------- plan ----------

  async function reviewPlan() {
    if (state.planning) return;
    fields.clear(formErr);
    const body = buildBody();
    if (!clientValidate(body)) { renderPlanEmpty(); updateCreate(); return; }
    const json = JSON.stringify(body);
    state.planning = true;
    planBtn.disabled = true;
    planBtn.replaceChildren(spinner(), 'Planning…');
    fill(planPanel, h('div', { class: 'card' }, h('div', { class: 'loading', testid: 'plan-loading' }, spinner(), 'Planning: checking the zone, the instance type, quotas and prices…')));
    try {
      const reply = await api('/api/v1/clusters?dry_run=true', { method: 'POST', body, signal: ctx.signal });
      state.plan = { json, body, reply };
      state.stale = false;
      renderPlan();
    } catch (err) {
      if (isAbort(err)) return;
      state.plan = null;
      showApiError(err);
      renderPlanError(err);
    } finally {
      state.planning = false;
      planBtn.disabled = false;
      planBtn.replaceChildren(state.plan ? 'Review plan again' : 'Review plan');
      updateCreate();
    }
  }

  function renderPlanEmpty() {
    state.plan = null;
    state.stale = false;
    planPanel.classList.remove('stale');
    planBtn.replaceChildren('Review plan');
    fill(planPanel, h('div', { class: 'card plan-empty', testid: 'plan-empty' },
      h('div', { class: 'card-body' },
        h('h2', null, 'Review before you create'),
        h('p', null, 'Make the decisions on the left, then ', h('b', null, 'Review plan'), '. hypd answers with:'),
        h('ul', { class: 'plain-list' },
          h('li', null, 'every stage and step it would run, in order — ', rules.stages.map((s) => stageTitle(s)).join(' → ')),
          h('li', null, 'every resource it would make'),
          h('li', null, 'an hourly cost estimate from AWS\'s on-demand list prices (the AWS Price List), each with its source'),
          h('li', null, 'preflight checks of service quotas and training-plan reservations')),
        h('p', { class: 'muted' }, 'The review changes nothing in AWS.'))));
  }

  function renderPlanError(err) {
    const pf = err.details && err.details.preflight;
    state.stale = false;
    planPanel.classList.remove('stale');
    fill(planPanel,
      h('div', { class: 'card', testid: 'plan-error' },
        h('div', { class: 'card-body' },
          h('div', { class: 'banner' }, h('div', null, h('b', null, `The plan was refused (${err.status || 'error'} ${err.code || ''})`),
            h('div', { class: 'msg' }, err.message))))),
      pf ? preflightCard(pf) : null);
  }

  function renderPlan() {
    const { reply, body } = state.plan;
    const steps = planPart(reply.plan, 'steps');
    const resources = planPart(reply.plan, 'resources');
    const pf = reply.preflight || { ok: true, checks: [] };
    const t = state.types.find((x) => x.name === body.instance_type);
    fill(planPanel,
      h('div', { class: `card plan-summary ${pf.ok ? 'ok' : 'bad'}`, testid: 'plan-summary', dataset: { ok: pf.ok ? '1' : '' } },
        h('div', { class: 'card-body summary-body' },
          h('div', null,
            h('div', { class: 'summary-title' }, 'Plan for ', h('b', { class: 'id' }, body.name)),
            h('div', { class: 'muted' },
              `${body.instance_count} × ${body.instance_type}`,
              t && t.accelerator_count ? ` (${body.instance_count * t.accelerator_count} × ${t.accelerator_name || t.accelerator})` : '',
              ` · ${body.capacity_type} · ${body.efa_mode || 'no EFA'} · ${body.availability_zone}`,
              body.deep_health_checks ? ' · deep health checks' : '',
              ` · Kubernetes ${body.kubernetes_version}`,
              h('span', { testid: 'plan-network' }, networkSummary(body)),
              body.fsx ? ` · FSx for Lustre ${body.fsx.storage_capacity_gib} GiB ${body.fsx.deployment_type}` : '')),
          h('span', { class: 'spacer' }),
          pf.ok ? badge('ready to create', { class: 'lg tone-green', testid: 'plan-verdict' })
            : badge('preflight failed', { class: 'lg tone-red', testid: 'plan-verdict' }))),
      h('div', { class: 'plan-grid' },
        costCard(reply.cost || {}),
        preflightCard(pf)),
      stepsCard(steps),
      resourcesCard(resources));
    planPanel.classList.remove('stale');
    renderVersionHint();
  }

  function networkSummary(body) {
    if (!body.existing_vpc) return ` · new VPC ${body.cidr || rules.defaultCidr}`;
    const n = state.networks.find((x) => x.vpc_id === body.existing_vpc.vpc_id);
    return n && radioValue(networkBox) === HYPD_NETWORK ? ` · hypd network ${n.name} (${n.vpc_id})` : ` · existing ${body.existing_vpc.vpc_id}`;
  }

  /** The chosen version's EKS support; extended support's hourly price once a plan priced it. */
  function renderVersionHint() {
    const v = versionSel.value;
    const s = rules.kubernetesSupport[v];
    versionHint.dataset.support = s ? s.support : '';
    if (!s) { versionHint.textContent = ''; return; }
    if (s.support !== 'extended') {
      versionHint.textContent = `In EKS standard support until ${s.end_of_standard_support}; after that, extended support is billed per hour on top of the EKS hour until the cluster is upgraded.`;
      return;
    }
    const items = (state.plan && state.plan.body.kubernetes_version === v && state.plan.reply.cost && state.plan.reply.cost.items) || [];
    const priced = items.find((i) => i.kind === words(rules.field('CostItem', 'kind').enum).EKS_EXTENDED_SUPPORT && i.unit_usd !== null && i.unit_usd !== undefined);
    const price = priced ? `+$${Number(priced.unit_usd).toFixed(2)}/h (the plan's AWS list price)` : 'billed per hour on top of the EKS hour (the plan prices it)';
    versionHint.textContent = `In EKS extended support since ${s.end_of_standard_support}: ${price}. EKS upgrades it itself on ${s.end_of_extended_support}; a version in standard support costs less.`;
  }

  function costCard(cost) {
    const total = Number(cost.hourly_usd || 0);
    return h('div', { class: 'card', testid: 'plan-cost', dataset: { hourly: String(total), complete: cost.complete ? '1' : '' } },
      h('div', { class: 'card-head' }, h('h2', null, 'Cost'), badge('estimate', { class: 'plain tone-amber', title: 'AWS on-demand list prices; not a bill' }),
        h('span', { class: 'spacer' }), costSource(cost, 'plan-cost')),
      h('div', { class: 'card-body' }, costBody(cost, 'plan-cost')));
  }

  function stepsCard(steps) {
    const groups = [];
    const byStage = new Map();
    for (const s of steps) {
      const key = s.stage || 'other';
      if (!byStage.has(key)) { byStage.set(key, []); groups.push(key); }
      byStage.get(key).push(s);
    }
    return h('div', { class: 'card' },
      h('div', { class: 'card-head' }, h('h2', null, 'Stages and steps'),
        h('span', { class: 'sub' }, `${groups.length} stages · ${steps.length} steps, in order; each stage can be re-run on its own later`)),
      h('ol', { class: 'plan-steps', testid: 'plan-steps' }, groups.map((g, i) => h('li', { testid: `plan-stage-${g}`, dataset: { stage: g } },
        h('div', { class: 'plan-stage-head' }, h('span', { class: 'idx' }, String(i + 1)), stageTitle(g), h('span', { class: 'name' }, g)),
        h('ol', null, byStage.get(g).map((s) => h('li', { testid: `plan-step-${s.step}`, dataset: { step: s.step } },
          h('span', null, s.action || s.step), h('span', { class: 'name' }, s.step))))))));
  }

  function resourcesCard(resources) {
    return h('div', { class: 'card' },
      h('div', { class: 'card-head' }, h('h2', null, 'Resources'), h('span', { class: 'sub' }, `${resources.length} things hypd would make, each tagged as managed by hypd`)),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data plan-resources', testid: 'plan-resources' },
          h('thead', null, h('tr', null, h('th', null, 'Type'), h('th', null, 'Name'), h('th', null, 'Details'))),
          h('tbody', null, resources.map((r) => {
            const { type, name, ...rest } = r;
            return h('tr', { dataset: { type: type || '' } },
              h('td', { class: 'nowrap' }, h('span', { class: 'id' }, type || '—')),
              h('td', null, name ? h('span', { class: 'id' }, name) : h('span', { class: 'faint' }, '—')),
              h('td', null, detailChips(rest)));
          })))));
  }

  // ---------- create ----------

  function updateCreate() {
    const p = state.plan;
    const pfOk = !!(p && p.reply.preflight && p.reply.preflight.ok);
    const can = canMutate() && !!p && !state.stale && pfOk && !state.creating && !state.planning;
    if (canMutate()) createBtn.disabled = !can;
    let hint;
    if (!canMutate()) hint = '';
    else if (state.creating) hint = 'Submitting…';
    else if (!p) hint = 'Review the plan first: Create sends exactly the reviewed request.';
    else if (state.stale) hint = 'The inputs changed since the review: review the plan again.';
    else if (!pfOk) hint = 'Preflight failed: fix what it reports (or change the request) and review again.';
    else hint = 'Creating runs the stages in order; you follow them on the progress panel.';
    createHint.textContent = hint;
    createHint.dataset.state = !p ? 'no-plan' : state.stale ? 'stale' : !pfOk ? 'preflight' : 'ready';
  }

  function changed() {
    const cap = radioValue(capacityBox);
    planArnField.hidden = cap !== rules.capacity.TRAINING_PLAN;
    capacityHint.textContent = (capacity.find((c) => c.value === cap) || capacity[0]).hint;
    const choice = radioValue(networkBox);
    cidrFields.hidden = choice !== NEW_NETWORK;
    networkFields.hidden = choice !== HYPD_NETWORK;
    vpcFields.hidden = choice !== EXISTING_VPC;
    fsxFields.hidden = !fsxBox.checked;
    renderNetworkInfo();
    renderVersionHint();
    updateTotal();
    if (state.plan) {
      const stale = JSON.stringify(buildBody()) !== state.plan.json;
      if (stale !== state.stale) {
        state.stale = stale;
        planPanel.classList.toggle('stale', stale);
        const banner = planPanel.querySelector('[data-testid=plan-stale]');
        if (stale && !banner) {
          planPanel.prepend(h('div', { class: 'banner info', testid: 'plan-stale' },
            h('span', { class: 'msg' }, 'The inputs changed since this plan. Review it again before creating.')));
        } else if (!stale && banner) banner.remove();
      }
    }
    updateCreate();
  }

  async function create() {
    if (!canMutate() || state.creating || !state.plan || state.stale) return;
    if (!(state.plan.reply.preflight && state.plan.reply.preflight.ok)) return;
    const { body, json } = state.plan;
    if (!state.pending || state.pending.json !== json) state.pending = { key: uuid4(), json };
    fields.clear(formErr);
    state.creating = true;
    createBtn.disabled = true;
    createBtn.replaceChildren(spinner(), 'Creating…');
    updateCreate();
    try {
      const reply = await api('/api/v1/clusters', {
        method: 'POST', body, headers: { 'Idempotency-Key': state.pending.key }, signal: ctx.signal,
      });
      state.pending = null;
      const op = reply && reply.operation;
      location.hash = op && op.id ? `#/operations/${encodeURIComponent(op.id)}` : clusterHref(body.name);
      return;
    } catch (err) {
      if (isAbort(err)) return;
      if (err.status && err.status < 500) state.pending = null; // refused: a new attempt is a new request
      if (err.status === 412 && err.details && err.details.preflight) {
        state.plan.reply = { ...state.plan.reply, preflight: err.details.preflight };
        renderPlan();
        formErr.textContent = `Preflight failed when creating: ${err.message}`;
      } else {
        showApiError(err);
        if (err.status === 422) { state.plan = null; renderPlanError(err); }
      }
      toastError(err, 'Create refused: ');
    } finally {
      state.creating = false;
      createBtn.replaceChildren('Create cluster');
      updateCreate();
    }
  }

  // ---------- wiring ----------

  regionIn.addEventListener('change', () => { loadZones(); loadNetworks(); });
  azSel.addEventListener('change', () => { fields.setError('availability_zone', ''); loadTypes(); });
  typeSel.addEventListener('change', () => renderTypeInfo());
  nameIn.addEventListener('blur', () => { if (nameIn.value) fields.setError('name', validateName(nameIn.value.trim())); });
  nameIn.addEventListener('input', () => { if (nameIn.getAttribute('aria-invalid') === 'true') fields.setError('name', validateName(nameIn.value.trim())); });
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  planBtn.addEventListener('click', reviewPlan);
  form.addEventListener('submit', (e) => { e.preventDefault(); create(); });

  api('/api/v1/clusters', { signal: ctx.signal })
    .then((d) => { state.existing = new Set(((d && d.items) || []).map((c) => c.name)); })
    .catch(() => { /* the server refuses a duplicate name anyway (409) */ });

  renderPlanEmpty();
  loadZones();
  loadNetworks();
  changed();
  if (!canMutate()) createHint.textContent = '';
  return null;
}

// ---------- helpers ----------

function planPart(plan, key) {
  for (const part of plan || []) if (part && Array.isArray(part[key])) return part[key];
  return [];
}

function detailChips(obj) {
  const entries = Object.entries(obj).filter(([, v]) => v !== null && v !== undefined && v !== '');
  if (!entries.length) return h('span', { class: 'faint' }, '—');
  return h('div', { class: 'chips' }, entries.map(([k, v]) => {
    let text;
    if (Array.isArray(v)) {
      text = v.map((x) => (x && typeof x === 'object'
        ? Object.entries(x).filter(([, y]) => y !== null && y !== undefined).map(([a, b]) => `${a}=${b}`).join(' ')
        : String(x))).join(', ');
    } else if (v && typeof v === 'object') text = Object.entries(v).map(([a, b]) => `${a}=${b}`).join(' ');
    else text = String(v);
    return h('span', { class: 'chip', title: `${k}: ${text}` }, h('span', { class: 'k' }, k.replace(/_/g, ' ')), text);
  }));
}


function privateSubnets(n) {
  return (n.subnets || []).filter((s) => s.role === 'private').map((s) => s.id);
}

function usedByText(n) {
  const users = n.used_by || [];
  return users.length ? `Used by ${users.map((u) => u.name).join(', ')}` : 'Used by no cluster';
}

function networkLabel(n) {
  return `${n.name} — ${n.vpc_id} · ${usedByText(n).toLowerCase()}`;
}

/** A version as the select offers it: its EKS support and until when (from the document). */
function versionLabel(v) {
  const s = rules.kubernetesSupport[v];
  if (!s) return v;
  if (s.support === 'extended') return `${v} · extended support (billed extra) until ${s.end_of_extended_support}`;
  return `${v} · standard support until ${s.end_of_standard_support}`;
}
