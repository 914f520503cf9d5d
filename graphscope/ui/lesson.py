"""Lessons: a teacher's ordered scenarios, walked one after another.

``LessonWalker`` is the cursor over the lesson (no widgets), ``LessonBar`` shows
"3 / 10" with Previous / Next. The keys (N / P and Ctrl+PageDown / Ctrl+PageUp,
beside the clicker's PageDown / PageUp that step the timeline) are bound by
``classroom.py`` on the window. ``open_lesson_file`` reads a lesson file and
finds its scenarios (NOTE [a lesson's own folder first]); what went wrong, if
anything, is its ``OpenedLesson.message()``, which the status line and the
command's stderr both say.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from graphscope import scenarios as _scn
from graphscope.model.summary import counted
from graphscope.ui.presentation import NORMAL_PX


# NOTE [a lesson's own folder first]: a teacher's lesson names the scenarios
# beside it, and a teacher may reuse a bundled id ("detach") for their own
# version. Ids are therefore looked up first in the lesson's folder and its
# parent (the documented layout: DIR/lessons/week3.toml beside DIR/*.toml),
# then in the folders opened (--scenarios, Open scenario folder), and only then
# among the bundled scenarios. Looked up the other way round, the window's
# already-loaded bundled "detach" won, and `--lesson DIR/lessons/week3.toml`
# showed another question than the same lesson opened with `--scenarios DIR`
# (teacher's review). `graphscope scenarios check DIR` warns about such an id
# (scenarios.shadow_warnings).
def lookup_folders(path, folders=()) -> list:
    """The folders a lesson's ids are looked up in, first match wins:
    NOTE [a lesson's own folder first]. (Without the bundled folder, which
    comes after the scenarios already loaded.)"""
    # absolute: the parent of "week3.toml" typed in DIR/lessons is "." again, not DIR
    here = Path(path).absolute().parent
    out, seen = [], set()
    for d in (here, here.parent, *map(Path, folders)):
        key = d.resolve()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


@dataclass(frozen=True)
class OpenedLesson:
    """What opening a lesson file came to: ``scenarios`` in the lesson's order,
    ``problems`` (``file:line: message``, for the Scenarios panel), ``missing``
    (the ids no scenario has) and ``loaded`` (False: the file itself did not
    load, so nothing of it opens)."""
    path: Path
    title: str
    scenarios: tuple
    problems: tuple = ()
    missing: tuple = ()
    loaded: bool = True
    description: str = ""    # the lesson's own words about itself (the bar's tooltip)

    @property
    def failed(self) -> bool:
        """Nothing of the lesson opens: ``graphscope --lesson`` fails as
        ``--scenario`` with an unknown id does."""
        return not self.scenarios

    def message(self) -> str:
        """One line saying what went wrong ("" when nothing did), a phrase
        without a full stop: the status line and the command's stderr say it.
        A lesson that failed quietly opened the welcome scenario instead, and
        one with unknown ids named them only in a panel that could be closed
        (teacher's review)."""
        if not self.loaded:
            more = len(self.problems) - 1
            extra = f" (and {counted(more, 'more problem')})" if more > 0 else ""
            return f"cannot open the lesson: {self.problems[0]}{extra}"
        if not self.missing:
            return ""
        ids = ", ".join(f"'{i}'" for i in self.missing)
        if self.failed:
            return f"the lesson {self.path} has no scenario that loads: not found: {ids}"
        n = len(self.scenarios)
        return (f"the lesson {self.path} names scenarios that were not found: {ids}; "
                f"it opened with the other {n}")

    def status(self) -> str:
        """:meth:`message` as the status line's sentence."""
        m = self.message()
        return f"{m[:1].upper()}{m[1:]}." if m else ""


def open_lesson_file(path, known=(), folders=()) -> OpenedLesson:
    """The lesson file at ``path`` with its scenarios found.

    Ids are looked up in the lesson's own folder and its parent, then in
    ``folders`` (the folders opened), then in ``known`` (scenarios already
    loaded: the window's bundled ones and those of the folders opened), then
    in the bundled folder: NOTE [a lesson's own folder first]. An id that is
    nowhere is a problem, and the rest of the lesson still runs.
    """
    path = Path(path)
    try:
        lesson = _scn.load_lesson(path)
    except _scn.ScenarioError as e:
        return OpenedLesson(path, path.stem, (), tuple(e.problems), loaded=False)
    except OSError as e:
        return OpenedLesson(path, path.stem, (), (f"{path}:1: {e.strerror or e}",), loaded=False)
    by_id: dict = {}
    wanted = set(lesson.scenario_ids)

    def take(scenarios):
        for s in scenarios:
            by_id.setdefault(s.id, s)   # an earlier source keeps its id

    for d in lookup_folders(path, folders):
        if wanted <= by_id.keys():
            break
        if d.is_dir():
            take(_scn.load_dir(d)[0])
    take(known)
    if not wanted <= by_id.keys():
        take(_scn.load_dir(_scn.bundled_dir())[0])
    line = lesson.lines.get("scenarios", 1)
    missing = tuple(dict.fromkeys(i for i in lesson.scenario_ids if i not in by_id))
    return OpenedLesson(
        path, lesson.title, tuple(by_id[i] for i in lesson.scenario_ids if i in by_id),
        tuple(f"{path}:{line}: lesson names unknown scenario '{i}'" for i in missing), missing,
        description=lesson.description)


def resolve_lesson(path, known=(), folders=()) -> tuple:
    """``(title, scenarios, problems)``: :func:`open_lesson_file` as a tuple."""
    opened = open_lesson_file(path, known, folders)
    return opened.title, list(opened.scenarios), list(opened.problems)


class LessonWalker(QObject):
    """Where we are in a lesson. ``scenario_changed(scenario)`` on every move."""

    scenario_changed = Signal(object)

    def __init__(self, scenarios=(), title: str = "", parent=None):
        super().__init__(parent)
        self.title = title
        self.scenarios = list(scenarios)
        self.index = 0
        self.description = ""     # documented in scenarios/README.md, shown nowhere before
        # the scenario on screen is not the lesson's (opened from the browser): the
        # bar said "3 / 7" over it (teacher review); Next and Previous go on from index
        self.away = False

    def start(self, index: int = 0):
        if self.scenarios:
            self.index = max(0, min(index, len(self.scenarios) - 1))
            self.scenario_changed.emit(self.current)

    @property
    def current(self):
        return self.scenarios[self.index] if self.scenarios else None

    def next(self) -> bool:
        if self.index + 1 >= len(self.scenarios):
            return False
        self.index += 1
        self.scenario_changed.emit(self.current)
        return True

    def previous(self) -> bool:
        if self.index <= 0 or not self.scenarios:
            return False
        self.index -= 1
        self.scenario_changed.emit(self.current)
        return True

    def can_next(self) -> bool:
        return self.index + 1 < len(self.scenarios)

    def can_previous(self) -> bool:
        return self.index > 0 and bool(self.scenarios)

    def progress_text(self) -> str:
        if not self.scenarios:
            return "0 / 0"
        if self.away:   # a scenario from outside the lesson is on screen
            return f"\u2013 / {len(self.scenarios)}"
        return f"{self.index + 1} / {len(self.scenarios)}"


class LessonBar(QWidget):
    """The lesson's title over ``< Previous   3 / 10   Next >``.

    Two rows, the title wrapped: on one row the whole title set the side
    column's smallest width (675 px for "Autograd, step by step"'s), and at
    1024 px the window grew past the screen while the editor kept 70 px, a
    letter per line (GUI review)."""

    def __init__(self, walker: LessonWalker, parent=None, go_next=None, go_previous=None):
        super().__init__(parent)
        self.setObjectName("LessonBar")
        self.walker = walker
        rows = QVBoxLayout(self)
        rows.setContentsMargins(6, 2, 6, 2)
        rows.setSpacing(0)
        self.title_label = QLabel(objectName="LessonTitle")
        self.title_label.setWordWrap(True)
        rows.addWidget(self.title_label)
        lay = QHBoxLayout()
        rows.addLayout(lay)
        self.prev_button = QPushButton("\u25C0 Prev (P)")
        self.progress_label = QLabel(objectName="LessonProgress")
        self.next_button = QPushButton("Next (N) \u25B6")
        self.prev_button.setToolTip("The previous scenario of the lesson (P)")
        self.next_button.setToolTip("The next scenario of the lesson (N)")
        for b in (self.prev_button, self.next_button):
            b.setFocusPolicy(Qt.NoFocus)
        # (the window passes its own steps, which ask about unsaved edits first)
        self.prev_button.clicked.connect(lambda: (go_previous or walker.previous)())
        self.next_button.clicked.connect(lambda: (go_next or walker.next)())
        lay.addWidget(self.prev_button)
        lay.addStretch(1)
        lay.addWidget(self.progress_label)
        lay.addStretch(1)
        lay.addWidget(self.next_button)
        walker.scenario_changed.connect(self.refresh)
        self.set_text_scale(1.0)
        self.refresh()

    def refresh(self, *_):
        w = self.walker
        self.title_label.setText(w.title)
        self.title_label.setToolTip(w.description)
        self.progress_label.setText(w.progress_text())
        self.progress_label.setToolTip(
            f"What is on screen is not in the lesson; Next goes on from {w.index + 1}"
            if w.away and w.scenarios else "")
        self.prev_button.setEnabled(w.can_previous())
        self.next_button.setEnabled(w.can_next())

    def set_text_scale(self, factor: float, min_px: int | None = None):
        px = max(min_px or 0, round(NORMAL_PX * max(0.5, float(factor))))
        # bigger text: the arrows alone (the words and keys stay in the tooltips).
        # "◀ Prev (P)   1 / 7   Next (N) ▶" at 150% asked for 483 px, and with the
        # editor and the timeline's big buttons the window needed 1,359 px on a
        # 1280 px projector (teacher review)
        big = px > NORMAL_PX * 1.15
        self.prev_button.setText("\u25C0" if big else "\u25C0 Prev (P)")
        self.next_button.setText("\u25B6" if big else "Next (N) \u25B6")
        f = QFont(self.font())
        f.setPixelSize(px)
        self.setFont(f)
        self.setStyleSheet(f"#LessonBar QLabel, #LessonBar QPushButton {{ font-size: {px}px; }}"
                           f" #LessonProgress {{ font-weight: 700; padding: 0 {px // 2}px; }}"
                           f" #LessonTitle {{ font-weight: 700; }}")
