"""Typing Python in the code editor: Tab, Shift+Tab, Return and Backspace make
spaces, one level at a time, each as one undo step, while opened and pasted text
keeps its own tabs (NOTE [editor indentation] in ui/editor_indent.py).

The text in these tests marks the cursor with ``|`` and, when there is a
selection, its anchor with ``^``."""
import pytest
from PySide6.QtCore import QMimeData, Qt
from PySide6.QtGui import QTextCursor

from graphscope.ui.editor import CodeEditor

SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def editor(qtbot):
    e = CodeEditor()
    qtbot.addWidget(e)
    return e


def _load(e: CodeEditor, marked: str) -> str:
    """Opens ``marked`` without its marks, cursor (and anchor) where they were;
    returns the plain text."""
    text = marked.replace("|", "").replace("^", "")
    e.setPlainText(text)
    pos = marked.replace("^", "").index("|")
    anchor = marked.replace("|", "").index("^") if "^" in marked else pos
    cur = e.textCursor()
    cur.setPosition(anchor)
    cur.setPosition(pos, QTextCursor.MoveMode.KeepAnchor)
    e.setTextCursor(cur)
    return text


def _marked(e: CodeEditor) -> str:
    """The editor's text with its cursor (and anchor) marked as ``_load`` reads them."""
    text, cur = e.toPlainText(), e.textCursor()
    marks = sorted([(cur.position(), "|")] + ([(cur.anchor(), "^")] if cur.hasSelection() else []),
                   reverse=True)
    for at, mark in marks:
        text = text[:at] + mark + text[at:]
    return text


def _undoes_in_one_step(e: CodeEditor, before: str) -> bool:
    e.undo()
    return e.toPlainText() == before


def test_tab_inserts_spaces_to_the_next_multiple_of_four(editor, qtbot):
    before = _load(editor, "x = 1|")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert _marked(editor) == "x = 1   |"                 # column 5 to 8
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert _marked(editor) == "x = 1       |"
    assert "\t" not in editor.toPlainText()
    editor.undo()
    assert editor.toPlainText() == "x = 1   "              # one Tab per undo step
    assert _undoes_in_one_step(editor, before)
    # the student's case: a line indented with Tab under one indented with spaces
    _load(editor, "if True:\n    a = 1\n|")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    qtbot.keyClicks(editor, "b = 2")
    assert _marked(editor) == "if True:\n    a = 1\n    b = 2|"
    compile(editor.toPlainText(), "<snippet>", "exec")     # no IndentationError


def test_tab_with_a_selection_indents_the_lines_it_touches(editor, qtbot):
    before = _load(editor, "def f(x):\n^y = x\n\nreturn| y\nprint(f(2))")
    changes = []
    editor.textChanged.connect(lambda: changes.append(1))
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    # nothing deleted; the empty line gets no trailing spaces; the selection
    # covers the whole lines, so a second Tab indents them again
    assert _marked(editor) == "def f(x):\n^    y = x\n\n    return y|\nprint(f(2))"
    assert len(changes) == 1                               # the window checks "edited" once
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert _marked(editor) == "def f(x):\n^        y = x\n\n        return y|\nprint(f(2))"
    editor.undo()
    assert _undoes_in_one_step(editor, before)


def test_a_selection_up_to_the_start_of_a_line_leaves_that_line_alone(editor, qtbot):
    # whole lines dragged over, from the bottom up: the cursor ends at the top
    before = _load(editor, "for i in range(2):\n|a = i\nb = i\n^print(a)")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert _marked(editor) == "for i in range(2):\n|    a = i\n    b = i^\nprint(a)"
    compile(editor.toPlainText(), "<snippet>", "exec")
    assert _undoes_in_one_step(editor, before)
    # a selection inside one line indents that line and does not replace the text
    _load(editor, "    a = ^i|")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    assert _marked(editor) == "^        a = i|"
    assert _undoes_in_one_step(editor, "    a = i")


def test_shift_tab_dedents_the_selected_lines_or_the_cursors_line(editor, qtbot):
    before = _load(editor, "if x:\n^      a = 1\n\tb = 2\n  c = 3\nd = |4")
    qtbot.keyClick(editor, Qt.Key.Key_Backtab, SHIFT)          # what Qt delivers for Shift+Tab
    # back to the previous level (six spaces to four), or one tab, per line; a line
    # at column 0 stays
    assert _marked(editor) == "if x:\n^    a = 1\nb = 2\nc = 3\nd = 4|"
    assert _undoes_in_one_step(editor, before)
    # no selection: the cursor's line, the cursor staying on its text
    _load(editor, "for i in x:\n        y = |i")
    qtbot.keyClick(editor, Qt.Key.Key_Backtab, SHIFT)
    assert _marked(editor) == "for i in x:\n    y = |i"
    qtbot.keyClick(editor, Qt.Key.Key_Tab, SHIFT)              # Shift+Tab as some keyboards send it
    assert _marked(editor) == "for i in x:\ny = |i"


