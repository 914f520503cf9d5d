"""The code editor's wrapped lines: a hanging indent at the line's own indentation
(NOTE [hanging indent] in ui/editor.py), with line numbers, the step marker and
clicks still on the right lines."""
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFontMetricsF, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from graphscope.ui.editor import HANG_COLUMNS, CodeEditor, indent_columns, wrap_point

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

SNIPPET = """def run(sequence):
    for x in sequence:
        # one multiply per element, a comment long enough to wrap more than once here
        h = w * h + x
    return h
"""
COMMENT = 3          # 1-based line of the long comment


@pytest.fixture
def editor(qtbot):
    e = CodeEditor()
    qtbot.addWidget(e)
    e.resize(320, 500)
    e.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    e.setPlainText(SNIPPET)
    e.show()
    qtbot.waitExposed(e)
    return e


def _col(e):
    return QFontMetricsF(e.document().defaultFont()).horizontalAdvance(" ")


def _block(e, line):
    b = e.document().findBlockByNumber(line - 1)
    e.blockBoundingRect(b)          # laid out (and hung) as a paint would
    return b


def test_indent_columns_counts_spaces_and_tabs():
    assert indent_columns("    x") == 4
    assert indent_columns("\tx") == 4
    assert indent_columns("  \t x") == 5
    assert indent_columns("x  ") == 0


def test_continuation_lines_hang_at_the_lines_own_indentation(editor):
    b = _block(editor, COMMENT)
    tl = b.layout()
    assert tl.lineCount() >= 2, "the comment should wrap at this width"
    margin = editor.document().documentMargin()
    indent = 8 * _col(editor)                          # the comment's 8 spaces
    assert tl.lineAt(0).x() == pytest.approx(margin)
    for i in range(1, tl.lineCount()):
        x = tl.lineAt(i).x() - margin
        assert x >= indent, (i, x, indent)
        assert x == pytest.approx((8 + HANG_COLUMNS) * _col(editor))
    # the text cursor on a continuation row is drawn there too (viewport coordinates)
    second = tl.lineAt(1)
    cur = QTextCursor(b)
    cur.setPosition(b.position() + second.textStart() + 1)
    editor.setTextCursor(cur)
    first_x = editor.cursorRect(QTextCursor(b)).x()    # column 0 of the block
    assert editor.cursorRect().x() - first_x >= indent
    # every character is still laid out once: the rows cover the whole text
    assert sum(tl.lineAt(i).textLength() for i in range(tl.lineCount())) == len(b.text())


def test_line_count_and_following_lines_stay_right(editor):
    b = _block(editor, COMMENT)
    rows = b.layout().lineCount()
    assert b.lineCount() == rows                      # what QPlainTextEdit scrolls by
    top = editor.blockBoundingGeometry(b).top()
    h = editor.blockBoundingRect(b).height()
    nxt = _block(editor, COMMENT + 1)
    assert editor.blockBoundingGeometry(nxt).top() == pytest.approx(top + h)
    assert h == pytest.approx(rows * b.layout().lineAt(0).height(), abs=1)


def test_clicks_and_marker_land_on_the_right_line(editor, qtbot):
    b = _block(editor, COMMENT)
    nxt = _block(editor, COMMENT + 1)
    off = editor.contentOffset()
    y_next = int(editor.blockBoundingGeometry(nxt).translated(off).top() + 5)
    y_last_row = int(editor.blockBoundingGeometry(b).translated(off).bottom() - 5)
    with qtbot.waitSignal(editor.line_clicked, timeout=2000) as sig:
        qtbot.mouseClick(editor._gutter, Qt.MouseButton.LeftButton, pos=QPoint(5, y_next))
    assert sig.args == [COMMENT + 1]
    with qtbot.waitSignal(editor.line_clicked, timeout=2000) as sig:
        qtbot.mouseClick(editor._gutter, Qt.MouseButton.LeftButton, pos=QPoint(5, y_last_row))
    assert sig.args == [COMMENT]
    # the marker tints the whole wrapped line, every row of it
    editor.set_marker_line(COMMENT)
    (sel,) = editor.extraSelections()
    assert sel.cursor.selectionStart() == b.position()
    assert sel.cursor.selectionEnd() == b.position() + len(b.text())
    editor.set_marker_line(COMMENT + 1)
    (sel,) = editor.extraSelections()
    assert sel.cursor.block().blockNumber() == COMMENT


