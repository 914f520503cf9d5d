"""The code editor: the snippet with highlighting, line numbers and the step marker.

The editor shows three things the debugger needs beside the text itself:
the line that produced the current step (a marker in the gutter and a tinted
line), the line where the snippet raised (red), and the grad-disabled regions
(a tinted band in the gutter, so a ``with torch.no_grad():`` block is visible
at a glance). Clicking a line emits ``line_clicked`` so the window can select
the nodes that line created.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

from pygments import lex
from pygments.lexers import PythonLexer
from pygments.styles import get_style_by_name
from pygments.util import ClassNotFound
from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (QColor, QFont, QFontDatabase, QFontMetricsF, QPainter, QPen, QPolygonF,
                           QSyntaxHighlighter, QTextBlock, QTextCharFormat, QTextCursor,
                           QTextDocument, QTextFormat)
from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QPlainTextDocumentLayout, QPlainTextEdit, QTextEdit, QWidget

from graphscope.ui import editor_indent

BASE_POINT_SIZE = 13.0


def monospace_font(point_size: float) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPointSizeF(point_size)
    return font


class PygmentsHighlighter(QSyntaxHighlighter):
    """Python highlighting from a pygments style.

    Lexes line by line; a line inside a triple-quoted string is carried by the
    block state (1 = inside ''' , 2 = inside \"\"\") so docstrings stay one colour.
    """

    def __init__(self, document, style: str = "default"):
        super().__init__(document)
        self._lexer = PythonLexer(stripnl=False, ensurenl=False)
        self._formats: dict = {}
        self._backgrounds: tuple = ()
        self.set_style(style)

    def set_backgrounds(self, colors) -> None:
        """The backgrounds text is read on (the editor's, the marked line's):
        each token's colour is darkened or lightened until it reads at
        ``MIN_CONTRAST`` on all of them. The styles' comment colours, where the
        scenarios put their teaching notes, read at 3.3:1 on the marked line
        (teal on pink in light, grey on olive in high contrast: visual review)."""
        self._backgrounds = tuple(QColor(c) for c in colors)
        self._formats.clear()
        self.rehighlight()

    def set_style(self, style: str) -> None:
        try:
            self._style = get_style_by_name(style)
        except ClassNotFound:
            self._style = get_style_by_name("default")
        self._formats.clear()
        self.rehighlight()

    def _format(self, token) -> QTextCharFormat:
        fmt = self._formats.get(token)
        if fmt is None:
            fmt = QTextCharFormat()
            st = self._style.style_for_token(token)
            if st.get("color"):
                fmt.setForeground(readable(QColor("#" + st["color"]), self._backgrounds))
            if st.get("bold"):
                fmt.setFontWeight(QFont.Weight.Bold)
            if st.get("italic"):
                fmt.setFontItalic(True)
            self._formats[token] = fmt
        return fmt

    def highlightBlock(self, text: str) -> None:
        prev = self.previousBlockState()
        prefix = {1: "'''", 2: '"""'}.get(prev, "")
        src = prefix + text
        pos = -len(prefix)
        for token, value in lex(src, self._lexer):
            start, n = max(pos, 0), len(value) - max(0, -pos)
            if n > 0:
                self.setFormat(start, n, self._format(token))
            pos += len(value)
        self.setCurrentBlockState(_open_triple_quote(src))


MIN_CONTRAST = 4.5   # WCAG AA for body text


def _luminance(c: QColor) -> float:
    def f(v: float) -> float:
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * f(c.redF()) + 0.7152 * f(c.greenF()) + 0.0722 * f(c.blueF())


def contrast(a: QColor, b: QColor) -> float:
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def readable(color: QColor, backgrounds) -> QColor:
    """``color`` moved towards black (on light backgrounds) or white (on dark
    ones) until it reads at MIN_CONTRAST on every one of ``backgrounds``; as
    it is when it does already."""
    if not backgrounds:
        return color
    dark_bg = sum(_luminance(b) for b in backgrounds) / len(backgrounds) < 0.18
    target = QColor("#ffffff") if dark_bg else QColor("#000000")
    out = QColor(color)
    for k in range(1, 21):
        if min(contrast(out, b) for b in backgrounds) >= MIN_CONTRAST:
            break
        t = k / 20
        out = QColor.fromRgbF(color.redF() + (target.redF() - color.redF()) * t,
                              color.greenF() + (target.greenF() - color.greenF()) * t,
                              color.blueF() + (target.blueF() - color.blueF()) * t)
    return out


def _open_triple_quote(src: str) -> int:
    """Which triple quote is still open at the end of ``src`` (0 = none)."""
    open_q = None
    i = 0
    while i < len(src):
        if open_q is None and src[i] == "#":
            break
        for q in ("'''", '"""'):
            if src.startswith(q, i) and (open_q is None or open_q == q):
                open_q = None if open_q == q else q
                i += 2
                break
        i += 1
    return {"'''": 1, '"""': 2}.get(open_q, 0)


# lines of text above which the editor leaves it uncoloured (CodeEditor.setPlainText)
HIGHLIGHT_MAX_LINES = 5000
# lines longer than this are scrolled to, never wrapped (CodeEditor, MainWindow.arrange)
WRAP_MAX_CHARS = 1000

# columns a wrapped line's continuation sits further in than its own line's indentation
HANG_COLUMNS = 2
TAB_COLUMNS = editor_indent.INDENT     # a tab is drawn one indentation level wide


def indent_columns(text: str, tab: int = TAB_COLUMNS) -> int:
    """Columns of leading whitespace in ``text``, tabs to the next multiple of ``tab``."""
    col = 0
    for ch in text:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col = (col // tab + 1) * tab
        else:
            break
    return col


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_AFTER = frozenset(" .,([{=+-*/:")   # a wrapped line may end just after one of these


def wrap_point(text: str, start: int, end: int):
    """Where a wrapped line from ``start`` should end instead of ``end`` (Qt's
    break), or None to keep Qt's. Qt breaks a "word" longer than the line
    anywhere, and code has long ones: ``count("aten::t`` / ``anh")``. Such a line
    ends after the last ``.``, ``,``, ``(``, operator or space in its latter two
    thirds instead. A line that would end on a comment's ``#`` (its words on
    the next line) ends before the ``#``."""
    if end >= len(text) or end <= start or len(text) > _SMART_WRAP_MAX:
        return None   # (a 100 KB data line: Qt's breaks, in linear time)
    body = text[start:end].rstrip()
    if body.endswith("#") and len(body) > 1:
        return start + len(body) - 1
    if _cuts_a_token(text, end):
        # the latest good point; in its latter two thirds if it has one (a row left
        # short), else anywhere: a narrow presentation editor broke "requires_gra" /
        # "d=True" and "torch.tensor(0" / ".0)" where only an early point was free
        # (visual review)
        outside = _outside_strings(text, end)
        for k in range(end - 1, start, -1):
            if text[k - 1] in _AFTER and outside[k] and not _in_number(text, k):
                return k
    return None


def _cuts_a_token(text: str, end: int) -> bool:
    """Whether a row ending at ``end`` cuts a name, a number or a string's word (a
    row may end after a space, a separator or an operator, never inside a number):
    "RNNCell(3" / ", 4)" cut the call's arguments apart."""
    a, b = text[end - 1], text[end]
    if a == " " or b == " ":
        return False
    return a not in _AFTER or _in_number(text, end)


_SMART_WRAP_MAX = 2000   # longer lines: not code anyone reads wrapped


def _outside_strings(text: str, end: int) -> list:
    """For each position up to ``end``: True when it lies outside a quoted string
    (one pass; a rough reading, good enough to keep "aten::tanh" whole)."""
    out = [True] * (end + 1)
    quote = None
    i = 0
    while i < end:
        ch = text[i]
        if quote is None:
            if ch in "'\"":
                quote = ch
            elif ch == "#":
                break              # a comment: the rest is outside any string
        elif ch == "\\":
            i += 1
            if i <= end:
                out[i] = False
        elif ch == quote:
            quote = None
        i += 1
        if i <= end:
            out[i] = quote is None
    return out


def _in_number(text: str, k: int) -> bool:
    """Whether a break at ``k`` would split a number (``0.`` / ``5``, ``1e-`` / ``5``)."""
    a = text[k - 1]
    b = text[k - 2] if k >= 2 else ""
    return (a == "." and b.isdigit()) or (a in "+-" and b in "eE" and k >= 3
                                          and text[k - 3].isdigit())


def paragraph_separator_line(text: str) -> Optional[int]:
    """The line of the first U+2029 in ``text``, or None. The editor's document ends
    each line with one, so one in a file would be saved and run as a line break
    where python keeps the character (``CodeEditor.source``)."""
    at = text.find("\u2029")
    return None if at < 0 else text.count("\n", 0, at) + 1


class HangingIndentLayout(QPlainTextDocumentLayout):
    """QPlainTextDocumentLayout whose wrapped lines keep their line's indentation.

    NOTE [hanging indent]: QPlainTextDocumentLayout lays every line of a block at the
    left margin and ignores QTextBlockFormat's leftMargin and textIndent, so in a
    narrow editor a long line inside a ``for`` loop continued at column 0 and read as
    dedented code. Its layoutBlock is private, but every consumer (painting, the
    gutter, scrolling, cursor and hit tests) asks ``blockBoundingRect`` first, which is
    virtual: here a block whose continuation lines are not yet hung is laid out again,
    continuation lines at the block's indentation plus HANG_COLUMNS, and its line count
    (what QPlainTextEdit scrolls by) updated when the narrower lines wrap once more.
    """

    def _hang(self, block) -> None:
        tl = block.layout()
        if tl is None or tl.lineCount() < 2 or not block.isVisible():
            return                      # one line (or none yet): nothing wraps
        doc = self.document()
        margin = doc.documentMargin()
        # the first line is never hung, so its width is the one the layout wraps to
        # (QPlainTextDocumentLayout's textWidth is not in the Python binding)
        width = tl.lineAt(0).width()
        if width <= 0 or width > 1e8:
            return
        fm = QFontMetricsF(doc.defaultFont())
        col = fm.horizontalAdvance(" ")
        indent = (indent_columns(block.text()) + HANG_COLUMNS) * col
        # keep at least 12 columns per continuation line however deep the nesting
        indent = max(0.0, min(indent, width - 12 * col))
        if abs(tl.lineAt(1).x() - (margin + indent)) < 0.5:
            return                      # already hung at this width
        before = tl.lineCount()
        text = block.text()
        tl.beginLayout()
        height = 0.0
        first = True
        while True:
            line = tl.createLine()
            if not line.isValid():
                break
            line.setLeadingIncluded(True)
            hang = 0.0 if first else indent
            line.setLineWidth(width - hang)
            better = wrap_point(text, line.textStart(), line.textStart() + line.textLength())
            if better is not None:
                line.setNumColumns(better - line.textStart())
            line.setPosition(QPointF(margin + hang, height))
            height += line.height()
            if line.leading() < 0:
                height += math.ceil(line.leading())
            first = False
        tl.endLayout()
        if tl.lineCount() != before:
            block.setLineCount(tl.lineCount())
            self.documentSizeChanged.emit(self.documentSize())

    def blockBoundingRect(self, block):
        rect = super().blockBoundingRect(block)       # lays the block out if it is not
        tl = block.layout()
        if tl is not None and tl.lineCount() > 1:
            n = tl.lineCount()
            self._hang(block)
            if tl.lineCount() != n or rect.height() != tl.boundingRect().height():
                rect = super().blockBoundingRect(block)
        return rect


class _Gutter(QWidget):
    def __init__(self, editor: "CodeEditor"):
        super().__init__(editor)
        self._editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self._editor.gutter_width(), 0)

    def paintEvent(self, event) -> None:
        self._editor._paint_gutter(event)

    def mousePressEvent(self, event) -> None:
        block = self._editor.cursorForPosition(event.position().toPoint()).block()
        self._editor.line_clicked.emit(block.blockNumber() + 1)

    def mouseReleaseEvent(self, event) -> None:
        event.accept()              # the press was the click; nothing else gets it


class CodeEditor(QPlainTextEdit):
    """QPlainTextEdit with a gutter, a step marker and grad-region tints."""

    line_clicked = Signal(int)       # 1-based line the user clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        # NOTE [hanging indent]. The document and its layout are held here as well as by
        # their Qt parents: a layout whose Python side went away before its C++ side
        # (or the other way round) left its overrides pointing at a dead wrapper
        self._doc = QTextDocument(self)
        self._doc_layout = HangingIndentLayout(self._doc)
        self._doc.setDocumentLayout(self._doc_layout)
        self.setDocument(self._doc)
        self._gutter = _Gutter(self)
        self._marker_line: Optional[int] = None
        self._error_line: Optional[int] = None
        self._regions: list[tuple] = []   # (start, end, grad_enabled: None = at run time)
        self._scale = 1.0
        self.colors = {
            "gutter_bg": QColor("#f3f4f6"), "gutter_fg": QColor("#6b7280"),
            "marker": QColor("#2563eb"), "marker_bg": QColor(37, 99, 235, 40),
            "error": QColor("#dc2626"), "error_bg": QColor(220, 38, 38, 45),
            "region": QColor("#9ca3af"), "region_bg": QColor(156, 163, 175, 60),
        }
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.highlighter = PygmentsHighlighter(self.document())
        self._recheck_timer = QTimer(self)
        self._recheck_timer.setSingleShot(True)
        self._recheck_timer.setInterval(300)
        self._recheck_timer.timeout.connect(self._recheck)
        self.document().contentsChanged.connect(self._recheck_timer.start)
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._on_update_request)
        self.set_text_scale(1.0)

    # -- public API -----------------------------------------------------------
    def set_text_scale(self, f: float) -> None:
        self._scale = f
        self.setFont(monospace_font(BASE_POINT_SIZE * f))
        self._gutter.setFont(monospace_font(BASE_POINT_SIZE * f * 0.85))
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self._update_gutter_width()

    def set_colors(self, **colors) -> None:
        """Theme colours (QColor or '#rrggbb'); keys as in ``self.colors``."""
        for k, v in colors.items():
            self.colors[k] = QColor(v)
        self._refresh_selections()
        self._gutter.update()

    def setPlainText(self, text: str) -> None:
        """The text, coloured unless it is over HIGHLIGHT_MAX_LINES lines: the
        highlighter lexes every line on the GUI thread, at each theme change too
        (a 20,000-line file froze the window for 3 s each time: robustness
        review). Snippets are far shorter; a long file reads fine uncoloured.
        A line over WRAP_MAX_CHARS is scrolled to, not wrapped (Qt wraps one
        huge line in quadratic time: 16 s for 300 KB)."""
        self._prepare_for(text, text.count("\n"))
        super().setPlainText(text)
        self._recheck()

    def source(self) -> str:
        """The text exactly as typed or opened: what runs and what is saved.
        ``toPlainText`` turns a no-break space into a space and a line separator
        (U+2028) into a newline: a string holding them was cut in two, Run said the
        snippet was not valid Python, and Save rewrote the user's file (robustness
        review). The raw text keeps them; blocks end in U+2029, a newline here (a
        U+2029 in a file is refused on open: it would become one,
        ``paragraph_separator_line``)."""
        return self.document().toRawText().replace("\u2029", "\n")

    def insertFromMimeData(self, source) -> None:
        """A paste gets the same care as an opened file, before Qt lays it out
        (code review: 20,000 pasted lines kept the highlighter, a 100 KB line
        took 2.2 s to wrap)."""
        text = source.text() if source.hasText() else ""
        self._prepare_for(text, self.blockCount() + text.count("\n"))
        super().insertFromMimeData(source)

    def _prepare_for(self, text: str, lines: int) -> None:
        if lines >= HIGHLIGHT_MAX_LINES and self.highlighter.document() is not None:
            self.highlighter.setDocument(None)
        if any(len(line) > WRAP_MAX_CHARS for line in text.splitlines()):
            self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)

    def _recheck(self) -> None:
        """Colours back once the text is short again (a long file replaced by
        typing over it), checked a moment after edits stop."""
        if self.highlighter.document() is None and self.blockCount() < HIGHLIGHT_MAX_LINES:
            self.highlighter.setDocument(self.document())

    def highlighted(self) -> bool:
        """Whether the text is coloured (see setPlainText)."""
        return self.highlighter.document() is not None

    def set_pygments_style(self, name: str) -> None:
        self.highlighter.set_style(name)

    def set_marker_line(self, line: Optional[int]) -> None:
        """Mark the line that produced the current step (None: no marker)."""
        if line == self._marker_line:
            return
        self._marker_line = line
        self._refresh_selections()
        if line:
            self._ensure_line_visible(line)

    def marker_line(self) -> Optional[int]:
        return self._marker_line

    def set_error_line(self, line: Optional[int]) -> None:
        self._error_line = line
        self._refresh_selections()

    def error_line(self) -> Optional[int]:
        return self._error_line

    def set_regions(self, regions: Iterable) -> None:
        """Grad-mode regions: protocol.Region records or (start, end, grad_enabled)."""
        out = []
        for r in regions:
            if isinstance(r, tuple):
                out.append(r)
            else:
                out.append((r.start_line, r.end_line, r.grad_enabled))
        self._regions = out
        self._gutter.update()

    def region_lines(self) -> set[int]:
        """Lines shaded as grad-disabled (handy for tests). Not those of a region
        decided at run time (``set_grad_enabled(phase == "train")``): grad is on
        there in some iterations."""
        return {ln for s, e, on in self._regions if on is False for ln in range(s, e + 1)}

    def go_to_line(self, line: int) -> None:
        block = self.document().findBlockByNumber(max(line - 1, 0))
        cur = QTextCursor(block)
        self.setTextCursor(cur)
        self.centerCursor()

    # -- gutter ---------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = max(2, len(str(max(1, self.blockCount()))))
        fm = self._gutter.fontMetrics()
        return 14 + fm.horizontalAdvance("9") * digits + int(14 * self._scale)

    def _update_gutter_width(self, *_):
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _on_update_request(self, rect, dy):
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event):
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def _paint_gutter(self, event) -> None:
        p = QPainter(self._gutter)
        p.fillRect(event.rect(), self.colors["gutter_bg"])
        disabled = self.region_lines()
        band = max(4, int(6 * self._scale))
        width = self._gutter.width()
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        fm = self._gutter.fontMetrics()
        while block.isValid() and top <= event.rect().bottom():
            h = round(self.blockBoundingRect(block).height())
            line = block.blockNumber() + 1
            if block.isVisible() and top + h >= event.rect().top():
                if line in disabled:
                    p.fillRect(0, top, band, h, self.colors["region"])
                    p.fillRect(band, top, width - band, h, self.colors["region_bg"])
                color = self.colors["gutter_fg"]
                if line == self._error_line:
                    color = self.colors["error"]
                elif line == self._marker_line:
                    color = self.colors["marker"]
                tl = block.layout()
                first_h = tl.lineAt(0).height() if tl is not None and tl.lineCount() else h
                if line == self._marker_line:
                    # a small arrow: the projector-friendly "you are here", beside the
                    # line's first row when it wraps
                    s = first_h * 0.32
                    cx, cy = band + 3 + s, top + first_h / 2
                    p.setRenderHint(QPainter.RenderHint.Antialiasing)
                    p.setPen(Qt.PenStyle.NoPen)
                    p.setBrush(color)
                    p.drawPolygon(QPolygonF([QPointF(cx - s * 0.7, cy - s), QPointF(cx + s * 0.7, cy),
                                             QPointF(cx - s * 0.7, cy + s)]))
                elif line == self._error_line:
                    # where it failed, at a step elsewhere: a cross, not a second
                    # arrow (two arrows left unclear which line was running: visual
                    # review)
                    s = first_h * 0.24
                    cx, cy = band + 3 + s * 1.3, top + first_h / 2
                    p.setRenderHint(QPainter.RenderHint.Antialiasing)
                    p.setPen(QPen(color, max(2.0, first_h * 0.12), Qt.PenStyle.SolidLine,
                                  Qt.PenCapStyle.RoundCap))
                    p.drawLine(QPointF(cx - s, cy - s), QPointF(cx + s, cy + s))
                    p.drawLine(QPointF(cx - s, cy + s), QPointF(cx + s, cy - s))
                p.setPen(color)
                f = p.font()
                f.setBold(line in (self._marker_line, self._error_line))
                p.setFont(f)
                p.drawText(0, top, width - 6, fm.height(), Qt.AlignmentFlag.AlignRight, str(line))
                if tl is not None and tl.lineCount() > 1:
                    # continuation rows (NOTE [hanging indent]) get a quiet hook, not a number
                    p.setPen(self.colors["gutter_fg"])
                    f.setBold(False)
                    p.setFont(f)
                    for i in range(1, tl.lineCount()):
                        ln = tl.lineAt(i)
                        p.drawText(0, top + round(ln.y()), width - 6, round(ln.height()),
                                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, "↪")
            block = block.next()
            top += h
        p.end()

    # -- marker lines -----------------------------------------------------------
    def _line_selection(self, line: int, color: QColor) -> QTextEdit.ExtraSelection:
        sel = QTextEdit.ExtraSelection()
        sel.format.setBackground(color)
        sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        cur = QTextCursor(self.document().findBlockByNumber(line - 1))
        # the whole line, continuation lines included when it wraps
        cur.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        sel.cursor = cur
        return sel

    def _refresh_selections(self) -> None:
        sels = []
        n = self.blockCount()
        if self._marker_line and 1 <= self._marker_line <= n and self._marker_line != self._error_line:
            sels.append(self._line_selection(self._marker_line, self.colors["marker_bg"]))
        if self._error_line and 1 <= self._error_line <= n:
            sels.append(self._line_selection(self._error_line, self.colors["error_bg"]))
        self.setExtraSelections(sels)
        self._gutter.update()

    def _ensure_line_visible(self, line: int) -> None:
        block = self.document().findBlockByNumber(line - 1)
        if not block.isValid():
            return
        # in screen lines, not code lines: the scroll bar counts the lines a wrapped
        # line takes, and a narrow presentation editor wraps most of them (the
        # marked line stayed below the view for a whole lesson: visual review)
        # (Qt lays out only the blocks it shows, and counts one line for each of
        # the others: the line put at the top is the block's first as Qt counts
        # now, then the view goes back a line at a time until a third of it is
        # above, laying those blocks out as they come into view)
        height = self.viewport().height()
        rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
        # (a line taller than the view is in view when its start is in its top third:
        # one starting below the view was taken for shown: code review)
        if rect.top() >= 0 and (rect.bottom() <= height or
                                (rect.height() > height and rect.top() < height / 3)):
            return
        bar = self.verticalScrollBar()
        bar.setValue(block.firstLineNumber())
        step = max(1.0, float(self.fontMetrics().lineSpacing()))
        for _ in range(int(height / 3 / step)):
            rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
            if bar.value() == 0 or rect.top() + step > height / 3:
                break
            bar.setValue(bar.value() - 1)
            rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
            if rect.bottom() > height:      # a whole block came in above it: too far
                bar.setValue(bar.value() + 1)
                break
        rect = self.blockBoundingGeometry(block).translated(self.contentOffset())
        if rect.top() < 0 or (rect.bottom() > height and rect.height() <= height):
            # the block above was laid out as it came into view, and the lines it
            # added moved the numbers the step back counted by: the line at the top
            bar.setValue(block.firstLineNumber())

    def mouseReleaseEvent(self, event) -> None:
        super().mouseReleaseEvent(event)
        if event.button() == Qt.MouseButton.LeftButton and not self.textCursor().hasSelection():
            self.line_clicked.emit(self.textCursor().blockNumber() + 1)

    def event(self, event) -> bool:
        # PageUp/PageDown scroll the code here: as window shortcuts they stepped the
        # timeline while the caret sat still (student review). A presenter's clicker
        # still steps in presentation mode: its filter takes the key press first.
        if (event.type() == QEvent.Type.ShortcutOverride
                and event.key() in (Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)
                and not event.modifiers() & (Qt.KeyboardModifier.ControlModifier
                                             | Qt.KeyboardModifier.AltModifier)):
            event.accept()
            return True
        return super().event(event)

    # -- typing: NOTE [editor indentation] in editor_indent.py ------------------------
    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab) and \
                event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            # Tab indents here, so Ctrl+Tab (Ctrl+Shift+Tab back) leaves the code for
            # the next pane, as in Qt's own text fields with tabChangesFocus: without
            # a mouse the editor was a room with no door (UX review)
            back = key == Qt.Key.Key_Backtab or bool(
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            QWidget.focusNextPrevChild(self, not back)
            event.accept()
            return
        edit = None if self.isReadOnly() else self._indent_edit(event)
        if edit is None:
            super().keyPressEvent(event)
            return
        cur = self.textCursor()
        cur.beginEditBlock()             # one undo step, never merged with the typing around it
        edit(cur)
        cur.endEditBlock()
        self.setTextCursor(cur)
        self.ensureCursorVisible()
        event.accept()

    def _indent_edit(self, event):
        """The edit a key makes under NOTE [editor indentation] (a function of the
        text cursor), or None to leave the key to QPlainTextEdit."""
        mods = event.modifiers()
        if mods & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
                   | Qt.KeyboardModifier.MetaModifier):
            return None
        key = event.key()
        shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
        cur = self.textCursor()
        if key == Qt.Key.Key_Backtab or (key == Qt.Key.Key_Tab and shift):
            return lambda c: self._shift_lines(c, indent=False)
        if key == Qt.Key.Key_Tab and cur.hasSelection():
            return lambda c: self._shift_lines(c, indent=True)
        if key == Qt.Key.Key_Tab:
            before = _before(cur)
            if not before.strip() and _unit(cur) == "\t":
                return lambda c: c.insertText("\t")
            return lambda c: c.insertText(editor_indent.tab_spaces(before))
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            # Shift+Return too: Qt's soft line break would put two lines under one number
            return _new_line
        if key == Qt.Key.Key_Backspace and not shift and not cur.hasSelection():
            n = editor_indent.backspace_width(_before(cur))
            if n > 1:
                return lambda c: _delete_before(c, n)
        return None

    def _shift_lines(self, cur: QTextCursor, indent: bool) -> None:
        """Indent (or dedent) every line the selection touches, or the cursor's
        line. A selection ending at the start of a line (whole lines dragged over)
        leaves that line alone; an empty line gets no indent (no trailing spaces).
        A selection ends up over the whole lines it moved, so Tab can be pressed again."""
        doc = self.document()
        unit = _unit(cur)
        first = doc.findBlock(cur.selectionStart())
        last = doc.findBlock(cur.selectionEnd())
        if last != first and cur.selectionEnd() == last.position():
            last = last.previous()
        edit = QTextCursor(doc)
        block = first
        while True:
            if not indent:
                start, end = editor_indent.dedent_span(block.text())
                edit.setPosition(block.position() + start)
                edit.setPosition(block.position() + end, QTextCursor.MoveMode.KeepAnchor)
                edit.removeSelectedText()
            elif block.text():
                edit.setPosition(block.position())
                edit.insertText(unit)
            if block == last:
                break
            block = block.next()
        if cur.hasSelection():
            start, end = first.position(), last.position() + len(last.text())
            if cur.position() < cur.anchor():
                start, end = end, start
            cur.setPosition(start)
            cur.setPosition(end, QTextCursor.MoveMode.KeepAnchor)


def _before(cur: QTextCursor) -> str:
    """The cursor's line up to the cursor."""
    return cur.block().text()[:cur.positionInBlock()]


def _unit(cur: QTextCursor) -> str:
    """One level of indentation as the code at the cursor writes it (a tab in
    code indented with tabs): ``editor_indent.indent_unit`` of its line and the
    lines above it, then those below (at most 200 each way)."""
    def lines():
        # above first, then below (the first line of a function whose body is
        # indented with tabs: code review)
        for step in (QTextBlock.previous, QTextBlock.next):
            block = cur.block() if step is QTextBlock.previous else cur.block().next()
            for _ in range(200):
                if not block.isValid():
                    break
                yield block.text()
                block = step(block)
    return editor_indent.indent_unit(lines())


def _new_line(cur: QTextCursor) -> None:
    cur.removeSelectedText()
    cur.insertText(editor_indent.newline(_before(cur), _unit(cur)))


def _delete_before(cur: QTextCursor, n: int) -> None:
    cur.movePosition(QTextCursor.MoveOperation.Left, QTextCursor.MoveMode.KeepAnchor, n)
    cur.removeSelectedText()
