"""Read models: what the GET routes (and the checks of mutations) know about a resource,
assembled from AWS, Kubernetes and the operation store, so a route parses, calls one of
these and returns — it never assembles a reply itself."""
