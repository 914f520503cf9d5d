"""A long run streaming into the window: the controller's slices and the timeline strip."""
import pytest

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def test_the_timeline_strip_takes_a_streaming_run_in_pieces(qtbot):
    """A long run streams in hundreds of batches: the strip adds the new steps'
    segments only, and ends up as if it had been given them all at once."""
    from graphscope.ui.timeline_bar import TimelineBar
    kinds = (["op"] * 5 + ["backward_call"] + ["backward"] * 3) * 4 + ["op"] * 2
    whole, pieces = TimelineBar(), TimelineBar()
    qtbot.addWidget(whole)
    qtbot.addWidget(pieces)
    whole.set_steps(kinds)
    for i in range(0, len(kinds), 7):
        pieces.add_steps(kinds[i:i + 7])
    assert pieces.step_count() == whole.step_count() == len(kinds)
    assert pieces.strip._segments == whole.strip._segments
    assert [k for _, _, k in whole.strip._segments] == ["op", "backward"] * 4 + ["op"]


def test_a_backlog_reaches_the_window_in_bigger_slices(qtbot):
    """Far behind (after a Stop, or a run faster than drawing), the controller
    hands over bigger slices: each costs the window a fixed amount as well."""
    from graphscope import protocol as P
    from graphscope.ui.run_controller import BACKLOG_BATCH, MAX_BATCH, RunController
    c = RunController(runner=object())          # no run is started: messages fed in
    sizes = []
    c.batch.connect(lambda msgs: sizes.append(len(msgs)))
    c._receive(c._generation, [P.Output(i, "stdout", ".") for i in range(10 * MAX_BATCH + 100)])
    qtbot.waitUntil(lambda: sum(sizes) == 10 * MAX_BATCH + 100, timeout=5000)
    assert sizes[0] == BACKLOG_BATCH and max(sizes) <= BACKLOG_BATCH
    assert sizes[-1] <= MAX_BATCH                # the tail, once caught up: live slices
