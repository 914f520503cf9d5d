#!/usr/bin/env bash
# GraphScope quick start.
#   ./run.sh [FILE.py | --scenario ID | ...]   set up .venv on first use, launch the app
#   ./run.sh test [PYTEST ARGS]                 set up the same way, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
stamp=.venv/.graphscope-installed

if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
    echo "Setting up .venv (first run only)..." >&2
    "$PYTHON" -m venv .venv
    # Qt needs a few system libraries that minimal Debian images lack.
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && ! ldconfig -p | grep -q libEGL.so.1; then
        (apt-get update -qq && apt-get install -y -qq libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3 >/dev/null) \
            || echo "warning: could not install Qt's system libraries" >&2
    fi
    .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test]"
    touch "$stamp"
fi

if [ "${1:-}" = test ]; then
    shift
    export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
    exec .venv/bin/python -m pytest "$@"
fi
if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
    echo "No display found: set DISPLAY, or QT_QPA_PLATFORM=offscreen with --screenshot OUT.png." >&2
fi
exec .venv/bin/graphscope "$@"
