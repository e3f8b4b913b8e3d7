// #/clusters/<name>/jobs — training jobs: the list, a submit form per recipe, and one job's
// detail (job_detail.js: pods and nodes, recovery budget, events, duration) and live log view
// (WebSocket with resume; virtualised, pausable, filtered by pod; each line with its time).
//
// Submitting and deleting a job are operations (202): the view follows each in place — the
// job's row reads "submitting" (or "deleting") with a link to its operation meanwhile; a
// submission that succeeded opens the job's log, one that did not says why in the form.
//
// The recipes, what each needs and what elastic training excludes come from
// GET /api/v1/training/limits: nothing about them is written here. On a cluster whose teams
// share it (task governance), a job runs for a team with a priority class (job_team.js); the
// list then says each job's team, and its detail its place in the team's queue.

import { api, isAbort, mutator, canMutate, canChangeWorkOf, session } from '../api.js';
import { fieldSet } from '../form_fields.js';
import { h, clear, badge, timeEl, clockTime, toast, toastError, guard, roleHint, loading, replaceQuery, waitingNote } from '../ui.js';
import { waitOperation } from '../feed.js';
import { rules } from '../rules.js';
import { confirmDestroy } from '../confirm.js';
import { mountMlflow, openMlflowUi } from './jobs_mlflow.js';
import { mountJobDetail } from './job_detail.js';
import { readTeamWork, teamWorkFields } from './job_team.js';

