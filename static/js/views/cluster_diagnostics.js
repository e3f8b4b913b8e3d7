// The cluster page's Diagnostics section: GET /clusters/<c>/diagnostics/<kind> on request
// (creation, node health, NCCL), read-only and open to viewers. It shows each finding with
// the evidence it cites, and the suggested commands in their order (investigate → reboot →
// replace → retry) as text to copy — the page runs none of them; node actions are on the
// capacity page, after the user has read.

import { api, isAbort } from '../api.js';
import { h, fill, badge, loading, absTime } from '../ui.js';
import { capacityHref } from '../capacity/links.js';

const KINDS = [
  ['creation', 'Failed creation', 'Failed stages with their step and AWS\'s message, HyperPod\'s failure, nodes in Failure.'],
  ['node-health', 'Node health', 'Nodes in Failure, marked for reboot or replacement by HyperPod\'s health label, or not Ready.'],
  ['nccl', 'NCCL / EFA / GPU', 'Pods\' last log lines, warning events and states: NCCL timeouts, EFA and Xid errors, out of memory.'],
];
const STEP_TEXT = { investigate: '1 · investigate', reboot: '2 · reboot', replace: '3 · replace', retry: 'retry', delete: 'or delete' };

export function mountDiagnostics(box, ctx, name) {
  const base = `/api/v1/clusters/${encodeURIComponent(name)}/diagnostics/`;
  const result = h('div', { class: 'diag-result', testid: 'diagnostics-result' },
    h('div', { class: 'faint' }, 'Read-only: pick what to diagnose. Nothing is changed or run.'));
  const buttons = KINDS.map(([kind, label, title]) => h('button', {
    type: 'button', class: 'btn btn-sm', title, testid: `diagnose-${kind}`, onclick: () => run(kind, label),
  }, label));
  // NCCL's scope: one training job's pods, or one namespace's (empty: every workload)
  const job = h('input', { type: 'search', class: 'mono', placeholder: 'job', size: 14,
    title: 'NCCL: only this training job\'s pods', 'aria-label': 'NCCL job', testid: 'diagnose-nccl-job' });
  const namespace = h('input', { type: 'search', class: 'mono', placeholder: 'namespace', size: 14,
    title: 'NCCL: only this namespace', 'aria-label': 'NCCL namespace', testid: 'diagnose-nccl-namespace' });
  fill(box, h('div', { class: 'card-body' },
    h('div', { class: 'diag-kinds' }, buttons, h('span', { class: 'diag-scope faint' }, 'NCCL only for: ', job, ' ', namespace)),
    result));

  function scope(kind) {
    if (kind !== 'nccl') return '';
    const query = new URLSearchParams();
    if (job.value.trim()) query.set('job', job.value.trim());
    if (namespace.value.trim()) query.set('namespace', namespace.value.trim());
    const text = query.toString();
    return text ? `?${text}` : '';
  }

  async function run(kind, label) {
    for (const b of buttons) b.disabled = true;
    fill(result, loading(`Diagnosing ${label.toLowerCase()}…`));
    try {
      const d = await api(base + kind + scope(kind), { signal: ctx.signal });
      render(d, label);
    } catch (e) {
      if (isAbort(e)) return;
      fill(result, h('div', { class: 'faint', testid: 'diagnostics-error' }, e.message));
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  function render(d, label) {
    const unread = d.sources.filter((s) => !s.read);
    fill(result,
      h('div', { class: 'diag-head' },
        h('b', null, label), ' ', badge(d.healthy ? 'healthy' : 'error', { testid: 'diagnostics-verdict' }),
        h('span', { class: 'sub' }, ` as of ${absTime(d.as_of)}`)),
      h('p', { testid: 'diagnostics-summary' }, d.summary),
      unread.length ? h('ul', { class: 'faint', testid: 'diagnostics-unread' },
        unread.map((s) => h('li', null, `Not read: ${s.source} — ${s.note}`))) : null,
      d.findings.length ? h('ol', { class: 'diag-findings', testid: 'diagnostics-findings' }, d.findings.map(finding)) : null,
      d.suggestions.length ? h('div', null,
        h('h3', null, 'Suggested next commands'),
        h('p', { class: 'sub' }, 'Suggestions only: hypd runs none of them. Read first; change a node only when you agree — ',
          h('a', { href: capacityHref(name), testid: 'diagnostics-capacity-link' }, 'node actions →')),
        h('ol', { class: 'diag-suggestions', testid: 'diagnostics-suggestions' }, d.suggestions.map(suggestion))) : null);
  }

  function finding(f) {
    return h('li', { class: 'diag-finding', testid: 'diagnostics-finding', dataset: { code: f.code, node: f.node_id, severity: f.severity } },
      h('div', null, badge(f.severity), ' ', h('b', null, f.title)),
      h('div', { class: 'sub' }, f.message),
      h('ul', { class: 'diag-evidence' }, f.evidence.map((e) => h('li', { testid: 'diagnostics-evidence', dataset: { source: e.source } },
        h('span', { class: 'faint' }, `${e.source} · ${e.ref}${e.at ? ` · ${absTime(e.at)}` : ''}`), ' ',
        h('code', null, e.text)))));
  }

  // A suggestion is a REST call (an agent's MCP server names the tool for the same route).
  function suggestion(s) {
    return h('li', { class: 'diag-suggestion', testid: 'diagnostics-suggestion', dataset: { step: s.step, route: s.rest.route, mutating: String(s.mutating) } },
      h('div', null, h('span', { class: 'badge tone-gray' }, STEP_TEXT[s.step] || s.step), ' ', h('b', null, s.title)),
      h('div', { class: 'sub' }, s.why),
      h('div', null, h('code', { testid: 'diagnostics-call' }, `${s.rest.method} ${s.rest.path}${s.rest.body ? ` ${JSON.stringify(s.rest.body)}` : ''}`)),
      s.kubectl ? h('div', null, h('code', { testid: 'diagnostics-kubectl' }, s.kubectl.join(' '))) : null);
  }
}
