// The API's rules for what a user may enter, read once from its OpenAPI document (public,
// made from the same schemas that validate every request), so the dashboard keeps no copies
// that could drift: the name rule, capacity types, EFA modes, Kubernetes versions, stages,
// default CIDR, count bounds, an instance group's choices, node health values and statuses,
// how many node ids one batch call takes, the managed features' option bounds, an endpoint's
// kinds, services, routing per kind and bounds, a download's sources; and the product's words
// (hypd's vocabulary package): an operation's statuses (which are finished, which active), a
// step's phases, a stage's statuses, the roles, the capacity types, and the EFA rule an instance type must meet.
// Views name a word as `rules.status.SUCCEEDED`, never as a string of their own; a view may
// read its own resource's fields with `rules.field(schema, name)`. Labels and hints stay
// here; they are presentation.

export let rules = null;

let loading = null;

/** Read the document once; views mount after it resolved (app.js boot). */
export function loadRules() {
  if (!loading) {
    loading = fetch('/api/v1/openapi.json', { cache: 'no-store', credentials: 'same-origin' })
      .then((res) => {
        if (!res.ok) throw new Error(`the API's OpenAPI document answered ${res.status}`);
        return res.json();
      })
      .then((doc) => { rules = rulesFrom(doc); return rules; })
      .catch((e) => { loading = null; throw e; });
  }
  return loading;
}

/** What is wrong with a name by the API's one name rule ('' when nothing). */
export function validateName(v) {
  if (!v) return 'Enter a name.';
  if (v.length > rules.name.maxLength) return `At most ${rules.name.maxLength} characters.`;
  if (!/^[a-z]/.test(v)) return 'Start with a lowercase letter.';
  if (v.endsWith('-')) return 'End with a letter or digit, not a hyphen.';
  if (!rules.name.re.test(v)) return "Use lowercase letters, digits and '-' only.";
  return '';
}

/** An enum's values as named words: ['not_run', 'efa-only'] → {NOT_RUN: 'not_run',
 * EFA_ONLY: 'efa-only'}; naming a word the API does not have throws instead of comparing
 * against undefined. */
export function words(values) {
  const named = Object.freeze(Object.fromEntries(
    values.map((v) => [String(v).toUpperCase().replace(/-/g, '_'), v])));
  return new Proxy(named, {
    get(target, key) {
      if (typeof key === 'string' && !(key in target)) throw new Error(`the API has no word ${key}`);
      return target[key];
    },
  });
}

function resolver(doc) {
  const resolve = (node) => {
    let n = node;
    while (n && n.$ref) {
      n = n.$ref.slice(2).split('/').reduce((at, part) => at[part], doc);
    }
    if (n && Array.isArray(n.allOf) && n.allOf.length === 1) n = { ...resolve(n.allOf[0]), ...n };
    return n;
  };
  return resolve;
}

