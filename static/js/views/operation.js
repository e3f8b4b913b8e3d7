// #/operations/<id> — the live progress panel.

import { api, isAbort, canMutate, canChangeWorkOf } from '../api.js';
import {
  h, clear, fill, badge, timeEl, idEl, toastError, toast, guard, roleHint, duration, parseTime,
  clockTime, absTime, loading, debounce,
} from '../ui.js';
import { OperationFeed } from '../feed.js';
import { progress } from './operations.js';
import { groupByStage, stageStatus, stageMark, stageTitle, clusterHref, stageExpected } from '../stages.js';
import { batchSpan } from '../batches.js';
import { capacityHref } from '../capacity/links.js';
import { rules } from '../rules.js';
import { confirmDestroy } from '../confirm.js';

const JOB_KINDS = new Set(['job.create', 'job.delete']);
/** The operation kinds of a team's work (app/readmodels/team_work.py JOB_KINDS). */

const MODE_TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  polling: 'polling',
  closed: 'final',
};
const MAX_EVENTS = 200;
const LONG_LIST = 6; // longer lists of ids in a step's resources fold away

export function mount(root, ctx) {
  const id = ctx.params[0];
  let op = null;
  let busy = false;
  const seenEvents = new Set();

  const head = h('div', { class: 'page-head-block' });
  const stepsList = h('ol', { class: 'steps', testid: 'steps' });
  const stepsCount = h('span', { class: 'sub', testid: 'steps-count' });
  const conn = h('span', { class: 'conn', testid: 'live-status', dataset: { mode: 'connecting' } }, 'connecting…');
  const eventsList = h('ul', { class: 'events', testid: 'events', tabindex: 0, 'aria-label': 'Events' }); // scrolls: reachable by keyboard
  const info = h('dl', { class: 'kv', testid: 'op-info' });
  const params = h('pre', { class: 'json', testid: 'op-params' });
  const body = h('div', null, loading('Loading operation…'));
  root.append(
    h('div', { class: 'crumbs' }, h('a', { href: '#/operations', testid: 'back-to-operations' }, '← Operations')),
    body);

  const layout = h('div', null,
    head,
    h('div', { class: 'grid-detail' },
      h('div', null,
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Steps'), stepsCount, h('span', { class: 'spacer' }), conn),
          stepsList)),
      h('div', null,
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Details')),
          h('div', { class: 'card-body' }, info)),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Activity'), h('span', { class: 'spacer' }),
            h('span', { class: 'sub' }, 'events, newest first')),
          eventsList),
        h('div', { class: 'card' },
          h('div', { class: 'card-head' }, h('h2', null, 'Parameters')),
          h('div', { class: 'card-body' }, params)))));

  // ---------- rendering ----------

  /** A job's operation is its team's work (a member may cancel and retry its own team's):
   *  the job's team (null: none); undefined for any other operation. */
  function workTeam() {
    return JOB_KINDS.has(op.kind) ? ((op.params || {}).team || null) : undefined;
  }

  function mayAct() {
    const team = workTeam();
    return team === undefined ? canMutate() : canChangeWorkOf(team);
  }

  function renderHead() {
    const status = op.status;
    const work = { teamWork: workTeam() !== undefined, team: workTeam() };
    const cancelBtn = guard(h('button', {
      type: 'button', class: 'btn btn-danger', testid: 'op-cancel',
      disabled: busy || rules.finished.has(status) || !!op.cancel_requested,
      title: op.cancel_requested ? 'Cancel requested: it takes effect at the next step boundary' : 'Cancel at the next step boundary (asks first)',
      onclick: () => confirmCancel(),
    }, op.cancel_requested && !rules.finished.has(status) ? 'Cancelling…' : 'Cancel'), work);
    const retryBtn = guard(h('button', {
      type: 'button', class: 'btn btn-primary', testid: 'op-retry',
      disabled: busy || !(status === rules.status.FAILED || status === rules.status.CANCELLED),
      title: 'Run again from the failed step (same operation id)',
      onclick: () => act('retry'),
    }, 'Retry'), work);
    const err = op.error;
    fill(head,
      h('div', { class: 'page-head' },
        h('div', { class: 'op-title' },
          idEl(op.id, { testid: 'op-id' }),
          badge(status, { class: 'lg', testid: 'op-status', dataset: { status } })),
        h('span', { class: 'spacer' }),
        cancelBtn, retryBtn),
      roleHint('cancelling or retrying', 'op-role-hint'),
      h('div', { class: 'meta' },
        h('span', null, 'kind ', h('b', { class: 'id', testid: 'op-kind' }, op.kind || '—')),
        h('span', null, 'target ', h('b', { class: 'id', testid: 'op-target' }, op.target || '—'),
          clusterOf(op) ? [' ', h('a', { href: clusterHref(clusterOf(op)), testid: 'op-cluster-link' }, 'open cluster →')] : null,
          capacityOf(op) ? [' ', h('a', { href: capacityHref(capacityOf(op)), testid: 'op-capacity-link' }, 'open instance groups and nodes →')] : null,
          spacesOf(op) ? [' ', h('a', { href: spacesHref(spacesOf(op)), testid: 'op-spaces-link' }, 'open dev spaces →')] : null),
        h('span', null, 'by ', h('b', { class: 'id' }, op.actor || '—')),
        h('span', null, 'created ', timeEl(op.created_at)),
        h('span', null, 'updated ', timeEl(op.updated_at, 'op-updated')),
        h('span', null, progress(op))),
      op.cancel_requested && !rules.finished.has(status)
        ? h('div', { class: 'banner info', testid: 'op-cancel-requested' },
          h('span', { class: 'msg' }, 'Cancel requested: the operation stops at the next step boundary; remaining steps become skipped.'))
        : null,
      err
        ? h('div', { class: 'banner', testid: 'op-error', role: 'alert' },
          h('div', null,
            h('div', null, h('b', null, err.step ? `Step ${err.step} failed` : 'Failed'),
              err.code ? h('span', { class: 'id' }, `  ${err.code}`) : null),
            h('div', { class: 'msg', testid: 'op-error-message' }, err.message || 'No message.')))
        : null);
    body.replaceChildren(layout);
  }

  // What a cancel does, said before it is sent (through the one confirmation, confirm.js;
  // a cancel has no dry run): the operation stops at its next step boundary, and what
  // finished steps made stays (billed, where AWS bills it).
  function confirmCancel() {
    if (!mayAct() || busy) return;
    const cluster = clusterOf(op) && (op.kind === 'cluster.create' || op.kind === 'cluster.stage');
    confirmDestroy({
      kind: `${op.kind} operation on`, name: op.target || op.id, verb: 'Cancel', confirmText: 'Cancel operation',
      cancelText: 'Keep running', action: 'op-cancel', dryRun: false, signal: ctx.signal,
      url: `/api/v1/operations/${encodeURIComponent(id)}/cancel`,
      send: (url, { signal }) => api(url, { method: 'POST', signal }),
      about: h('p', { testid: 'op-cancel-what' },
        'It stops at the next step boundary; the steps not started are skipped. What finished steps made stays in AWS, and what AWS bills by the hour keeps costing, until you resume it (Retry) or delete it.',
        cluster ? ' The cluster page then shows what is left and its hourly cost.' : ''),
    }).then((reply) => { if (reply) acted('cancel', reply); });
  }

  // Step nodes persist across renders (keyed by name) so unchanged steps do not flicker; when
  // steps carry a `stage` they are grouped under one collapsible header per stage.
  const stepNodes = new Map();
  const stageNodes = new Map();

  function renderSteps() {
    const steps = op.steps || [];
    const names = new Set(steps.map((s) => s.name));
    for (const k of [...stepNodes.keys()]) if (!names.has(k)) stepNodes.delete(k);
    const nodes = steps.map((s, i) => {
      const sig = JSON.stringify([i, s]);
      let li = stepNodes.get(s.name);
      if (!li || li.dataset.sig !== sig) {
        li = stepEl(s, i, sig);
        stepNodes.set(s.name, li);
      }
      return li;
    });
    const groups = groupByStage(steps);
    stepsList.classList.toggle('grouped', !!groups);
    if (!groups) {
      syncChildren(stepsList, nodes);
    } else {
      const wanted = groups.map((g, gi) => {
        let node = stageNodes.get(g.stage);
        if (!node) {
          node = stageEl(g.stage);
          stageNodes.set(g.stage, node);
        }
        updateStage(node, g, gi);
        syncChildren(node.list, g.indexes.map((i) => nodes[i]));
        return node.li;
      });
      syncChildren(stepsList, wanted);
    }
    const done = steps.filter((s) => s.phase === rules.phase.SUCCEEDED).length;
    const batched = steps.length && steps.every((s) => batchSpan(op, s));
    stepsCount.textContent = groups
      ? `${done} of ${steps.length} steps succeeded · ${groups.length} stage${groups.length === 1 ? '' : 's'}`
      : batched ? `${done} of ${steps.length} batches succeeded · ${op.params.node_ids.length} nodes, one batch at a time`
        : `${done} of ${steps.length} succeeded`;
    tick();
  }

  function stageEl(stage) {
    const status = h('span', { class: 'stage-status' });
    const count = h('span', { class: 'stage-count' });
    const dur = h('span', { class: 'dur' });
    const expected = h('span', { class: 'faint stage-expected', testid: `op-stage-expected-${stage}` });
    const idx = h('span', { class: 'idx' });
    const toggle = h('button', {
      type: 'button', class: 'stage-toggle', 'aria-expanded': 'true', testid: `op-stage-toggle-${stage}`,
      title: 'Show or hide this stage\'s steps',
    },
    idx,
    h('span', { class: 'stage-title' }, stageTitle(stage), h('span', { class: 'name' }, stage)));
    const list = h('ol', { class: 'steps stage-steps', testid: `op-stage-steps-${stage}` });
    const li = h('li', { class: 'stage', testid: `op-stage-${stage}`, dataset: { stage } },
      h('div', { class: 'stage-head' }, toggle, h('span', { class: 'spacer' }), expected, count, dur, status),
      list);
    toggle.addEventListener('click', () => {
      const open = li.classList.toggle('collapsed');
      toggle.setAttribute('aria-expanded', open ? 'false' : 'true');
    });
    return { li, list, status, count, dur, idx };
  }

  function updateStage(node, g, gi) {
    const st = stageStatus(g.steps, op.status);
    const done = g.steps.filter((s) => s.phase === rules.phase.SUCCEEDED).length;
    node.li.dataset.status = st;
    node.idx.textContent = stageMark(st, gi);
    node.count.textContent = `${done}/${g.steps.length}`;
    node.count.title = `${done} of ${g.steps.length} steps succeeded`;
    const starts = g.steps.map((s) => parseTime(s.started_at)).filter((t) => t !== null);
    const ends = g.steps.map((s) => parseTime(s.finished_at));
    node.li.dataset.start = starts.length ? new Date(Math.min(...starts)).toISOString() : '';
    node.li.dataset.end = ends.length && ends.every((t) => t !== null) ? new Date(Math.max(...ends)).toISOString() : '';
    if (node.status.dataset.value !== st) {
      node.status.replaceChildren(badge(st, { testid: `op-stage-status-${g.stage}` }));
      node.status.dataset.value = st;
    }
  }

  function stepEl(s, i, sig) {
    const phase = s.phase || rules.phase.PENDING;
    const res = resourceChips(s.resources);
    const span = batchSpan(op, s);
    return h('li', {
      class: 'step', testid: `step-${s.name}`,
      dataset: { step: s.name, phase, sig, start: s.started_at || '', end: s.finished_at || '' },
    },
    h('span', { class: 'idx' }, phase === rules.phase.SUCCEEDED ? '✓' : phase === rules.phase.FAILED ? '!' : String(i + 1)),
    h('div', { class: 'title' }, s.title || s.name, h('span', { class: 'name' }, s.name)),
    h('div', { class: 'right' },
      s.attempts ? h('span', { testid: `step-attempts-${s.name}`, title: 'attempts' }, `×${s.attempts}`) : null,
      h('span', { class: 'dur', testid: `step-duration-${s.name}` }),
      badge(phase, { testid: `step-phase-${s.name}` })),
    span ? h('div', { class: 'batch-span', testid: `step-batch-${s.name}`, dataset: { first: String(span.first), last: String(span.last) } },
      `batch ${span.index}: nodes ${span.first}–${span.last} of ${span.total}`,
      // `done`: the nodes HyperPod accepted the call for; the step's detail says how many
      // have finished (a reboot is not done when it is sent)
      s.resources && Array.isArray(s.resources.done) ? ` · ${s.resources.done.length} sent to HyperPod` : '') : null,
    s.detail ? h('div', { class: 'detail', testid: `step-detail-${s.name}` }, s.detail) : null,
    res ? h('div', { class: 'res', testid: `step-resources-${s.name}` }, res) : null,
    s.started_at
      ? h('div', { class: 'times' }, `started ${absTime(s.started_at)}`,
        s.finished_at ? ` · finished ${absTime(s.finished_at)}` : '')
      : null);
  }

  function renderInfo() {
    const rows = [
      ['id', idEl(op.id)],
      ['kind', h('span', { class: 'id' }, op.kind || '—')],
      ['target', h('span', { class: 'id' }, op.target || '—')],
      ['status', op.status],
      ['actor', h('span', { class: 'id' }, op.actor || '—')],
      ['created', absTime(op.created_at) || '—'],
      ['updated', absTime(op.updated_at) || '—'],
      ['elapsed', elapsedText()],
      ['idempotency', op.idempotency_key ? idEl(op.idempotency_key) : h('span', { class: 'faint' }, 'none')],
      ['resource', resourceLink(op.resource_url)],
      ['last event', op.last_event_id ? h('span', { class: 'id' }, op.last_event_id) : h('span', { class: 'faint' }, '—')],
    ];
    clear(info).append(...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', { dataset: { k } }, v)]));
    // a parameter not given (null) is left out: the panel never says "null"
    params.textContent = JSON.stringify(op.params || {}, (k, v) => (v === null ? undefined : v), 2);
  }

  function elapsedText() {
    const a = parseTime(op.created_at);
    if (a === null) return '—';
    const b = rules.finished.has(op.status) ? parseTime(op.updated_at) : Date.now();
    return duration((b || Date.now()) - a);
  }

  function render() {
    renderHead();
    renderSteps();
    renderInfo();
  }

  // durations of running steps tick every second
  function tick() {
    const now = Date.now();
    for (const li of stepsList.querySelectorAll('li.stage')) {
      const el = li.querySelector('.stage-head .dur');
      const a = parseTime(li.dataset.start);
      const b = parseTime(li.dataset.end);
      if (!el) continue;
      const running = a !== null && b === null && li.dataset.status === rules.stage.RUNNING;
      el.textContent = a === null ? '' : b !== null ? duration(b - a) : running ? duration(now - a) : '';
      // what AWS typically takes for the stage, beside how long it has run (not once done)
      const expected = li.querySelector('.stage-head .stage-expected');
      if (expected) {
        const waiting = li.dataset.status === rules.stage.PENDING;
        expected.textContent = running ? stageExpected(li.dataset.stage, now - a, duration)
          : waiting ? stageExpected(li.dataset.stage, null) : '';
      }
    }
    for (const li of stepsList.querySelectorAll('li.step')) {
      const el = li.querySelector('.dur');
      if (!el) continue;
      const a = parseTime(li.dataset.start);
      const b = parseTime(li.dataset.end);
      if (a === null) { el.textContent = ''; continue; }
      const running = b === null && rules.phaseInFlight.has(li.dataset.phase);
      el.textContent = b !== null ? duration(b - a) : running ? duration(now - a) : '';
    }
  }

  function logEvent(eid, ev, stale) {
    const key = eid || `${ev.at}|${ev.type}|${ev.step}|${ev.phase}|${ev.status}`;
    if (seenEvents.has(key)) return;
    seenEvents.add(key);
    const what = ev.type === 'step'
      ? [h('span', { class: 'id' }, ev.step || '?'), ' → ', badge(ev.phase)]
      : ['operation → ', badge(ev.status)];
    const same = `${ev.type}|${ev.step || ''}|${ev.phase || ev.status || ''}`;
    // newest first, by stream id when both have one
    let before = null;
    if (eid) {
      for (const other of eventsList.children) {
        if (other.dataset.id && other.dataset.id.localeCompare(eid, undefined, { numeric: true }) < 0) { before = other; break; }
      }
    } else before = eventsList.firstElementChild;
    // a step that only says what it waits for again (each poll) is one line that counts,
    // not a column of "→ applying"
    const newest = eventsList.firstElementChild;
    if (before === newest && newest && newest.dataset.same === same) {
      const count = Number(newest.dataset.count || '1') + 1;
      newest.dataset.count = String(count);
      if (eid) newest.dataset.id = eid;
      fillEvent(newest, ev, what, count);
      return;
    }
    const li = h('li', { testid: 'event', dataset: { id: eid || '', stale: stale ? '1' : '', same, count: '1' } });
    fillEvent(li, ev, what, 1);
    eventsList.insertBefore(li, before);
    while (eventsList.children.length > MAX_EVENTS) eventsList.lastElementChild.remove();
  }

  function fillEvent(li, ev, what, count) {
    li.replaceChildren(
      h('time', { datetime: ev.at || '', title: absTime(ev.at) }, clockTime(ev.at) || '—'),
      h('div', { class: 'what' }, ...what,
        count > 1 ? h('span', { class: 'faint', testid: 'event-count', title: `${count} events in a row` }, ` ×${count}`) : null,
        ev.detail ? h('div', { class: 'd' }, ev.detail) : null));
  }

  // ---------- state updates ----------

  function applyEvent(ev) {
    if (!op) return;
    if (ev.type === 'operation') {
      if (ev.status) op.status = ev.status;
    } else if (ev.type === 'step') {
      const s = (op.steps || []).find((x) => x.name === ev.step);
      if (s && ev.phase) {
        if (ev.phase === rules.phase.APPLYING && s.phase !== rules.phase.APPLYING) {
          s.attempts = (s.attempts || 0) + 1;
          if (!s.started_at) s.started_at = ev.at;
          s.finished_at = null;
        }
        if (ev.phase === rules.phase.FAILED || rules.phaseDone.has(ev.phase)) s.finished_at = ev.at || s.finished_at;
        s.phase = ev.phase;
      }
      if (s && typeof ev.attempts === 'number') s.attempts = ev.attempts;
      if (s && ev.resources && typeof ev.resources === 'object') s.resources = ev.resources;
      if (s && ev.detail) s.detail = ev.detail;
    }
    if (ev.at) op.updated_at = ev.at;
  }

  // Events carry phases; resources, attempts and errors come from the record: re-read it
  // (a Redis read on the server) shortly after events settle.
  const refresh = debounce(async () => {
    try {
      const fresh = await api(`/api/v1/operations/${encodeURIComponent(id)}`, { signal: ctx.signal });
      feed.snapshot(fresh);
    } catch (e) {
      if (!isAbort(e) && e.status !== 401) console.warn('refresh failed', e);
    }
  }, 400);

  const feed = new OperationFeed(id, {
    onSnapshot(fresh) {
      op = fresh;
      render();
    },
    onEvent(eid, ev, { stale }) {
      logEvent(eid, ev, stale);
      if (stale) return;
      applyEvent(ev);
      render();
      refresh();
    },
    onMode(mode, extra) {
      conn.dataset.mode = mode;
      let text = MODE_TEXT[mode] || mode;
      if (mode === 'reconnecting' && extra && extra.delay) text = `reconnecting in ${Math.ceil(extra.delay / 1000)}s…`;
      if (mode === 'polling') text = extra && extra.error ? 'polling (retrying)' : 'polling';
      conn.textContent = text;
      conn.title = mode === 'polling'
        ? 'The WebSocket was unavailable; following the operation by long-polling the REST API.'
        : mode === 'live' ? 'Following over WebSocket' : '';
    },
    onGone(err) {
      toastError(err);
      if (!op) showMissing(err);
    },
  });

  async function act(which) {
    if (busy || !mayAct()) return;
    busy = true;
    renderHead();
    try {
      acted(which, await api(`/api/v1/operations/${encodeURIComponent(id)}/${which}`, { method: 'POST', signal: ctx.signal }));
    } catch (e) {
      if (!isAbort(e)) toastError(e, `${which === 'cancel' ? 'Cancel' : 'Retry'} refused: `);
    } finally {
      busy = false;
      if (op) renderHead();
    }
  }

  function acted(which, reply) {
    const next = reply && (reply.operation || reply);
    if (next && next.id) feed.snapshot(next, { force: true });
    toast(which === 'cancel' ? 'Cancel requested.' : 'Retry queued.', { kind: 'info', timeout: 2500 });
    if (which === 'retry') feed.start();
  }

  function showMissing(err) {
    body.replaceChildren(h('div', { class: 'card', testid: 'op-missing' },
      h('div', { class: 'empty' }, err.message, ' ', h('a', { href: '#/operations' }, 'Back to operations'))));
  }

  // ---------- start ----------

  (async () => {
    try {
      const first = await api(`/api/v1/operations/${encodeURIComponent(id)}`, { signal: ctx.signal });
      feed.snapshot(first);
      feed.start(); // even when terminal: the socket replays the history for the activity log
    } catch (e) {
      if (isAbort(e) || e.status === 401) return;
      if (e.status === 404) showMissing(e);
      else {
        toastError(e);
        feed.start(); // maybe only the REST read failed; the feed retries on its own
      }
    }
  })();

  const ticker = setInterval(() => {
    tick();
    if (op && !rules.finished.has(op.status)) {
      const el = info.querySelector('dd[data-k="elapsed"]');
      if (el) el.textContent = elapsedText();
    }
  }, 1000);

  return () => {
    clearInterval(ticker);
    refresh.cancel();
    feed.stop();
  };
}

