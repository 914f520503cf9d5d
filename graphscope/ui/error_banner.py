"""The error banner: a plain-language explanation beside PyTorch's own message.

Shown above the canvas when the snippet raised (or the worker crashed, timed
out, was stopped). Left: what happened in words a learner understands and what
to change (``diagnostics.explain``). Right: PyTorch's message verbatim, so the
learner also learns to read the real thing.

NOTE [a banner that leaves room]: with bigger text (presentation mode at 130%,
1920x1080) the two columns took 298 of the 748 px the banner and the canvas
share, the explanation wrapped in three fifths of the width, and the graph the
explanation is about was half hidden. A banner that would take more than
ROOM_SHARE of its column drops PyTorch's message, which the Problems tab below
holds in full anyway, gives the explanation the whole width, and says so beside "Go to
line N" with a link that brings the message back ("show it here") until the next
error: 1920x1080 at 130%, 190 px (the graph whole again). Where the explanation
alone is more than the room (1280x720 at 130%: nine lines, 204 of 461 px), the
banner takes the room and its words scroll.
"""
from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QFont, QTextOption
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QScrollArea,
                               QSizePolicy, QToolButton, QVBoxLayout, QWidget)

from graphscope.model.summary import counted
from graphscope.ui.editor import monospace_font

ROOM_SHARE = 0.34   # of the column it shares with the canvas: NOTE [a banner that leaves room]
_NO_LIMIT = (1 << 24) - 1   # Qt's QWIDGETSIZE_MAX


