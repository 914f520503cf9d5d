"""Starts, stops and watches worker processes (no torch, no Qt).

A :class:`Runner` owns at most one running worker and, when ``warm=True``, one
warm worker that has already imported torch and waits for its ``Run``; a
snippet given to :meth:`Runner.start` goes to the warm worker, so a small one
goes from Run to complete trace in a fraction of a second, and the next warm
worker starts importing torch at once. Each worker runs one
snippet and exits (isolation: nothing of one run leaks into the next).

A reader thread per run reads the worker's event pipe and its fd 1/2 pipes and
calls ``on_messages(list_of_messages)`` in batches, ending with exactly one
``End``: the worker's own, or one the runner makes when the worker was stopped
(``stopped``), ran out of time (``timeout``) or died without one (``crash``,
with the signal or exit code and the snippet line faulthandler saw).

Interrupt, stop and close are separate operations, as in Thonny's backend
control: ``interrupt`` sends SIGINT (the snippet sees KeyboardInterrupt),
``stop`` terminates, waits briefly, then kills; ``close`` also ends the warm
worker. Workers run in their own process group (a terminal's Ctrl+C reaches
only the GraphScope process, which stops the run) and the whole group is
killed, so processes the snippet started do not outlive it either.
"""
from __future__ import annotations

import atexit
import codecs
import dataclasses
import os
import re
import select
import signal
import threading
import time
import traceback
from typing import Callable, Optional

from graphscope import protocol as P
from graphscope import quiet_gc
from graphscope.model.trace import Trace
from graphscope.worker_process import Worker

STARTUP_TIMEOUT = 120.0   # importing torch on a cold disk can take a while
_DRAIN_AFTER_EOF = 0.3    # wait for the last fd 1/2 output once the event pipe closed
_LEAVE_AFTER_EOF = 1.0    # for a worker whose pipes all closed to exit by itself
_READ_SIZE = 1 << 20

_SIGNAL_HINTS = {
    "SIGSEGV": "segmentation fault",
    "SIGBUS": "bus error",
    "SIGILL": "illegal instruction",
    "SIGFPE": "floating-point exception",
    "SIGABRT": "aborted",
    "SIGKILL": "out of memory, or killed from outside",
}

OnMessages = Callable[[list], None]