const REFRESH_MS = 3000;
const ROW_PX = 18; // one log line's height (css .log-row)
const KEEP_LINES = 200000; // lines the browser keeps per job; older ones make room
const FIELD_HINTS = {
  script: ['Script', '/s3/code/train.py', 'a Python script in the cluster bucket (/s3)'],
  config: ['Config file', '/s3/configs/recipe.yaml', 'the recipe\'s config in the cluster bucket (/s3)'],
  command: ['Command', 'hyperpodrun --nnodes=1 --nproc-per-node=1 /s3/train.py', 'one argument per space'],
};

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Training jobs, submit, live logs', testid: 'cluster-jobs-link' };

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const base = `/api/v1/clusters/${encodeURIComponent(cluster)}`;
  let selected = ctx.query.get('job') || null;
  let timer = null;
  let tail = null;
  let stopDetail = null;

  const tbody = h('tbody', { testid: 'jobs-body' }, h('tr', null, h('td', { colspan: 7 }, loading('Loading jobs…'))));
  const teamHead = h('th', { testid: 'jobs-team-head', hidden: true }, 'Team');
  const detailCard = h('div', { class: 'card', testid: 'job-detail', hidden: true });
  const logCard = h('div', { class: 'card', testid: 'job-log-card', hidden: true });
  const formCard = h('div', { class: 'card', testid: 'job-form-card' }, h('div', { class: 'card-body' }, loading('Loading recipes…')));
  const mlflowCard = h('div', { class: 'card', testid: 'mlflow-panel' });

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Training jobs'),
      h('span', { class: 'sub' }, h('a', { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster),
        ' — every pod mounts the cluster\'s bucket at /s3.')),
    h('div', { class: 'card' },
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data', testid: 'jobs-table' },
          h('thead', null, h('tr', null, h('th', null, 'Job'), teamHead, h('th', null, 'Recipe'), h('th', null, 'State'),
            h('th', null, 'Pods'), h('th', null, 'Recovery budget'), h('th', null, 'Started'), h('th', null, ''))),
          tbody))),
    detailCard,
    logCard,
    formCard,
    mlflowCard);
  mountMlflow(mlflowCard, ctx, cluster);

  // -- the list ------------------------------------------------------------------------------

  let reading = false; // a read in flight
  let readAgain = false; // a change came while it was: read once more after it

  /** Read the list now (after a change), then on the usual timer. */
  function reload() {
    if (reading) { readAgain = true; return; }
    if (timer) clearTimeout(timer);
    timer = null;
    refresh();
  }

  async function refresh() {
    reading = true;
    try {
      const data = await api(`${base}/jobs`, { signal: ctx.signal });
      clear(tbody);
      const teams = data.items.some((j) => j.team); // the Team column where any job has one
      teamHead.hidden = !teams;
      for (const job of data.items) tbody.appendChild(row(job, teams));
      if (!data.items.length) {
        tbody.appendChild(h('tr', null, h('td', { colspan: 7 }, h('div', { class: 'empty', testid: 'jobs-empty' }, 'No jobs yet: submit one below.'))));
      }
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    } finally {
      reading = false;
      if (!ctx.signal.aborted) timer = setTimeout(refresh, readAgain ? 0 : REFRESH_MS);
      readAgain = false;
    }
  }

  /** Delete a job (confirm.js): one not finished is live work, refused (409 in_use) naming
   * its pods until the user types its name to force. */
  function openDeleteJob(job) {
    if (!canChangeWorkOf(job.team || null)) return;
    confirmDestroy({
      kind: 'job', name: job.name, url: `${base}/jobs/${encodeURIComponent(job.name)}`, action: 'job-delete', signal: ctx.signal,
      about: h('p', null, 'Its pods stop; what it wrote under /s3 stays.'),
    }).then(async (reply) => {
      if (!reply) return;
      reload();
      const op = await waitOperation(reply.operation.id, { signal: ctx.signal });
      if (!op) return;
      if (op.status === rules.status.SUCCEEDED) toast(`Job ${job.name} deleted.`, { kind: 'info', timeout: 2500 });
      else toast(`Deleting job ${job.name} ${op.status}${op.error ? `: ${op.error.message}` : ''}`, { kind: 'error' });
      reload();
    });
  }

  function row(job, teams) {
    const budget = job.recovery_budget;
    const del = h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `job-delete-${job.name}` }, 'Delete');
    guard(del, { teamWork: true, team: job.team || null });
    del.addEventListener('click', () => openDeleteJob(job));
    const open = h('a', { href: '#', testid: `job-open-${job.name}` }, job.name);
    open.addEventListener('click', (e) => { e.preventDefault(); select(job.name); });
    return h('tr', { testid: `job-row-${job.name}`, class: job.name === selected ? 'selected' : '' },
      h('td', null, open, h('div', { class: 'muted small' }, job.kind, ' · ', job.namespace), mlflowLink(job)),
      teams ? h('td', { testid: `job-team-${job.name}` }, job.team || '—',
        job.priority ? h('div', { class: 'muted small' }, `priority ${job.priority}`) : null) : null,
      h('td', null, job.recipe || '—'),
      h('td', null, badge(job.state, { testid: `job-state-${job.name}` }), waitingNote(job.waiting, 'Pod', `job-waiting-${job.name}`), job.operation_id
        ? h('div', { class: 'small' }, h('a', { href: `#/operations/${job.operation_id}` }, 'operation')) : null),
      h('td', null, String(job.pods.length), job.restarts ? h('span', { class: 'muted small' }, ` · ${job.restarts} restarts`) : null),
      h('td', { testid: `job-budget-${job.name}` }, budget
        ? `${budget.used} of ${budget.allowed ?? '∞'} used${budget.remaining !== null ? ` (${budget.remaining} left)` : ''}` : '—'),
      h('td', null, job.started_at ? timeEl(job.started_at) : '—'),
      h('td', null, del));
  }

  function mlflowLink(job) {
    if (!job.mlflow) return null;
    const link = h('a', { href: '#', testid: `job-mlflow-${job.name}`, title: job.mlflow.tracking_server_arn }, `MLflow: ${job.mlflow.experiment_name}`);
    link.addEventListener('click', (e) => { e.preventDefault(); openMlflowUi(cluster, ctx.signal); });
    return h('div', { class: 'small' }, link);
  }

  function select(name) {
    selected = name;
    replaceQuery(`/clusters/${encodeURIComponent(cluster)}/jobs`, { job: name });
    for (const tr of tbody.querySelectorAll('tr')) tr.classList.toggle('selected', tr.dataset.testid === `job-row-${name}`);
    if (tail) tail.stop();
    if (stopDetail) stopDetail();
    stopDetail = mountJobDetail(detailCard, cluster, name, ctx.signal);
    tail = new LogView(logCard, cluster, name);
    tail.start();
  }

  // -- the form --------------------------------------------------------------------------------

  async function loadForm() {
    let limits;
    let work;
    try {
      [limits, work] = await Promise.all([api('/api/v1/training/limits', { signal: ctx.signal }),
        readTeamWork(base, ctx.signal)]);
    } catch (e) {
      if (!isAbort(e)) toastError(e);
      return;
    }
    renderForm(limits, work);
  }

  function renderForm(limits, work) {
    const submit = mutator();
    const recipe = h('select', { testid: 'job-recipe', id: 'job-recipe' },
      limits.recipes.map((r) => h('option', { value: r.name }, `${r.name} — ${r.description}`)));
    const inputs = {
      name: h('input', { id: 'job-name', testid: 'job-name', class: 'mono', required: true, placeholder: 'fit-1' }),
      image: h('input', { id: 'job-image', testid: 'job-image', class: 'mono', required: true, placeholder: 'repo/image:tag' }),
      script: h('input', { id: 'job-script', testid: 'job-script', class: 'mono' }),
      config: h('input', { id: 'job-config', testid: 'job-config', class: 'mono' }),
      command: h('input', { id: 'job-command', testid: 'job-command', class: 'mono' }),
      nodes: h('input', { id: 'job-nodes', testid: 'job-nodes', type: 'number', min: 1, value: 1 }),
      max_nodes: h('input', { id: 'job-max-nodes', testid: 'job-max-nodes', type: 'number', min: 1, placeholder: 'fixed' }),
      processes_per_node: h('input', { id: 'job-procs', testid: 'job-procs', type: 'number', min: 1, value: 1 }),
      gpus_per_node: h('input', { id: 'job-gpus', testid: 'job-gpus', type: 'number', min: 0, value: 1 }),
      instance_group: h('input', { id: 'job-group', testid: 'job-group', class: 'mono', placeholder: 'any' }),
      retries: h('input', { id: 'job-retries', testid: 'job-retries', type: 'number', min: 0, value: 3 }),
    };
    const err = h('div', { class: 'form-error', testid: 'job-form-error', role: 'alert' });
    // each field by the API's name (the retry limit is `run_policy.job_max_retry_count`): its
    // error line is `error-job-<field>` (form_fields.js)
    const fields = fieldSet('job');
    const API_NAME = { retries: 'run_policy.job_max_retry_count' };
    const labelled = (key, label, input, hint) => {
      const el = fields.field(API_NAME[key] || key, label, input, hint);
      el.dataset.testid = `job-field-${key}`;
      return el;
    };
    const field = (key, label, hint) => labelled(key, label, inputs[key], hint);
    const recipeFields = Object.fromEntries(Object.entries(FIELD_HINTS).map(([key, [label, placeholder, hint]]) => {
      inputs[key].placeholder = placeholder;
      return [key, field(key, label, hint)];
    }));
    const teamWork = teamWorkFields(labelled, work);
    const elasticNote = h('div', { class: 'hint', testid: 'job-elastic-limits' },
      'Elastic training (a node range) cannot be combined with ',
      limits.elastic_excludes.map((l) => l.with_what).join(', '), '. Source: ', limits.source);
    const button = h('button', { type: 'submit', class: 'btn btn-primary', testid: 'job-submit' }, 'Submit job');
    guard(button, { teamWork: true });
    const form = h('form', { class: 'card-body', testid: 'job-form', novalidate: true },
      h('h2', null, 'Submit a job'),
      canMutate(true) ? null : roleHint('Submitting jobs', 'job-form-hint', { teamWork: true }),
      err,
      h('div', { class: 'field' }, h('label', { for: 'job-recipe' }, 'Recipe'), recipe),
      field('name', 'Name'), teamWork.el,
      field('image', 'Image', 'HyperPodPyTorchJob recipes need the HyperPod elastic agent (hyperpod-elastic-agent) in the image; they launch with hyperpodrun.'),
      ...Object.values(recipeFields),
      h('div', { class: 'grid-3' }, field('nodes', 'Nodes'), field('max_nodes', 'Up to (elastic)', elasticNote),
        field('processes_per_node', 'Processes per node')),
      h('div', { class: 'grid-3' }, field('gpus_per_node', 'GPUs per node'), field('instance_group', 'Instance group'),
        field('retries', 'Retry limit (recovery budget)')),
      button);
    const needs = () => new Set((limits.recipes.find((r) => r.name === recipe.value) || { needs: [] }).needs);
    const showFields = () => {
      const wanted = needs();
      for (const [key, el] of Object.entries(recipeFields)) el.hidden = !wanted.has(key);
    };
    recipe.addEventListener('change', showFields);
    showFields();
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      fields.clear(err);
      const number = (el) => (el.value === '' ? undefined : Number(el.value));
      const body = {
        name: inputs.name.value.trim(), recipe: recipe.value, image: inputs.image.value.trim(),
        nodes: number(inputs.nodes), processes_per_node: number(inputs.processes_per_node),
        gpus_per_node: number(inputs.gpus_per_node),
        run_policy: { job_max_retry_count: number(inputs.retries) }, ...teamWork.body(),
      };
      const wanted = needs();
      if (wanted.has('script')) body.script = inputs.script.value.trim();
      if (wanted.has('config')) body.config = inputs.config.value.trim();
      if (wanted.has('command')) body.command = inputs.command.value.trim().split(/\s+/).filter(Boolean);
      if (inputs.max_nodes.value) body.max_nodes = number(inputs.max_nodes);
      if (inputs.instance_group.value.trim()) body.instance_group = inputs.instance_group.value.trim();
      button.disabled = true;
      try {
        const reply = await submit(`${base}/jobs`, { body, signal: ctx.signal });
        reload(); // its row reads "submitting", naming the operation
        const op = await waitOperation(reply.operation.id, { signal: ctx.signal });
        if (!op) return;
        reload();
        if (op.status !== rules.status.SUCCEEDED) {
          err.textContent = `Job ${body.name}: its submission ${op.status}${op.error ? `: ${op.error.message}` : ''}`;
          return;
        }
        toast(`Job ${body.name} submitted.`, { kind: 'info', timeout: 2500 });
        select(body.name);
      } catch (e2) {
        if (isAbort(e2)) return;
        fields.showRefusal(e2, err);
      } finally {
        button.disabled = !canMutate(true);
      }
    });
    formCard.replaceChildren(form);
  }

  refresh();
  loadForm();
  if (selected) select(selected);
  return () => {
    if (timer) clearTimeout(timer);
    if (tail) tail.stop();
    if (stopDetail) stopDetail();
  };
}

