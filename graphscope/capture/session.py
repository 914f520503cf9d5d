"""Run one snippet in this process under the recorder (docs/architecture.md).

``run_snippet(run, emit) -> End`` is the whole contract: every protocol message
goes to ``emit`` in the order it happens, the End is returned (not emitted),
and whatever happens every hook, mode, stream and patched global is restored
before it returns.
"""
from __future__ import annotations

import builtins
import dataclasses
import importlib.machinery
import io
import itertools
import linecache
import os
import sys
import time
import traceback
import types
import warnings
import weakref

import torch

from graphscope import protocol as P
from graphscope import quiet_gc
from graphscope.capture import regions as regions_mod
from graphscope.capture.backward import BackwardTracer
from graphscope.capture.deferred_stats import HeldEmit, StatsBatch
from graphscope.capture.modules import ModuleHooks
from graphscope.capture.names import NameTracker
from graphscope.capture.output import (CapturedStream, ClosedStdin, OutputLimit,
                                       closed_input, write_to_fds)
from graphscope.capture.node_owners import node_name
from graphscope.capture.process_exit import before_exit, free_module
from graphscope.capture.recorder import Recorder
from graphscope.capture.tensor_facts import no_subclass_dispatch
from graphscope.capture.tracebacks import exc_key, python_frames, without_our_frames
from graphscope.snippet_source import source_lines


_current = None   # the Recorder of the run going on, for on_fork_in_child


