"""The problems list: errors and warnings; clicking one jumps to its line and node."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QListWidget, QListWidgetItem

from graphscope.ui.list_keys import KeepsListKeys

SEVERITY_MARK = {"error": "\u2716", "warning": "\u26a0", "info": "\u2139"}


@dataclass
class ProblemRow:
    """What one row shows (built from diagnostics.Problem or the run's error)."""
    severity: str                   # error | warning | info
    text: str
    line: Optional[int] = None
    node_ids: list = field(default_factory=list)


def row_from(problem) -> ProblemRow:
    """Accept a diagnostics.Problem (whatever its exact field names) or a ProblemRow."""
    if isinstance(problem, ProblemRow):
        return problem
    sev = getattr(problem, "severity", None) or getattr(problem, "kind", None) or "warning"
    if sev not in SEVERITY_MARK:
        sev = "error" if "error" in str(sev) else "warning"
    text = (getattr(problem, "message", None) or getattr(problem, "text", None)
            or getattr(problem, "title", None) or str(problem))
    title = getattr(problem, "title", None)
    if title and title != text:
        text = f"{title}: {text}"
    ids = getattr(problem, "node_ids", None) or []
    return ProblemRow(sev, text, getattr(problem, "line", None), list(ids))


class ProblemsList(KeepsListKeys, QListWidget):
    """List of ProblemRow; ``problem_activated(line, node_ids)`` on click. Its keys
    are its own while it has the focus (NOTE [a list keeps its keys])."""

    problem_activated = Signal(object, list)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[ProblemRow] = []
        self.colors = {"error": "#dc2626", "warning": "#b45309", "info": "#2563eb"}
        self.setWordWrap(True)
        self.itemClicked.connect(self._on_item_clicked)
        self.itemActivated.connect(self._on_item_clicked)
        self.set_text_scale(1.0)

    def set_text_scale(self, f: float) -> None:
        font = QFont(self.font())
        font.setPointSizeF(12.0 * f)
        self.setFont(font)

    def set_problems(self, problems: Iterable) -> None:
        self.clear()
        self._rows = [row_from(p) for p in problems]
        for i, r in enumerate(self._rows):
            where = f"line {r.line}: " if r.line else ""
            item = QListWidgetItem(f"{SEVERITY_MARK.get(r.severity, '')}  {where}{r.text}")
            item.setForeground(QColor(self.colors.get(r.severity, "#000000")))
            item.setData(Qt.ItemDataRole.UserRole, i)
            item.setToolTip(r.text)
            self.addItem(item)

    def rows(self) -> list[ProblemRow]:
        return list(self._rows)

    def _on_item_clicked(self, item: QListWidgetItem) -> None:
        r = self._rows[item.data(Qt.ItemDataRole.UserRole)]
        self.problem_activated.emit(r.line, list(r.node_ids))
