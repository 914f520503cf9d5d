"""What ``python FILE`` does after the snippet's last line, done while output is captured.

NOTE [the end of a run]: after the last line, ``python FILE`` still waits for
the threads the snippet started (not the daemons), runs the ``atexit``
functions, then frees ``__main__``'s names (in the order they were bound:
measured with python 3.11) and collects cycles, so a ``__del__`` runs. Each may print, and the output of a run must be
``python``'s byte for byte; the worker then leaves with ``os._exit``, which
does none of it. So the worker's run does it itself, in that order, after the
final facts are recorded (the snippet's namespace is read by then) and before
the streams are restored. A thread that never ends keeps the run going until
its timeout, as ``python`` would hang. Only in the worker: in any other
process the ``atexit`` functions are the host's.
"""
from __future__ import annotations

import atexit
import gc
import threading


def exit_as_python_would(namespace: dict) -> None:
    me = threading.current_thread()
    for t in threading.enumerate():
        if t is not me and not t.daemon and t.is_alive():
            try:
                t.join()
            except BaseException:   # interrupted: python would stop waiting too
                break
    try:
        atexit._run_exitfuncs()   # (errors are reported on stderr, as at exit)
    except BaseException:
        pass
    try:
        for k in list(namespace):      # in the order they were bound, as python does
            if k != "__builtins__":
                namespace[k] = None
        gc.collect()
    except BaseException:
        pass
