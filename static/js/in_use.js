// What a destructive request would break, as the API names it — a 409 in_use's details or a
// dry run's plan (confirm.js, the one confirmation dialog, shows them) — and `force`, which a
// person adds only after reading them.

/** The details of a 409 in_use ApiError (null for any other error). */
export function inUse(err) {
  return err && err.status === 409 && err.code === 'in_use' && err.details
    && Array.isArray(err.details.dependents) ? err.details : null;
}

/** One dependent in words: its kind, namespace and name. */
export function dependentLabel(d) {
  const where = d.namespace ? `${d.namespace}/` : '';
  return `${String(d.kind).replace(/_/g, ' ')} ${where}${d.name}`;
}

/** `url` with `force=true` added when the user chose to force it. */
export function withForce(url, forced) {
  if (!forced) return url;
  return `${url}${url.includes('?') ? '&' : '?'}force=true`;
}
