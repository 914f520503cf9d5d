"""Qt wrapper of ``graphscope.runner.Runner``: messages in batches on the GUI thread.

The runner calls back on its reader thread. Touching widgets there is not
allowed, and one signal per message would repaint per message, so the reader
only appends to a buffer under a lock and wakes the GUI thread once (a queued
signal) when the buffer goes from empty to non-empty. The GUI thread then
drains everything that arrived meanwhile: one ``batch`` signal, one repaint.
A busy GUI thread therefore gets bigger batches, never a backlog of wake-ups.

Each run has a generation number; messages of an older run (a stopped one
whose reader is still finishing) are dropped.
"""
from __future__ import annotations

import threading
from typing import Optional

from PySide6.QtCore import QObject, Qt, QTimer, Signal

from graphscope import protocol as P

MAX_BATCH = 600      # messages handed to the window per turn of the event loop
BACKLOG_BATCH = 3000 # ... when it is far behind (after a Stop, or a run faster than
                     # drawing): each slice costs the window a fixed amount too, and
                     # 50,000 ops drained in 3.2 s this way against 4.9 s in 600s


# NOTE [the window's op limit]: the window records at most this many ops of a
# run (the worker's own limit, 200,000, is for export). It draws about 12,000
# ops a second (bench_gui.py: 20,000 drawn in 1.7 s), and what was recorded is
# drawn even after Stop: a runaway ``while True`` loop filled 200,000 ops in a
# few seconds, and Stop then took 19 s to show (review finding). A graph this
# big is already past what a picture can teach; the run goes on unrecorded
# and the status line says so.
WINDOW_MAX_OPS = 20_000


class RunController(QObject):
    """Run / stop snippets; ``batch(list)`` of protocol messages, then ``finished(End)``."""

    started = Signal()
    batch = Signal(list)
    finished = Signal(object)        # protocol.End
    _wake = Signal()

    def __init__(self, parent=None, timeout: Optional[float] = 60.0, runner=None, **run_fields):
        """``runner``: a shared ``graphscope.runner.Runner`` (tests share one warm
        worker between windows); by default the controller makes and owns its own."""
        super().__init__(parent)
        self.timeout = timeout
        self.run_fields = {"max_ops": WINDOW_MAX_OPS, **run_fields}
        self._lock = threading.Lock()
        self._buffer: list = []
        self._generation = 0
        self._running = False
        self._runner = runner
        self._owns_runner = runner is None
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    # -- control ---------------------------------------------------------------
    def runner(self):
        """The Runner (created on first use; it starts a warm worker at once)."""
        if self._runner is None:
            from graphscope.runner import Runner
            self._runner = Runner(warm=True)
        return self._runner

    def warm_up(self) -> None:
        """Start the warm worker now, so the first Run is fast."""
        self.runner()

    def is_running(self) -> bool:
        return self._running

    def run(self, source: str, filename: str = "<snippet>", cwd: Optional[str] = None) -> None:
        """Start ``source`` in a worker. A run still going, or still being handed
        over (the backlog of a fast run, its End last), is abandoned: what it has
        not handed over is dropped, and its late messages (the End of its stop)
        carry the old generation. Stopping it the way Stop does handed a slice of
        it to the window, which had already made the new run's view: a 3-op
        snippet showed 1,503 ops, and the old End could finish the new run
        (robustness review)."""
        with self._lock:
            self._generation += 1
            gen = self._generation
            self._buffer.clear()
        if self._running and self._runner is not None:
            self._runner.stop()          # returns within about a second
        self._running = True
        self.started.emit()

        def on_messages(msgs, gen=gen):
            self._receive(gen, msgs)

        try:
            runner = self.runner()
            fields = self.run_fields if cwd is None else {**self.run_fields, "cwd": cwd}
            runner.start(source, filename, on_messages, timeout=self.timeout, **fields)
        except Exception as e:  # the worker could not even start: say so, keep the window
            self._receive(gen, [P.End(status="crash", error=P.ErrorInfo(
                type="Crash", message=f"could not start the worker: {e}"))])

    def stop(self) -> None:
        """Stop the running snippet; the runner reports End(status='stopped')."""
        if self._running and self._runner is not None:
            self._runner.stop()          # returns within about a second
            self._drain()                # deliver its End(stopped) now

    def shutdown(self) -> None:
        """Stop everything and release worker processes (window closing, test teardown)."""
        with self._lock:
            self._generation += 1       # late messages of the run are dropped
        if self._runner is not None:
            if self._running:
                self._runner.stop()
            if self._owns_runner:
                try:
                    self._runner.close()
                finally:
                    self._runner = None
        self._running = False

    # -- reader thread -> GUI thread -------------------------------------------
    def _receive(self, gen: int, msgs: list) -> None:
        with self._lock:
            if gen != self._generation:
                return
            wake = not self._buffer
            self._buffer.extend(msgs)
        if wake:
            self._wake.emit()

    def _drain(self) -> None:
        # At most MAX_BATCH messages per turn of the event loop: a 20,000-op trace
        # arriving at once is handed over in slices, and input and painting get
        # their turn in between (the window stays responsive while it streams in).
        with self._lock:
            n = BACKLOG_BATCH if len(self._buffer) > 4 * MAX_BATCH else MAX_BATCH
            msgs = self._buffer[:n]
            del self._buffer[:n]
            more = bool(self._buffer)
        if more:
            QTimer.singleShot(0, self._drain)
        if not msgs:
            return
        end = None
        if msgs[-1].T == "end":
            end = msgs.pop()
        if msgs:
            self.batch.emit(msgs)
        if end is not None and self._running:
            self._running = False
            self.finished.emit(end)