class ErrorBanner(QFrame):
    """Title, explanation, fix; PyTorch's message; a link to the line."""

    line_requested = Signal(int)
    closed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ErrorBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._line: Optional[int] = None
        self._scale = 1.0
        self._message = ""
        self.compact = False          # PyTorch's message left to the Problems tab
        self._message_first = False   # (show_error)
        self._message_wanted = False  # ... until the user asks for it here
        self._fitting = False
        self._watched = None          # the column whose height the room is a share of
        outer = QHBoxLayout(self)
        self._outer = outer
        outer.setContentsMargins(12, 8, 8, 8)
        outer.setSpacing(16)
        self.text_column = _TextColumn(self)
        left = self.text_column.column
        left.setSpacing(4)
        self.title_label = QLabel(self)
        self.title_label.setWordWrap(True)
        self.text_label = QLabel(self)
        self.text_label.setWordWrap(True)
        # what the snippet's error says is text, never markup ("bad <b>value</b>",
        # a "<br>" in a message were drawn as HTML: robustness review)
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)
        self.fix_label = QLabel(self)
        self.fix_label.setWordWrap(True)
        # "Go to line N" and, when compact, where the message went: one line of links
        self.line_label = QLabel(self)
        self.line_label.setWordWrap(True)
        self.line_label.setTextFormat(Qt.TextFormat.RichText)
        self.line_label.linkActivated.connect(self._on_link)
        for w in (self.title_label, self.text_label, self.fix_label, self.line_label):
            w.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                      | Qt.TextInteractionFlag.LinksAccessibleByMouse)
            left.addWidget(w)
        left.addStretch(1)
        outer.addWidget(self.text_column, 3)
        right = QVBoxLayout()
        right.setSpacing(2)
        self.source_caption = QLabel("PyTorch says:", self)
        # NOTE [a banner that fits]
        self.message_view = _MessageView(self)
        self.message_label = self.message_view     # (its text(), as a label's)
        self._caption = "PyTorch says:"
        self.message_view.on_overflow = self._say_more
        right.addWidget(self.source_caption)
        right.addWidget(self.message_view)
        right.addStretch(1)
        outer.addLayout(right, 2)
        close = QToolButton(self)
        close.setText("\u2715")
        close.setToolTip("Hide the explanation")
        close.setAutoRaise(True)
        close.clicked.connect(self._on_close)
        outer.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.set_colors("#fdecea", "#7f1d1d", "#dc2626", "#1f2937")
        self.set_text_scale(1.0)
        self.hide()

    def set_colors(self, background: str, text: str, accent: str, message: str) -> None:
        self.setStyleSheet(
            f"#ErrorBanner {{ background: {background}; border: none; "
            f"border-left: 6px solid {accent}; border-radius: 4px; }}"
            f"#ErrorBanner QLabel {{ background: transparent; color: {text}; }}"
            f"#ErrorBanner QScrollArea, #ErrorBannerText {{ background: transparent; "
            f"border: none; }}"
            f"#ErrorBanner QToolButton {{ background: transparent; color: {text}; border: none; }}"
            f"#ErrorBanner QPlainTextEdit {{ background: transparent; color: {text}; "
            f"border: none; }}")
        self._link_color = accent

    def set_text_scale(self, f: float) -> None:
        self._scale = f
        title = QFont(self.font())
        title.setPointSizeF(14.0 * f)
        title.setBold(True)
        self.title_label.setFont(title)
        body = QFont(self.font())
        body.setPointSizeF(12.0 * f)
        for w in (self.text_label, self.fix_label, self.line_label, self.source_caption):
            w.setFont(body)
        self.message_view.setFont(monospace_font(11.0 * f))
        self.message_view.fit()
        self.fit_room()

    def show_error(self, title: str, text: str = "", fix: str = "", message: str = "",
                   line: Optional[int] = None, caption: str = "PyTorch says:",
                   message_first: bool = False) -> None:
        """``message_first``: the words only say to read the message (GraphScope has
        no explanation of its own), so when room is short the message stays and
        those words go (the compact banner hid "Did you mean: 'weights'?" behind
        "read the message itself": visual review)."""
        self._line = line
        self._message_first = message_first
        self.title_label.setText(title)
        self.text_label.setText(text)
        self.text_label.setVisible(bool(text))
        self.fix_label.setText(f"<b>What to change:</b> {_escape(fix)}" if fix else "")
        self.fix_label.setVisible(bool(fix))
        self._caption = caption
        self._message = message
        self._message_wanted = False
        self.message_view.set_text(clipped(message))
        self._say_more(self.message_view.overflowing)
        self._set_compact(False)
        self.show()
        self.fit_room()

    # -- NOTE [a banner that leaves room] ---------------------------------------
    def room(self) -> int:
        """The most pixels the banner should take: a share of its column."""
        parent = self.parentWidget()
        return int(ROOM_SHARE * parent.height()) if parent is not None else 1 << 30

    def fit_room(self) -> None:
        """Both columns if they fit the room (or the user asked for the message),
        else the explanation alone, across the whole width."""
        parent = self.parentWidget()
        if parent is not None and parent is not self._watched:
            # the column's height changes without the window's (the console's
            # splitter dragged): the room with it (code review)
            parent.installEventFilter(self)
            self._watched = parent
        if self._fitting:
            return
        # (lifted first: a banner without a message, "Stopped", kept the cap an
        # earlier error had set, and scrolled in a window with room: code review)
        self.setMaximumHeight(_NO_LIMIT)
        if self.isHidden() or not self._message:
            return
        self._fitting = True
        try:
            self._set_compact(False)
            if not self._message_wanted and self._needed_height() > self.room():
                self._set_compact(True)
                if self._needed_height() > self.room():
                    # the explanation alone is more than the room: it scrolls (NOTE
                    # [a banner that scrolls]) and the graph keeps its share. At
                    # 1280x720 in presentation it took 206 of 458 px and left the
                    # graph a strip that showed neither the error nor its cause
                    # (visual review)
                    # (three lines at least: a banner is not squeezed to nothing)
                    lines = 3 * self.text_label.fontMetrics().lineSpacing()
                    self.setMaximumHeight(max(self.room(), lines))
        finally:
            self._fitting = False

    def _needed_height(self) -> int:
        """The height the banner's parts would take at its width (its words
        report none as height-for-width: _TextColumn)."""
        return max(self.heightForWidth(self.width()), self.sizeHint().height())

    def _set_compact(self, on: bool) -> None:
        self.compact = on
        keep = on and self._message_first     # the message instead of the words
        shown = bool(self._message) and (not on or keep)
        for w in (self.source_caption, self.message_view):
            w.setVisible(shown)
        self.text_label.setVisible(bool(self.text_label.text()) and not keep)
        self._outer.setStretch(1, 0 if on and not keep else 2)
        links = []
        if self._line:
            links.append(f'<a href="#line" style="color:{self._link_color}">Go to line {self._line}</a>')
        if on and not keep:
            # (the Problems tab has it whole for every ending; the console only shows
            # an exception's: after a crash it shows one line, code review)
            links.append('The full message is in the Problems tab below: '
                         f'<a href="#message" style="color:{self._link_color}">show it here</a>')
        self.line_label.setText(" \u00b7 ".join(links))
        self.line_label.setVisible(bool(links))

    def _on_link(self, href: str) -> None:
        if href == "#message":
            self._message_wanted = True
            self.fit_room()
        elif self._line:
            self.line_requested.emit(self._line)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.fit_room()

    def eventFilter(self, obj, event) -> bool:
        if obj is self._watched and event.type() == QEvent.Type.Resize \
                and event.size().height() != event.oldSize().height():
            self.fit_room()
        return False

    def _say_more(self, more: bool) -> None:
        """The caption says when the message goes on below its view."""
        self.source_caption.setText(self._caption.rstrip(":") + " (scroll for more):"
                                    if more else self._caption)

    def show_diagnosis(self, diagnosis, error, caption: str = "PyTorch says:") -> None:
        """From ``diagnostics.explain``'s Diagnosis and the run's ErrorInfo. The
        link goes to the diagnosis's line (the cause, e.g. the no_grad block),
        which can differ from the line that raised."""
        message = f"{error.type}: {error.message}" if error else ""
        if error is not None and error.type in ("Crash", "Timeout", "Stopped"):
            message = error.message
        elif error is not None and error.traceback:
            # as python prints it: its hint ("Did you mean: 'y'?") is added when the
            # traceback is printed, not part of the message (UX review)
            last = error.traceback.rstrip("\n").rsplit("\n", 1)[-1]
            if last.startswith(message) and len(last) > len(message):
                message = last
        line = (getattr(diagnosis, "line", None) if diagnosis else None) or (
            error.line if error else None)
        if diagnosis is None:
            self.show_error(error.type if error else "Error", "", "", message, line, caption)
            return
        self.show_error(diagnosis.title or (error.type if error else "Error"),
                        diagnosis.text or "", diagnosis.fix or "", message, line, caption,
                        message_first=getattr(diagnosis, "kind", "") == "generic")

    def shown_text(self) -> str:
        """Everything the banner says (tests read this)."""
        keep = self.compact and self._message_first
        parts = [self.title_label.text(), "" if keep else self.text_label.text(),
                 self.fix_label.text(),
                 self.message_label.text() if not self.compact or keep else ""]
        return "\n".join(p for p in parts if p)

    def _on_close(self) -> None:
        self.hide()
        self.closed.emit()


