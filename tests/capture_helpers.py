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
                       timeout=120, env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"})
    return r.stdout.decode("utf-8")