function resourceChips(resources) {
  if (!resources || typeof resources !== 'object') return null;
  const chips = [];
  const tables = [];
  const chip = (k, v) => h('span', { class: 'chip', title: `${k}: ${v}`, dataset: { key: k } },
    h('span', { class: 'k' }, k), v);
  const scalar = (v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v));
  const entries = Array.isArray(resources) ? resources.map((v, i) => [String(i), v]) : Object.entries(resources);
  for (const [k, v] of entries) {
    if (v === null || v === undefined || v === '') continue;
    if (Array.isArray(v) && v.length && v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) {
      tables.push(objectTable(k, v)); // e.g. subnets: one row each
    } else if (Array.isArray(v) && v.length > LONG_LIST) {
      tables.push(h('details', { class: 'res-table', dataset: { key: k } }, // e.g. a batch's node ids
        h('summary', null, `${v.length} ${k}`), h('div', { class: 'chips' }, v.map((x) => h('span', { class: 'chip' }, scalar(x))))));
    } else if (Array.isArray(v)) {
      if (v.length) chips.push(chip(k, v.map(scalar).join(', ')));
    } else if (typeof v === 'object') {
      if (Object.keys(v).length) chips.push(chip(k, Object.entries(v).map(([a, b]) => `${a}=${scalar(b)}`).join(' ')));
    } else {
      chips.push(chip(k, String(v)));
    }
  }
  if (!chips.length && !tables.length) return null;
  return [chips.length ? h('div', { class: 'chips' }, chips) : null, ...tables];
}