class _RunSession:
    """One run on one worker: the reader thread and how the run ended."""

    def __init__(self, runner: "Runner", worker: Optional[Worker], run: P.Run,
                 on_messages: Optional[OnMessages], timeout: Optional[float],
                 start_error: Optional[str] = None):
        self.runner = runner
        self.worker = worker
        self.run = run
        self.on_messages = on_messages
        self.timeout = timeout
        self.start_error = start_error
        self.end: Optional[P.End] = None
        self.ended = threading.Event()   # the End is known and delivered
        self.done = threading.Event()    # ... and the worker reaped
        self.running = False          # Run sent, End not yet seen
        self._stop_requested = False
        self._timed_out = False
        self._t_run: Optional[float] = None
        self.thread = threading.Thread(target=self._main, name="graphscope-reader", daemon=True)

    # -- control (any thread) ------------------------------------------------
    def stop(self) -> None:
        self._stop_requested = True
        if self.worker is not None:
            self.worker.kill()

    def interrupt(self) -> None:
        if self.running and self.worker is not None:
            self.worker.interrupt()

    # -- reader thread -------------------------------------------------------
    def _main(self) -> None:
        end = None
        try:
            if self.start_error is not None:
                end = _start_failure(self.start_error, "")
            else:
                end = self._read()
        except Exception as e:  # a bug here must still end the run
            end = P.End(status="crash", error=P.ErrorInfo(
                type="InternalError", message=f"GraphScope's runner failed: {type(e).__name__}: {e}",
                traceback=traceback.format_exc()))
        finally:
            self.running = False
            self.end = end
            self._deliver([end])
            # the End first: a worker that sent one is leaving on its own (NOTE [a
            # worker that has sent its End] in capture/worker.py), and its 20 ms
            # to be gone are no part of the run
            self.ended.set()
            if self.worker is not None:
                self.worker.wait_gone(0.5)   # normally leaving already ...
                self.worker.kill(grace=0.5)  # ... this reaps it, and what the snippet left
                self.worker.close()
            self.runner._run_finished(self)
            self.done.set()

    def _garbled(self, what: str) -> P.End:
        return P.End(status="crash", error=P.ErrorInfo(
            type="InternalError",
            message=f"the worker's event stream was garbled ({what}): did the snippet "
                    "write to a file descriptor it did not open?"),
            duration=(time.monotonic() - self._t_run) if self._t_run else None)

    def _deliver(self, batch: list) -> None:
        if batch and self.on_messages is not None:
            try:
                self.on_messages(batch)
            except Exception:
                traceback.print_exc()

    def _read(self) -> P.End:
        w = self.worker
        run = self.run
        names = {w.ev_r: "events", w.out_r: "stdout", w.err_r: "stderr", w.fault_r: "fault"}
        decoders = {"stdout": codecs.getincrementaldecoder("utf-8")("replace"),
                    "stderr": codecs.getincrementaldecoder("utf-8")("replace")}
        poller = select.poll()
        for fd in names:
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        open_fds = set(names)
        pending = bytearray()
        startup_log: list[str] = []
        fault = bytearray()
        end: Optional[P.End] = None
        outcome: Optional[P.Outcome] = None
        last_seq = 0
        out_chars = 0
        out_capped = False
        deadline = time.monotonic() + STARTUP_TIMEOUT
        ending = False       # a thread is ending the worker (_end_aside)
        events_closed_at: Optional[float] = None
        exited_at: Optional[float] = None

        while open_fds:
            now = time.monotonic()
            if w.ev_r not in open_fds:
                if events_closed_at is None:
                    events_closed_at = now
                if now - events_closed_at > _DRAIN_AFTER_EOF:
                    break  # fd 1/2 held open by something the snippet started
            elif exited_at is None and not w.alive():
                exited_at = now
            elif exited_at is not None and now - exited_at > _DRAIN_AFTER_EOF:
                break  # worker gone, event pipe held open by a forked child
            if self._stop_requested and not ending:
                ending = _end_aside(w)
            if now >= deadline:
                if self._t_run is None:
                    w.kill(grace=0)
                    return _start_failure("the worker did not start within "
                                          f"{STARTUP_TIMEOUT:g} s", "".join(startup_log))
                self._timed_out = True
                ending = _end_aside(w)
                deadline = float("inf")
            batch: list = []
            for fd, _ev in poller.poll(max(0.0, min(0.1, deadline - now)) * 1000):
                try:
                    data = os.read(fd, _READ_SIZE)
                except OSError:
                    data = b""
                if not data:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                kind = names[fd]
                if kind == "events":
                    pending += data
                    garbled = None
                    try:
                        msgs = P.decode_frames(pending)
                    except P.ProtocolError as e:
                        msgs, garbled = e.messages, str(e)   # what came before it stands
                    for msg in msgs:
                        t = msg.T
                        if t == "ready":
                            if self._t_run is None:
                                batch.append(msg)
                                w.send(run)
                                self._t_run = time.monotonic()
                                self.running = True
                                deadline = (self._t_run + self.timeout) if self.timeout else float("inf")
                        elif t == "end":
                            end = msg
                        elif t == "outcome":
                            outcome = msg   # for an End made here (_after_the_end)
                            # and for the listener: the snippet's own code has ended,
                            # and what is left of the run is output and the End
                            batch.append(msg)
                        else:
                            # one budget for all output: what python wrote counts
                            # against what is written below it (the two caps kept
                            # 4,000,000 characters each, review finding)
                            if t == "output":
                                if out_capped:
                                    continue   # the budget went below python already
                                room = run.max_output - out_chars
                                out_chars += len(msg.text)
                                if out_chars > run.max_output:
                                    out_capped = True
                                    if room > 0:
                                        batch.append(P.Output(seq=msg.seq, stream=msg.stream,
                                                              text=msg.text[:room]))
                                    batch.append(P.output_cut(run.max_output))
                                    continue
                            elif t == "truncated" and msg.reason == "output":
                                if out_capped:
                                    continue   # said once
                                out_capped = True
                            seq = getattr(msg, "seq", None)
                            if seq is not None and seq > last_seq:
                                last_seq = seq
                            batch.append(msg)
                    if garbled is not None and end is None:
                        self._deliver(batch)
                        w.kill(grace=0)
                        return self._garbled(garbled)
                elif kind == "fault":
                    fault += data
                else:
                    text = decoders[kind].decode(data)
                    if not text:
                        continue
                    if self._t_run is None:
                        startup_log.append(text)
                    elif not out_capped:
                        out_chars += len(text)
                        if out_chars > run.max_output:
                            out_capped = True
                            batch.append(P.output_cut(run.max_output))
                        else:
                            batch.append(P.Output(seq=last_seq, stream=kind, text=text))
            self._deliver(batch)

        duration = (time.monotonic() - self._t_run) if self._t_run is not None else None
        if end is not None:
            return end
        if not (self._stop_requested or self._timed_out or self._t_run is None):
            # its pipes all closed without an End: given a moment to leave by itself.
            # SIGTERM at once reached a worker whose snippet had closed its
            # descriptors between its last write and its own exit with code 72, and
            # the run read as "killed by SIGTERM" in two runs of six (robustness
            # review). (Before the stop's check below: a Stop pressed meanwhile is
            # a stop, not a crash: code review.)
            w.wait_gone(_LEAVE_AFTER_EOF)
        if self._stop_requested or self._timed_out:
            # where it was (NOTE [where a stop found it] in capture/worker.py)
            line, tb = _fault_frames(fault.decode("utf-8", "replace"), run.filename)
            at = f" at line {line}" if line else ""
            if self._stop_requested:
                end = P.End(status="stopped", duration=duration, error=P.ErrorInfo(
                    type="Stopped", message=f"stopped{at} before the snippet finished",
                    line=line, traceback=tb))
            else:
                end = P.End(status="timeout", duration=duration, error=P.ErrorInfo(
                    type="Timeout", message=f"the snippet ran longer than {self.timeout:g} s "
                    f"and was stopped{at}", line=line, traceback=tb))
        elif self._t_run is None:
            w.kill(grace=0.5)
            return _start_failure(_exit_text(w.proc.returncode), "".join(startup_log) + fault.decode("utf-8", "replace"))
        else:
            w.kill(grace=1.0)  # it closed its pipes: reap it to learn how it died
            if w.proc.returncode is None:
                # (another thread was ending it, and kill() returned at once: "worker
                # did not exit" was said of a worker being killed: code review)
                w.wait_gone(2.0)
                w.proc.poll()
            if pending and w.proc.returncode == 0:
                # a clean exit inside a frame: a length no message had (NOTE [frames])
                return self._garbled(f"{len(pending):,} bytes of an unfinished frame at the end")
            end = _crash_end(w.proc.returncode, fault.decode("utf-8", "replace"), run.filename, duration)
        if outcome is not None:
            return self._after_the_end(outcome, end, w.proc.returncode, last_seq)
        return end

    def _after_the_end(self, outcome: P.Outcome, end: P.End, rc, seq: int) -> P.End:
        """The snippet's own code had ended (``outcome``) when the process was
        stopped, timed out or died, doing what python does after the last line
        (NOTE [the end of a run]): the End keeps the snippet's error; a process
        that left with an exit code (``os._exit`` in an ``atexit`` function) ended
        as python's would, with that code; anything else is said on stderr."""
        if end.status == "crash" and isinstance(rc, int) and rc >= 0:
            if outcome.status == "error":
                return P.End("error", outcome.error, rc, end.duration)
            return P.End("ok" if rc == 0 and outcome.status == "ok" else "exit", None, rc,
                         end.duration)
        what = {"stopped": "it was stopped",
                "timeout": f"the time limit ({self.timeout:g} s) stopped it"}.get(
                    end.status, f"the process died ({end.error.message if end.error else end.status})")
        self._deliver([P.Output(seq, "stderr",
                                f"GraphScope: the snippet had ended ({outcome.status}), and {what} "
                                "while it did what python does after the last line (its threads, "
                                "atexit functions).\n")])
        if outcome.status == "error":
            return P.End("error", outcome.error, outcome.exit_code, end.duration)
        if end.status in ("stopped", "timeout") and end.error is not None:
            did = ("stopped" if end.status == "stopped"
                   else f"ran longer than {self.timeout:g} s and was stopped")
            return P.End(end.status, P.ErrorInfo(
                end.error.type, f"{did} {P.AFTER_LAST_LINE}, in what python does then "
                "(its threads, atexit functions)"), None, end.duration)
        return end


