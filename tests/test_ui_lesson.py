"""Opening a lesson in the real window: where its ids are found (NOTE [a
lesson's own folder first] in ui/lesson.py) and how a lesson that does not
load, or only partly, says so."""
import types

import pytest
from PySide6.QtCore import QSettings

from graphscope import scenarios as scn
from graphscope.ui.classroom import install_classroom
from graphscope.ui.main_window import MainWindow

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

BUNDLED_DETACH = scn.bundled_dir() / "detach.toml"


@pytest.fixture
def teacher(tmp_path):
    """A teacher's folder whose j-shadow.toml reuses the bundled id "detach"."""
    d = tmp_path / "teacher"
    (d / "lessons").mkdir(parents=True)
    text = BUNDLED_DETACH.read_text(encoding="utf-8")
    (d / "j-shadow.toml").write_text(
        text.replace('title = "detach() cuts the graph"', 'title = "The teacher\'s detach"'),
        encoding="utf-8")
    (d / "lessons" / "week3.toml").write_text('title = "Week 3"\nscenarios = ["detach"]\n')
    return d


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    w.ask_unsaved = lambda *_: "discard"
    qtbot.addWidget(w)
    yield w
    c = getattr(w, "classroom", None)
    if c is not None:
        c.presentation.shutdown()
    w.controller.shutdown()
    w.close()


def args(**kw):
    base = dict(scenario=None, scenarios=None, lesson=None, presentation=False)
    base.update(kw)
    return types.SimpleNamespace(**base)


@pytest.mark.parametrize("open_folder", [False, True])
def test_a_lesson_shows_the_scenario_beside_it_not_the_bundled_one(window, teacher, open_folder):
    """`--lesson DIR/lessons/week3.toml` alone showed the bundled "detach", and
    with `--scenarios DIR` the teacher's: the lesson's own folder comes first."""
    c = install_classroom(window, args(lesson=str(teacher / "lessons" / "week3.toml"),
                                       scenarios=str(teacher) if open_folder else None))
    assert c.scenario.path == teacher / "j-shadow.toml"
    assert c.quiz.title_label.text() == "The teacher's detach"
