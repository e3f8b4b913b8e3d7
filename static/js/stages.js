// Cluster stages: their titles, and one rule for a stage's status from its steps (the same
// rule the API uses for GET /api/v1/clusters/<name> `stages[].status`). Which stages there
// are, in order, is the API's: rules.stages.

import { rules } from './rules.js';

const TITLES = {
  network: 'Network',
  eks: 'EKS control plane',
  activate: 'Active cluster',
  dependencies: 'Dependencies',
  hyperpod: 'HyperPod cluster',
  storage: 'Storage',
  other: 'Other steps',
};

const BLURBS = {
  network: 'VPC, subnets, routes, NAT gateway, security group, S3 endpoint',
  eks: 'control plane, access entry and policy, OIDC provider',
  activate: 'becomes the active cluster of the token that created it',
  dependencies: 'EKS add-ons and HyperPod dependencies: only what is missing is installed',
  hyperpod: 'lifecycle scripts, roles, the /20 compute subnet, the HyperPod cluster',
  storage: 'the shared S3 bucket, mounted in pods at /s3',
};

export function stageTitle(stage) {
  return TITLES[stage] || stage;
}

export function stageBlurb(stage) {
  return BLURBS[stage] || '';
}

/** How long the stage typically takes on AWS, from the API's document: 'typically 10–15 min'
 * ('' for a stage it has no figure for). */
export function stageTypical(stage) {
  const m = rules.stageMinutes[stage];
  if (!m) return '';
  return m[0] === m[1] ? `typically ${m[0]} min` : `typically ${m[0]}–${m[1]} min`;
}

/** The expected duration beside a stage: 'typically N–M min', and for a running one
 * '; running for X' (X as `fmt(ms)`; `runningMs` null when not running). */
export function stageExpected(stage, runningMs, fmt) {
  const typical = stageTypical(stage);
  if (runningMs === null || runningMs === undefined) return typical;
  const running = `running for ${fmt(runningMs)}`;
  return typical ? `${typical}; ${running}` : running;
}

/**
 * A stage's status from its steps' phases and its operation's status (the API's rule,
 * app/readmodels/lifecycle.py): succeeded only when every step succeeded — a skipped step
 * is never counted as done — failed | skipped | cancelled | running | pending.
 */
export function stageStatus(steps, opStatus) {
  const { phase: P, stage: S, status: O } = rules;
  const phases = new Set((steps || []).map((s) => s.phase || P.PENDING));
  if (!phases.size) return S.PENDING;
  const only = (p) => [...phases].every((x) => x === p);
  if (phases.has(P.FAILED)) return S.FAILED;
  if (only(P.SUCCEEDED)) return S.SUCCEEDED;
  if (only(P.SKIPPED)) return S.SKIPPED;
  if (opStatus === O.CANCELLED) return S.CANCELLED;
  if ([...phases].some((p) => rules.phaseInFlight.has(p))) return S.RUNNING;
  if (phases.has(P.SUCCEEDED) && rules.active.has(opStatus)) return S.RUNNING;
  return S.PENDING;
}

/** The mark in front of a stage: ✓ only for a stage that succeeded. */
export function stageMark(status, index) {
  return { succeeded: '✓', failed: '!', cancelled: '×', skipped: '–' }[status] || String(index + 1);
}

/** Group steps (in order) by their `stage`; null when no step carries one. */
export function groupByStage(steps) {
  if (!(steps || []).some((s) => s.stage)) return null;
  const groups = [];
  const byStage = new Map();
  steps.forEach((s, index) => {
    const key = s.stage || 'other';
    let g = byStage.get(key);
    if (!g) {
      g = { stage: key, steps: [], indexes: [] };
      byStage.set(key, g);
      groups.push(g);
    }
    g.steps.push(s);
    g.indexes.push(index);
  });
  return groups;
}

/** The dashboard link of a cluster. `#/clusters/new` is the create form, so a cluster that
 * is itself named "new" is linked with a trailing slash (the detail route accepts both). */
/** `#/clusters/<these>` are forms (app.js): a cluster of such a name takes a trailing slash. */
const FORM_ROUTES = new Set(['new', 'import']);

export function clusterHref(name) {
  const n = encodeURIComponent(name);
  return FORM_ROUTES.has(name) ? `#/clusters/${n}/` : `#/clusters/${n}`;
}