def run_snippet(run: P.Run, emit, on_idle=None, at_exit: bool = False, on_deep=None) -> P.End:
    """Run ``run.source`` as ``__main__`` under the recorder; see the module docstring.

    ``on_idle``: called with a function that another thread may call every few
    milliseconds to let held-back messages go (NOTE [deferred stats]), and with
    None when the run is over; the worker's flusher thread calls it.
    ``at_exit``: then do what ``python FILE`` does after the last line (wait
    for threads, ``atexit``, free the namespace: NOTE [the end of a run]); only
    in a process that ends with the run (the worker).
    ``on_deep``: called once the run has recorded ``recorder.DEEP_OPS`` ops (the
    worker raises its C stack limit then: NOTE [a deep graph's C stack])."""
    global _current
    t0 = time.perf_counter()
    seq = itertools.count()
    filename = run.filename or "<snippet>"
    try:
        code = compile(run.source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:  # also IndentationError / TabError
        return P.End("error", P.ErrorInfo(type(e).__name__, e.msg or str(e), e.lineno,
                                          e.offset, _format_syntax_error(e)),
                     None, time.perf_counter() - t0)
    except (ValueError, OverflowError) as e:  # e.g. null bytes in the source
        return P.End("error", P.ErrorInfo(type(e).__name__, str(e)), None,
                     time.perf_counter() - t0)

    for region in regions_mod.find_regions(run.source):
        emit(P.Region(region.kind, region.grad_enabled, region.start_line, region.end_line,
                      region.form, region.label))

    _register_source(filename, run.source)

    batch = StatsBatch()
    held = emit = HeldEmit(emit, batch)
    if on_idle is not None:
        on_idle(held.flush_if_idle)
    recorder = Recorder(run, emit, seq, batch)
    recorder.module_code = code
    recorder.on_deep = on_deep
    recorder.names = NameTracker(recorder.ids, emit)
    recorder.backward = BackwardTracer(recorder)
    hooks = ModuleHooks(recorder)
    limit = OutputLimit(run.max_output, emit)

    saved = (sys.stdout, sys.stderr, sys.stdin, sys.argv, sys.modules.get("__main__"),
             torch.is_grad_enabled(), torch.get_default_dtype(), builtins.input)
    saved_import = builtins.__import__
    saved_excepthook = sys.excepthook
    status, error, exit_code = "ok", None, None
    gc_state = quiet_gc.quiet()   # NOTE [gc during capture] in quiet_gc.py
    # made after the freeze: the end of the run frees the namespace through the
    # collector (NOTE [the end of a run] in process_exit.py)
    module = types.ModuleType("__main__")
    g = module.__dict__
    g["__file__"] = filename
    # the builtins module itself, as under python: ``builtins.X = ...`` is seen by
    # the snippet's own names; only ``input`` is ours for the run (no keyboard)
    g["__builtins__"] = builtins
    g["__cached__"] = None
    g["__annotations__"] = {}   # python's __main__ has it ({} until x: int = ... fills it)
    if os.path.isfile(filename):
        # what ``python FILE`` gives ``__main__`` (None for a snippet not saved)
        g["__loader__"] = importlib.machinery.SourceFileLoader("__main__", filename)
    try:
        _current = recorder
        sys.stdout = CapturedStream("stdout", emit, seq, limit)
        sys.stderr = CapturedStream("stderr", emit, seq, limit)
        sys.stderr.snippet_file = filename   # NOTE [anomaly stacks] in output.py
        sys.stdin = ClosedStdin()
        builtins.input = closed_input
        sys.argv = list(run.argv) if run.argv else [filename]
        sys.modules["__main__"] = module
        hooks.install()
        try:
            with recorder:
                exec(code, g)
        except SystemExit as e:
            status, exit_code = "exit", _exit_code(e)
        except BaseException as e:  # KeyboardInterrupt (interrupt) included
            status = "error"
            if recorder.failed is None or recorder.failed[0] != exc_key(e):
                try:   # a custom Function's forward raised: its apply is the op that failed
                    got = recorder.custom.record_failed(e)
                    if got is not None:
                        recorder.failed = (exc_key(e), *got, None)
                except Exception:
                    pass
            error = _error_info(e, filename, recorder)
            if sys.excepthook is not saved_excepthook and not isinstance(e, KeyboardInterrupt):
                error, left = _snippet_excepthook(e, filename, error)
                if left is not None:   # the hook called sys.exit: python leaves with it
                    status, exit_code, error = "exit", _exit_code(left), None
        finally:
            # a snippet that deleted (or replaced) ``builtins.__import__`` leaves
            # python's end of a run working, and so must leave ours: every import
            # below looks it up (review: "InternalError: KeyError: '__import__'")
            builtins.__import__ = saved_import
            hooks.remove()
            recorder.backward.remove_all()
            note = recorder.unrecorded_note()
            if note is not None:
                emit(note)
        try:
            with no_subclass_dispatch():   # NOTE [subclass reads]
                _finish(recorder, g)
        except Exception:
            pass  # final facts are best effort; the run's outcome stands
        if run.static and status != "error":
            # Static capture (issue 5) runs after the recorder has exited, on the
            # functions and modules the snippet left in its namespace.
            from graphscope.capture.static import run_static
            try:
                run_static(g, dict(run.static, filename=filename), emit)
            except Exception as e:  # one failing tool must not cost the eager trace
                emit(P.Output(next(seq), "stderr", f"GraphScope: static capture failed: {e}\n"))
        if at_exit:   # NOTE [the end of a run] in process_exit.py
            # everything held goes first (waiting for a flush the flusher thread may
            # be doing), then the Outcome straight to the writer, never held back:
            # what follows may end the process
            held.flush()
            held.emit_now(P.Outcome(status, error, exit_code, time.perf_counter() - t0))
            before_exit()
            recorder.let_go_of_frames()   # (they hold the namespace)
            module_ref = weakref.ref(module)
            if saved[4] is not None:
                sys.modules["__main__"] = saved[4]
            del module, g
            free_module(module_ref)
        _flush(sys.stdout)
        _flush(sys.stderr)
    finally:
        _current = None
        (sys.stdout, sys.stderr, sys.stdin, sys.argv, main, grad, dtype,
         builtins.input) = saved
        sys.excepthook = saved_excepthook
        if main is not None:
            sys.modules["__main__"] = main
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        quiet_gc.restore(gc_state)
        if on_idle is not None:
            on_idle(None)
        held.flush()
    return P.End(status, error, exit_code, time.perf_counter() - t0)


def on_fork_in_child() -> None:
    """In a process the snippet forked (``multiprocessing`` with fork, ``os.fork``)
    while a run goes on; the worker calls it (``os.register_at_fork``).

    NOTE [forked children]: the child inherits the recorder and the worker's
    event pipe. Its records would share ids with the parent's, and two
    processes writing frames to one pipe interleave them (a write over 4 KB is
    not atomic), which garbles the stream for the parent. So the child records
    nothing, and what it prints goes to fd 1 and 2 like the output of any
    subprocess the snippet starts (``output.write_to_fds``): the runner
    forwards those as output. A child that runs on to the end of the snippet
    exits as ``python`` would (the worker's ``child_exit``)."""
    r = _current
    if r is not None:
        r.recording = False
    write_to_fds()


def _register_source(filename: str, source: str) -> None:
    # so tracebacks and warnings can show the snippet's lines, as for a real file
    # (a "<snippet>" too: linecache keeps an entry with mtime None as it is)
    linecache.cache[filename] = (len(source), None, source_lines(source, keepends=True), filename)


def _flush(stream) -> None:
    try:
        if isinstance(stream, CapturedStream):
            stream.finish_bytes()
        stream.flush()
    except Exception:
        pass


def _exit_code(e: SystemExit) -> int:
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        # the status python's process reports: the code as a C long (-1 when it
        # does not fit), of which the system keeps the low 8 bits (True is 1,
        # 256 is 0, -1 is 255)
        n = int(code)
        return (n if -2**63 <= n < 2**63 else -1) & 0xFF
    # like the interpreter: a non-int code is printed to stderr and the status is 1
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _error_info(e: BaseException, filename: str, recorder) -> P.ErrorInfo:
    frames = python_frames(e.__traceback__, filename)
    # the editor marks the snippet's innermost line (the call into a helper
    # module or torch, where the error was raised further in)
    line = next((fs.lineno for fs in reversed(frames) if fs.filename == filename), None)
    # the exceptions it was raised from or while handling first, as python prints
    # them (``raise ValueError(...) from e`` keeps the error that explains it)
    chain, seen, cur = [], {id(e)}, e
    while True:
        if cur.__cause__ is not None:
            nxt, joint = cur.__cause__, _CAUSE
        elif cur.__context__ is not None and not cur.__suppress_context__:
            nxt, joint = cur.__context__, _CONTEXT
        else:
            break
        if id(nxt) in seen:
            break
        seen.add(id(nxt))
        chain.append((nxt, joint))
        cur = nxt
    lines = []   # NOTE [the traceback python prints] in tracebacks.py
    for exc, joint in reversed(chain):
        lines += _traceback_lines(exc, python_frames(exc.__traceback__, filename))
        lines.append(joint)
    lines += _traceback_lines(e, frames)
    if any(isinstance(x, BaseExceptionGroup) for x in (e, *(c for c, _ in chain))):
        lines = _group_lines(e, filename)
    op = tensor = None
    failed = recorder.failed
    if failed is not None and failed[0] == exc_key(e) and failed[3] in (None, line):
        op, tensor = failed[1], failed[2]     # NOTE [no frame kept]
    return P.ErrorInfo(type(e).__name__, _message_of(e), line, None, "".join(lines), op, tensor)


def _snippet_excepthook(e: BaseException, filename: str, error: P.ErrorInfo):
    """The snippet set ``sys.excepthook``: python hands it the uncaught error (from
    the snippet's own frames on) instead of printing the traceback, so the hook's
    output is what the console shows, and the trace keeps no traceback text of
    its own. Returns (the error, the SystemExit the hook raised or None). A hook
    that fails is reported as python reports it: its own error (without
    GraphScope's frames or the error it was handling), then the original."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    tb = without_our_frames(tb)
    try:
        sys.excepthook(type(e), e, tb)
    except SystemExit as left:
        return dataclasses.replace(error, traceback=""), left
    except BaseException as bad:
        try:
            te = traceback.TracebackException(type(bad), bad,
                                              without_our_frames(bad.__traceback__),
                                              compact=True)
            te.__context__ = te.__cause__ = None
            sys.stderr.write("Error in sys.excepthook:\n" + "".join(te.format())
                             + "\nOriginal exception was:\n"
                             + (error.traceback or f"{error.type}: {error.message}\n"))
        except Exception:
            pass
        return error, None
    return dataclasses.replace(error, traceback=""), None


def _message_of(e: BaseException) -> str:
    """The exception's message as python prints it after its class name; the
    snippet's own ``__str__`` may fail, and python then prints this."""
    try:
        if isinstance(e, KeyError) and len(e.args) == 1:
            return repr(e.args[0])
        return str(e)
    except Exception:
        return "<exception str() failed>"


def _traceback_lines(e: BaseException, frames) -> list:
    lines = ["Traceback (most recent call last):\n"] if frames else []
    return lines + traceback.format_list(frames) + _suggested(
        e, traceback.format_exception_only(type(e), e))


def _suggested(e: BaseException, only: list) -> list:
    """``only`` (``format_exception_only``'s lines) with python's "Did you mean"
    hint: ``NameError: name 'tensr' is not defined. Did you mean: 'tensor'?``.
    Python 3.11's traceback module does not compute it, its C printer does
    (from the error's last frame, for a name), and a student's typo is the
    error it helps most (fidelity review). So the C printer renders the error
    into a buffer and its line replaces the first one; a Python whose
    traceback module already adds the hint gives the same line, unchanged."""
    if not only or not isinstance(e, (NameError, AttributeError)):
        return only
    buf, saved = io.StringIO(), sys.stderr
    try:
        sys.stderr = buf
        sys.__excepthook__(type(e), e, e.__traceback__)
    except BaseException:
        return only
    finally:
        sys.stderr = saved
    head = only[0].rstrip("\n")
    for line in buf.getvalue().splitlines():
        if line.startswith(head) and "Did you mean" in line[len(head):]:
            return [line + "\n"] + only[1:]
    return only


def _group_lines(e: BaseException, filename: str) -> list:
    """Python's own rendering of an error that involves an exception group (an
    ``asyncio.TaskGroup`` failing, ``except*``): the tree with every
    sub-exception, where ``format_exception_only`` gave the group's one-line
    summary and hid what failed. Frames as elsewhere (NOTE [the traceback python
    prints] in tracebacks.py): each one's from its own exception's traceback."""
    te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
    todo, seen = [(te, e)], set()
    while todo:
        t, exc = todo.pop()
        if t is None or exc is None or id(t) in seen:
            continue
        seen.add(id(t))
        t.stack = traceback.StackSummary.from_list(python_frames(exc.__traceback__, filename))
        todo += [(t.__cause__, exc.__cause__), (t.__context__, exc.__context__)]
        todo += zip(getattr(t, "exceptions", None) or (), getattr(exc, "exceptions", None) or ())
    return list(te.format())


def _format_syntax_error(e: SyntaxError) -> str:
    """As python prints it. (Python's own printer marks an IndentationError with
    one caret where the traceback module underlines the whole token, "^^^^^^"
    under ``return`` for "expected an indented block": fuzz review.)"""
    if isinstance(e, IndentationError) and e.offset and e.end_offset \
            and e.end_offset > e.offset + 1:
        e = IndentationError(e.msg, (e.filename, e.lineno, e.offset, e.text,
                                     e.lineno, e.offset + 1))
    return "".join(traceback.format_exception_only(type(e), e))


def _finish(recorder: Recorder, g: dict) -> None:
    """Facts known only at the end: names still bound, final .grad, changed flags."""
    recorder.names.scan_mapping(g)
    emit = recorder.emit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t, tid in recorder.ids.live():
            fields = {}
            try:
                grad = t._grad
                g_fn = t.grad_fn
                gname = None if g_fn is None else node_name(g_fn)
                now = (t.requires_grad, t.is_leaf, gname)
                if recorder.state.get(tid) != now:
                    fields.update(requires_grad=now[0], is_leaf=now[1], grad_fn=now[2])
                if grad is not None:
                    v, s = recorder.memo.value_of(grad, final=True)
                    fields.update(grad=v, grad_stats=s)
                if not now[1] and t.retains_grad:
                    fields["retains_grad"] = True
            except Exception:
                continue
            if fields:
                emit(P.TensorUpdate(tid, fields))
