// #/networks — networks read from AWS by tag, delete, and the create form.

import { api, isAbort, uuid4, canMutate } from '../api.js';
import { fieldSet } from '../form_fields.js';
import {
  h, clear, fill, badge, idEl, toastError, guard, roleHint, regionSelect, spinner, debounce,
} from '../ui.js';
import { rules, validateName } from '../rules.js';
import { confirmDestroy } from '../confirm.js';

const REFRESH_MS = 15000;

export function validateCidr(v) {
  if (!v) return '';
  const m = v.match(/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/);
  if (!m) return `Write an IPv4 CIDR such as ${rules.defaultCidr}.`;
  if (m.slice(1, 5).some((o) => Number(o) > 255)) return 'Each address part must be 0–255.';
  if (Number(m[5]) > 32) return 'The prefix length must be 0–32.';
  return '';
}

export function mount(root, ctx) {
  const state = { items: null, inflight: false, zonesReq: 0 };

  // ---------- list ----------
  const tbody = h('tbody', { testid: 'networks-body' },
    h('tr', null, h('td', { colspan: 7 }, h('div', { class: 'loading' }, spinner(), 'Reading networks from AWS…'))));
  const refreshBtn = h('button', { type: 'button', class: 'btn btn-sm', testid: 'networks-refresh' }, 'Refresh');
  const count = h('span', { class: 'sub', testid: 'networks-count' });

  // ---------- form ----------
  const nameIn = h('input', {
    type: 'text', id: 'network-name', testid: 'network-name', class: 'mono', autocomplete: 'off',
    spellcheck: 'false', placeholder: 'e.g. lab', maxlength: 64,
  });
  const regionIn = regionSelect({ id: 'network-region', testid: 'network-region' }, ctx.query.get('region') || '');
  const cidrIn = h('input', {
    type: 'text', id: 'network-cidr', testid: 'network-cidr', class: 'mono', value: rules.defaultCidr,
    autocomplete: 'off', spellcheck: 'false',
  });
  const zonesBox = h('div', { class: 'zones', testid: 'network-zones', role: 'group', 'aria-label': 'Availability zones' });
  const fields = fieldSet('network');
  const formErr = h('div', { class: 'form-error', testid: 'network-form-error', role: 'alert' });
  const submitBtn = guard(h('button', { type: 'submit', class: 'btn btn-primary', testid: 'network-create' }, 'Create network'));
  const form = h('form', { testid: 'network-form', novalidate: true },
    formErr,
    fields.field('name', 'Name', nameIn, rules.name.rule),
    fields.field('region', 'Region', regionIn),
    // the allowed range and default, from the API's document, before any submit
    fields.field('cidr', 'VPC CIDR', cidrIn, h('div', { class: 'hint', testid: 'network-cidr-hint' },
      `Default ${rules.defaultCidr}. Allowed: a ${rules.field('NetworkCreate', 'cidr').description}.`)),
    h('div', { class: 'field' },
      h('span', { class: 'label' }, 'Availability zones'), zonesBox,
      h('div', { class: 'hint', id: 'network-zones-hint' }, 'None selected: the first two available zones.'),
      fields.line('availability_zones', zonesBox, 'network-zones-hint')),
    h('div', { class: 'inline' }, submitBtn),
    roleHint('creating a network', 'network-create-hint'));

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Networks'),
      h('span', { class: 'sub' }, 'VPCs hypd manages: subnets, routes, NAT, security group, S3 endpoint.'),
      h('span', { class: 'spacer' })),
    h('div', { class: 'grid-2' },
      h('div', { class: 'card' },
        h('div', { class: 'card-head' }, h('h2', null, 'Networks'), count, h('span', { class: 'spacer' }), refreshBtn),
        h('div', { class: 'table-wrap' },
          h('table', { class: 'data', testid: 'networks-table' },
            h('thead', null, h('tr', null,
              h('th', null, 'Name / VPC'), h('th', null, 'State'), h('th', null, 'Region'),
              h('th', null, 'CIDR'), h('th', null, 'Zones'), h('th', { title: 'total (public/private)' }, 'Subnets'), h('th', null, ''))),
            tbody))),
      h('div', { class: 'card', testid: 'network-create-card' },
        h('div', { class: 'card-head' }, h('h2', null, 'Create network')),
        h('div', { class: 'card-body' }, form))));

  // ---------- list logic ----------

  async function load() {
    if (state.inflight) return;
    state.inflight = true;
    try {
      const data = await api('/api/v1/networks', { signal: ctx.signal });
      state.items = (data && data.items) || [];
      renderList();
    } catch (e) {
      if (isAbort(e)) return;
      if (!state.items) {
        clear(tbody).appendChild(h('tr', null, h('td', { colspan: 7 }, h('div', { class: 'empty' }, e.message))));
      }
      toastError(e);
    } finally {
      state.inflight = false;
    }
  }

  function renderList() {
    const items = state.items || [];
    count.textContent = `${items.length}`;
    clear(tbody);
    if (!items.length) {
      tbody.appendChild(h('tr', null, h('td', { colspan: 7 },
        h('div', { class: 'empty', testid: 'networks-empty' }, 'No networks yet. Create one with the form.'))));
      return;
    }
    for (const n of items) {
      const subnets = n.subnets || [];
      const pub = subnets.filter((s) => s.role === 'public').length;
      const priv = subnets.filter((s) => s.role === 'private').length;
      tbody.appendChild(h('tr', { testid: `network-row-${n.name}`, dataset: { name: n.name, state: n.state || '' } },
        h('td', { class: 'nowrap' }, h('b', { class: 'id' }, n.name), idEl(n.vpc_id, { class: 'sub-id', testid: 'network-vpc' }),
          (n.used_by || []).length
            ? h('div', { class: 'faint wrap-text', testid: 'network-used-by', title: n.used_by.map((u) => `${u.name}: ${u.why}`).join('\n') },
              `used by ${n.used_by.map((u) => u.name).join(', ')}`)
            : null),
        h('td', null, badge(n.state, { testid: 'network-state' })),
        h('td', { class: 'nowrap' }, n.region || '—'),
        h('td', null, h('span', { class: 'id' }, n.cidr || '—')),
        h('td', null, (n.availability_zones || []).length
          ? h('div', { class: 'chips nowrap' }, n.availability_zones.map((z) => h('span', { class: 'chip' }, z)))
          : h('span', { class: 'faint' }, '—')),
        h('td', { class: 'nowrap', title: `${pub} public, ${priv} private\n` + subnets.map((s) => `${s.id} ${s.cidr} ${s.availability_zone} ${s.role}`).join('\n') },
          `${subnets.length}`, subnets.length ? h('span', { class: 'faint' }, ` (${pub}/${priv})`) : null),
        h('td', { class: 'actions' }, deleteButton(n))));
    }
  }

  /** Delete through the one confirmation (confirm.js): its dry run names the clusters and
   * interfaces in the network, which must go first (a network cannot be forced). */
  function deleteButton(n) {
    const btn = guard(h('button', { type: 'button', class: 'btn btn-sm btn-danger', testid: `network-delete-${n.name}` }, 'Delete'));
    btn.addEventListener('click', () => {
      if (!canMutate()) return;
      confirmDestroy({
        kind: 'network', name: n.name, url: `/api/v1/networks/${encodeURIComponent(n.name)}`, action: 'network-delete', signal: ctx.signal,
        about: h('p', null, 'Deletes the VPC ', h('span', { class: 'id' }, n.vpc_id || n.name), ', its subnets, gateways and route tables (what hypd made for it).'),
      }).then((reply) => { if (reply) goToOperation(reply); });
    });
    return btn;
  }

  // ---------- zones ----------

  async function loadZones() {
    const req = ++state.zonesReq;
    const previously = new Set(selectedZones());
    clear(zonesBox).appendChild(h('span', { class: 'faint' }, spinner(), ' loading zones…'));
    const q = new URLSearchParams();
    if (regionIn.value) q.set('region', regionIn.value);
    try {
      const data = await api(`/api/v1/discovery/availability-zones?${q}`, { signal: ctx.signal });
      if (req !== state.zonesReq) return;
      const zones = (data && data.items) || [];
      clear(zonesBox);
      if (!zones.length) {
        zonesBox.appendChild(h('span', { class: 'faint' }, 'No zones reported for this region.'));
        return;
      }
      for (const z of zones) {
        const unavailable = z.state && z.state !== 'available';
        zonesBox.appendChild(h('label', { class: 'zone', title: z.zone_id ? `${z.name} — ${z.zone_id}` : z.name },
          h('input', {
            type: 'checkbox', name: 'availability_zones', value: z.name, testid: `zone-${z.name}`,
            checked: previously.has(z.name), disabled: unavailable,
          }),
          z.name, z.zone_id ? h('span', { class: 'zid' }, z.zone_id) : null));
      }
    } catch (e) {
      if (isAbort(e) || req !== state.zonesReq) return;
      fill(zonesBox,
        h('span', { class: 'faint', testid: 'zones-error' }, `Could not load zones: ${e.message} `),
        h('button', { type: 'button', class: 'btn btn-sm', testid: 'zones-retry', onclick: () => loadZones() }, 'Retry'));
    }
  }

  function selectedZones() {
    return [...zonesBox.querySelectorAll('input[type=checkbox]:checked')].map((i) => i.value);
  }

  // ---------- submit ----------

  // One Idempotency-Key per submission: a double click or a retry of the same body reuses it.
  let pending = null; // {key, body: json}
  let submitting = false;

  function clientValidate() {
    return fields.show({ name: validateName(nameIn.value.trim()), cidr: validateCidr(cidrIn.value.trim()) });
  }

  let touched = false;
  nameIn.addEventListener('input', () => { if (touched) fields.setError('name', validateName(nameIn.value.trim())); });
  nameIn.addEventListener('blur', () => { if (nameIn.value) { touched = true; fields.setError('name', validateName(nameIn.value.trim())); } });
  cidrIn.addEventListener('input', () => { if (touched) fields.setError('cidr', validateCidr(cidrIn.value.trim())); });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!canMutate() || submitting) return; // a second click while in flight is the same submission
    touched = true;
    fields.clear(formErr);
    if (!clientValidate()) return;
    const body = { name: nameIn.value.trim(), cidr: cidrIn.value.trim() || rules.defaultCidr };
    if (regionIn.value) body.region = regionIn.value;
    const zones = selectedZones();
    if (zones.length) body.availability_zones = zones;
    const json = JSON.stringify(body);
    if (!pending || pending.body !== json) pending = { key: uuid4(), body: json };

    submitting = true;
    submitBtn.disabled = true;
    submitBtn.replaceChildren(spinner(), 'Creating…');
    try {
      const reply = await api('/api/v1/networks', {
        method: 'POST', body, headers: { 'Idempotency-Key': pending.key }, signal: ctx.signal,
      });
      pending = null;
      goToOperation(reply);
    } catch (err) {
      if (isAbort(err)) return;
      showSubmitError(err);
    } finally {
      submitting = false;
      submitBtn.disabled = false;
      submitBtn.replaceChildren('Create network');
    }
  });

  /** A refusal on its fields, said once; anything else also as a toast. */
  function showSubmitError(err) {
    fields.showRefusal(err, formErr);
    if (err.status !== 422) toastError(err);
  }

  function goToOperation(reply) {
    const op = reply && reply.operation;
    if (op && op.id) {
      location.hash = `#/operations/${encodeURIComponent(op.id)}`;
    } else {
      // 200 {"changed": false}: nothing to follow
      load();
    }
  }

  regionIn.addEventListener('change', () => loadZones());
  refreshBtn.addEventListener('click', () => load());
  const debouncedLoad = debounce(load, 200);

  load();
  loadZones();
  const timer = setInterval(() => { if (!document.hidden) debouncedLoad(); }, REFRESH_MS);
  return () => { clearInterval(timer); debouncedLoad.cancel(); };
}
