"""hypd's spaces router (`hypd spaces-router`): the origin at HYPD_SPACES_URL where people open
their Dev spaces' editors in a browser.

Why hypd routes spaces itself: a person reaches the cluster only through hypd, so the router
is what every space's access strategy points at (cloud/manifests/spaces-access-strategy.yaml).
A request for `/s/<cluster>/<namespace>/<name>/...` goes, with its whole path, to the space's
ready pod through the Kubernetes API's `pods/portforward` (a raw stream: nothing is rewritten,
and WebSockets pass), after the session cookie a one-use code opened is checked
(tasks/space_sessions.py). It needs no AWS permission beyond hypd's own: the cluster's RBAC
for pods `get`/`list` and `pods/portforward` `create`.

It runs in its own process, apart from the web processes, because an editor keeps several
WebSockets open for hours, each holding a thread here for as long: a web process's threads are
for short requests behind its gate (app/gate.py).
"""
