"""Opening a lesson in the real window: where its ids are found (NOTE [a
lesson's own folder first] in ui/lesson.py) and how a lesson that does not
load, or only partly, says so."""
import pytest

from graphscope import scenarios as scn
from graphscope.ui.classroom import install_classroom

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


# the classroom window and its arguments, as the presentation tests make them
from test_ui_presentation import args, window  # noqa: E402,F401 (a fixture)


@pytest.mark.parametrize("open_folder", [False, True])
def test_a_lesson_shows_the_scenario_beside_it_not_the_bundled_one(window, teacher, open_folder):
    """`--lesson DIR/lessons/week3.toml` alone showed the bundled "detach", and
    with `--scenarios DIR` the teacher's: the lesson's own folder comes first."""
    c = install_classroom(window, args(lesson=str(teacher / "lessons" / "week3.toml"),
                                       scenarios=str(teacher) if open_folder else None))
    assert c.scenario.path == teacher / "j-shadow.toml"
    assert c.quiz.title_label.text() == "The teacher's detach"


LATIN1 = b'title = "Caf\xe9 lesson"\nscenarios = ["t-five"]\n'
NOT_UTF8 = "the file is not UTF-8 text: save it as UTF-8"


def problems_shown(c):
    lst = c.browser.problems_list
    return [lst.item(i).text() for i in range(lst.count())] if not lst.isHidden() else []


def test_a_lesson_that_does_not_load_says_so_and_keeps_its_problems(window, tmp_path):
    lesson = tmp_path / "latin1.toml"
    lesson.write_bytes(LATIN1)
    c = install_classroom(window, args(lesson=str(lesson)))
    assert c.scenario is None and not c.lesson_bar.isVisibleTo(window)
    assert window.status_text() == f"Cannot open the lesson: {lesson}:1: {NOT_UTF8}."
    assert window.status_label.property("role") == "error"
    assert problems_shown(c) == [f"{lesson}:1: {NOT_UTF8}"]
    assert c.browser_dock.isVisibleTo(window)
    assert c.lesson_report.failed and "codec" not in c.lesson_report.message()


def test_a_lesson_with_unknown_ids_opens_with_the_others_and_names_them(window, teacher):
    lesson = teacher / "lessons" / "week3.toml"
    lesson.write_text('title = "Week 3"\nscenarios = ["detach", "nope", "welcome", "zzz"]\n')
    c = install_classroom(window, args(lesson=str(lesson)))
    assert [s.id for s in c.walker.scenarios] == ["detach", "welcome"]
    assert c.scenario.id == "detach" and c.lesson_bar.progress_label.text() == "1 / 2"
    assert window.status_text() == (f"The lesson {lesson} names scenarios that were not "
                                    "found: 'nope', 'zzz'; it opened with the other 2.")
    assert window.status_label.property("role") == "error"
    assert len(problems_shown(c)) == 2 and not c.lesson_report.failed


def test_the_app_opens_on_a_failed_lesson_not_on_the_welcome_scenario(qapp, tmp_path,
                                                                      monkeypatch, capsys):
    """`graphscope --lesson latin1.toml` said nothing and ran the welcome
    scenario over the lesson's problems."""
    from PySide6.QtWidgets import QApplication
    from graphscope.ui import app as app_mod
    lesson = tmp_path / "latin1.toml"
    lesson.write_bytes(LATIN1)
    monkeypatch.setattr(app_mod, "_quiet_offscreen_noise", lambda: None)
    monkeypatch.setattr(QApplication, "exec", lambda self: 0)   # the window, without its loop
    before = set(QApplication.topLevelWidgets())
    assert app_mod.main(args(lesson=str(lesson), file=None, screenshot=None)) == 0
    [w] = [x for x in QApplication.topLevelWidgets()
           if x not in before and hasattr(x, "classroom")]
    try:
        assert capsys.readouterr().err == f"graphscope: cannot open the lesson: {lesson}:1: {NOT_UTF8}\n"
        assert not w.is_running()
        assert w.editor.toPlainText().strip() != scn.find("welcome").snippet.strip()
        assert w.status_text().startswith("Cannot open the lesson")
        assert w.status_label.property("role") == "error"
        assert problems_shown(w.classroom) == [f"{lesson}:1: {NOT_UTF8}"]
    finally:
        w.classroom.presentation.shutdown()
        w.controller.shutdown()
        w.ask_unsaved = lambda *_: "discard"
        w.close()
