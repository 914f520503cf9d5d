"""The dependency rule (STYLE.md): capture imports torch never Qt; model imports
neither; ui imports Qt never torch. Checked on the source (imports anywhere in a
module, including inside functions) and by importing the layers in a clean
interpreter and looking at sys.modules."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "graphscope"

FORBIDDEN = {
    "capture": {"PySide6", "pyqtgraph", "shiboken6", "graphscope.ui", "graphscope.model"},
    "model": {"torch", "PySide6", "pyqtgraph", "shiboken6", "graphscope.ui", "graphscope.capture", "graphscope.runner"},
    "ui": {"torch", "graphscope.capture"},
    "protocol.py": {"torch", "PySide6", "pyqtgraph", "graphscope"},
    "snippet_source.py": {"torch", "PySide6", "pyqtgraph", "graphscope"},
    "runner.py": {"torch", "PySide6", "graphscope.ui", "graphscope.capture"},
    # imported first by `graphscope export` (NOTE [a worker before the imports])
    "worker_process.py": {"torch", "PySide6", "graphscope.ui", "graphscope.capture",
                          "graphscope.model", "graphscope.runner"},
    "scenarios.py": {"torch", "PySide6", "graphscope.ui"},
    # the window is opened (and svg/png drawn) through graphscope.ui, lazily
    "cli.py": {"torch", "graphscope.capture"},
    "export.py": {"torch", "graphscope.capture"},
    "quiet_gc.py": {"torch", "PySide6", "graphscope"},
}


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def _files(layer):
    p = PKG / layer
    return sorted(p.rglob("*.py")) if p.is_dir() else [p]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports(layer):
    bad = []
    for f in _files(layer):
        if not f.exists():
            continue
        for line, mod in _imports(f):
            for forbidden in FORBIDDEN[layer]:
                if mod == forbidden or mod.startswith(forbidden + "."):
                    bad.append(f"{f.relative_to(PKG.parent)}:{line}: imports {mod}")
    assert not bad, "layering broken:\n" + "\n".join(bad)


def test_window_side_never_loads_torch():
    code = (
        "import sys, pkgutil, importlib, graphscope\n"
        "import graphscope.model, graphscope.ui\n"
        "for pkg in (graphscope.model, graphscope.ui):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "import graphscope.runner, graphscope.protocol\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