def test_return_keeps_the_indentation_and_adds_a_level_after_a_colon(editor, qtbot):
    before = _load(editor, "for i in range(2):|")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert _marked(editor) == "for i in range(2):\n    |"
    assert _undoes_in_one_step(editor, before)
    cases = {
        "def f(x):\n    if x:  # the branch|": "    if x:  # the branch\n        |",
        "def f(x):\n    y = x  # not a header:|": "    y = x  # not a header:\n    |",
        '    if s == "#":|': '    if s == "#":\n        |',         # a '#' inside a string
        "\tx = 1|": "\tx = 1\n\t|",                                 # an opened file's own tab
        "    y = f(a,| b)": "    y = f(a,\n    | b)",                # a line split in two
        "    ^old| = 1": "    \n    | = 1",                          # a selection replaced
    }
    for start, end in cases.items():
        _load(editor, start)
        qtbot.keyClick(editor, Qt.Key.Key_Return)
        assert _marked(editor).endswith(end), start
    _load(editor, "if x:|")
    qtbot.keyClick(editor, Qt.Key.Key_Enter, Qt.KeyboardModifier.KeypadModifier)
    assert _marked(editor) == "if x:\n    |"
    # a read-only editor stays as it is
    _load(editor, "if x:|")
    editor.setReadOnly(True)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    assert editor.toPlainText() == "if x:"


def test_typing_a_loop_body_indents_it_the_way_python_reads_it(editor, qtbot):
    _load(editor, "|")
    qtbot.keyClicks(editor, "for i in range(2):")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "a = i")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "b = i")
    assert editor.toPlainText() == "for i in range(2):\n    a = i\n    b = i"
    compile(editor.toPlainText(), "<snippet>", "exec")


def test_backspace_in_the_indentation_goes_back_a_level(editor, qtbot):
    before = _load(editor, "if x:\n      |y = 1")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert _marked(editor) == "if x:\n    |y = 1"            # six spaces to four
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert _marked(editor) == "if x:\n|y = 1"
    editor.undo()
    assert editor.toPlainText() == "if x:\n    y = 1"          # one level per undo step
    assert _undoes_in_one_step(editor, before)
    # past the indentation Backspace deletes one character; spaces after a tab go
    # back to its level, and a tab goes alone
    _load(editor, "    y  |")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert _marked(editor) == "    y |"
    _load(editor, "\t  |x")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert _marked(editor) == "\t|x"
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert _marked(editor) == "|x"


def test_opened_and_pasted_tabs_stay_and_a_level_under_them_is_a_tab(editor, qtbot):
    source = "def f(x):\n\treturn x\n"
    _load(editor, "|" + source)
    assert editor.toPlainText() == source                      # opening rewrites nothing
    mime = QMimeData()
    mime.setText("if x:\n\ty = 1\n")
    editor.insertFromMimeData(mime)                            # what Ctrl+V does
    assert editor.toPlainText() == "if x:\n\ty = 1\n" + source
    cur = editor.textCursor()
    cur.setPosition(len("if x:\n\ty = 1"))
    editor.setTextCursor(cur)
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClick(editor, Qt.Key.Key_Tab)                     # a level here is a tab
    assert editor.toPlainText() == "if x:\n\ty = 1\n\t\t\n" + source


def test_code_indented_with_tabs_gets_tabs_and_keeps_them(editor, qtbot):
    """In a file indented with tabs, Tab typed four spaces that looked level with the
    tab above and raised IndentationError; Shift+Tab took the tab off the front of
    "tab, four spaces", and Backspace one space of a level (code review)."""
    _load(editor, "def f():\n\tx = 1\n|")
    qtbot.keyClick(editor, Qt.Key.Key_Tab)
    qtbot.keyClicks(editor, "return x")
    assert editor.toPlainText() == "def f():\n\tx = 1\n\treturn x"
    compile(editor.toPlainText(), "<snippet>", "exec")
    _load(editor, "def f():\n\tif x:|")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "y = 1")
    assert editor.toPlainText() == "def f():\n\tif x:\n\t\ty = 1"
    _load(editor, "def f():\n\tif x:\n\t    w = |2")
    qtbot.keyClick(editor, Qt.Key.Key_Backtab, SHIFT)
    assert editor.toPlainText() == "def f():\n\tif x:\n\tw = 2"
    _load(editor, "def f():\n\tif x:\n\t    |w = 2")
    qtbot.keyClick(editor, Qt.Key.Key_Backspace)
    assert editor.toPlainText() == "def f():\n\tif x:\n\tw = 2"


def test_a_tab_indented_body_below_the_cursor_sets_the_level_too(editor, qtbot):
    """On a function's first line, with its tab-indented body below, Return typed
    four spaces above the tab (TabError: a second code review)."""
    _load(editor, "def f():|\n\treturn 1\n")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.keyClicks(editor, "x = 1")
    assert editor.toPlainText() == "def f():\n\tx = 1\n\treturn 1\n"
    compile(editor.toPlainText(), "<snippet>", "exec")