# NOTE [a banner that fits]: the banner showed PyTorch's message whole, in a
# label that grew with it: an assert that printed two 20x8 tensors made the
# window 1,586 px tall on an 800 px screen (the canvas 150 px), a 200,000-
# character token made it 1.5 million px wide and froze it for 40 s
# (robustness review). The message is now plain text in a read-only view as
# high as its text up to MESSAGE_VIEW_LINES lines, which then scrolls; lines
# wrap at words, a token longer than the column anywhere (zero-width spaces
# put in for it went along into copied text: visual review). It holds the
# first MESSAGE_LINES lines, each cut at LINE_CHARS (a view of 20,000 lines took
# seconds to lay out), and says where the rest is: the Problems tab has the
# whole message. PyTorch's own one-line messages run to about 400 characters,
# and their advice is at the end: they are never cut.
MESSAGE_LINES = 40
LINE_CHARS = 2000
MESSAGE_VIEW_LINES = 7   # lines of the message seen at once; the rest scrolls


def clipped(message: str) -> str:
    """``message`` as the banner shows it (NOTE [a banner that fits])."""
    lines = message.splitlines() or [""]
    out = [line[:LINE_CHARS] + " \u2026" if len(line) > LINE_CHARS else line
           for line in lines[:MESSAGE_LINES]]
    if len(lines) > MESSAGE_LINES:
        rest = len(lines) - MESSAGE_LINES
        out.append(f"\u2026 {counted(rest, 'more line')} (the Problems tab has all of it)")
    return "\n".join(out)