def test_the_marked_line_is_scrolled_into_view_when_lines_wrap(qtbot):
    """The scroll bar counts screen lines: with most lines wrapped (a narrow
    presentation editor), scrolling to a code line's number left the marked
    line below the view for a whole lesson (visual review)."""
    e = CodeEditor()
    qtbot.addWidget(e)
    e.resize(200, 240)
    e.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    e.setPlainText("".join(f"value_{i} = torch.tensor([{i}.0, 2.0, 3.0]) * weight_{i}\n"
                           for i in range(1, 41)))
    e.show()
    qtbot.waitExposed(e)
    doc = e.document()
    qtbot.waitUntil(lambda: doc.findBlockByNumber(0).layout().lineCount() >= 3 and
                    doc.findBlockByNumber(39).lineCount() >= 3, timeout=2000)   # wrapped
    for line in (12, 30, 40, 3, 25):
        e.set_marker_line(line)
        block = e.document().findBlockByNumber(line - 1)
        rect = e.blockBoundingGeometry(block).translated(e.contentOffset())
        assert rect.top() >= 0 and rect.bottom() <= e.viewport().height(), (line, rect)


def test_the_error_line_is_marked_with_a_cross_not_a_second_arrow(editor, qtbot):
    """After a run that raised, the orange error arrow stayed beside the current
    line's arrow at every step, and it was unclear which line was running
    (visual review): an arrow says "running", a cross "failed here"."""
    editor.set_error_line(3)
    editor.set_marker_line(1)
    img = editor._gutter.grab().toImage()
    dpr = img.devicePixelRatio()
    band = max(4, int(6 * editor._scale))

    def left_of_centre(line):
        block = editor.document().findBlockByNumber(line - 1)
        top = editor.blockBoundingGeometry(block).translated(editor.contentOffset()).top()
        h = block.layout().lineAt(0).height()
        x, y = band + 3 + h * 0.32 * 0.5, top + h / 2     # inside an arrow, off a cross
        return img.pixelColor(int(x * dpr), int(y * dpr))
    assert left_of_centre(1) == editor.colors["marker"]
    assert left_of_centre(3) != editor.colors["error"]
    editor.set_marker_line(3)                  # the step at the error: its arrow, in red
    img = editor._gutter.grab().toImage()
    assert left_of_centre(3) == editor.colors["error"]


def test_a_marked_line_taller_than_the_view_is_scrolled_to(qtbot):
    """Code review: a line taller than the view, starting below it, was taken
    for shown (its top was not above the view) and never scrolled to."""
    e = CodeEditor()
    qtbot.addWidget(e)
    e.resize(260, 160)
    e.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    long_line = "t = torch.tensor([" + ", ".join(f"{i}.0" for i in range(150)) + "])\n"
    e.setPlainText("".join(f"x{i} = {i}\n" for i in range(1, 30)) + long_line)
    e.show()
    qtbot.waitExposed(e)
    doc = e.document()
    e.set_marker_line(30)
    block = doc.findBlockByNumber(29)
    rect = e.blockBoundingGeometry(block).translated(e.contentOffset())
    assert rect.height() > e.viewport().height(), rect            # taller than the view
    assert 0 <= rect.top() < e.viewport().height() / 3, rect


def test_resizing_rewraps_and_no_wrap_leaves_lines_alone(editor, qtbot):
    b = _block(editor, COMMENT)
    narrow_rows = b.layout().lineCount()
    editor.resize(1400, 500)
    qtbot.waitUntil(lambda: _block(editor, COMMENT).layout().lineCount() == 1, timeout=2000)
    assert b.lineCount() == 1
    # (280, not 260: the hang keeps 12 columns of text, and at 260 px this machine's
    # monospace font, 10.23 px a column, left 19.9 columns: less than 8 + 12)
    editor.resize(280, 500)
    qtbot.waitUntil(lambda: _block(editor, COMMENT).layout().lineCount() >= narrow_rows,
                    timeout=2000)
    tl = b.layout()
    assert tl.lineAt(1).x() - editor.document().documentMargin() >= 8 * _col(editor)
    editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
    qtbot.waitUntil(lambda: _block(editor, COMMENT).layout().lineCount() == 1, timeout=2000)