def _exit_text(rc: Optional[int]) -> str:
    if rc is None:
        return "worker did not exit"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        hint = _SIGNAL_HINTS.get(name)
        return f"worker killed by {name}" + (f" ({hint})" if hint else "")
    if rc == 0:
        return "worker exited with code 0 before the snippet finished (os._exit(0)?)"
    if rc == P.EXIT_PIPE_CLOSED:
        # (a snippet's own os._exit(72) reads so too: the question says it may not be)
        return ("the worker lost the file descriptor GraphScope records through: did the "
                "snippet close descriptors it did not open (os.close, os.closerange)? "
                "Nothing after that could be recorded")
    return f"worker exited with code {rc} (os._exit?)"


_FAULT_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')


def _end_aside(w: "Worker") -> bool:
    """``w.kill()`` on a thread of its own, so the reader goes on reading: the
    worker's stack dump at SIGTERM (NOTE [where a stop found it]) is written
    into the fault pipe, and a dump of many threads bigger than the pipe held
    the worker until it was killed, cut before the run's own thread (code
    review: a timeout named a line of another thread). True."""
    threading.Thread(target=w.kill, name="graphscope-ender", daemon=True).start()
    return True


def _fault_frames(fault_text: str, filename: str) -> tuple:
    """(innermost snippet line, traceback of the snippet's frames) from a
    faulthandler dump (a crash, or a stop: NOTE [where a stop found it]); (None,
    None) without one. Of the threads dumped, the run's is the one whose
    outermost snippet frame is the module's; else the last with snippet frames."""
    blocks: list = [[]]      # the snippet's frames of each thread dumped
    for ln in fault_text.splitlines():
        if "most recent call first" in ln:
            blocks.append([])
            continue
        m = _FAULT_FRAME.match(ln)
        # (not the recorder's trampoline, compiled under the snippet's name: a hook
        # stopped by the time limit showed "line 8, in _graphscope_call": fuzz review)
        if m and m.group("file") == filename and m.group("func") != P.TRAMPOLINE:
            blocks[-1].append((int(m.group("line")), m.group("func")))
    # a stop dumps every thread (the signal may land in any): the run's is the one
    # the snippet's module code is in; else the last with the snippet's frames
    frames = next((b for b in reversed(blocks) if b and b[-1][1] == "<module>"),
                  next((b for b in reversed(blocks) if b), []))
    line = frames[0][0] if frames else None  # faulthandler lists most recent first
    tb = None
    if frames:
        tb = "\n".join(f'  File "{filename}", line {n}, in {f}' for n, f in reversed(frames))
    return line, tb


