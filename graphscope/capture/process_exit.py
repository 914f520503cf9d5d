"""What ``python FILE`` does after the snippet's last line, done while output is captured.

NOTE [the end of a run]: after the last line, ``python FILE`` still
1. shuts threading down (``threading._shutdown``): runs the hooks libraries
   registered for it (``concurrent.futures`` tells its pool threads to
   finish), then waits for the threads the snippet started that are not
   daemons;
2. runs the ``atexit`` functions, ``__main__`` still alive;
3. frees ``__main__``: its namespace usually hangs in a cycle (every function
   the snippet defined refers to it), so the collector finalizes what it
   holds while every global is still bound; only a module something else
   keeps alive is cleared as ``_PyModule_ClearDict`` does (names with one
   leading underscore set to None first, then the rest).
Each may print, and the output of a run must be ``python``'s byte for byte;
the worker then leaves with ``os._exit``, which does none of it. So the
worker's run does it itself, in that order, after the final facts are
recorded and before the streams are restored (``before_exit``, then the
session lets go of the module, then ``free_module``). First it sends the
snippet's outcome (``protocol.Outcome``: status, error, exit code), so a
process stopped, timed out or gone after it (``os._exit`` in an ``atexit``
function) still ends the run with the snippet's error, or with python's exit
code (``runner._after_the_end``). Unlike ``python``, the wait for threads is
bounded (``THREAD_WAIT``): a thread still running then is named on stderr,
and the run ends as the snippet did rather than by its time limit. Nothing done after the last line is recorded (the
recorder has exited): the trace's final values, ``.grad`` included, are
those at the last line. Only in the worker: in any other process the
``atexit`` functions are the host's.
"""
from __future__ import annotations

import atexit
import functools
import gc
import sys
import threading
import time

from graphscope.capture.tracebacks import without_our_frames

THREAD_WAIT = 5.0    # seconds the snippet's threads get after its last line


def before_exit() -> None:
    """Steps 1 and 2 (the snippet's module is still alive)."""
    me = threading.current_thread()
    try:
        threading._SHUTTING_DOWN = True           # as threading._shutdown does
        for hook in reversed(list(getattr(threading, "_threading_atexits", ()))):
            hook()
    except BaseException:
        pass
    deadline = time.monotonic() + THREAD_WAIT
    waiting = [t for t in threading.enumerate() if t is not me and not t.daemon]
    try:
        for t in waiting:
            t.join(max(0.0, deadline - time.monotonic()))
    except BaseException:   # interrupted: python would stop waiting too
        pass
    left = [t.name for t in waiting if t.is_alive()]
    if left:
        try:   # (the snippet may have closed its stderr)
            sys.stderr.write(
                f"GraphScope: the snippet's thread(s) {', '.join(left[:3])} still ran "
                f"{THREAD_WAIT:g} s after it ended; python would wait for them. "
                "The run ends here.\n")
        except (OSError, ValueError, AttributeError):
            pass
    # errors are reported on stderr, as at exit; python has no frame of its own
    # there, so ours leave the report (the traceback of a built-in callback that
    # raised, ``atexit.register(sys.exit, 4)``, named process_exit.py)
    hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_without_our_frames, hook)
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    finally:
        if isinstance(sys.unraisablehook, functools.partial) and \
                sys.unraisablehook.func is _without_our_frames:
            sys.unraisablehook = hook   # (unless an atexit function set its own)


def _without_our_frames(hook, unraisable) -> None:
    """``hook(unraisable)`` with GraphScope's frames left out of its traceback."""
    new = without_our_frames(unraisable.exc_traceback)
    try:
        unraisable = type(unraisable)((unraisable.exc_type, unraisable.exc_value, new,
                                       unraisable.err_msg, unraisable.object))
    except Exception:
        pass
    hook(unraisable)


def free_module(module_ref) -> None:
    """Step 3, once nothing of the session refers to the module (``module_ref``:
    a weak reference to it)."""
    try:
        gc.collect()
        m = module_ref()
        if m is None:
            return
        d = m.__dict__
        del m
        for first in (True, False):
            for k in list(d):
                if (k[:1] == "_" and k[1:2] != "_") if first else k != "__builtins__":
                    d[k] = None
        del d
        gc.collect()
    except BaseException:
        pass
