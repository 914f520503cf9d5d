"""GraphScope's own frames, told apart from the snippet's, and taken out of its tracebacks.

NOTE [our frames in tracebacks]: an error raised by a torch call passes through
the recorder's frames (``__torch_function__``, ``_call``, the trampoline that
looks like the snippet's line), and a snippet that catches it and prints it
(``traceback.print_exc()``, ``logging.exception``) showed them: a GraphScope
traceback in front of a student. The recorder hands such an error on with
``without_our_frames``; so do the worker's end of a run (an ``atexit``
function that raised) and a snippet's ``sys.excepthook`` that failed. The
entries of torch's own Python functions stay, as python shows them. What
cannot be taken out there: a torch function written in Python
(``Tensor.backward``) hands itself to the mode through ``handle_torch_function``,
and those two entries join the traceback after the error has left the recorder,
so such an error, caught and printed by the snippet, shows two torch frames
python does not. An uncaught error's traceback is made at the end of the run,
whole, and loses them too (NOTE [the traceback python prints], below).
"""
from __future__ import annotations

import os
import traceback
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


# NOTE [the traceback python prints]: an uncaught error's traceback (the console's,
# the trace's ``error.traceback``) is every frame from the snippet's module on, as
# python prints it: the student's own helper module where the error was raised
# (the trace showed only ``import helper``, and lost the failing line: fidelity
# review), torch's Python functions, ``nn.Module.__call__``. Taken out: GraphScope's
# frames, and the two detours the recording makes in torch's own frames:
# - a torch function written in Python (``Tensor.backward``, ``F.cross_entropy``)
#   hands itself to the mode (``handle_torch_function``), which calls it again:
#   python shows that function once, at the line of its real work, the second call;
# - a module call takes ``Module._call_impl``'s hooked path while the recorder's
#   global module hooks are in place (``return inner()``, then ``inner``); python,
#   where the module has no hooks of its own, takes the fast path
#   (``return forward_call(*args, **kwargs)``), and the two entries become that one.
# Anything that does not look exactly so is left as it is. An error the snippet
# catches and prints itself (``traceback.print_exc()``) has its frames taken out
# earlier, as it leaves the recorder (``without_our_frames``), before the detours'
# outer entries join it: it keeps them.
def python_frames(tb, filename: str) -> list:
    """The ``traceback.FrameSummary`` entries python prints for ``tb`` of a snippet
    compiled as ``filename`` (NOTE [the traceback python prints]); [] if none of
    its frames is the snippet's."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    start = next((i for i, t in enumerate(entries)
                  if t.tb_frame.f_code.co_filename == filename
                  and t.tb_frame.f_code.co_name != TRAMPOLINE), None)
    if start is None:
        return []
    kept = []
    for t in entries[start:]:
        code = t.tb_frame.f_code
        if is_ours(code):
            continue
        # (the recorder took its own frames out as the error left it: the call's
        # two entries are next to each other by now, the dispatch between them; a
        # mode or subclass of the snippet's own would have its frame there too)
        if len(kept) >= 2 and _is_dispatch(kept[-1].tb_frame.f_code) \
                and kept[-2].tb_frame.f_code is code:
            del kept[-2:]
        kept.append(t)
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    frames = list(traceback.extract_tb(new))
    out, i = [], 0
    while i < len(frames):
        fast = _fast_path(frames, i, kept)
        if fast is not None:
            out.append(fast)
            i += 2
        else:
            out.append(frames[i])
            i += 1
    return out


def _is_dispatch(code) -> bool:
    return code.co_name == "handle_torch_function" and \
        code.co_filename.endswith(os.path.join("torch", "overrides.py"))


def _fast_path(frames: list, i: int, kept: list):
    """The entry python shows for ``Module._call_impl`` where ``frames[i:i + 2]``
    are its hooked path (``return inner()``, then ``inner``) taken only because of
    the recorder's global hooks; else None."""
    fs = frames[i]
    if fs.name != "_call_impl" or i + 1 >= len(frames) or frames[i + 1].name != "inner" \
            or frames[i + 1].filename != fs.filename \
            or not fs.filename.endswith(os.path.join("torch", "nn", "modules", "module.py")) \
            or (fs.line or "").strip() != "return inner()":
        return None
    try:
        from torch.nn.modules import module as m
        self = kept[i].tb_frame.f_locals.get("self")
        if self is None or self._backward_hooks or self._backward_pre_hooks \
                or self._forward_hooks or self._forward_pre_hooks \
                or any(_foreign(d) for d in (m._global_backward_pre_hooks,
                                             m._global_backward_hooks,
                                             m._global_forward_hooks,
                                             m._global_forward_pre_hooks)):
            return None   # python takes the hooked path too
        code = m.Module._call_impl.__code__
        if kept[i].tb_frame.f_code is not code:
            return None
        at = _fast_call_positions(code)
        if at is None:
            return None
        lineno, end_lineno, col, end_col = at
        return traceback.FrameSummary(fs.filename, lineno, fs.name, end_lineno=end_lineno,
                                      colno=col, end_colno=end_col)
    except Exception:
        return None


def _foreign(hooks) -> bool:
    """Whether the global module hooks ``hooks`` hold one that is not GraphScope's."""
    for h in list(hooks.values()):
        code = getattr(getattr(h, "__func__", h), "__code__", None)
        if code is None or not is_ours(code):
            return True
    return False


_fast_call_cache: dict = {}


def _fast_call_positions(code):
    """(line, end line, column, end column) of ``_call_impl``'s first
    ``return forward_call(*args, **kwargs)`` call: its fast path."""
    if code in _fast_call_cache:
        return _fast_call_cache[code]
    import dis
    import linecache
    found = None
    for ins in dis.get_instructions(code):
        pos = getattr(ins, "positions", None)
        if ins.opname in ("CALL_FUNCTION_EX", "CALL") and pos is not None and pos.lineno \
                and linecache.getline(code.co_filename, pos.lineno).strip() \
                == "return forward_call(*args, **kwargs)":
            found = (pos.lineno, pos.end_lineno, pos.col_offset, pos.end_col_offset)
            break
    _fast_call_cache[code] = found
    return found