def _crash_end(rc, fault_text: str, filename: str, duration) -> P.End:
    """End for a worker that died without reporting: signal or exit code, and
    the innermost snippet line from faulthandler's dump when there is one."""
    line, tb = _fault_frames(fault_text, filename)
    message = _exit_text(rc) + (f" at line {line}" if line else "")
    return P.End(status="crash", exit_code=rc, duration=duration,
                 error=P.ErrorInfo(type="Crash", message=message, line=line, traceback=tb))


def _start_failure(reason: str, log: str) -> P.End:
    lines = [ln for ln in log.strip().splitlines() if ln.strip()]
    detail = f": {lines[-1].strip()}" if lines else ""
    return P.End(status="crash", error=P.ErrorInfo(
        type="WorkerStartError",
        message=f"the GraphScope worker could not start ({reason}){detail}",
        traceback=log.strip() or None))


class Runner:
    """Runs snippets in worker processes, one at a time.

    ``warm=True`` keeps one worker with torch already imported ready in the
    background: started now, and again as each run starts (so it is ready by
    the time the user runs again). Call :meth:`close`
    when done; no worker outlives it.
    """

    def __init__(self, warm: bool = True, python: Optional[str] = None,
                 worker: Optional[Worker] = None):
        self._python = python
        self._warm_enabled = warm
        self._lock = threading.Lock()
        # ``worker``: one started already, which the first run takes (the
        # export's, NOTE [a worker before the imports] in cli.py)
        self._warm: Optional[Worker] = worker
        self._session: Optional[_RunSession] = None
        self._closed = False
        if warm and worker is None:
            self._spawn_warm()

    # -- public API ------------------------------------------------------------
    def start(self, source: str, filename: str = "<snippet>",
              on_messages: Optional[OnMessages] = None, timeout: Optional[float] = 30.0,
              **run_fields) -> None:
        """Run ``source`` in a worker; returns at once. ``on_messages`` is called
        from a reader thread with lists of protocol messages, the last one an End.
        ``run_fields`` are other fields of :class:`protocol.Run` (``max_ops``...)."""
        run = P.Run(source=source, filename=filename, **run_fields)
        s = self._session
        if (s is not None and s.end is not None and not s.done.is_set()
                and threading.current_thread() is not s.thread):
            # The previous run's End has been handed to its listener but its reader
            # thread is still reaping the worker: a caller reacting to that End with
            # a new run waits this moment out instead of being refused.
            s.done.wait(2.0)
        with self._lock:
            if self._closed:
                raise RuntimeError("this Runner is closed")
            if self._session is not None and not self._session.done.is_set():
                raise RuntimeError("a run is already in progress")
            worker, self._warm = self._warm, None
            if worker is not None and not worker.alive() and _sent_ready_then_died(worker):
                worker.close()
                worker = None
            error = None
            if worker is None:
                try:
                    worker = Worker(self._python)
                except OSError as e:
                    error = f"{type(e).__name__}: {e}"
            session = _RunSession(self, worker, run, on_messages, timeout, start_error=error)
            self._session = session
        if self._warm_enabled and error is None:
            # The next worker imports torch while this run goes on, so runs in
            # quick succession (tests, a student pressing Run again) wait little.
            self._spawn_warm()
        session.thread.start()

    def stop(self) -> Optional[P.End]:
        """Stop the current run (terminate, short wait, kill). Returns within about
        a second; the run's last message is End(status="stopped") unless it had
        already ended."""
        s = self._session
        if s is None:
            return None
        if not s.done.is_set():
            if not s.ended.is_set():   # (after its End, its worker is leaving anyway)
                s.stop()
            if threading.current_thread() is not s.thread:
                s.done.wait(0.6)
        return s.end

    def interrupt(self) -> None:
        """Send SIGINT: the snippet sees KeyboardInterrupt where it is."""
        s = self._session
        if s is not None:
            s.interrupt()

    def wait(self, timeout: Optional[float] = None, *, reaped: bool = True) -> Optional[P.End]:
        """Block until the current run ends; its End (None if none or still running).
        ``reaped=False``: until its End is known, while its worker may still be
        leaving (the reader thread reaps it; for a caller that leaves at once)."""
        s = self._session
        if s is None:
            return None
        (s.done if reaped else s.ended).wait(timeout)
        return s.end

    @property
    def running(self) -> bool:
        s = self._session
        return s is not None and not s.done.is_set()

    def warm_ready(self, timeout: float = 0.0) -> bool:
        """True once the warm worker has imported torch and said Ready
        (waits up to ``timeout`` seconds). The Ready stays in the pipe for the run."""
        w = self._warm
        if w is None:
            return False
        try:
            r, _, _ = select.select([w.ev_r], [], [], timeout)
        except (OSError, ValueError):
            return False
        return bool(r) and w.alive()

    def worker_pids(self) -> set:
        """Process ids of the workers this runner owns right now (warm and running)."""
        pids = set()
        with self._lock:
            if self._warm is not None:
                pids.add(self._warm.pid)
            s = self._session
            if s is not None and not s.done.is_set() and s.worker is not None:
                pids.add(s.worker.pid)
        return pids

    def close(self, wait: bool = True) -> None:
        """Stop any run and end the warm worker; the Runner cannot be used again.
        ``wait=False``: a run whose End is known is not waited for while its
        worker leaves; the worker's process group is killed without a wait (for
        a process that leaves at once, the export)."""
        with self._lock:
            self._closed = True
            warm, self._warm = self._warm, None
        s = self._session
        if s is not None:
            if wait or not s.ended.is_set():
                self.stop()
                s.done.wait(3.0)
            elif not s.done.is_set() and s.worker is not None:
                # what the snippet left running goes with the process that leaves,
                # as the reader thread would end it (code review: a child that
                # handles SIGTERM outlived `graphscope export`)
                s.worker.end_group_now()
        if warm is not None:
            warm.discard()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- internals -------------------------------------------------------------
    def _spawn_warm(self) -> None:
        try:
            w = Worker(self._python)
        except OSError:
            return  # start() will try again and report the error
        with self._lock:
            if self._closed or self._warm is not None:
                stale = w
            else:
                self._warm, stale = w, None
        if stale is not None:
            stale.discard()

    def _run_finished(self, session: _RunSession) -> None:
        # A worker that could not start would fail again: do not spin up another.
        failed = (session.end is not None and session.end.error is not None
                  and session.end.error.type == "WorkerStartError")
        if failed:
            with self._lock:
                warm, self._warm = self._warm, None
            if warm is not None:
                warm.discard()
        elif self._warm_enabled and not self._closed and self._warm is None:
            self._spawn_warm()


