"""GraphScope's own frames, told apart from the snippet's, and taken out of its tracebacks.

NOTE [our frames in tracebacks]: an error raised by a torch call passes through
the recorder's frames (``__torch_function__``, ``_call``, the trampoline that
looks like the snippet's line), and a snippet that catches it and prints it
(``traceback.print_exc()``, ``logging.exception``) showed them: a GraphScope
traceback in front of a student. The recorder hands such an error on with
``without_our_frames``; so do the worker's end of a run (an ``atexit``
function that raised) and a snippet's ``sys.excepthook`` that failed. The
entries of torch's own Python functions stay, as python shows them. What
cannot be taken out: a torch function written in Python (``Tensor.backward``)
hands itself to the mode through ``handle_torch_function``, and those two
entries join the traceback after the error has left the recorder, so such an
error shows two torch frames python does not.
"""
from __future__ import annotations

import os
import types

from graphscope.protocol import TRAMPOLINE   # (the trampoline's name: shared with the runner)

OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_ours(code) -> bool:
    """Whether ``code`` is GraphScope's: its package or the trampoline."""
    return code.co_filename.startswith(OWN_DIR) or code.co_name == TRAMPOLINE


def without_our_frames(tb):
    """A traceback of ``tb``'s entries less GraphScope's (new objects: ``tb`` is
    left as it is); None when nothing is left."""
    kept = []
    while tb is not None:
        if not is_ours(tb.tb_frame.f_code):
            kept.append(tb)
        tb = tb.tb_next
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def exc_key(e: BaseException) -> tuple:
    """NOTE [no frame kept]: what the recorder keeps to know an exception again. The
    exception itself holds its traceback, so its frames and their locals: a snippet
    that caught it and went on would have its objects freed later than under plain
    python (a ``__del__`` printing after the next line, not before). Nor does the
    recorder hold the last op's frame (a function's locals outlived its return
    until the next op; fidelity review): the module's frame is known by its code,
    and a function's may be a new call at a freed one's address, so it is taken
    as new at each op (``Recorder._record_op``). An exception's id is reused only
    once it is gone, so the recorder also keeps the failing call's line, and the
    error counts as that call's only if its traceback ends at that line (code
    review: a caught matmul error's id, reused by the snippet's own RuntimeError,
    marked the matmul as the error; the message cannot serve, as a snippet may
    rewrite ``e.args`` and raise it again)."""
    return (id(e), type(e))
