// #/clusters/<name>/spaces — Dev spaces: JupyterLab and Code Editor on the cluster, each with
// the cluster's bucket at /s3 (the claim the jobs mount) and its own home volume. Listed with
// state, owner, size, node and idle time; created from a form whose bounds and choices come
// from the API's document (`spaceRules`, through rules.field); opened, stopped, started and deleted in place. Only
// a space's owner may change it: the others' buttons are disabled and say whose it is.
// With task governance a space runs for a team: the form's Team and Priority (job_team.js, as
// the job form's), the list's Team column, and a space's detail (its name selects it) shows
// its place in the team's queue (job_queue.js); a team member changes only its team's spaces.

import { api, isAbort, mutator, canMutate, canChangeWorkOf, session } from '../api.js';
import { fieldSet } from '../form_fields.js';
import { h, clear, badge, toastError, guard, roleHint, spinner, opHref, waitingNote } from '../ui.js';
import { rules, validateName, words } from '../rules.js';
import { openOperation } from '../modal.js';
import { confirmDestroy } from '../confirm.js';
import { readTeamWork, teamWorkFields } from './job_team.js';
import { queueSection } from './job_queue.js';

const REFRESH_MS = 3000;
const EDITORS = { jupyterlab: 'JupyterLab', 'code-editor': 'Code Editor' };

/** The form's choices and bounds and the states, from the API's document. */
function spaceRules() {
  const f = (name) => rules.field('SpaceCreate', name);
  const bounds = (name) => ({ min: f(name).minimum, max: f(name).maximum, default: f(name).default });
  return {
    appTypes: f('app_type').enum,
    defaultAppType: f('app_type').default,
    image: new RegExp(f('image').pattern),
    cpu: bounds('cpu'),
    memoryGib: bounds('memory_gib'),
    gpus: bounds('gpus'),
    homeGib: bounds('home_gib'),
    idleMinutes: bounds('idle_shutdown_minutes'),
    state: words(rules.field('Space', 'state').enum),
  };
}

/** The cluster page's link to this page (app.js's CLUSTER_PAGES). */
export const clusterLink = { text: 'Dev spaces', testid: 'cluster-spaces-link' };