def _sent_ready_then_died(worker: Worker) -> bool:
    """A warm worker that died while idle (killed from outside) is replaced
    silently; one that died before Ready is a start failure worth reporting."""
    r, _, _ = select.select([worker.ev_r], [], [], 0)
    if not r:
        return False
    try:
        head = bytearray(os.read(worker.ev_r, 1 << 16))
    except OSError:
        return False
    try:
        msgs = P.decode_frames(head)
    except P.ProtocolError:
        return False
    return bool(msgs) and msgs[0].T == "ready"


# -- blocking convenience ---------------------------------------------------------

_shared: Optional[Runner] = None
_shared_lock = threading.Lock()


def shared_runner() -> Runner:
    """The process-wide Runner used by :func:`run_to_trace` (keeps a warm worker)."""
    global _shared
    with _shared_lock:
        if _shared is None or _shared._closed:
            _shared = Runner(warm=True)
            atexit.register(_shared.close)
        return _shared


def run_to_trace(source: str, filename: str = "<snippet>", timeout: Optional[float] = 30.0,
                 *, runner: Optional[Runner] = None, also: Optional[OnMessages] = None,
                 reaped: bool = True, into: Optional[Trace] = None, **run_fields) -> Trace:
    """Run ``source`` in a worker and return the complete :class:`Trace` (blocking).

    Uses the shared warm Runner unless ``runner`` is given (or the shared one is
    busy in another thread, in which case a one-off Runner is used). ``also``
    is handed every batch of messages after the trace took it, on the runner's
    reader thread (the export encodes rows as they come with it). ``reaped=False``
    returns once the End is known, while the worker may still be leaving (see
    :meth:`Runner.wait`). ``into``: an empty Trace of the caller's to fill (and
    return), for an ``also`` that reads the trace as it grows.

    Arguments that cannot describe a run raise TypeError or ValueError here, in
    the caller, with what to pass instead."""
    _check_run_arguments(source, filename, timeout, run_fields)
    trace = into if into is not None else Trace(source=source, filename=filename)
    if also is not None:
        def take(batch, _extend=trace.extend):
            _extend(batch)
            also(batch)
    else:
        take = trace.extend
    with quiet_gc.quieted():   # the trace's rows pile up (NOTE [gc during capture])
        return _run_into(trace, source, filename, timeout, runner, take, run_fields, reaped)


