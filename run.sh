#!/usr/bin/env bash
# GraphScope quick start.
#   ./run.sh [FILE.py | --scenario ID | ...]   set up .venv on first use, launch the app
#   ./run.sh test [PYTEST ARGS]                 set up the same way, run the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
stamp=.venv/.graphscope-installed

qt_libs_missing() {
    # Qt's window (xcb) and offscreen platform plugins need system libraries that
    # minimal Debian images lack: ldd names the linked ones that are missing, and
    # libxcb-cursor (loaded at run time since Qt 6.5) is looked up by name.
    local qt out
    qt=$(echo .venv/lib/python*/site-packages/PySide6/Qt)
    out=$(ldd "$qt"/plugins/platforms/libqxcb.so "$qt"/plugins/platforms/libqoffscreen.so \
        "$qt"/lib/libQt6XcbQpa.so.6 2>/dev/null || true)
    [[ "$out" == *"not found"* ]] && return 0
    command -v ldconfig >/dev/null 2>&1 || return 1
    ! ldconfig -p | grep -F libxcb-cursor.so.0 >/dev/null
}

if [ ! -x .venv/bin/python ] || [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
    echo "Setting up .venv (first run only)..." >&2
    "$PYTHON" -m venv .venv
    .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[test]"
    touch "$stamp"
fi
if qt_libs_missing; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "Installing the system libraries Qt needs..." >&2
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            libegl1 libgl1 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0 \
            libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 \
            libxcb-shape0 libxcb-xkb1 libxcb-randr0 libxcb-xinerama0 >/dev/null) \
            || echo "warning: could not install Qt's system libraries" >&2
    else
        echo "warning: Qt needs system libraries that are missing here (install them with your" >&2
        echo "package manager: libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libegl1 ...):" >&2
        ldd .venv/lib/python*/site-packages/PySide6/Qt/plugins/platforms/libq{xcb,offscreen}.so 2>/dev/null \
            | grep "not found" >&2 || true
    fi
fi

if [ "${1:-}" = test ]; then
    shift
    export QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen}
    exec .venv/bin/python -m pytest "$@"
fi
exec .venv/bin/graphscope "$@"