export function mount(root, ctx) {
  const cluster = ctx.params[0];
  const clusterBase = `/api/v1/clusters/${encodeURIComponent(cluster)}`;
  const base = `${clusterBase}/spaces`;
  const send = mutator();
  const S = spaceRules();
  const list = h('div', { testid: 'spaces-list' }, h('div', { class: 'loading' }, spinner(), 'Reading the cluster…'));

  // Each field by the API's field name: its error line is `error-space-<field>` (form_fields.js).
  const fields = fieldSet('space');
  const field = fields.field;
  const number = (id, label, b, hint) => {
    const input = h('input', { type: 'number', id: `space-${id}`, testid: `space-${id}`, min: b.min, max: b.max, value: b.default, step: 1, inputmode: 'numeric' });
    return [input, field(id, label, input, hint || `${b.min} to ${b.max}`)];
  };
  const nameIn = h('input', { type: 'text', id: 'space-name', testid: 'space-name', class: 'mono', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. alice-lab' });
  const nameField = field('name', 'Name', nameIn, rules.name.rule);
  const editorSel = h('select', { id: 'space-app-type', testid: 'space-app-type' },
    S.appTypes.map((v) => h('option', { value: v, selected: v === S.defaultAppType }, EDITORS[v] || v)));
  const editorField = field('app_type', 'Editor', editorSel);
  const groupSel = h('select', { id: 'space-instance-group', testid: 'space-instance-group' }, h('option', { value: '' }, 'Reading the groups…'));
  const groupField = field('instance_group', 'Instance group', groupSel,
    h('div', { class: 'hint', testid: 'space-group-hint' }, 'The space runs on one node of this group.'));
  const [cpuIn, cpuField] = number('cpu', 'vCPUs', S.cpu);
  const [memIn, memField] = number('memory_gib', 'Memory (GiB)', S.memoryGib);
  const [gpuIn, gpuField] = number('gpus', 'GPUs', S.gpus, 'Held for as long as the space runs.');
  const [homeIn, homeField] = number('home_gib', 'Home volume (GiB)', S.homeGib, 'Its own EBS volume, kept while the space is stopped.');
  const [idleIn, idleField] = number('idle_shutdown_minutes', 'Stop after idle (minutes)', S.idleMinutes);
  const neverIn = h('input', { type: 'checkbox', id: 'space-idle-never', testid: 'space-idle-never' });
  neverIn.addEventListener('change', () => { idleIn.disabled = neverIn.checked; });
  const imageIn = h('input', { type: 'text', id: 'space-image', testid: 'space-image', class: 'mono', autocomplete: 'off', spellcheck: 'false', placeholder: 'default: the SageMaker Distribution' });
  const imageField = field('image', 'Image (optional)', imageIn);
  const formErr = h('div', { class: 'form-error', testid: 'space-form-error', role: 'alert' });
  const submit = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'space-create' }, 'Create space'), { teamWork: true });
  const teamSlot = h('div', { testid: 'space-team-slot' });
  let teamWork = null; // the Team and Priority fields, once the cluster's teams are read
  idleField.insertBefore(h('label', { class: 'check', for: 'space-idle-never' }, neverIn, ' Never stop it by itself'), idleField.lastChild);
  const form = h('form', { class: 'space-form', testid: 'space-form', novalidate: true }, formErr, nameField, editorField, groupField,
    teamSlot, h('div', { class: 'grid-3' }, cpuField, memField, gpuField), homeField, idleField,
    imageField,
    h('p', { class: 'field-note' }, 'The cluster\'s bucket is mounted at /s3 — the same files the jobs read and write.'),
    h('div', { class: 'inline' }, submit), roleHint('creating a space', 'space-role-hint', { teamWork: true }));
  const detail = h('div', { testid: 'space-detail', hidden: true });
  let selected = null;
  let last = null;

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Dev spaces'),
      h('span', { class: 'sub' }, cluster, ' · ', h('a', { href: `#/clusters/${encodeURIComponent(cluster)}/jobs`, testid: 'spaces-jobs-link' }, 'Jobs →')),
      h('span', { class: 'spacer' })),
    h('div', { class: 'grid-2' },
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'Spaces')), list, detail),
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', null, 'New space')),
        h('div', { class: 'card-body' }, form))));

  async function loadGroups() {
    try {
      const data = await api(`/api/v1/clusters/${encodeURIComponent(cluster)}/instance-groups`, { signal: ctx.signal });
      clear(groupSel);
      const groups = data.items || [];
      if (!groups.length) groupSel.append(h('option', { value: '' }, 'The cluster has no instance group'));
      for (const g of groups) {
        groupSel.append(h('option', { value: g.name }, `${g.name} · ${g.instance_type} × ${g.current_count ?? g.target_count ?? ''}`));
      }
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  async function loadTeams() {
    const work = await readTeamWork(clusterBase, ctx.signal).catch((e) => {
      if (!isAbort(e)) toastError(e);
      return null;
    });
    if (!work) return;
    teamWork = teamWorkFields(field, work, 'space');
    teamSlot.replaceChildren(teamWork.el);
  }

  async function load() {
    try {
      render(last = await api(base, { signal: ctx.signal }));
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  function mine(s) {
    return !!session.user && s.owner === session.user.name;
  }

  /** A lifecycle button: an operator's (a member's: of the space's team), and only the
   * owner's. */
  function ownerButton(s, label, testid, onClick, cls = 'btn btn-sm') {
    const btn = guard(h('button', { type: 'button', class: cls, testid }, label), { teamWork: true, team: s.team || null });
    if (!btn.disabled && !mine(s)) {
      btn.disabled = true;
      btn.dataset.locked = 'owner';
      btn.title = `This space belongs to ${s.owner}; only its owner may change it.`;
    }
    btn.addEventListener('click', onClick);
    return btn;
  }

  // What the list shows, without what moves on its own (activity times, events): a refresh
  // that changes none of it leaves the rows alone, so focus and a hovered title stay put.
  let shown = null;
  const MOVING = new Set(['last_activity', 'idle_minutes', 'events']);

  function render(data) {
    const now = JSON.stringify([selected, data], (k, v) => (MOVING.has(k) ? undefined : v));
    if (now === shown) return;
    shown = now;
    clear(list);
    const items = data.items || [];
    renderDetail(items.find((s) => s.name === selected));
    if (!items.length) {
      list.appendChild(h('div', { class: 'empty', testid: 'spaces-empty' }, 'No spaces yet. Create one with the form; the spaces feature must be on (cluster → Features).'));
      return;
    }
    const teams = items.some((s) => s.team);
    const heads = ['Space', 'State', 'Owner', ...(teams ? ['Team'] : []), 'Size', 'Node · idle', ''];
    list.appendChild(h('table', { class: 'data', testid: 'spaces-table' },
      h('thead', null, h('tr', null, heads.map((t) => h('th', null, t)))),
      h('tbody', null, items.map((s) => row(s, teams)))));
  }

  /** The selected space's detail: how a remote IDE reaches it, and its place in its team's
   * queue (job_queue.js). */
  function renderDetail(s) {
    detail.hidden = !s;
    if (!s) { clear(detail); return; }
    const a = s.access;
    const remote = a ? h('div', { testid: 'space-remote' },
      h('h4', null, 'From your machine'),
      h('p', { class: 'hint' }, 'With the cluster\'s kubeconfig (the cluster\'s page, Download kubeconfig), run this and open the address it serves at (a remote IDE connects there too):'),
      h('pre', { class: 'command', testid: 'space-port-forward' }, a.port_forward.join(' ')),
      h('p', null, h('span', { class: 'id', testid: 'space-local-url' }, a.local_url))) : null;
    detail.replaceChildren(h('div', { class: 'card-body' },
      h('h3', null, `Space ${s.name}`),
      remote,
      queueSection(cluster, s, 'space') || h('p', { class: 'hint', testid: 'space-queue-none' },
        s.team ? 'Stopped: it holds no place in its team\'s queue.' : 'Not a team\'s space: it goes through no queue.')));
  }

  function select(name) {
    selected = selected === name ? null : name;
    if (last) render(last);
  }

  function row(s, teams) {
    const st = S.state;
    const url = s.access && s.access.url;
    const pod = (s.pods || [])[0];
    const actions = [];
    if (s.state === st.RUNNING && url) {
      actions.push(ownerButton(s, 'Open', `space-open-${s.name}`, () => openSpace(s), 'btn btn-sm btn-primary'));
    }
    if ([st.RUNNING, st.STARTING].includes(s.state)) {
      actions.push(ownerButton(s, 'Stop', `space-stop-${s.name}`, () => lifecycle(s, 'stop')));
    }
    if (s.state === st.STOPPED) {
      actions.push(ownerButton(s, 'Start', `space-start-${s.name}`, () => lifecycle(s, 'start')));
    }
    if (![st.CREATING, st.DELETING].includes(s.state)) {
      actions.push(ownerButton(s, 'Delete', `space-delete-${s.name}`, () => openDelete(s), 'btn btn-sm btn-danger'));
    }
    const r = s.resources || {};
    const open = h('a', { href: '#', class: 'id', testid: `space-select-${s.name}`, 'aria-label': `details of space ${s.name}` }, h('b', null, s.name));
    open.addEventListener('click', (e) => { e.preventDefault(); select(s.name); });
    return h('tr', { testid: `space-row-${s.name}`, class: s.name === selected ? 'selected' : '' },
      h('td', null, open, h('div', { class: 'sub-id' }, EDITORS[s.app_type] || s.app_type || '')),
      h('td', null, badge(s.state, { testid: `space-state-${s.name}` }),
        s.operation_id ? h('a', { href: opHref(s.operation_id), class: 'sub-id', 'aria-label': `last operation of space ${s.name}` }, ' operation') : null,
        s.message ? h('div', { class: 'sub-id', testid: `space-message-${s.name}` }, s.message) : null,
        waitingNote(s.waiting, 'pod', `space-waiting-${s.name}`)),
      h('td', { testid: `space-owner-${s.name}` }, s.owner || '—'),
      teams ? h('td', { testid: `space-team-${s.name}` }, s.team || '—',
        s.priority ? h('div', { class: 'sub-id' }, `priority ${s.priority}`) : null) : null,
      h('td', { testid: `space-size-${s.name}` }, `${r.cpu ?? '?'} vCPU · ${r.memory_gib ?? '?'} GiB`, r.gpus ? ` · ${r.gpus} GPU` : '',
        h('div', { class: 'sub-id' }, `${s.instance_group || ''} · home ${s.home_gib ?? '?'} GiB`)),
      h('td', null, pod && pod.node ? h('span', { class: 'id' }, pod.node) : '—',
        h('div', { class: 'sub-id', testid: `space-idle-${s.name}` },
          s.idle_shutdown_minutes ? `stops after ${s.idle_shutdown_minutes} min idle` : 'never stops by itself')),
      h('td', { class: 'actions' }, actions.flatMap((a, i) => (i ? [' ', a] : [a]))));
  }

  // Open: the API's one-use code, posted as a form in a new tab to the spaces router, which
  // swaps it for the space's session cookie, so no token is ever in a URL. The tab opens on
  // the click itself (no pop-up blocker stops it) and loses its way back to this page first.
  async function openSpace(s) {
    const tab = window.open('', '_blank');
    if (!tab) {
      toastError(new Error('The browser blocked the new tab: allow pop-ups for hypd to open spaces.'));
      return;
    }
    tab.opener = null;
    tab.document.title = `Opening ${s.name}…`;
    try {
      const door = await api(`${base}/${encodeURIComponent(s.name)}/sign-in`, { method: 'POST', signal: ctx.signal });
      const doc = tab.document;
      const form = doc.createElement('form');
      form.method = 'POST';
      form.action = door.action;
      const code = doc.createElement('input');
      code.type = 'hidden';
      code.name = 'code';
      code.value = door.code;
      form.append(code);
      doc.body.append(form);
      form.submit();
    } catch (e) {
      tab.close();
      if (!isAbort(e)) toastError(e);
    }
  }

  async function lifecycle(s, action) {
    if (!canChangeWorkOf(s.team || null)) return;
    try {
      const reply = await send(`${base}/${encodeURIComponent(s.name)}/${action}`, { signal: ctx.signal });
      if (reply && reply.operation) openOperation(reply);
      load();
    } catch (e) {
      if (!isAbort(e)) toastError(e);
    }
  }

  function openDelete(s) {
    if (!canChangeWorkOf(s.team || null)) return;
    confirmDestroy({
      kind: 'space', name: s.name, url: `${base}/${encodeURIComponent(s.name)}`, action: 'space-delete', signal: ctx.signal,
      about: [
        h('p', null, `The space, its editor and its home volume (${s.home_gib ?? '?'} GiB) with every file on it.`),
        h('p', { class: 'field-note space-removes-note' }, 'Files under /s3 stay in the cluster\'s bucket.')],
    }).then((reply) => {
      if (!reply) return;
      openOperation(reply);
      load();
    });
  }

  function checkNumber(input, id, b) {
    const v = Number(input.value);
    if (input.value.trim() === '' || !Number.isInteger(v) || v < b.min || v > b.max) {
      fields.setError(id, `A whole number from ${b.min} to ${b.max}.`);
      return false;
    }
    return true;
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!canMutate(true)) return;
    fields.clear(formErr);
    const name = nameIn.value.trim();
    const why = validateName(name);
    let ok = true;
    if (why) { fields.setError('name', why); ok = false; }
    ok = checkNumber(cpuIn, 'cpu', S.cpu) && ok;
    ok = checkNumber(memIn, 'memory_gib', S.memoryGib) && ok;
    ok = checkNumber(gpuIn, 'gpus', S.gpus) && ok;
    ok = checkNumber(homeIn, 'home_gib', S.homeGib) && ok;
    if (!neverIn.checked) ok = checkNumber(idleIn, 'idle_shutdown_minutes', S.idleMinutes) && ok;
    const image = imageIn.value.trim();
    if (image && !S.image.test(image)) {
      fields.setError('image', 'Not a container image reference (e.g. repo/name:tag).');
      ok = false;
    }
    if (!groupSel.value) {
      fields.setError('instance_group', 'Choose an instance group.');
      ok = false;
    }
    if (!ok) { fields.focus(); return; }
    const body = {
      name, app_type: editorSel.value, instance_group: groupSel.value,
      cpu: Number(cpuIn.value), memory_gib: Number(memIn.value), gpus: Number(gpuIn.value),
      home_gib: Number(homeIn.value),
      idle_shutdown_minutes: neverIn.checked ? null : Number(idleIn.value),
    };
    if (image) body.image = image;
    Object.assign(body, teamWork ? teamWork.body() : {});
    submit.disabled = true;
    try {
      const reply = await send(base, { body, signal: ctx.signal });
      nameIn.value = '';
      if (reply && reply.operation) openOperation(reply);
      load();
    } catch (e) {
      if (isAbort(e)) return;
      // a refusal with the numbers (exceeds_capacity) names its fields in details.fields
      fields.showRefusal(e, formErr);
    } finally {
      submit.disabled = !canMutate(true);
    }
  });

  loadGroups();
  loadTeams();
  load();
  const timer = setInterval(load, REFRESH_MS);
  return () => clearInterval(timer);
}
