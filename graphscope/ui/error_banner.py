"""The error banner: a plain-language explanation beside PyTorch's own message.

Shown above the canvas when the snippet raised (or the worker crashed, timed
out, was stopped). Left: what happened in words a learner understands and what
to change (``diagnostics.explain``). Right: PyTorch's message verbatim, so the
learner also learns to read the real thing.
"""
from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout)

from graphscope.ui.editor import monospace_font


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
        outer = QHBoxLayout(self)
        outer.setContentsMargins(12, 8, 8, 8)
        outer.setSpacing(16)
        left = QVBoxLayout()
        left.setSpacing(4)
        self.title_label = QLabel(self)
        self.title_label.setWordWrap(True)
        self.text_label = QLabel(self)
        self.text_label.setWordWrap(True)
        self.fix_label = QLabel(self)
        self.fix_label.setWordWrap(True)
        self.line_label = QLabel(self)
        self.line_label.setTextFormat(Qt.TextFormat.RichText)
        self.line_label.linkActivated.connect(lambda _: self._line and self.line_requested.emit(self._line))
        for w in (self.title_label, self.text_label, self.fix_label, self.line_label):
            w.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse
                                      | Qt.TextInteractionFlag.LinksAccessibleByMouse)
            left.addWidget(w)
        left.addStretch(1)
        outer.addLayout(left, 3)
        right = QVBoxLayout()
        right.setSpacing(2)
        self.source_caption = QLabel("PyTorch says:", self)
        self.message_label = QLabel(self)
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        right.addWidget(self.source_caption)
        right.addWidget(self.message_label)
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
            f"#ErrorBanner QToolButton {{ background: transparent; color: {text}; border: none; }}")
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
        self.message_label.setFont(monospace_font(11.0 * f))

    def show_error(self, title: str, text: str = "", fix: str = "", message: str = "",
                   line: Optional[int] = None, caption: str = "PyTorch says:") -> None:
        self._line = line
        self.title_label.setText(title)
        self.text_label.setText(text)
        self.text_label.setVisible(bool(text))
        self.fix_label.setText(f"<b>What to change:</b> {_escape(fix)}" if fix else "")
        self.fix_label.setVisible(bool(fix))
        if line:
            self.line_label.setText(f'<a href="#line" style="color:{self._link_color}">Go to line {line}</a>')
        self.line_label.setVisible(bool(line))
        self.message_label.setText(message)
        self.source_caption.setText(caption)
        for w in (self.source_caption, self.message_label):
            w.setVisible(bool(message))
        self.show()

    def show_diagnosis(self, diagnosis, error, caption: str = "PyTorch says:") -> None:
        """From ``diagnostics.explain``'s Diagnosis and the run's ErrorInfo. The
        link goes to the diagnosis's line (the cause, e.g. the no_grad block),
        which can differ from the line that raised."""
        message = f"{error.type}: {error.message}" if error else ""
        if error is not None and error.type in ("Crash", "Timeout", "Stopped"):
            message = error.message
        line = (getattr(diagnosis, "line", None) if diagnosis else None) or (
            error.line if error else None)
        if diagnosis is None:
            self.show_error(error.type if error else "Error", "", "", message, line, caption)
            return
        self.show_error(diagnosis.title or (error.type if error else "Error"),
                        diagnosis.text or "", diagnosis.fix or "", message, line, caption)

    def shown_text(self) -> str:
        """Everything the banner says (tests read this)."""
        parts = [self.title_label.text(), self.text_label.text(), self.fix_label.text(),
                 self.message_label.text()]
        return "\n".join(p for p in parts if p)

    def _on_close(self) -> None:
        self.hide()
        self.closed.emit()


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
