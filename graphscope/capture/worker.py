"""The worker process: runs one snippet under the recorder and streams its events.

Started by ``graphscope.runner`` as::

    python -m graphscope.capture.worker CMD_FD EVENT_FD FAULT_FD

with three inherited pipe ends (``pass_fds``): the command pipe it reads one
``Run`` from, the event pipe it writes framed records to (NOTE [frames] in
protocol.py), and a pipe for ``faulthandler`` so a segfault's Python stack
reaches the runner instead of the snippet's console. stdin is /dev/null; fd 1
and 2 are pipes the runner reads and forwards as ``Output`` messages, so C code
that writes to them (or a subprocess the snippet starts) never touches the
event pipe.

The launcher habits follow Thonny's ``cp_launcher``/backend start: do the slow
imports first, acknowledge with exactly one ``Ready`` line, then wait; give the
user code a clean ``__main__``, ``sys.argv`` and ``sys.path[0]`` as plain
``python FILE`` would.

NOTE [event batching]: messages are encoded at once but written in batches:
an emit writes the batch when it is big (``_FLUSH_BYTES``) or the last write
is older than ``_FLUSH_AGE`` (so a ``print`` just before ``os._exit`` still
arrives; output is line-buffered like a terminal's), and a flusher thread writes whatever an idle snippet left behind
every ``_FLUSH_INTERVAL`` seconds. Events therefore stream live, a crash or
stop loses at most the last millisecond or so, and a 20,000-op run does not
pay one ``write`` system call per op. The flusher also notices a dead parent (the
worker must never outlive the window) and exits.
"""
from __future__ import annotations

import faulthandler
import json
import marshal
import os
import sys
import threading
import time

from graphscope import protocol as P

_FLUSH_BYTES = 1 << 16
_FLUSH_INTERVAL = 0.02     # the flusher thread's period (idle snippet)
_FLUSH_AGE = 0.001         # an emit flushes when the last flush is this old
_DEFAULT_MEMORY_FRACTION = 0.75


class EventWriter:
    """Thread-safe batched writer of protocol messages to one pipe fd."""

    def __init__(self, fd: int):
        self._fd = fd
        self._buf: list[bytes] = []
        self._size = 0
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        self._last_flush = 0.0
        self._parent = os.getppid()
        self._thread: threading.Thread | None = None
        self._encode = _fast_encoder()
        self.idle = None    # the run's held-back messages, let go when idle (set_idle)

    def start_flusher(self) -> None:
        self._thread = threading.Thread(target=self._flush_loop, name="graphscope-flush",
                                        daemon=True)
        self._thread.start()

    def emit(self, msg) -> None:
        if self._fd < 0:
            return   # a forked child (stop_in_child)
        data = self._encode(msg)
        with self._lock:
            self._buf.append(data)
            self._size += len(data)
            # Output ending a line is written at once, as a terminal would
            due = (self._size >= _FLUSH_BYTES
                   or time.monotonic() - self._last_flush >= _FLUSH_AGE
                   or (type(msg) is P.Output and msg.text.endswith("\n")))
        if due:
            self.flush()

    def send_now(self, msg) -> None:
        self.emit(msg)
        self.flush()

    def flush(self) -> None:
        if self._fd < 0:
            return
        with self._lock:
            if not self._buf:
                return
            data = b"".join(self._buf)
            self._buf.clear()
            self._size = 0
            self._last_flush = time.monotonic()
        # a second lock keeps batches in order when the flusher and the
        # snippet's thread flush at the same moment
        with self._write_lock:
            _write_all(self._fd, data)

    def stop_in_child(self) -> None:
        """In a forked child: drop what the parent had not written yet and
        never write (NOTE [forked children] in session.py)."""
        self._closed = True
        self._buf = []
        self._size = 0
        self._fd = -1
        self.idle = None

    def set_idle(self, fn) -> None:
        """``run_snippet``'s ``on_idle``: ``fn`` lets the messages the run holds
        back go (NOTE [deferred stats] in deferred_stats.py); None when it ends."""
        self.idle = fn

    def _flush_loop(self) -> None:
        while not self._closed:
            time.sleep(_FLUSH_INTERVAL)
            if os.getppid() != self._parent:
                os._exit(70)  # the runner is gone: nobody will read or stop us
            idle = self.idle
            if idle is not None:
                try:
                    idle()
                except Exception:
                    pass   # the run's own flush at its end still sends them
            self.flush()

    def close(self) -> None:
        self._closed = True
        self.flush()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            n = os.write(fd, view)
            view = view[n:]
    except (BrokenPipeError, OSError):
        os._exit(71)  # the runner closed the pipe: it stopped us or died


