"""The timeline bar's position label: the longest form of it that fits."""
import pytest

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def test_the_position_says_as_much_as_fits_and_never_breaks_mid_phrase(qtbot):
    """A word-wrapped label broke "Step 7 of 3,460 — forward, pass 1 of 203" into
    five lines of one or two words at 1024 px and 150% text (visual review).
    Each width gets whole lines: the full text, the phase on its own line, the
    short form."""
    from PySide6.QtWidgets import QApplication
    from graphscope.ui.timeline_bar import TimelineBar
    bar = TimelineBar()
    qtbot.addWidget(bar)
    bar.set_steps(["op"] * 3460)
    bar.set_passes([(i * 17, i * 17 + 16, f"Pass {i + 1}") for i in range(203)])
    bar.set_cursor(7, 3460, "forward", 0)
    full = "Step 7 of 3,460  \u2014  forward, pass 1 of 203"
    label = bar.position_label
    fm = label.fontMetrics()
    shown = []
    for width in (1400, 900, 700, 600, 520):
        bar.resize(width, bar.sizeHint().height())
        bar.show()
        QApplication.processEvents()      # (the layout hands the label its width)
        assert bar.position_text() == full        # the whole, whatever is shown
        text = label.text()
        shown.append(text)
        for line in text.split("\n"):
            assert fm.horizontalAdvance(line) <= label.contentsRect().width(), (width, text)
        assert text in (full, "Step 7 of 3,460\nforward, pass 1 of 203",
                        "7 / 3,460\nforward, 1/203", "7 / 3,460")
    assert shown[0] == full and shown[-1] != full, shown
    # the label never squeezes below its short form (it had shown nothing at all)
    assert label.minimumSizeHint().width() >= fm.horizontalAdvance("7 / 3,460")
    bar.set_cursor(3, 3460)
    assert bar.position_text() == "Step 3 of 3,460"
