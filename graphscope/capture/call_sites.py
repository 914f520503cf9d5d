"""Where a torch call comes from, and calling it from there.

Seen from the recorder, every call has frames of its own between the op and
the snippet: GraphScope's (the mode), torch's dispatch
(``handle_torch_function``) and, for a torch function written in Python, that
function's. ``locate_call`` walks them once per op to find the caller (the first
frame that is not GraphScope's), the snippet's innermost frame (the line of
the op) and whether a tracer runs the call (NOTE [static tracers] in
recorder.py). ``call_as_caller`` makes the real call from a frame with the
caller's file and line (NOTE [warning attribution]); ``patched_original``
and ``dispatched_original`` find the torch function a snippet's wrapper of a
Tensor method stands for (NOTE [patched methods]).
"""
from __future__ import annotations

import sys
import types

import torch

from graphscope.capture.tracebacks import TRAMPOLINE

Tensor = torch.Tensor

CAPTURE_DIR = __file__.rsplit("/", 1)[0] + "/"
_HANDLE_CODE = torch.overrides.handle_torch_function.__code__
# Both caches are keyed by id(code) and keep the code object in the value (so the
# id stays its own): hashing a code object hashes its bytecode and constants,
# about 0.5 us for a big function, and the hot path looks up three or four.
_trampolines: dict = {}     # (id(code), line) -> (code, trampoline)
_code_kinds: dict = {}      # id(code) -> (code, _CAPTURE | _DISPATCH | _OTHER), see locate_call
_CAPTURE, _DISPATCH, _OTHER = 0, 1, 2


def _opaque_codes() -> dict:
    """id(code) -> code of the tracers' entry points (NOTE [static tracers])."""
    import importlib
    import inspect

    codes = {}
    fns = []
    try:
        import torch.jit._trace as jt
        fns += [jt.trace, jt.trace_module, jt._check_trace]
    except Exception:
        pass
    try:
        import torch.fx._symbolic_trace as fxt
        fns += [fxt.Tracer.trace]
    except Exception:
        pass
    # torch.export and make_fx run the code on fake tensors with symbolic shapes: a
    # summary's read of one made "pending unbacked symbols" fail the export (fuzz
    # review). (Both are imported with torch; each looked up on its own, as the
    # private ones may go: code review.)
    for module, names in (("torch.export", ("export",)),
                          ("torch.fx.experimental.proxy_tensor",
                           ("dispatch_trace", "_MakefxTracer.trace"))):
        try:
            mod = importlib.import_module(module)
        except Exception:
            continue
        for name in names:
            obj = mod
            for part in name.split("."):
                obj = getattr(obj, part, None)
            if obj is not None:
                fns.append(obj)
    for fn in fns:
        code = getattr(inspect.unwrap(fn), "__code__", None)
        if code is not None:
            codes[id(code)] = code
    return codes


OPAQUE_CODES = _opaque_codes()

# Whether Dynamo is tracing the code that runs: compiled code passes through
# unrecorded, in the mode and in the module hooks (torch.compiler.is_compiling
# came in torch 2.3; pyproject allows 2.1: code review)
compiling = getattr(torch.compiler, "is_compiling", None) or (lambda: False)


def _code_kind(code) -> int:
    if code is _HANDLE_CODE:
        k = _DISPATCH
    elif code.co_filename.startswith(CAPTURE_DIR):
        k = _CAPTURE
    else:
        k = _OTHER
    if len(_code_kinds) > 10_000:
        _code_kinds.clear()
    _code_kinds[id(code)] = (code, k)
    return k


def locate_call(f, filename):
    """(caller frame, innermost snippet frame, opaque) seen from frame ``f`` outwards.

    The caller is the first frame outside graphscope.capture (the torch
    Python function that dispatched to the mode when the call went through
    ``handle_torch_function``); the snippet frame the first whose file is the
    snippet's. One walk serves both (NOTE [warning attribution], line numbers).
    ``opaque``: a tracer's frame lies between the two (NOTE [static tracers]).
    """
    kinds = _code_kinds
    skipped_dispatch = False
    while f is not None:
        code = f.f_code
        e = kinds.get(id(code))
        k = e[1] if e is not None and e[0] is code else _code_kind(code)
        if k == _OTHER:
            break
        if k == _DISPATCH:
            skipped_dispatch = True
        f = f.f_back
    if f is None:
        return None, None, False
    s, opaque = snippet_frame_of(f, filename) if filename is not None else (None, False)
    if skipped_dispatch and f.f_back is not None:
        f = f.f_back   # the torch Python function that dispatched to the mode
    return f, s, opaque


def snippet_frame_of(f, filename):
    """(the first frame from ``f`` outwards whose file is the snippet's, or None;
    whether a tracer's frame lies on the way: NOTE [static tracers] in recorder.py)."""
    opaque = False
    while f is not None:
        code = f.f_code
        if code.co_filename == filename:
            break
        if id(code) in OPAQUE_CODES:
            opaque = True
        f = f.f_back
    return f, opaque