def _fast_encoder():
    """The event pipe's encoder (NOTE [frames] in protocol.py): each record as a
    tuple of its fields in order (NOTE [rows]), End as a dict, in ``marshal``
    behind a magic byte and a 4-byte length. Values that marshal does not take
    (a numpy scalar or ``torch.Size`` in a summary) go as JSON would write them."""
    plans = {cls: (cls.T, get) for cls, get in P.ROW_GETTERS.items()}
    dumps = marshal.dumps
    pack = P.FRAME_HEAD.pack
    magic = P.FRAME_MAGIC
    version = P.MARSHAL_VERSION

    def encode(msg) -> bytes:
        plan = plans.get(type(msg))
        if plan is None:
            obj = P.to_dict(msg)
        else:
            t, get = plan
            obj = (t,) + get(msg)
        try:
            b = dumps(obj, version)
        except ValueError:
            b = dumps(json.loads(json.dumps(obj, allow_nan=True, default=P._json_default)),
                      version)
        return pack(magic, len(b)) + b

    return encode


def read_run(fd: int):
    """The Run the runner sends (one line, then the pipe is closed); None on EOF."""
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
        if b.endswith(b"\n"):
            break
    os.close(fd)
    data = b"".join(chunks).strip()
    if not data:
        return None
    msg = P.decode(data)
    if not isinstance(msg, P.Run):
        raise P.ProtocolError(f"expected a run message, got {msg.T!r}")
    return msg


def set_memory_limit(limit) -> None:
    """Cap the address space so a huge allocation fails with a clean
    MemoryError/RuntimeError in the snippet instead of waking the OOM killer."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return
    if not limit:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            return
        limit = max(int(total * _DEFAULT_MEMORY_FRACTION), 2 << 30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (int(limit), hard))
    except (ValueError, OSError):
        pass


def prepare_path(run) -> None:
    """``sys.path[0]`` as under ``python FILE`` (the snippet's folder), so the
    snippet imports its neighbours. The session gives it a fresh ``__main__``
    and ``sys.argv``."""
    filename = run.filename
    here = (os.path.dirname(os.path.abspath(filename)) if os.path.isfile(filename)
            else os.getcwd())
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = here
    else:
        sys.path.insert(0, here)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        cmd_fd, event_fd, fault_fd = (int(a) for a in argv[:3])
    except ValueError:
        argv = []
    if len(argv) < 3:
        print("usage: python -m graphscope.capture.worker CMD_FD EVENT_FD FAULT_FD\n"
              "(started by graphscope.runner; not meant to be run by hand)", file=sys.stderr)
        return 2
    # First, so that a crash while importing torch is reported too. The file
    # object must stay alive for as long as faulthandler is enabled.
    fault_file = os.fdopen(fault_fd, "w", closefd=False)
    faulthandler.enable(file=fault_file, all_threads=False)
    import torch
    from graphscope.capture.session import on_fork_in_child, run_snippet

    writer = EventWriter(event_fd)
    pid = os.getpid()
    # NOTE [forked children] in session.py: a child never writes the event pipe
    os.register_at_fork(after_in_child=lambda: (writer.stop_in_child(), on_fork_in_child()))
    writer.send_now(P.Ready(pid=pid, torch_version=torch.__version__,
                            python=sys.version.split()[0]))
    run = read_run(cmd_fd)
    if run is None:  # the runner closed without a run (shutdown of a warm worker)
        return 0
    set_memory_limit(run.memory_limit)
    prepare_path(run)
    writer.start_flusher()
    started = time.perf_counter()
    try:
        end = run_snippet(run, writer.emit, writer.set_idle)
    except BaseException as e:  # a bug in the recorder, not in the snippet
        end = P.End(status="error", duration=time.perf_counter() - started,
                    error=P.ErrorInfo(type="InternalError",
                                      message=f"GraphScope's recorder failed: {type(e).__name__}: {e}"))
    if os.getpid() != pid:   # a child the snippet forked ran on to the snippet's end
        return child_exit(end)
    writer.emit(end)
    writer.close()
    return 0


def child_exit(end) -> int:
    """The exit status ``python`` gives a forked child that ran on to the end of
    the snippet (NOTE [forked children] in session.py), its traceback printed."""
    if end.status == "exit":
        code = end.exit_code
        return code if isinstance(code, int) else (0 if code is None else 1)
    if end.status == "error" and end.error is not None:
        text = end.error.traceback or f"{end.error.type}: {end.error.message}\n"
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    # Skip interpreter teardown (torch's is slow, and the snippet's threads or
    # atexit hooks must not delay or garble the End already sent).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
