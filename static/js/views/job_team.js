// A form's team work (task governance): the team a job — or a Dev space (spaces.js) — runs
// for, its priority class and, for a job, from the team, its namespace. The teams and the
// scheduler config's classes come from
// one read of GET …/teams (a cluster without task governance answers 412: no team fields,
// the namespace stays the form's own). The signed-in token's team (whoami) is the default,
// and a member's token has its own team only. A team's job runs in the team's namespace (its
// read names it): shown, not editable, and not sent. Refusals land on the field they name
// (form_fields.js: `error-job-team`, `error-job-priority`, `error-job-namespace`; a space's
// `error-space-team`, `error-space-priority`: its ids and test ids are `space-…`).

import { api, isAbort, session } from '../api.js';
import { h, toastError } from '../ui.js';

const NONE = { teams: [], classes: [] };

/** The cluster's teams ({name, namespace}) and priority classes ({name, weight}); none when
 * it has no task governance (412) or the read failed (said in a toast). */
export async function readTeamWork(base, signal) {
  try {
    const data = await api(`${base}/teams`, { signal });
    return {
      teams: data.items.map((t) => ({ name: t.name, namespace: t.namespace })),
      classes: data.scheduler ? data.scheduler.priority_classes : [],
    };
  } catch (e) {
    if (isAbort(e)) throw e;
    if (e.status !== 412) toastError(e, 'The cluster\'s teams: ');
    return NONE;
  }
}

/** The Team, Priority and (for a job) Namespace fields, laid out by the form's `field(key,
 * label, input, hint)` → {el, body()}: `body()` is what the submit adds ({team, priority} or
 * {namespace}). `what` names the work: `job`, or `space` (no namespace field: a space outside
 * any team lives where every space does). */
export function teamWorkFields(field, work, what = 'job') {
  const own = session.user && session.user.team;
  const names = own ? [own] : work.teams.map((t) => t.name);
  const team = h('select', { id: `${what}-team`, testid: `${what}-team`, disabled: !!own },
    own ? null : h('option', { value: '' }, 'Choose the team'),
    names.map((n) => h('option', { value: n }, n)));
  const priority = h('select', { id: `${what}-priority`, testid: `${what}-priority` },
    h('option', { value: '' }, 'none'),
    work.classes.map((c) => h('option', { value: c.name }, `${c.name} (weight ${c.weight})`)));
  const namespace = h('input', { id: `${what}-namespace`, testid: `${what}-namespace`, class: 'mono', placeholder: 'default' });
  const hasTeams = work.teams.length > 0;
  const fields = {
    team: field('team', 'Team', team, own
      ? `Your token is a member of team ${own}: it makes ${what}s for its team only.`
      : `The team whose queue admits the ${what}, within its quota.`),
    priority: field('priority', 'Priority', priority, 'A priority class of the cluster\'s scheduler config: higher weights are admitted first.'),
    namespace: what === 'job' ? field('namespace', 'Namespace', namespace, hasTeams
      ? 'A team\'s job runs in the team\'s namespace, where its queue is.'
      : 'Made when missing.') : null,
  };
  fields.team.hidden = !hasTeams;
  fields.priority.hidden = !hasTeams || !work.classes.length;

  const chosen = () => (fields.team.hidden ? '' : team.value);
  const follow = () => {
    const found = work.teams.find((t) => t.name === chosen());
    namespace.readOnly = !!chosen();
    namespace.value = found ? found.namespace : '';
    namespace.placeholder = chosen() ? 'the team\'s' : 'default';
  };
  team.addEventListener('change', follow);
  follow();

  return {
    el: h('div', { class: 'grid-3', testid: `${what}-team-work` }, fields.team, fields.priority, fields.namespace),
    body() {
      if (chosen()) return { team: chosen(), ...(priority.value && !fields.priority.hidden ? { priority: priority.value } : {}) };
      return namespace.value.trim() ? { namespace: namespace.value.trim() } : {};
    },
  };
}
