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

NOTE [event batching]: an emit turns the message into its row (NOTE [rows]
in protocol.py: a tuple of its fields, taken now) and the rows are written
in batches, one ``marshal`` call and one frame for each (NOTE [frames]):
when the batch is big (``_FLUSH_ROWS`` rows or ``_FLUSH_BYTES`` of output
text), or the last write is older than ``_FLUSH_AGE`` (so a ``print`` just
before ``os._exit`` still arrives; output is line-buffered like a
terminal's), and a flusher thread writes whatever an idle snippet left behind
every ``_FLUSH_INTERVAL`` seconds. (A frame per message cost the 20,000-op
chain 0.2 s of its 1.2 s in the worker, a third of it framing and calls.) Events therefore stream live, a crash or
stop loses at most the last millisecond or so, and a 20,000-op run does not
pay one ``write`` system call per op. The flusher also notices a dead parent (the
worker must never outlive the window) and exits.
"""
from __future__ import annotations

import _thread
import errno
import faulthandler
import json
import marshal
import os
import signal
import sys
import threading
import time

from graphscope import protocol as P

_FLUSH_ROWS = 512
_FLUSH_BYTES = 1 << 16     # characters of output text
_FLUSH_INTERVAL = 0.02     # the flusher thread's period (idle snippet)
_FLUSH_AGE = 0.001         # an emit flushes when the last flush is this old
_DEFAULT_MEMORY_FRACTION = 0.75


class EventWriter:
    """Thread-safe batched writer of protocol messages to one pipe fd."""

    def __init__(self, fd: int):
        self._fd = fd
        self._rows: list = []
        self._size = 0
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._writer = None     # the thread inside flush, writing
        self._closed = False
        self._last_flush = 0.0
        self._parent = os.getppid()
        self._thread: int | None = None   # the flusher's thread id
        self._row = _row_maker()
        self.idle = None    # the run's held-back messages, let go when idle (set_idle)

    def start_flusher(self) -> None:
        # a bare thread, not a threading.Thread: the snippet's threading.enumerate()
        # and active_count() show its own threads only, as under python (a review
        # saw "graphscope-flush" in them). Nothing waits for it: the worker ends
        # with os._exit.
        self._thread = _thread.start_new_thread(self._flush_loop, ())

    def emit(self, msg) -> None:
        if self._fd < 0:
            return   # a forked child (stop_in_child)
        row = self._row(msg)
        # Output ending a line is written at once, as a terminal would; so is the
        # Outcome (what follows it may end the process: NOTE [the end of a run])
        out = type(msg) is P.Output
        with self._lock:
            rows = self._rows
            rows.append(row)
            if out:
                self._size += len(msg.text)
            due = (len(rows) >= _FLUSH_ROWS or self._size >= _FLUSH_BYTES
                   or time.monotonic() - self._last_flush >= _FLUSH_AGE
                   or (out and msg.text.endswith("\n")) or type(msg) is P.Outcome)
        if due:
            self.flush()

    __call__ = emit

    def emit_many(self, msgs: list) -> None:
        """``emit`` of each of ``msgs``, in order, with one lock and one look at the
        clock (HeldEmit's flushed batches: the chain's messages 0.111 -> 0.080 s)."""
        if self._fd < 0:
            return
        row = self._row
        new: list = []                     # (made before the lock: NOTE [no allocation ...])
        try:
            for m in msgs:
                new.append(row(m))
        finally:
            # interrupted (a stop's KeyboardInterrupt) while making them: the rows made
            # go out and only the message being made is lost, as with emit (the
            # whole batch HeldEmit had popped was lost: code review)
            self._add_rows(new, msgs)

    def _add_rows(self, new: list, msgs: list) -> None:
        if not new:
            return
        size, line_end = 0, False
        for m in msgs[:len(new)]:
            t = type(m)
            if t is P.Output:
                size += len(m.text)
                line_end = line_end or m.text.endswith("\n")
            elif t is P.Outcome:
                line_end = True
        with self._lock:
            rows = self._rows
            rows.extend(new)
            self._size += size
            due = (line_end or len(rows) >= _FLUSH_ROWS or self._size >= _FLUSH_BYTES
                   or time.monotonic() - self._last_flush >= _FLUSH_AGE)
        if due:
            self.flush()

    def send_now(self, msg) -> None:
        self.emit(msg)
        self.flush()

    def flush(self) -> None:
        if self._fd < 0 or self._writer == threading.get_ident():
            # (a ``__del__`` that prints, run by the GC while this thread writes:
            # its row waits for the next flush; writing it now would land in the
            # middle of a frame, and waiting for the lock would wait for ever)
            return
        fresh: list = []   # made before the lock (NOTE [no allocation under the lock] in deferred_stats.py)
        # the write lock is held from taking the rows to writing them, so two
        # threads flushing at the same moment cannot swap two batches
        with self._write_lock:
            self._writer = threading.get_ident()
            try:
                with self._lock:
                    rows = self._rows
                    if not rows:
                        return
                    self._rows = fresh
                    self._size = 0
                    self._last_flush = time.monotonic()
                _write_all(self._fd, encode_rows(rows))
            finally:
                self._writer = None

    def stop_in_child(self) -> None:
        """In a forked child: drop what the parent had not written yet and
        never write (NOTE [forked children] in session.py)."""
        self._closed = True
        self._rows = []
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
                # the runner is gone: nobody will read or stop us. What the snippet
                # started (a subprocess, in the worker's own process group) goes
                # too: it outlived a killed window (GUI review)
                # (only a group of its own: started by hand, without the runner's
                # new session, it shares its caller's, shell included: code review)
                try:
                    if os.getpgid(0) == os.getpid():
                        os.killpg(os.getpid(), signal.SIGKILL)   # (this process with it)
                except OSError:
                    pass
                os._exit(70)
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
    except (BrokenPipeError, OSError) as e:
        if getattr(e, "errno", None) == errno.EBADF:
            os._exit(P.EXIT_PIPE_CLOSED)   # the snippet closed it (os.closerange(3, ...))
        os._exit(71)  # the runner closed the pipe: it stopped us or died


def _row_maker():
    """``row(msg)``: a record as the tuple of its fields in order (NOTE [rows]),
    End as a dict."""
    plans = {cls: (cls.T, get) for cls, get in P.ROW_GETTERS.items()}
    to_dict = P.to_dict

    def row(msg):
        plan = plans.get(type(msg))
        if plan is None:
            return to_dict(msg)
        return (plan[0],) + plan[1](msg)

    return row


_dumps = marshal.dumps


def _marshallable(obj):
    """``obj``, or, if marshal does not take a value in it (a ``torch.Size``
    in a summary), ``obj`` as JSON would write it. (Records hold plain values:
    marshal would write a numpy scalar, which has the buffer protocol, as bytes.)"""
    try:
        _dumps(obj, P.MARSHAL_VERSION)
        return obj
    except ValueError:
        return json.loads(json.dumps(obj, allow_nan=True, default=P._json_default))


def encode_rows(rows: list) -> bytes:
    """One batch frame (NOTE [frames]) of ``rows``."""
    try:
        b = _dumps(rows, P.MARSHAL_VERSION)
    except ValueError:   # only the rows marshal does not take go as JSON
        b = _dumps([_marshallable(r) for r in rows], P.MARSHAL_VERSION)
    return P.FRAME_HEAD.pack(P.FRAME_BATCH, len(b)) + b


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
    # below what the worker already maps (torch alone is hundreds of MB of address
    # space) the flusher thread could not start and the run died as a "crash"
    limit = max(int(limit), _mapped_bytes() + _MEMORY_HEADROOM)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (int(limit), hard))
    except (ValueError, OSError, OverflowError):
        pass


_MEMORY_HEADROOM = 256 << 20   # address space a run needs beyond the worker's own

def raise_stack_limit() -> None:
    """NOTE [a deep graph's C stack]: freeing an autograd graph whose Nodes have
    had a Python object (any ``t.grad_fn`` read, and the recorder reads every
    one) recurses in C once per Node. At Linux's usual 8 MB that overflows
    at about 50,000 Nodes, a chain the export records whole (up to 200,000
    ops): the worker died of SIGSEGV when the snippet dropped its last tensor
    or when its namespace was freed at the end. The main thread's stack grows
    on demand up to the soft limit read at each growth, so raising it is
    enough: to the hard limit, on Linux usually unlimited (the stack then
    grows into the gap of at least 128 MB that Linux leaves below it, about
    700,000 Nodes).

    A child inherits the limit. One the snippet forks keeps it (it may free
    the same deep graph; its threads' stacks were sized when the worker
    started). A program it starts sizes its threads' stacks by it: an
    unlimited one gives glibc's default, where 120 MB gave each thread
    120 MB (code review; measured under a 1 GB address-space limit: 5
    threads started at 120 MB, 21 at 8 MB, 23 unlimited). And only a run
    that has recorded ``DEEP_OPS`` ops raises it (``run_snippet(on_deep=)``:
    a smaller run cannot make a graph that deep).
    Left as they are: a snippet that reads its limit sees it change then, and
    a graph that deep freed on one of its own threads (8 MB) still crashes."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass


def _mapped_bytes() -> int:
    """The worker's address space now (VmSize), 0 if it cannot be read."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def user_environment() -> None:
    """``os.environ`` as the user's: the variables the runner set for the worker
    (unbuffered, UTF-8 streams, its package on PYTHONPATH) back to the user's
    values, GraphScope's own note of them gone (fuzz review: the snippet saw them)."""
    import json
    from graphscope.capture import output
    from graphscope.worker_process import USER_ENV   # (the runner's side names it)
    note = os.environ.pop(USER_ENV, None)
    try:
        user = json.loads(note) if note else None
    except ValueError:
        user = None
    if not isinstance(user, dict):
        return
    output.USER_IOENCODING = user.get("PYTHONIOENCODING") or ""
    for key, value in user.items():
        if value is None:
            os.environ.pop(key, None)
        elif isinstance(value, str):
            os.environ[key] = value


def prepare_path(run) -> None:
    """``sys.path[0]`` as under ``python FILE`` (the snippet's folder), so the
    snippet imports its neighbours. The session gives it a fresh ``__main__``
    and ``sys.argv``."""
    filename = run.filename
    here = (os.path.dirname(os.path.abspath(filename)) if os.path.isfile(filename)
            else os.getcwd())
    # (the worker's start took out the entry python gave it: worker_process._START;
    # what is at the head now is the user's PYTHONPATH, kept, as under python.
    # Replacing an entry equal to the folder dropped a user's PYTHONPATH=.: code review)
    sys.path.insert(0, here)
    if getattr(run, "cwd", None):
        # the window runs a file in its own folder, as an IDE does, so the file's
        # open("data.txt") finds what its import of a neighbour does (student
        # review); export keeps the caller's folder, as `python path/x.py` does
        try:
            os.chdir(run.cwd)
        except OSError:
            pass    # the folder is gone: the run goes on where it is


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
    # NOTE [where a stop found it]: Stop and the time limit end the worker with
    # SIGTERM; its Python stack goes to the fault pipe first (then the signal's
    # default action, as without), so the window can say which line was running
    # ("stuck on line 2", the last recorded op, read as the loop's line: GUI
    # review). Not in a child the snippet forks: its stack is not the run's.
    # (every thread: the signal may be handled on the worker's writer or flusher
    # thread, and the run's own is found by the runner, runner._fault_frames)
    faulthandler.register(signal.SIGTERM, file=fault_file, all_threads=True, chain=True)
    # Runner.interrupt is a SIGINT the snippet sees as KeyboardInterrupt. A worker
    # inherits SIGINT ignored from a GraphScope started that way (a background
    # job of a script: `pytest ... &`, nohup), and python then installs no
    # handler: the interrupt did nothing and the run went on to its time limit
    # (test_interrupt_raises_keyboard_interrupt_in_the_snippet failed so). The
    # worker is in a session of its own, so no terminal's Ctrl+C reaches it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    import torch
    from graphscope.capture.session import on_fork_in_child, run_snippet

    writer = EventWriter(event_fd)
    pid = os.getpid()
    # NOTE [forked children] in session.py: a child never writes the event pipe
    os.register_at_fork(after_in_child=lambda: (writer.stop_in_child(), on_fork_in_child(),
                                                faulthandler.unregister(signal.SIGTERM)))
    writer.send_now(P.Ready(pid=pid, torch_version=torch.__version__,
                            python=sys.version.split()[0]))
    run = read_run(cmd_fd)
    if run is None:  # the runner closed without a run (shutdown of a warm worker)
        return 0
    set_memory_limit(run.memory_limit)
    prepare_path(run)
    user_environment()
    writer.start_flusher()
    started = time.perf_counter()
    try:
        end = run_snippet(run, writer, writer.set_idle, at_exit=True, on_deep=raise_stack_limit)
    except BaseException as e:  # a bug in the recorder, not in the snippet
        end = P.End(status="error", duration=time.perf_counter() - started,
                    error=P.ErrorInfo(type="InternalError",
                                      message=f"GraphScope's recorder failed: {type(e).__name__}: {e}"))
    if os.getpid() != pid:   # a child the snippet forked ran on to the snippet's end
        return child_exit(end)
    writer.emit(end)
    writer.close()
    let_go_of_pipes(event_fd, fault_fd)
    return 0


def let_go_of_pipes(*fds) -> None:
    """NOTE [a worker that has sent its End]: with the End written the run is
    over, but the process takes another 20-40 ms to be gone (the kernel takes
    back torch's libraries and the run's memory), and the runner read on until
    its pipes said end of file, which comes with the last of their writers:
    20 ms of every run, in the export and in the window's Run to trace. So the
    worker flushes its streams and points its ends of the pipes (fd 1 and 2,
    the event and fault pipes) at /dev/null: the runner sees end of file at
    once, and a process the snippet started that still holds fd 1 or 2 keeps
    them open as before (its output is still read, ``runner._read``)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2, *fds):
        try:
            os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)


def child_exit(end) -> int:
    """The exit status ``python`` gives a forked child that ran on to the end of
    the snippet (NOTE [forked children] in session.py), its traceback printed."""
    if end.status == "exit":
        code = end.exit_code
        return code if isinstance(code, int) else (0 if code is None else 1)
    if end.status == "error" and end.error is not None:
        # "" when the snippet's own sys.excepthook printed it already
        tb = end.error.traceback
        text = tb if tb is not None else f"{end.error.type}: {end.error.message}\n"
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        return 1
    return 0


if __name__ == "__main__":
    code = main()
    # Skip interpreter teardown: torch's is slow, and what python does after the
    # snippet's last line (its threads, atexit functions, freeing __main__) the
    # run has done already, while output was captured (NOTE [the end of a run]).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
