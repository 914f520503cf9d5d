"""One worker process and the runner's ends of its pipes (no torch, no Qt).

Kept apart from :mod:`graphscope.runner`, with nothing but the standard
library's cheapest modules, so that ``graphscope export`` can start its worker
before it imports anything else (NOTE [a worker before the imports] in cli.py).
The worker runs in its own process group (a terminal's Ctrl+C reaches only the
GraphScope process, which stops the run) and the whole group is killed, so
processes the snippet started do not outlive it either.
"""
from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import threading

STOP_GRACE = 0.3          # terminate -> kill
USER_ENV = "GRAPHSCOPE_USER_ENV"
_CHANGED = ("PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONPATH")

# The worker's start: ``python -m graphscope.capture.worker`` without the folder
# it is started in at the head of ``sys.path`` (``-m`` puts it there, ``-c`` an
# empty entry for it). A snippet named like a module of the standard library,
# run from its own folder, was imported by the worker in its place: a
# resource.py ran once unrecorded, then the worker died on its missing
# getrlimit (fuzz review). The snippet's folder is put there for its run
# (worker.prepare_path), as ``python FILE`` does.
_START = ("import sys\n"
          "if sys.path[:1] == ['']: del sys.path[0]\n"
          "import runpy\n"
          "runpy.run_module('graphscope.capture.worker', run_name='__main__', alter_sys=True)\n")

# the directory that holds the graphscope package (a plain checkout's root)
_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def pipe() -> tuple[int, int]:
    """``os.pipe()`` with both ends above the standard streams' numbers.

    A process started with stdin, stdout or stderr closed (``graphscope export
    x.py 2>&-``, some launchers) gets that free number back from ``os.pipe``,
    and ``Popen`` then puts the worker's own stdio over it in the child: every
    run "crashed" (review finding)."""
    fds = os.pipe()
    out = []
    try:
        for fd in fds:
            if fd < 3:
                high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
                os.close(fd)
                fd = high
            out.append(fd)
    except BaseException:
        for fd in set(fds) | set(out):
            try:
                os.close(fd)
            except OSError:
                pass
        raise
    return out[0], out[1]


class Worker:
    """One worker process and the runner's ends of its pipes."""

    def __init__(self, python: str | None = None):
        cmd_r, cmd_w = pipe()
        ev_r, ev_w = pipe()
        fault_r, fault_w = pipe()
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
        # the user's own values of what the worker's start changes, which the worker
        # puts back before the snippet runs (it saw PYTHONIOENCODING=utf-8 and
        # GraphScope's own variables in os.environ: fuzz review); PYTHONIOENCODING
        # also decides python's stdout errors (NOTE [stdout's errors] in
        # capture/output.py)
        import json
        env[USER_ENV] = json.dumps({k: os.environ.get(k) for k in _CHANGED})
        # Importable from a plain checkout too (appended: an installed copy wins).
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), _ROOT) if p)
        try:
            self.proc = subprocess.Popen(
                [python or sys.executable, "-c", _START, str(cmd_r), str(ev_w), str(fault_w)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(cmd_r, ev_w, fault_w), start_new_session=True, env=env)
        except BaseException:
            for fd in (cmd_r, cmd_w, ev_r, ev_w, fault_r, fault_w):
                os.close(fd)
            raise
        for fd in (cmd_r, ev_w, fault_w):
            os.close(fd)
        self.pid = self.proc.pid
        self.cmd_w: int | None = cmd_w
        self.ev_r, self.fault_r = ev_r, fault_r
        self.out_r = self.proc.stdout.fileno()
        self.err_r = self.proc.stderr.fileno()
        self._closed = False
        self._group_ended = False
        # one ender at a time: Stop (the window's thread) and the reader thread both
        # end a stopped worker, and a second SIGTERM during the first one's stack
        # dump (NOTE [where a stop found it]) cut the dump short
        self._ending = threading.Lock()

    def send(self, msg) -> None:
        """Write the one command and close the pipe (a worker takes one Run)."""
        fd, self.cmd_w = self.cmd_w, None
        if fd is None:
            return
        from graphscope.protocol import encode
        try:
            data = memoryview(encode(msg))
            while data:
                data = data[os.write(fd, data):]
        except OSError:
            pass  # it died; the reader sees EOF and reports how
        finally:
            os.close(fd)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, grace: float = STOP_GRACE) -> None:
        """Terminate, wait up to ``grace`` seconds, then kill: the worker and its group.
        Returns at once while another thread is doing it."""
        if self._group_ended:
            return  # done before: the group id may belong to someone else by now
        if not self._ending.acquire(blocking=False):
            return  # another thread is ending it (the reader reads on meanwhile)
        try:
            if self._group_ended:
                return
            if self.proc.poll() is None:
                self._signal_group(signal.SIGTERM)
                self.wait_gone(grace)
            self._signal_group(signal.SIGKILL)  # it, if still there, and what the snippet started
            self._group_ended = True
            try:
                self.proc.wait(2.0)
            except subprocess.TimeoutExpired:
                pass
        finally:
            self._ending.release()

    def end_group_now(self) -> None:
        """Kill the worker's process group and return, without reaping: for a
        caller that leaves at once after the run's End (what the snippet left
        running must not outlive it)."""
        with self._ending:   # (the reader thread's kill: at most its grace)
            if not self._group_ended:
                self._signal_group(signal.SIGKILL)
                self._group_ended = True

    def wait_gone(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to end; whether it has.
        ``Popen.wait`` with a timeout polls, sleeping up to 50 ms between looks:
        a worker gone 2 ms after its End was reaped 40-70 ms later, which a
        caller waiting for the run to be over waited too. A pidfd (Linux 5.3)
        wakes the wait the moment the process ends."""
        if self.proc.poll() is not None:
            return True
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):   # an older kernel or python
            fd = None
        if fd is not None:
            try:
                # (poll, not select: a window with 1,024 files open gets a pidfd
                # select cannot take, and a stop lost the line it found: review)
                waiter = select.poll()
                waiter.register(fd, select.POLLIN)
                waiter.poll(max(0.0, timeout) * 1000)
                return self.proc.poll() is not None
            except (OSError, ValueError):
                pass
            finally:
                os.close(fd)
        try:   # Popen's own wait, which polls
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        return self.proc.poll() is not None

    def _signal_group(self, sig) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(sig)
                except ProcessLookupError:
                    pass

    def interrupt(self) -> None:
        self._signal_group(signal.SIGINT)

    def discard(self) -> None:
        """End a worker that will not run anything (a spare warm one) and close its pipes."""
        self.kill(grace=0)
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.cmd_w is not None:
            os.close(self.cmd_w)
            self.cmd_w = None
        for fd in (self.ev_r, self.fault_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.stdout.close()
        self.proc.stderr.close()
