"""Scenario browser: scenarios by category and difficulty, a search box, and the
problems of files that did not load.

Double-click or Enter on a scenario emits ``scenario_activated(scenario)``; the
window (``classroom.py``) loads its snippet and shows its question. A teacher's
folder is added with ``add_folder``: its broken files are listed with their
``file:line: problem`` and never keep the other scenarios from showing.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QListWidget,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from graphscope import scenarios as _scn
from graphscope.ui.list_keys import KeepsListKeys
from graphscope.ui.presentation import NORMAL_PX

ALL = "All"
_ROLE = Qt.UserRole + 1


def category_title(cat: str) -> str:
    return {"predict_output": "Predict output", "model_choice": "Model choice"}.get(
        cat, str(cat).replace("_", " ").capitalize())


def _cat_rank(cat: str) -> int:
    return _scn.CATEGORIES.index(cat) if cat in _scn.CATEGORIES else len(_scn.CATEGORIES)


def _diff_rank(diff: str) -> int:
    return _scn.DIFFICULTIES.index(diff) if diff in _scn.DIFFICULTIES else len(_scn.DIFFICULTIES)


def matches(scenario, text: str) -> bool:
    """Search: every word must appear in the id, title, question, category, tags or snippet."""
    words = text.lower().split()
    if not words:
        return True
    hay = " ".join(str(x) for x in (
        scenario.id, getattr(scenario, "title", ""), getattr(scenario, "question", ""),
        getattr(scenario, "category", ""), category_title(getattr(scenario, "category", "")),
        getattr(scenario, "difficulty", ""), " ".join(getattr(scenario, "tags", ()) or ()),
        getattr(scenario, "snippet", ""))).lower()
    return all(w in hay for w in words)


NARROW_TREE = 240   # px: below, the tree shows titles alone (ScenarioBrowser._rewrap)


class _Tree(KeepsListKeys, QTreeWidget):
    """Long titles wrap onto a second line rather than being cut to "Static capture
    of…". (Enter and a double-click open the current scenario: Qt's itemActivated.)
    Its keys are its own while it has the focus (NOTE [a list keeps its keys])."""
    resized = Signal()

    def resizeEvent(self, e):
        super().resizeEvent(e)
        self.resized.emit()


def wrap_text(text: str, fm: QFontMetrics, width: int) -> str:
    """``text`` broken into lines at spaces so each fits ``width`` pixels.
    (A tree view measures its rows before it knows the column's width, so Qt's
    own word wrap leaves long titles cut off; explicit line breaks are measured.)"""
    lines, cur = [], ""
    for word in text.split():
        trial = f"{cur} {word}" if cur else word
        if cur and fm.horizontalAdvance(trial) > width:
            lines.append(cur)
            cur = word
        else:
            cur = trial
    if cur:
        lines.append(cur)
    return "\n".join(lines)


class ScenarioBrowser(QWidget):
    """Scenarios grouped by category, sorted by difficulty, filtered by search,
    category and difficulty. ``scenario_activated(scenario)`` on double-click/Enter."""

    scenario_activated = Signal(object)

    def __init__(self, scenarios=(), problems=(), parent=None):
        super().__init__(parent)
        self.setObjectName("ScenarioBrowser")
        self.scenarios: list = []
        self.problems: list[str] = []
        self.folders: list[Path] = []
        # NOTE [sources]: where each scenario and problem came from (the bundled
        # list, each folder opened, a lesson's problems), in the order they came.
        # The lists above are made from them, so a folder opened again (or
        # reloaded) replaces what it gave before: re-opened, an edited file kept
        # its old copy, a fixed file its old problem, and each problem was listed
        # once more (teacher review).
        self._sources: dict = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        self.search = QLineEdit(placeholderText="Search scenarios\u2026", objectName="ScenarioSearch")
        self.search.setClearButtonEnabled(True)
        lay.addWidget(self.search)
        row = QHBoxLayout()
        self.category_box = QComboBox(objectName="CategoryFilter")
        self.difficulty_box = QComboBox(objectName="DifficultyFilter")
        for box in (self.category_box, self.difficulty_box):
            # narrower than their longest entry when the window is: side by side
            # they set the browser's, and so the window's, smallest width
            box.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(4)
        row.addWidget(self.category_box, 1)
        row.addWidget(self.difficulty_box, 1)
        lay.addLayout(row)
        self.tree = _Tree(objectName="ScenarioTree")
        self.tree.setHeaderLabels(["Scenario", "Difficulty"])
        self.tree.setRootIsDecorated(True)
        self.tree.setUniformRowHeights(False)
        self.tree.setWordWrap(True)
        head = self.tree.header()
        head.setStretchLastSection(False)
        head.setSectionResizeMode(0, QHeaderView.Stretch)
        head.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        self.tree.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.tree.setTextElideMode(Qt.ElideNone)
        self.tree.resized.connect(self._rewrap)
        head.sectionResized.connect(lambda i, *_: i == 0 and self._rewrap())
        lay.addWidget(self.tree, 1)
        self.count_label = QLabel(objectName="ScenarioCount")
        lay.addWidget(self.count_label)
        self.problems_label = QLabel("Files that did not load", objectName="ProblemsTitle")
        self.problems_list = QListWidget(objectName="ScenarioProblems")
        self.problems_list.setWordWrap(True)
        lay.addWidget(self.problems_label)
        lay.addWidget(self.problems_list)

        self.search.textChanged.connect(self.refilter)
        self.category_box.currentIndexChanged.connect(self.refilter)
        self.difficulty_box.currentIndexChanged.connect(self.refilter)
        self.tree.itemActivated.connect(self._on_item_activated)
        self._current_id = None      # the scenario the window has open (show_current)
        self.set_scenarios(scenarios, problems)
        self.set_text_scale(1.0)

    # -- content --------------------------------------------------------------
    def set_scenarios(self, scenarios, problems=()):
        """Replace the list (the bundled scenarios, say), and every source."""
        self._sources = {}
        self.folders = []
        self.add_scenarios(scenarios, problems, source="base")

    def add_scenarios(self, scenarios, problems=(), source=None):
        """Add scenarios; one with an id already listed replaces the older one.
        ``source``: what they came from; the same source again replaces what it
        gave before, in its place (NOTE [sources])."""
        key = source if source is not None else f"added {len(self._sources)}"
        self._sources[key] = (list(scenarios), [str(p) for p in problems])
        self._merge()

    def add_folder(self, path) -> tuple:
        """Load a teacher's folder (``scenarios.load_dir``): good files are added,
        broken ones listed with ``file:line: problem``; a folder opened before is
        read again (NOTE [sources]). Returns (scenarios, problems)."""
        path = Path(path)
        try:
            found, problems = _scn.load_dir(path)
        except Exception as e:   # a loader bug must not take the window down
            found, problems = [], [f"{path}:1: could not read the folder: {e}"]
        key = f"folder {path.resolve()}"
        if key not in self._sources:
            self.folders.append(path)
        self.add_scenarios(found, problems, source=key)
        return found, problems

    def reload(self) -> list:
        """Every folder opened, read again; returns the problems they have now."""
        problems = []
        for folder in list(self.folders):
            problems += self.add_folder(folder)[1]
        return problems

    def _merge(self) -> None:
        by_id: dict = {}
        problems: list[str] = []
        for found, probs in self._sources.values():
            for s in found:
                by_id.pop(s.id, None)      # a later source's scenario wins, listed last
                by_id[s.id] = s
            problems += [p for p in probs if p not in problems]
        self.scenarios = list(by_id.values())
        self.problems = problems
        self._rebuild()

    def find(self, scenario_id: str):
        return next((s for s in self.scenarios if s.id == scenario_id), None)

    def _rebuild(self):
        cats = sorted({s.category for s in self.scenarios}, key=_cat_rank)
        diffs = sorted({s.difficulty for s in self.scenarios}, key=_diff_rank)
        for box, values, title in ((self.category_box, cats, category_title),
                                   (self.difficulty_box, diffs, str)):
            current = box.currentData()
            box.blockSignals(True)
            box.clear()
            box.addItem("All categories" if box is self.category_box else "All difficulties", ALL)
            for v in values:
                box.addItem(title(v), v)
            i = box.findData(current)
            box.setCurrentIndex(i if i >= 0 else 0)
            box.blockSignals(False)
        self.problems_list.clear()
        for p in self.problems:
            self.problems_list.addItem(p)
        has_problems = bool(self.problems)
        self.problems_label.setVisible(has_problems)
        self.problems_list.setVisible(has_problems)
        self.refilter()

    # -- filtering ------------------------------------------------------------
    def set_filter(self, text: str = None, category: str = None, difficulty: str = None):
        """Set any of the search text, category and difficulty (``None`` keeps it)."""
        if category is not None:
            self.category_box.setCurrentIndex(max(0, self.category_box.findData(category)))
        if difficulty is not None:
            self.difficulty_box.setCurrentIndex(max(0, self.difficulty_box.findData(difficulty)))
        if text is not None:
            self.search.setText(text)
        self.refilter()

    def filtered(self) -> list:
        cat = self.category_box.currentData() or ALL
        diff = self.difficulty_box.currentData() or ALL
        text = self.search.text()
        out = [s for s in self.scenarios
               if (cat == ALL or s.category == cat) and (diff == ALL or s.difficulty == diff)
               and matches(s, text)]
        return sorted(out, key=lambda s: (_cat_rank(s.category), _diff_rank(s.difficulty), s.title))

    def visible_ids(self) -> list[str]:
        """Ids shown, in display order (for tests and for "first match")."""
        ids = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            ids += [top.child(j).data(0, _ROLE).id for j in range(top.childCount())]
        return ids

    def refilter(self, *_):
        self.tree.clear()
        shown = self.filtered()
        groups: dict = {}
        for s in shown:
            top = groups.get(s.category)
            if top is None:
                top = QTreeWidgetItem([category_title(s.category), ""])
                f = QFont(top.font(0))
                f.setBold(True)
                top.setFont(0, f)
                top.setFlags(Qt.ItemIsEnabled)
                groups[s.category] = top
                self.tree.addTopLevelItem(top)
            item = QTreeWidgetItem([s.title, s.difficulty])
            item.setData(0, _ROLE, s)
            item.setData(1, Qt.TextAlignmentRole, int(Qt.AlignLeft | Qt.AlignTop))
            item.setToolTip(0, f"{s.id}\n{s.question}")
            top.addChild(item)
        self.tree.expandAll()
        self._rewrap()
        n, total = len(shown), len(self.scenarios)
        self.count_label.setText(f"{n} of {total} scenarios" if n != total else f"{total} scenarios")
        # the scenario open, when it is shown; else the first (Enter after a search
        # opens the first match)
        if not self._mark(self._current_id):
            first = self.tree.topLevelItem(0)
            if first is not None and first.childCount():
                self.tree.setCurrentItem(first.child(0))

    def _rewrap(self):
        """Titles wrapped to the title column's width (see ``wrap_text``). In a
        narrow browser (beside the editor, the graph and a quiz at 1024 px) the
        difficulty column goes, and the titles take its room: they were cut to
        four letters ("Conce", "mode") beside a whole "intermediate" (UX review);
        the difficulty filter and the quiz's heading still say it."""
        narrow = self.tree.viewport().width() < NARROW_TREE
        if self.tree.isColumnHidden(1) != narrow:
            self.tree.setColumnHidden(1, narrow)
            # (the title column takes the room once the header is laid out again)
            QTimer.singleShot(0, self, self._rewrap)
        width = self.tree.header().sectionSize(0) - 2 * self.tree.indentation() - 12
        if width < 60:
            return
        fm = QFontMetrics(self.tree.font())
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            for j in range(top.childCount()):
                item = top.child(j)
                s = item.data(0, _ROLE)
                text = wrap_text(s.title, fm, width)
                if item.text(0) != text:
                    item.setText(0, text)

    # -- opening ----------------------------------------------------------------
    def _on_item_activated(self, item, *_):
        s = item.data(0, _ROLE) if item is not None else None
        if s is not None:
            self.scenario_activated.emit(s)

    def show_current(self, scenario_id) -> None:
        """Mark the scenario the window has open (None: none), without opening it:
        the tree's first entry stayed marked while a lesson showed another
        (visual review)."""
        self._current_id = scenario_id
        if not self._mark(scenario_id):
            self.tree.clearSelection()
            self.tree.setCurrentItem(None)

    def _mark(self, scenario_id) -> bool:
        tree = self.tree
        if scenario_id is None:
            return False
        for i in range(tree.topLevelItemCount()):
            top = tree.topLevelItem(i)
            for j in range(top.childCount()):
                item = top.child(j)
                s = item.data(0, _ROLE)
                if s is not None and s.id == scenario_id:
                    tree.setCurrentItem(item)
                    tree.scrollToItem(item)
                    return True
        return False

    def activate(self, scenario_id: str) -> bool:
        s = self.find(scenario_id)
        if s is not None:
            self.scenario_activated.emit(s)
        return s is not None

    # -- presentation -------------------------------------------------------------
    def set_text_scale(self, factor: float, min_px: int | None = None):
        px = max(min_px or 0, round(NORMAL_PX * max(0.5, float(factor))))
        f = QFont(self.font())
        f.setPixelSize(px)
        self.setFont(f)
        self.setStyleSheet(f"#ScenarioBrowser, #ScenarioBrowser * {{ font-size: {px}px; }}"
                           f" #ScenarioProblems {{ color: #D55E00; }}")
        self.tree.ensurePolished()
        self._rewrap()
