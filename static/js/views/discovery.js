// #/discovery — region → availability zone → accelerator instance types offered there.

import { api, isAbort } from '../api.js';
import { h, clear, badge, toastError, regionSelect, setSelectValue, replaceQuery, spinner } from '../ui.js';

export function mount(root, ctx) {
  const state = {
    region: ctx.query.get('region') || '',
    az: ctx.query.get('az') || '',
    accelOnly: ctx.query.get('all') !== '1',
    search: '',
    items: [],
    zonesReq: 0,
    typesReq: 0,
  };

  const regionSel = regionSelect({ testid: 'region-select', 'aria-label': 'Region' }, state.region);
  const azSel = h('select', { testid: 'az-select', 'aria-label': 'Availability zone', disabled: true },
    h('option', { value: '' }, 'Loading zones…'));
  const accelBox = h('input', { type: 'checkbox', testid: 'accel-only', checked: state.accelOnly });
  const search = h('input', { type: 'search', class: 'mono', placeholder: 'filter, e.g. p5 or H100', testid: 'itype-search', size: 18 });
  const regionNote = h('span', { class: 'sub', testid: 'discovery-region' });
  const countNote = h('span', { class: 'sub', testid: 'itype-count' });
  const tbody = h('tbody', { testid: 'instance-types-body' });

  root.append(
    h('div', { class: 'page-head' },
      h('h1', null, 'Discovery'),
      h('span', { class: 'sub' }, 'Which accelerators each availability zone offers for HyperPod.'),
      h('span', { class: 'spacer' })),
    h('div', { class: 'card' },
      h('div', { class: 'card-head inline' },
        h('label', null, 'Region'), regionSel,
        h('label', null, 'Zone'), azSel,
        regionNote,
        h('span', { class: 'spacer' }),
        search,
        h('label', { class: 'check' }, accelBox, 'Accelerated only'),
        countNote),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'data', testid: 'instance-types-table' },
          h('thead', null, h('tr', null,
            h('th', null, 'Instance type'), h('th', null, 'Accelerator'), h('th', null, 'Model'),
            h('th', { class: 'num' }, 'Count'), h('th', { class: 'num' }, 'Accel. memory'),
            h('th', { class: 'num' }, 'vCPUs'), h('th', { class: 'num' }, 'Memory'),
            h('th', null, 'EFA'))),
          tbody))));

  const sync = () => replaceQuery('/discovery', { region: state.region, az: state.az, all: state.accelOnly ? '' : '1' });
  const placeholder = (content) => clear(tbody).appendChild(h('tr', null, h('td', { colspan: 8 }, content)));

  async function loadZones() {
    const req = ++state.zonesReq;
    azSel.disabled = true;
    clear(azSel).appendChild(h('option', { value: '' }, 'Loading zones…'));
    placeholder(h('div', { class: 'loading' }, spinner(), 'Loading availability zones…'));
    const q = new URLSearchParams();
    if (state.region) q.set('region', state.region);
    try {
      const data = await api(`/api/v1/discovery/availability-zones?${q}`, { signal: ctx.signal });
      if (req !== state.zonesReq) return;
      const zones = (data && data.items) || [];
      if (data && data.region) {
        regionNote.textContent = state.region ? '' : `(${data.region})`;
      }
      clear(azSel);
      if (!zones.length) {
        azSel.appendChild(h('option', { value: '' }, 'No zones'));
        placeholder(h('div', { class: 'empty' }, 'This region reports no availability zones.'));
        return;
      }
      for (const z of zones) {
        const label = `${z.name}${z.zone_id ? ` (${z.zone_id})` : ''}${z.state && z.state !== 'available' ? ` · ${z.state}` : ''}`;
        azSel.appendChild(h('option', { value: z.name, disabled: z.state && z.state !== 'available' }, label));
      }
      const avail = zones.filter((z) => !z.state || z.state === 'available');
      const pick = zones.some((z) => z.name === state.az) ? state.az : (avail[0] || zones[0]).name;
      azSel.value = pick;
      azSel.disabled = false;
      state.az = pick;
      sync();
      loadTypes();
    } catch (e) {
      if (isAbort(e) || req !== state.zonesReq) return;
      clear(azSel).appendChild(h('option', { value: '' }, '—'));
      placeholder(h('div', { class: 'empty' }, e.message));
      toastError(e);
    }
  }

  async function loadTypes() {
    const req = ++state.typesReq;
    if (!state.az) return;
    placeholder(h('div', { class: 'loading' }, spinner(), `Loading instance types in ${state.az}…`));
    countNote.textContent = '';
    const q = new URLSearchParams({ availability_zone: state.az });
    if (state.region) q.set('region', state.region);
    try {
      const data = await api(`/api/v1/discovery/instance-types?${q}`, { signal: ctx.signal });
      if (req !== state.typesReq) return;
      state.items = (data && data.items) || [];
      renderTypes();
    } catch (e) {
      if (isAbort(e) || req !== state.typesReq) return;
      placeholder(h('div', { class: 'empty' }, e.message));
      toastError(e);
    }
  }

  function renderTypes() {
    const needle = state.search.toLowerCase();
    let rows = state.items.slice();
    if (state.accelOnly) rows = rows.filter((t) => t.accelerator);
    if (needle) {
      rows = rows.filter((t) => [t.name, t.ec2_name, t.accelerator, t.accelerator_name]
        .some((v) => v && String(v).toLowerCase().includes(needle)));
    }
    rows.sort((a, b) => (b.accelerator_count || 0) - (a.accelerator_count || 0)
      || (b.accelerator_memory_gib || 0) - (a.accelerator_memory_gib || 0)
      || String(a.name).localeCompare(String(b.name)));
    countNote.textContent = `${rows.length} of ${state.items.length} types`;
    clear(tbody);
    if (!rows.length) {
      placeholder(h('div', { class: 'empty', testid: 'instance-types-empty' },
        state.items.length ? 'No instance type matches.' : `No HyperPod instance types offered in ${state.az}.`));
      return;
    }
    for (const t of rows) {
      tbody.appendChild(h('tr', { testid: `itype-row-${t.name}`, dataset: { name: t.name } },
        h('td', null, h('span', { class: 'id', title: t.ec2_name ? `EC2: ${t.ec2_name}` : '' }, t.name)),
        h('td', null, t.accelerator ? badge(t.accelerator, { class: 'plain' }) : h('span', { class: 'faint' }, 'none')),
        h('td', null, t.accelerator_name || h('span', { class: 'faint' }, '—')),
        h('td', { class: 'num', testid: 'itype-gpus' }, t.accelerator_count ?? '—'),
        h('td', { class: 'num' }, t.accelerator_memory_gib != null ? `${fmt(t.accelerator_memory_gib)} GiB` : '—'),
        h('td', { class: 'num' }, t.vcpus ?? '—'),
        h('td', { class: 'num' }, t.memory_gib != null ? `${fmt(t.memory_gib)} GiB` : '—'),
        h('td', { testid: 'itype-efa' }, t.efa_supported
          ? badge(`EFA${t.max_efa_interfaces ? ` ×${t.max_efa_interfaces}` : ''}`, { class: 'plain tone-green' })
          : h('span', { class: 'faint' }, 'no'))));
    }
  }

  regionSel.addEventListener('change', () => {
    state.region = regionSel.value;
    state.az = '';
    sync();
    loadZones();
  });
  azSel.addEventListener('change', () => { state.az = azSel.value; sync(); loadTypes(); });
  accelBox.addEventListener('change', () => { state.accelOnly = accelBox.checked; sync(); renderTypes(); });
  search.addEventListener('input', () => { state.search = search.value.trim(); renderTypes(); });

  setSelectValue(regionSel, state.region);
  loadZones();
  return null;
}

function fmt(n) {
  const x = Number(n);
  if (Number.isNaN(x)) return String(n);
  return Number.isInteger(x) ? x.toLocaleString() : x.toLocaleString(undefined, { maximumFractionDigits: 1 });
}
