"""The timeline bar under the canvas: its scrub strip."""
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