def test_a_wrap_point_keeps_names_strings_and_comment_marks_whole():
    line = '    str(traced.inlined_graph).count("aten::tanh"))'
    cut = wrap_point(line, 0, line.index("tanh") + 1)    # Qt's break: "aten::t" / "anh"
    assert line[:cut].endswith(".count(")                # before the string, not in it
    code = "h = self.cell(x.unsqueeze(0), h)"
    cut = wrap_point(code, 0, code.index("squeeze") + 2)
    assert code[:cut] == "h = self.cell(x."
    comment = "x = w * 2          # a comment"
    assert comment[:wrap_point(comment, 0, 20)].rstrip() == "x = w * 2"   # no lone "#"
    assert wrap_point(code, 0, code.index(" h)") + 1) is None          # at a space: Qt's
    assert wrap_point(code, 0, len(code)) is None                        # the last row


def test_a_long_call_wraps_between_tokens_in_a_narrow_editor(editor, qtbot):
    editor.setPlainText('print("RNN steps:", str(traced.inlined_graph).count("aten::tanh"))\n')
    b = _block(editor, 1)
    tl = b.layout()
    assert tl.lineCount() >= 2
    text = b.text()
    rows = [text[tl.lineAt(i).textStart():tl.lineAt(i).textStart() + tl.lineAt(i).textLength()]
            for i in range(tl.lineCount())]
    assert "".join(rows) == text
    for a, b2 in zip(rows, rows[1:]):
        assert not (a[-1:].isalnum() and b2[:1].isalnum()), rows     # no word cut in two


def test_a_wrap_point_never_splits_a_number_and_stays_linear():
    line = "x = compute(1.5, 2.25e-3) + other.value"
    cut = wrap_point(line, 0, line.index("25e") + 1)
    assert line[:cut] == "x = compute(1.5, "
    assert wrap_point('s = "' + "x" * 5000 + '"', 0, 60) is None    # a data line: Qt's breaks


def test_a_region_decided_at_run_time_is_not_shaded_as_grad_off(editor):
    """`with torch.set_grad_enabled(phase == "train"):` turns grad off in some
    iterations only: its lines are not shaded as a no_grad block's are."""
    from graphscope import protocol as P
    editor.set_regions([P.Region("set_grad_enabled", None, 2, 3, "with", "x"),
                        P.Region("no_grad", False, 5, 5, "with", "y")])
    assert editor.region_lines() == {5}


def test_a_wrap_point_keeps_calls_numbers_and_keywords_whole_in_a_narrow_editor():
    """A presentation editor 230 px wide broke "torch.tensor(0" / ".0)",
    "RNNCell(3" / ", 4)" and "requires_gra" / "d=True" (visual review): Qt cut
    where the line was full, and a better point was only looked for between two
    letters, and only in the row's latter two thirds."""
    line = "h = torch.tensor(0.0, requires_grad=True)"
    cut = wrap_point(line, 0, line.index(".0,"))          # Qt's: "...tensor(0" / ".0,"
    assert line[:cut] == "h = torch.tensor("
    line = "cell = torch.nn.RNNCell(3, 4)"
    cut = wrap_point(line, 0, line.index(", 4)"))
    assert line[:cut] == "cell = torch.nn.RNNCell("
    line = "    requires_grad=True)  # a weight"
    cut = wrap_point(line, 4, line.index("d=True"))      # no point in the latter 2/3
    assert cut is None or line[4:cut] in ("", "requires_grad=")
    line = "w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)"
    cut = wrap_point(line, 0, line.index("d=True"))
    assert line[:cut] == "w = torch.tensor([0.5, -1.0, 2.0], "
    assert wrap_point(line, 0, line.index(" requires")) is None     # before a space: Qt's
    assert wrap_point(line, 0, line.index("requires")) is None      # after one: Qt's
