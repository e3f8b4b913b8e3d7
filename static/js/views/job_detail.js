// One training job in detail, on #/clusters/<name>/jobs?job=<job> beside its live log: its
// state and duration, its pods with the node each runs on (phase, ready, restarts), the
// recovery budget HyperPod's auto-resume has left, the pods the scheduler cannot place and
// why, a team's job's place in its team's queue (job_queue.js), and the job's events
// (scheduling failures included) — read from GET …/jobs/<job>.

import { api, isAbort } from '../api.js';
import { h, fill, badge, timeEl, duration, parseTime, toastError, waitingNote } from '../ui.js';
import { queueSection } from './job_queue.js';

const REFRESH_MS = 3000;

/** mountJobDetail(card, cluster, job, signal) → stop(): the card kept fresh until stopped. */
export function mountJobDetail(card, cluster, job, signal) {
  const url = `/api/v1/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(job)}`;
  let timer = null;
  let stopped = false;
  card.hidden = false;
  fill(card, h('div', { class: 'card-head' }, h('h2', null, `Job ${job}`)));

  async function read() {
    try {
      render(await api(url, { signal }));
    } catch (e) {
      if (isAbort(e)) return;
      if (e.status === 404) {
        fill(card, h('div', { class: 'card-head' }, h('h2', null, `Job ${job}`)),
          h('div', { class: 'empty', testid: 'job-detail-gone' }, 'This job no longer exists.'));
        return;
      }
      toastError(e);
    }
    if (!stopped && !signal.aborted) timer = setTimeout(read, REFRESH_MS);
  }

  function render(j) {
    const started = parseTime(j.started_at);
    const ended = parseTime(j.finished_at);
    const ran = started === null ? null : (ended ?? Date.now()) - started;
    const budget = j.recovery_budget;
    fill(card,
      h('div', { class: 'card-head' }, h('h2', null, `Job ${j.name}`), badge(j.state, { testid: 'job-detail-state' }),
        h('span', { class: 'sub' }, [j.kind, j.recipe].filter(Boolean).join(' · '))),
      h('div', { class: 'card-body' },
        h('dl', { class: 'kv', testid: 'job-detail-facts' },
          h('dt', null, 'Image'), h('dd', { class: 'id' }, j.image || '—'),
          h('dt', null, 'Nodes'), h('dd', null, j.nodes ?? '—'),
          h('dt', null, 'Created'), h('dd', null, j.created_at ? timeEl(j.created_at) : '—'),
          h('dt', null, 'Started'), h('dd', null, j.started_at ? timeEl(j.started_at) : 'not yet'),
          h('dt', null, 'Finished'), h('dd', null, j.finished_at ? timeEl(j.finished_at) : '—'),
          h('dt', null, ended === null ? 'Running for' : 'Ran for'),
          h('dd', { testid: 'job-duration' }, ran === null ? 'not started' : duration(ran)),
          h('dt', null, 'Recovery budget'),
          h('dd', { testid: 'job-detail-budget' }, budget
            ? `${budget.used} restart${budget.used === 1 ? '' : 's'} of ${budget.allowed ?? 'unlimited'}${budget.remaining != null ? `, ${budget.remaining} left` : ''}`
            : 'none (no auto-resume)')),
        j.message ? h('p', { class: 'hint', testid: 'job-detail-message' }, j.message) : null,
        waitingNote(j.waiting, 'Pod', 'job-detail-waiting'),
        queueSection(cluster, j),
        h('h3', null, 'Pods'),
        (j.pods || []).length
          ? h('div', { class: 'table-wrap' }, h('table', { class: 'data', testid: 'job-pods' },
            h('thead', null, h('tr', null, ['Pod', 'Role', 'Node', 'Phase', 'Ready', 'Restarts'].map((t) => h('th', null, t)))),
            h('tbody', null, j.pods.map((p) => h('tr', { testid: `job-pod-${p.name}`, dataset: { node: p.node || '' } },
              h('td', { class: 'id' }, p.name), h('td', null, p.role || '—'),
              h('td', { class: 'id' }, p.node || 'not placed'), h('td', null, p.phase || '—'),
              h('td', null, p.ready ? 'yes' : 'no'), h('td', { class: 'num' }, String(p.restarts ?? 0)))))))
          : h('div', { class: 'empty', testid: 'job-pods-none' }, 'No pods (yet, or any more).'),
        h('h3', null, 'Events'),
        (j.events || []).length
          ? h('div', { class: 'table-wrap' }, h('table', { class: 'data', testid: 'job-events' },
            h('thead', null, h('tr', null, ['When', 'Type', 'Reason', 'Object', 'Message'].map((t) => h('th', null, t)))),
            h('tbody', null, j.events.map((e) => h('tr', { testid: 'job-event', dataset: { reason: e.reason || '' } },
              h('td', { class: 'nowrap' }, e.at ? timeEl(e.at) : '—'), h('td', null, e.type || '—'),
              h('td', null, e.reason || '—'), h('td', { class: 'id' }, e.object || '—'), h('td', null, e.message || ''))))))
          : h('div', { class: 'empty', testid: 'job-events-none' }, 'No events.')));
  }

  read();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
