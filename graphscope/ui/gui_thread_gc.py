"""Cyclic garbage collected on the GUI thread only.

NOTE [collections on the GUI thread]: Python's collector runs on whichever
thread allocates when a generation fills up. In the window that is often the
runner's reader thread, which decodes tens of thousands of messages while a
run streams in. A collection there that finds a cycle holding Qt objects (a
closed dialog, a menu, a lambda connected to a signal that refers to its
widget) destroys them on that thread: Qt objects must die on the thread they
live on, and a review saw the test suite hang so (the reader thread's
collection in ``~QObject`` waiting for the GIL, the GUI thread holding it and
waiting for a Qt mutex in ``~QAction``). So while the window runs, automatic
collection is off and a timer on the GUI thread collects with the same
thresholds (pyqtgraph's ``GarbageCollector`` does the same; the Python
developers' own advice for Qt programs). Counting goes on as before; only the
place of the collection moves. A full collection waits, as python's own does,
until the objects that survived younger collections since the last one are a
quarter of those it would walk: a 20,000-op trace holds 270,000 objects, and
walking them takes 70-130 ms, a hitch in the middle of a lecture's stepping
that python's rule spares it.
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    """Collect on the GUI thread's timer; ``stop`` puts automatic collection back."""

    def __init__(self, parent=None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        self._long_lived = len(gc.get_objects(generation=2))
        self._pending = 0   # (about) objects moved to the oldest generation since
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> None:
        """Collect the generations that are due, as the automatic collector would."""
        c0, c1, c2 = gc.get_count()
        t0, t1, t2 = gc.get_threshold()
        if not t0 or c0 <= t0:   # (a threshold of 0 turns collection off, as in python)
            return
        gen = 0
        if c1 > t1:
            gen = 1
            if c2 > t2 and self._pending >= self._long_lived // 4:
                gen = 2
        if gen == 1:   # what survives goes to the oldest generation (garbage counted too)
            self._pending += (len(gc.get_objects(generation=0))
                              + len(gc.get_objects(generation=1)))
        gc.collect(gen)
        if gen == 2:
            self._long_lived = len(gc.get_objects(generation=2))
            self._pending = 0

    def stop(self) -> None:
        self._timer.stop()
        if self._was_enabled:
            gc.enable()
