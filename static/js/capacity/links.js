// Links of a cluster's capacity pages (a cluster named "new" works too: these routes have a
// segment after the name).

export function capacityHref(cluster) {
  return `#/clusters/${encodeURIComponent(cluster)}/capacity`;
}

export function addGroupHref(cluster) {
  return `${capacityHref(cluster)}/add-group`;
}
