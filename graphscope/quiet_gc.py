"""Keeping the cyclic garbage collector off what a run piles up.

NOTE [gc during capture]: a run makes a few GC-tracked objects per op and
keeps them all: the worker's recorder its messages and a tensor-id entry per
tensor, the reading side (``run_to_trace``) the decoded rows of the Trace.
Each full collection walks all of them plus everything imported before
(~170k objects once torch is in), and with the default thresholds the
20,000-op chain ran five of them in the worker: about half the whole capture
time. On the reading side, collections made decoding the chain's 62,000
frames three times slower (0.58 s against 0.17 s measured with and without).
So for the run the objects that existed before it are frozen (``gc.freeze``:
never walked, never collected) and full collections are made rarer (third
threshold 10 -> 100); young collections are untouched, so short-lived cycles
(the snippet's, in the worker) are freed as usual, and ``gc.collect()`` still
collects everything not frozen. Both are undone when the run ends. A caller
that froze objects itself is left alone.
"""
from __future__ import annotations

import contextlib
import gc


def quiet():
    """Freeze what exists and make full collections rarer; returns what
    ``restore`` needs to undo it."""
    thresholds = gc.get_threshold()
    froze = gc.get_freeze_count() == 0
    if froze:
        gc.freeze()
    t0, t1, t2 = thresholds
    gc.set_threshold(t0, t1, max(t2, 100))
    return thresholds, froze


def restore(state) -> None:
    thresholds, froze = state
    gc.set_threshold(*thresholds)
    if froze:
        gc.unfreeze()


@contextlib.contextmanager
def quieted():
    state = quiet()
    try:
        yield
    finally:
        restore(state)