class _TextColumn(QScrollArea):
    """The banner's own words: title, explanation, fix, links. NOTE [a banner
    that scrolls]: as high as they are when the column has the room; when it
    has not (1280x720 in presentation mode: the explanation alone needed 270
    px and the banner was given 164), the layout squeezed the labels and cut
    the text through the middle of a line (UX review). Squeezed, they scroll
    now, with a scroll bar, and the layout still asks for their full height
    first (its size hint)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        inner = QWidget(self)
        inner.setObjectName("ErrorBannerText")
        self.column = QVBoxLayout(inner)
        self.column.setContentsMargins(0, 0, 0, 0)
        self.setWidget(inner)
        self.viewport().setAutoFillBackground(False)
        inner.setAutoFillBackground(False)
        # no height-for-width of its own: a layout takes an item's height for its
        # width as its least height too, and the window grew past a 720 px screen
        # to give the words all of theirs (visual review). Its wish is its size
        # hint, made again when its width changes.
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        # the words as wide as the viewport, the scroll bar's room taken off: when the
        # bar came in, the words kept the width they had without it and ran under it
        # ("Python's if, whi" at 1600x1000: visual review)
        self.viewport().installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if obj is self.viewport() and event.type() == QEvent.Type.Resize:
            self.widget().setMaximumWidth(max(1, event.size().width()))
        return super().eventFilter(obj, event)

    def words_height(self, width: int) -> int:
        """The height its words take at ``width``."""
        h = self.widget().heightForWidth(width)
        return h if h > 0 else self.widget().sizeHint().height()

    def sizeHint(self) -> QSize:
        hint = self.widget().sizeHint()
        return QSize(hint.width(), self.words_height(max(self.width(), hint.width())))

    def minimumSizeHint(self) -> QSize:
        return QSize(80, self.fontMetrics().lineSpacing() * 2)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self.updateGeometry()


class _MessageView(QPlainTextEdit):
    """PyTorch's message (NOTE [a banner that fits]): read-only plain text, as
    high as its lines up to MESSAGE_VIEW_LINES, whole lines only."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ErrorMessage")
        self.setReadOnly(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.overflowing = False
        self.on_overflow = None      # called with whether the text scrolls
        self.document().setDocumentMargin(1)
        self.document().documentLayout().documentSizeChanged.connect(lambda _s: self.fit())

    def text(self) -> str:
        return self.toPlainText()

    def set_text(self, text: str) -> None:
        self.setPlainText(text)
        self.verticalScrollBar().setValue(0)
        self.fit()

    def fit(self) -> None:
        # (a plain-text layout's height is in lines, wrapped lines counted)
        lines = max(1, int(self.document().documentLayout().documentSize().height()))
        shown = min(lines, MESSAGE_VIEW_LINES)
        # no scroll bar: with the theme's style sheet one covered the ends of the
        # lines; the caption says when there is more (it scrolls with the wheel)
        self.overflowing = lines > MESSAGE_VIEW_LINES
        if self.on_overflow is not None:
            self.on_overflow(self.overflowing)
        height = shown * self.fontMetrics().lineSpacing() + 2 * self.document().documentMargin() + 4
        if self.height() != int(height):
            self.setFixedHeight(int(height))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit()


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
