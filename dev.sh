#!/usr/bin/env bash
# The two set-up commands of the README, on a fresh Debian 12 machine (as root, or with sudo):
#   ./dev.sh run    installs what is missing, then runs hypd on the local sandbox (hypd up)
#   ./dev.sh test   installs what is missing (plus Chromium for the browser tests), runs the suite
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
if [ "$what" = test ]; then
  [ -x /usr/bin/chromium ] || packages+=(chromium)
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

if [ "$what" = run ]; then
  exec "$venv/bin/hypd" up "$@"
fi
# lint is part of the test command: a change that breaks it does not pass
"$venv/bin/ruff" check .
# distributed by test: the local AWS runs in a process of its own, so no test process holds
# the stack's moto state (docs/ARCHITECTURE.md, Sandbox control)
exec "$venv/bin/python" -m pytest -n 2 --dist load "$@"