def _check_run_arguments(source, filename, timeout, run_fields) -> None:
    if not isinstance(source, str):
        hint = " (decode it first: source.decode('utf-8'))" if isinstance(
            source, (bytes, bytearray)) else ""
        raise TypeError(f"source must be the snippet's text, a str, not "
                        f"{type(source).__name__}{hint}")
    if not isinstance(filename, str) or not filename:
        raise TypeError(f"filename must be a non-empty str, not {filename!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(
            timeout, (int, float)) or not timeout > 0 or timeout != timeout):
        raise ValueError(f"timeout must be a positive number of seconds or None, "
                         f"not {timeout!r}")
    fields = [f.name for f in dataclasses.fields(P.Run) if f.name not in ("source", "filename")]
    for key, value in run_fields.items():
        if key not in fields:
            allowed = ", ".join(fields)
            raise TypeError(f"unknown run setting {key!r} (known: {allowed})")
        if key.startswith("max_") or key == "value_limit":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{key} must be a whole number >= 0, not {value!r}")
        elif key == "argv" and value is not None:
            if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                raise ValueError(f"argv must be a list of str or None, not {value!r}")
        elif key == "memory_limit" and value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or \
                    not MIN_MEMORY_LIMIT <= value < 1 << 63:
                raise ValueError(f"memory_limit must be None or a number of bytes from "
                                 f"{MIN_MEMORY_LIMIT:,} (1 GiB), not {value!r}")


MIN_MEMORY_LIMIT = 1 << 30   # torch and the worker alone map several hundred MB


def _run_into(trace, source, filename, timeout, runner, take, run_fields, reaped) -> Trace:
    own = None
    if runner is None:
        runner = shared_runner()
        try:
            runner.start(source, filename, take, timeout=timeout, **run_fields)
        except RuntimeError:
            runner = own = Runner(warm=False)
            runner.start(source, filename, take, timeout=timeout, **run_fields)
    else:
        runner.start(source, filename, take, timeout=timeout, **run_fields)
    try:
        runner.wait(reaped=reaped or own is not None)
    except BaseException:  # Ctrl+C while waiting: never leave the worker behind
        runner.stop()
        raise
    finally:
        if own is not None:
            own.close()
    return trace
