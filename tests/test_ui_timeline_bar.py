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


@pytest.mark.parametrize("scale", [1.0, 1.5, 2.5])
def test_the_closed_speed_list_shows_each_speed_s_whole_name(qtbot, scale):
    """Sized for seven characters, the closed list showed "Normal (5/s" and
    "Very fast (" cut off (visual review). Closed it names the speed; open, the
    names carry their rates."""
    from PySide6.QtWidgets import (QApplication, QStyle, QStyleOptionComboBox)
    from graphscope.ui.timeline_bar import SPEEDS, TimelineBar
    bar = TimelineBar()
    qtbot.addWidget(bar)
    bar.set_text_scale(scale)
    bar.resize(700, bar.sizeHint().height())
    bar.show()
    QApplication.processEvents()
    box = bar.speed_box
    opt = QStyleOptionComboBox()
    box.initStyleOption(opt)
    field = box.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                       QStyle.SubControl.SC_ComboBoxEditField, box)
    fm = box.fontMetrics()
    for i, (label, _) in enumerate(SPEEDS):
        name = label.split(" (")[0]
        assert fm.horizontalAdvance(name) <= field.width(), (scale, name, field.width())
    assert [box.itemText(i) for i in range(box.count())] == [label for label, _ in SPEEDS]
    # the box's own picture says the name alone (not the rate, cut off)
    box.setCurrentIndex(2)
    assert box.currentText() == "Normal (5/s)"
    assert box.displayed_text() == "Normal"


def test_the_closed_speed_list_paints_the_name_alone(qtbot):
    """Code review: the test above checked the text the box would paint, never the
    painting. The box looks as Qt paints it when the item is the short name."""
    from PySide6.QtWidgets import QApplication
    from graphscope.ui.timeline_bar import TimelineBar
    bar = TimelineBar()
    qtbot.addWidget(bar)
    bar.resize(700, bar.sizeHint().height())
    bar.show()
    box = bar.speed_box
    box.setCurrentIndex(2)                     # "Normal (5/s)"
    QApplication.processEvents()
    shown = box.grab().toImage()
    box.setItemText(2, "Normal")               # (Qt's own painting of the short name)
    assert box.grab().toImage() == shown
    box.setItemText(2, "Slow (2/s)")
    assert box.grab().toImage() != shown
