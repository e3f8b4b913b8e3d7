// A team's job in its team's queue, for the job's detail (job_detail.js) — or a team's Dev
// space, for its detail on the spaces page (spaces.js) — as Kueue says it (the read's
// `queue`): waiting for quota, admitted (borrowing other teams' idle capacity or not),
// preempted by another job — linked to its detail — or finished; Kueue's message, the
// priority, and the jobs it took quota from. Nothing for work outside any team.

import { h, timeEl } from '../ui.js';
import { rules, words } from '../rules.js';

/** Kueue's reasons for a preemption, in words (another reason is shown as Kueue says it). */
const WHY = {
  InCohortReclamation: 'its team took back the capacity it had lent',
  InClusterQueue: 'a job of higher priority in the same team',
};

const jobHref = (cluster, job) => `#/clusters/${encodeURIComponent(cluster)}/jobs?job=${encodeURIComponent(job)}`;

/** Another job of a preemption: a link to its detail, its team and why. */
function other(cluster, p, testid) {
  const who = p.job ? ['job ', h('a', { href: jobHref(cluster, p.job), testid }, p.job)] : 'a job hypd did not make';
  return [who, p.team ? ` of team ${p.team}` : '', p.reason ? ` (${WHY[p.reason] || p.reason})` : ''];
}

function stateWords(cluster, q, testid) {
  const S = words(rules.field('JobQueue', 'state').enum);
  if (q.state === S.WAITING) return 'Waiting for quota';
  if (q.state === S.FINISHED) return 'Finished: its quota is free again';
  if (q.state === S.ADMITTED) return q.borrowing ? 'Admitted, borrowing idle capacity of other teams' : 'Admitted';
  if (q.state === S.PREEMPTED) {
    return ['Preempted', q.preempted_by ? [' by ', other(cluster, q.preempted_by, `${testid}-preempted-by`)] : '', ': it waits for quota again'];
  }
  return q.state;
}

/** The Queue section of job `j` of `cluster` (or of a space: `what` = `space`, its test ids
 * `space-queue-…`), or null outside any team. */
export function queueSection(cluster, j, what = 'job') {
  const q = j.queue;
  if (!q) return null;
  const preempted = q.preempted || [];
  const id = `${what}-queue`;
  return [
    h('h3', null, 'Queue'),
    h('dl', { class: 'kv', testid: id },
      h('dt', null, 'State'), h('dd', { testid: `${id}-state`, dataset: { state: q.state } }, stateWords(cluster, q, id)),
      h('dt', null, 'Team'), h('dd', { testid: `${id}-team` }, j.team || '—'),
      h('dt', null, 'Priority'), h('dd', { testid: `${id}-priority` }, j.priority
        ? [j.priority, q.priority != null ? ` (weight ${q.priority})` : ''] : 'none'),
      h('dt', null, 'Queue'), h('dd', { class: 'id' }, q.cluster_queue || q.local_queue),
      q.admitted_at ? [h('dt', null, 'Admitted'), h('dd', null, timeEl(q.admitted_at))] : null,
      preempted.length ? [h('dt', null, 'Preempted'), h('dd', { testid: `${id}-preempted` },
        preempted.map((p, i) => [i ? '; ' : '', other(cluster, p, `${id}-preempted-${p.job || i}`)]))] : null),
    q.message ? h('p', { class: 'hint', testid: `${id}-message` }, q.message) : null,
  ];
}