/** The fields the dashboard needs, from the document (exported for tests). */
export function rulesFrom(doc) {
  const resolve = resolver(doc);
  const field = (schema, name) => {
    const s = resolve(doc.components.schemas[schema]);
    const f = s && s.properties && resolve(s.properties[name]);
    if (!f) throw new Error(`the API's document has no ${schema}.${name}`);
    return f;
  };
  const pathParam = (path, method, name) => {
    const item = doc.paths[path] || {};
    const op = item[method] || {};
    const p = [...(op.parameters || []), ...(item.parameters || [])].find((x) => x.name === name);
    if (!p) throw new Error(`the API's document has no ${name} parameter on ${path}`);
    return resolve(p.schema);
  };
  const name = field('NetworkCreate', 'name');
  const count = field('ClusterCreate', 'instance_count');
  const version = field('ClusterCreate', 'kubernetes_version');
  const group = (f) => field('InstanceGroupCreate', f);
  const nodeQuery = (p) => pathParam('/api/v1/clusters/{cluster}/nodes', 'get', p);
  const nodeIds = field('NodeAction', 'node_ids');
  const ep = (f) => field('EndpointCreate', f);
  const tokens = field('Invoke', 'max_tokens');
  const download = (f) => field('ModelDownload', f);
  const opStatus = field('Operation', 'status');
  const phase = field('Step', 'phase');
  return {
    // a view reads the fields of its own resource through these (views/spaces.js does),
    // so a new resource's page needs no block here
    field,
    pathParam,
    status: words(opStatus.enum),
    finished: new Set(opStatus['x-hypd-finished']),
    active: new Set(opStatus['x-hypd-active']),
    phase: words(phase.enum),
    phaseDone: new Set(phase['x-hypd-done']),
    phaseInFlight: new Set(phase['x-hypd-in-flight']),
    stage: words(field('Stage', 'status').enum),
    role: words(field('Whoami', 'role').enum),
    endpoints: {
      kinds: ep('kind').enum,
      services: ep('service').enum,
      defaultService: ep('service').default,
      routingByKind: ep('routing')['x-hypd-by-kind'],
      gpus: { min: ep('gpus').minimum, max: ep('gpus').maximum },
      replicas: { min: ep('replicas').minimum, max: ep('replicas').maximum, default: ep('replicas').default },
      instanceType: new RegExp(ep('instance_type').pattern),
      promptMax: field('Invoke', 'prompt').maxLength,
      maxTokens: { min: tokens.minimum, max: tokens.maximum, default: tokens.default },
    },
    downloads: {
      sources: download('source').enum,
      repo: new RegExp(download('repo').pattern),
      s3Uri: new RegExp(download('s3_uri').pattern),
      defaultRevision: download('revision').default,
    },
    name: { re: new RegExp(name.pattern), rule: name.description, maxLength: 32 },
    defaultCidr: field('NetworkCreate', 'cidr').default,
    zonesPerNetwork: { min: field('NetworkCreate', 'availability_zones').minItems,
      max: field('NetworkCreate', 'availability_zones').maxItems },
    capacityTypes: field('ClusterCreate', 'capacity_type').enum,
    capacity: words(field('ClusterCreate', 'capacity_type').enum), // rules.capacity.SPOT
    defaultCapacityType: field('ClusterCreate', 'capacity_type').default,
    efaModes: field('ClusterCreate', 'efa_mode').enum,
    efaMinInterfaces: field('ClusterCreate', 'efa_mode')['x-hypd-min-efa-interfaces'],
    kubernetesVersions: version.enum,
    defaultKubernetesVersion: version.default,
    // version → {support: standard|extended, end_of_standard_support, end_of_extended_support}
    kubernetesSupport: version['x-hypd-support'] || {},
    instanceCount: { min: count.minimum, max: count.maximum },
    trainingPlanArn: new RegExp(field('ClusterCreate', 'training_plan_arn').pattern),
    vpcId: new RegExp(field('ExistingVpc', 'vpc_id').pattern),
    subnetId: new RegExp(resolve(field('ExistingVpc', 'subnet_ids').items).pattern),
    stages: pathParam('/api/v1/clusters/{name}/stages/{stage}/run', 'post', 'stage').enum,
    // stage → [low, high] minutes it typically takes on AWS (vocabulary/stage_times.py)
    stageMinutes: field('Stage', 'name')['x-hypd-typical-minutes'] || {},
    group: {
      count: { min: group('instance_count').minimum, max: group('instance_count').maximum },
      capacityTypes: group('capacity_type').enum,
      defaultCapacityType: group('capacity_type').default,
      efaModes: group('efa_mode').enum,
      efaMinInterfaces: group('efa_mode')['x-hypd-min-efa-interfaces'],
      threadsPerCore: group('threads_per_core').enum,
      volumeGb: { min: group('volume_size_gb').minimum, max: group('volume_size_gb').maximum },
      subnetId: new RegExp(group('subnet_id').pattern),
      // label keys follow the same rule as taint keys (one pattern in the API's schema)
      labelKey: new RegExp(field('Taint', 'key').pattern),
      labelValue: new RegExp(resolve(group('labels').additionalProperties).pattern),
      taintEffects: field('Taint', 'effect').enum,
      maxTaints: group('taints').maxItems,
    },
    nodes: {
      health: nodeQuery('health').enum,
      statuses: nodeQuery('status').enum,
      pageMax: nodeQuery('limit').maximum,
      pageDefault: nodeQuery('limit').default,
      batchSize: nodeIds['x-hypd-batch-size'],
      maxPerAction: nodeIds.maxItems,
    },
    upgradeVersions: field('KubernetesUpgrade', 'version').enum,
    memoryPercent: { min: field('TieredCheckpointingPatch', 'memory_percent').minimum,
      max: field('TieredCheckpointingPatch', 'memory_percent').maximum },
    groupBounds: { min: field('GroupBounds', 'min').minimum, max: field('GroupBounds', 'max').maximum,
      maxMin: field('GroupBounds', 'max').minimum },
  };
}