def call_as_caller(func, args, kwargs):
    """Call ``func`` from a frame that looks like the snippet's own call site.

    NOTE [warning attribution]: a warning raised by a C++ op (``TORCH_WARN``)
    or with ``stacklevel`` is attributed to the Python frame that called the
    op. Under the mode that frame would be the recorder's, so the console would
    say ``recorder.py:300: UserWarning`` and the warning filters would match
    ``graphscope.*`` instead of ``__main__``. So the real call is made from a
    tiny function compiled with the caller's file name and line and run with
    the caller's globals: location, module and once-per-location registry are
    those of plain Python.
    """
    f = locate_call(sys._getframe(1), None)[0]
    if f is None:
        return func(*args, **kwargs)
    return call_from(f, func, args, kwargs)


def call_from(f, func, args, kwargs):
    """``func(*args, **kwargs)`` through the trampoline of caller frame ``f``."""
    code = f.f_code
    key = (id(code), f.f_lineno)
    e = _trampolines.get(key)
    if e is None or e[0] is not code or e[1].__globals__ is not f.f_globals:
        tramp = _trampoline(f, key)
    else:
        tramp = e[1]
    return tramp(func, args, kwargs)


def _trampoline(f, key):
    code = f.f_code
    line = f.f_lineno or 1
    src = "\n" * (line - 1) + (f"def {TRAMPOLINE}(func, args, kwargs): "
                               "return func(*args, **kwargs)\n")
    ns: dict = {}
    exec(compile(src, code.co_filename, "exec"), ns)
    tramp = types.FunctionType(ns[TRAMPOLINE].__code__, f.f_globals, TRAMPOLINE)
    if len(_trampolines) > 10_000:
        _trampolines.clear()
    _trampolines[key] = (code, tramp)
    return tramp


def patched_original(func, caller):
    """NOTE [patched methods]: a snippet that wraps a Tensor method
    (``torch.Tensor.sum = counting_sum``, which calls the saved C method) is
    dispatched to the mode with ``func`` = the wrapper (the mode is handed
    whatever ``Tensor.sum`` is now), from inside the wrapper: calling ``func``
    ran the wrapper a second time (``calls: 2``). The C method the wrapper
    called is then called instead. Not for torch's own Python functions
    (``Tensor.backward``), which hand themselves to the mode and must run
    again (a snippet's wrapper of one of those: ``dispatched_original``). None
    when ``func`` is not such a wrapper."""
    if caller.f_code.co_filename.startswith(_TORCH_DIR):
        return None
    for name, value in vars(Tensor).items():
        if value is func:
            real = getattr(torch._C.TensorBase, name, None)
            return real if real is not None and real is not func else None
    return None


_TORCH_DIR = torch.__file__.rsplit("/", 1)[0] + "/"
_FunctionType = types.FunctionType
_originals: dict = {}   # id(code) -> (code, the torch function running it)


def dispatched_original(func, f):
    """NOTE [patched methods], for a torch function written in Python
    (``Tensor.backward``): the snippet's wrapper calls the saved original,
    which hands itself to the mode as whatever ``Tensor.backward`` is now,
    the wrapper; called again, it ran twice and the backward pass went
    unrecorded. The original is the function whose frame handed the call over
    (``f`` is ``handle_torch_function``'s); None when ``func`` is that function
    (the usual case) or is torch's own."""
    if f.f_code is not _HANDLE_CODE:
        return None
    g = f.f_back
    if g is None or g.f_code is func.__code__ or func.__code__.co_filename.startswith(
            _TORCH_DIR) or not g.f_code.co_filename.startswith(_TORCH_DIR):
        return None
    code = g.f_code
    e = _originals.get(id(code))
    if e is not None and e[0] is code:
        return e[1]
    # where the wrapper keeps the original it calls: its closure, then the names
    # of the frame that called it (the frozen objects of the run are out of
    # gc.get_referrers' reach, NOTE [gc during capture])
    w = g.f_back
    places = [c.cell_contents for c in (func.__closure__ or ()) if _filled(c)]
    if w is not None:
        places += list(w.f_locals.values()) + list(w.f_globals.values())
    fn = next((v for v in places if type(v) is _FunctionType and v.__code__ is code), None)
    if fn is None:
        import gc
        fn = next((r for r in gc.get_referrers(code)
                   if type(r) is _FunctionType and r.__code__ is code), None)
    if fn is not None:
        _originals[id(code)] = (code, fn)
    return fn


def _filled(cell) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def forget_call_sites() -> None:
    """Drop the trampolines: each runs with its caller's globals (NOTE [warning
    attribution]), which hold the namespace the end of a run frees."""
    _trampolines.clear()