// -- one job's live log --------------------------------------------------------------------------

class LogView {
  constructor(card, cluster, job) {
    this.card = card;
    this.cluster = cluster;
    this.job = job;
    this.lines = []; // {pod, time, line, previous}
    this.cursors = {}; // pod → last cursor (resume)
    this.pods = new Set();
    this.filter = '';
    this.paused = false;
    this.follow = true;
    this.dropped = 0;
    this.ws = null;
    this.stopped = false;
    this.retries = 0;
    this.frame = 0;
    this.build();
  }

  build() {
    this.status = h('span', { class: 'muted small', testid: 'log-status' }, 'connecting…');
    this.count = h('span', { class: 'muted small', testid: 'log-count' }, '0 lines');
    this.podSel = h('select', { testid: 'log-pod-filter', 'aria-label': 'Pod' }, h('option', { value: '' }, 'All pods'));
    this.podSel.addEventListener('change', () => { this.filter = this.podSel.value; this.render(true); });
    this.pauseBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'log-pause' }, 'Pause');
    this.pauseBtn.addEventListener('click', () => {
      this.paused = !this.paused;
      this.pauseBtn.textContent = this.paused ? 'Resume' : 'Pause';
      if (!this.paused) this.render(true);
    });
    this.spacer = h('div', { class: 'log-spacer' });
    this.window = h('div', { class: 'log-window', testid: 'log-lines' });
    // it scrolls: focusable, so a keyboard reads the log too
    this.viewport = h('div', { class: 'log-viewport', testid: 'log-viewport', tabindex: 0, role: 'region', 'aria-label': 'Log lines' }, this.spacer, this.window);
    this.viewport.addEventListener('scroll', () => {
      const bottom = this.viewport.scrollTop + this.viewport.clientHeight >= this.viewport.scrollHeight - ROW_PX;
      this.follow = bottom;
      this.schedule();
    });
    this.card.replaceChildren(
      h('div', { class: 'card-head inline' }, h('b', { testid: 'log-job' }, this.job), this.status, this.count,
        h('span', { class: 'spacer' }), this.podSel, this.pauseBtn),
      this.viewport);
    this.card.hidden = false;
  }

  start() {
    if (this.stopped) return;
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/ws/clusters/${encodeURIComponent(this.cluster)}/jobs/${encodeURIComponent(this.job)}/logs`);
    this.ws = ws;
    ws.onopen = () => {
      const msg = { type: 'auth', token: session.token, tail: 1000 };
      if (Object.keys(this.cursors).length) msg.after = this.cursors;
      ws.send(JSON.stringify(msg));
    };
    ws.onmessage = (m) => {
      let d;
      try { d = JSON.parse(m.data); } catch { return; }
      this.retries = 0;
      if (d.type === 'job') {
        this.status.textContent = `live · ${d.job.state}`;
        for (const p of d.job.pods) this.addPod(p);
      } else if (d.type === 'lines') {
        for (const line of d.lines) {
          if (line.error) { this.push({ pod: line.pod, time: '', line: `⚠ ${line.error}` }); continue; }
          this.cursors[line.pod] = line.cursor;
          this.addPod(line.pod);
          this.push(line);
        }
        this.schedule();
      } else if (d.type === 'dropped') {
        this.dropped += d.count;
        this.push({ pod: d.pods.join(','), time: '', line: `… ${d.count} lines dropped (this view fell behind) …`, marker: true });
        this.schedule();
      } else if (d.type === 'end') {
        // no state: the job itself is gone (deleted while its logs were followed)
        this.status.textContent = d.state ? `ended · ${d.state}` : 'ended · the job was deleted';
        this.ended = true;
      }
    };
    ws.onclose = (e) => {
      if (this.ws !== ws || this.stopped || this.ended) return;
      if (e.code === 4401 || e.code === 4403 || e.code === 4404) {
        this.status.textContent = `closed: ${e.reason || e.code}`;
        return;
      }
      this.retries += 1;
      this.status.textContent = 'reconnecting…';
      setTimeout(() => this.start(), Math.min(5000, 250 * 2 ** this.retries)); // resumes from the cursors
    };
  }

  stop() {
    this.stopped = true;
    if (this.ws) this.ws.close();
    cancelAnimationFrame(this.frame);
  }

  addPod(pod) {
    if (this.pods.has(pod)) return;
    this.pods.add(pod);
    this.podSel.appendChild(h('option', { value: pod }, pod));
  }

  push(line) {
    this.lines.push(line);
    if (this.lines.length > KEEP_LINES) this.lines.splice(0, this.lines.length - KEEP_LINES);
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(false); });
  }

  shown() {
    return this.filter ? this.lines.filter((l) => l.pod === this.filter || l.marker) : this.lines;
  }

  /** Only the rows in view are in the DOM: a million lines cost what a screenful does. */
  render(force) {
    if (this.paused && !force) return;
    const rows = this.shown();
    this.count.textContent = `${rows.length} lines${this.dropped ? ` · ${this.dropped} dropped` : ''}`;
    this.spacer.style.height = `${rows.length * ROW_PX}px`;
    if (this.follow && !this.paused) this.viewport.scrollTop = this.viewport.scrollHeight;
    const first = Math.max(0, Math.floor(this.viewport.scrollTop / ROW_PX) - 5);
    const count = Math.ceil(this.viewport.clientHeight / ROW_PX) + 10;
    this.window.style.transform = `translateY(${first * ROW_PX}px)`;
    this.window.replaceChildren(...rows.slice(first, first + count).map((l) => h('div', {
      class: `log-row${l.previous ? ' previous' : ''}${l.marker ? ' marker' : ''}`, testid: 'log-row',
    }, h('span', { class: 'log-time', title: l.time || '' }, l.time ? clockTime(l.time) : ''), ' ',
    h('span', { class: 'log-pod' }, l.pod), ' ', l.line)));
  }
}
