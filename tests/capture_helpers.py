"""Shared helpers for the capture tests: run a snippet in-process, get a Trace."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from graphscope import protocol as P
from graphscope.capture.session import run_snippet
from graphscope.model.trace import Trace


def capture(source: str, **run_fields) -> Trace:
    source = textwrap.dedent(source)
    msgs: list = []
    end = run_snippet(P.Run(source=source, **run_fields), msgs.append)
    tr = Trace(source=source)
    tr.extend(msgs)
    tr.apply(end)
    tr.messages = msgs
    return tr


def plain_stdout(source: str) -> str:
    """What ``python -c`` prints for the snippet, as text."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(source)], capture_output=True,
                       stdin=subprocess.DEVNULL,
                       timeout=120, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"})
    return r.stdout.decode("utf-8")


def plain_run(source: str, filename: str = "snippet.py") -> tuple[str, str]:
    """(stdout, stderr) of ``python FILENAME`` run in a fresh temporary folder, as a
    learner's terminal shows them (a warning names the file as ``FILENAME:line``)."""
    import os
    import tempfile
    source = textwrap.dedent(source)
    with tempfile.TemporaryDirectory(prefix="graphscope-test-") as d:
        with open(os.path.join(d, filename), "w", encoding="utf-8") as f:
            f.write(source)
        r = subprocess.run([sys.executable, filename], capture_output=True, timeout=120, cwd=d,
                           stdin=subprocess.DEVNULL, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"})
        # python makes a script's path absolute; the worker names it as given
        strip = lambda b: b.decode("utf-8").replace(d + os.sep, "")  # noqa: E731
        return strip(r.stdout), strip(r.stderr)


def worker_trace(source: str, filename: str = "snippet.py") -> Trace:
    """The snippet through a real worker process (``graphscope.trace``): warnings are
    printed there as a learner's terminal would, not caught by pytest."""
    import graphscope
    return graphscope.trace(textwrap.dedent(source), filename, timeout=120)


def alike_in_the_worker(source: str, filename: str = "snippet.py"):
    """``(out, err, trace)``: the snippet under plain python and through a worker,
    checked to end "ok" with the same stdout and stderr byte for byte."""
    out, err = plain_run(source, filename)
    tr = worker_trace(source, filename)
    assert tr.status == "ok", tr.error
    assert tr.stdout == out
    assert tr.stderr == err
    return out, err, tr
