// An endpoint row's actions on #/clusters/<name>/endpoints: send one test completion (the
// API fixes the Service, port, path and method; only the prompt, a token bound and a
// pool's model come from here) and delete the endpoint (every object made for it; a pool
// whose workers serve models is refused, 409 in_use, until the user types its name to force).

import { mutator } from '../api.js';
import { h, fill } from '../ui.js';
import { openModal } from '../modal.js';
import { rules } from '../rules.js';
import { confirmDestroy } from '../confirm.js';

function path(cluster, name, tail = '') {
  return `/api/v1/clusters/${encodeURIComponent(cluster)}/endpoints/${encodeURIComponent(name)}${tail}`;
}

/** The invoke dialog: the answer stays shown under the form, so several prompts can follow. */
export function openInvoke(cluster, ep, signal) {
  const limits = rules.endpoints;
  const send = mutator();
  const prompt = h('textarea', { id: 'invoke-prompt', testid: 'invoke-prompt', rows: 3, maxlength: limits.promptMax, placeholder: 'Say hello' });
  const tokens = h('input', { type: 'number', id: 'invoke-max-tokens', testid: 'invoke-max-tokens', class: 'mono',
    min: limits.maxTokens.min, max: limits.maxTokens.max, step: 1, value: String(limits.maxTokens.default) });
  const models = ep.service === 'pool'
    ? h('select', { id: 'invoke-model', testid: 'invoke-model' }, (ep.pool_models || []).map((m) => h('option', { value: m }, m)))
    : null;
  const result = h('div', { class: 'invoke-result', testid: 'invoke-result', 'aria-live': 'polite' });
  const content = h('div', null,
    h('div', { class: 'field' }, h('label', { for: 'invoke-prompt' }, 'Prompt'), prompt),
    h('div', { class: 'field' }, h('label', { for: 'invoke-max-tokens' }, 'Most tokens'), tokens),
    models ? h('div', { class: 'field' }, h('label', { for: 'invoke-model' }, 'Model (which binding Service)'), models) : null,
    h('div', { class: 'hint' }, 'One OpenAI-compatible completion, sent to this endpoint\'s own Service only.'),
    result);
  openModal({
    testid: 'invoke', title: `Test ${ep.name}`, content, confirmText: 'Send', wide: true, signal,
    fields: { prompt, max_tokens: tokens, ...(models ? { model: models } : {}) }, // the API's refusal of a field lands on it
    onSubmit: async () => {
      const body = { prompt: prompt.value, max_tokens: Number(tokens.value) };
      if (models) body.model = models.value;
      const reply = await send(path(cluster, ep.name, '/invoke'), { body, signal });
      const answer = reply.response || {};
      const text = typeof answer === 'string' ? answer
        : ((answer.choices || [])[0] || {}).text ?? JSON.stringify(answer);
      fill(result,
        h('div', { class: 'sub-id', testid: 'invoke-service' }, `${reply.service} · HTTP ${reply.status} · ${reply.elapsed_ms} ms`),
        h('pre', { class: 'json', testid: 'invoke-text' }, text));
    },
  });
}

/** The delete confirmation (confirm.js); `onSent(reply)` runs once the API accepted it. */
export function openDelete(cluster, ep, signal, onSent) {
  confirmDestroy({
    kind: 'endpoint', name: ep.name, url: path(cluster, ep.name), action: 'endpoint-delete', signal,
    about: h('p', null, 'Removes the endpoint\'s servers, Services and load balancer (for a managed endpoint, its InferenceEndpointConfig). The model stays in the bucket.'),
  }).then((reply) => { if (reply) onSent(reply); });
}