function objectTable(key, rows) {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return h('details', { class: 'res-table', dataset: { key } },
    h('summary', null, `${rows.length} ${key}`),
    h('div', { class: 'table-wrap' },
      h('table', { class: 'mini' },
        h('thead', null, h('tr', null, cols.map((c) => h('th', null, c)))),
        h('tbody', null, rows.map((r) => h('tr', null, cols.map((c) => h('td', null,
          r[c] === null || r[c] === undefined ? '' : typeof r[c] === 'object' ? JSON.stringify(r[c]) : String(r[c])))))))));
}

function resourceLink(url) {
  if (!url) return h('span', { class: 'faint' }, '—');
  const m = String(url).match(/^\/api\/v1\/networks\/([^/?#]+)/);
  if (m) return h('a', { href: '#/networks', class: 'id', title: url }, `network ${decodeURIComponent(m[1])}`);
  const cap = String(url).match(/^\/api\/v1\/clusters\/([^/?#]+)\/(nodes|instance-groups)/);
  if (cap) return h('a', { href: capacityHref(decodeURIComponent(cap[1])), class: 'id', title: url, testid: 'op-resource-link' }, `${cap[2].replace('-', ' ')} of ${decodeURIComponent(cap[1])}`);
  const sp = String(url).match(/^\/api\/v1\/clusters\/([^/?#]+)\/spaces\/([^/?#]+)/);
  if (sp) return h('a', { href: spacesHref(decodeURIComponent(sp[1])), class: 'id', title: url, testid: 'op-resource-link' }, `space ${decodeURIComponent(sp[2])} of ${decodeURIComponent(sp[1])}`);
  const tm = String(url).match(/^\/api\/v1\/clusters\/([^/?#]+)\/(teams\/([^/?#]+)|scheduler)/);
  if (tm) {
    const what = tm[3] ? `team ${decodeURIComponent(tm[3])}` : 'scheduler config';
    return h('a', { href: `#/clusters/${tm[1]}/teams`, class: 'id', title: url, testid: 'op-resource-link' }, `${what} of ${decodeURIComponent(tm[1])}`);
  }
  const c = String(url).match(/^\/api\/v1\/clusters\/([^/?#]+)/);
  if (c) return h('a', { href: clusterHref(decodeURIComponent(c[1])), class: 'id', title: url, testid: 'op-resource-link' }, `cluster ${decodeURIComponent(c[1])}`);
  return h('span', { class: 'id' }, url);
}

/** Reorder `container`'s children to exactly `wanted`, moving only what changed. */
function syncChildren(container, wanted) {
  wanted.forEach((node, i) => {
    if (container.children[i] !== node) container.insertBefore(node, container.children[i] || null);
  });
  while (container.children.length > wanted.length) container.lastElementChild.remove();
}

/** The cluster an operation works on (target `cluster/<name>`), or null. */
function clusterOf(op) {
  const m = String(op.target || '').match(/^cluster\/([^/]+)$/);
  return m ? m[1] : null;
}

/** The cluster of a dev space's operation (target `cluster/<name>/space/<space>`), or null. */
function spacesOf(op) {
  const m = String(op.target || '').match(/^cluster\/([^/]+)\/space\/[^/]+$/);
  return m ? m[1] : null;
}

function spacesHref(cluster) {
  return `#/clusters/${encodeURIComponent(cluster)}/spaces`;
}

/** The cluster whose capacity an operation changes (target `cluster/<name>/nodes` or
 * `cluster/<name>/group/<group>`), or null. */
function capacityOf(op) {
  const m = String(op.target || '').match(/^cluster\/([^/]+)\/(nodes|group\/[^/]+)$/);
  return m ? m[1] : null;
}
