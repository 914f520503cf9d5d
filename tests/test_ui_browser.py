"""Scenario browser (category, difficulty, search, broken files, opening) and lessons."""
import pytest
from PySide6.QtCore import Qt

from graphscope import scenarios as scn
from graphscope.ui.lesson import LessonBar, LessonWalker, resolve_lesson
from graphscope.ui.scenario_browser import ScenarioBrowser

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

TEMPLATE = '''
id = "{id}"
title = "{title}"
category = "{category}"
difficulty = "{difficulty}"
question = "{question}"
options = [ {{ key = "A", text = "yes" }}, {{ key = "B", text = "no" }} ]
answer = "A"
hint = "h"
explanation = "e"
snippet = "import torch\\nprint(1)\\n"
expect = {{ stdout = "1\\n" }}
'''

ROWS = [
    ("leaf", "Leaf tensors", "conceptual", "easy", "Which tensors are leaves?"),
    ("branch", "A data-dependent branch", "predict_output", "intermediate", "What does the if do?"),
    ("nograd", "no_grad and backward", "debug", "expert", "Why does backward fail under no_grad?"),
    ("rnn", "RNN over sentences", "model_choice", "advanced", "Which model handles lengths?"),
    ("accum", "Gradient accumulation", "practice", "easy", "What is x.grad after two backward calls?"),
]


def write(folder, sid, title, category, difficulty, question):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{sid}.toml").write_text(TEMPLATE.format(
        id=sid, title=title, category=category, difficulty=difficulty, question=question))


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "course"
    for row in ROWS:
        write(d, *row)
    return d


@pytest.fixture
def browser(qtbot, folder):
    found, problems = scn.load_dir(folder)
    b = ScenarioBrowser(found, problems)
    qtbot.addWidget(b)
    b.resize(500, 700)
    b.show()
    return b


def test_grouped_by_category_in_course_order(browser):
    assert browser.visible_ids() == ["leaf", "branch", "rnn", "nograd", "accum"]
    tops = [browser.tree.topLevelItem(i).text(0) for i in range(browser.tree.topLevelItemCount())]
    assert tops == ["Conceptual", "Predict output", "Model choice", "Debug", "Practice"]
    assert browser.count_label.text() == "5 scenarios"
    assert not browser.problems_list.isVisible()


def test_filters_by_category_and_difficulty(browser):
    browser.set_filter(category="debug")
    assert browser.visible_ids() == ["nograd"]
    browser.set_filter(category="All", difficulty="easy")
    assert browser.visible_ids() == ["leaf", "accum"]
    assert browser.count_label.text() == "2 of 5 scenarios"
    browser.set_filter(category="practice")
    assert browser.visible_ids() == ["accum"]
    browser.set_filter(category="debug")           # debug and easy: nothing
    assert browser.visible_ids() == []


def test_search_box(browser, qtbot):
    qtbot.keyClicks(browser.search, "grad")
    assert set(browser.visible_ids()) == {"nograd", "accum"}
    browser.search.clear()
    qtbot.keyClicks(browser.search, "backward no_grad")   # every word must match
    assert browser.visible_ids() == ["nograd"]
    browser.search.setText("lengths")                     # matches the question text
    assert browser.visible_ids() == ["rnn"]
    browser.search.setText("zzz")
    assert browser.visible_ids() == [] and browser.count_label.text() == "0 of 5 scenarios"


def test_enter_and_double_click_open_a_scenario(browser, qtbot):
    browser.search.setText("rnn")
    browser.tree.setFocus()
    with qtbot.waitSignal(browser.scenario_activated) as sig:
        qtbot.keyClick(browser.tree, Qt.Key_Return)
    assert sig.args[0].id == "rnn"
    browser.search.setText("")
    item = browser.tree.topLevelItem(0).child(0)
    rect = browser.tree.visualItemRect(item)
    # a real double-click is press, release, then the double-click event
    qtbot.mouseClick(browser.tree.viewport(), Qt.LeftButton, pos=rect.center())
    with qtbot.waitSignal(browser.scenario_activated) as sig:
        qtbot.mouseDClick(browser.tree.viewport(), Qt.LeftButton, pos=rect.center())
    assert sig.args[0].id == "leaf"


def test_teachers_folder_with_broken_files(qtbot, tmp_path, folder):
    teacher = tmp_path / "teacher"
    write(teacher, "mine", "My own question", "conceptual", "hard", "Mine?")
    (teacher / "broken.toml").write_text('id = "broken"\ntitle = "x\n')           # bad TOML
    (teacher / "missing.toml").write_text('id = "missing"\ntitle = "No options"\n')
    b = ScenarioBrowser(scn.load_dir(folder)[0])
    qtbot.addWidget(b)
    b.show()
    found, problems = b.add_folder(teacher)
    assert [s.id for s in found] == ["mine"]
    assert "mine" in b.visible_ids() and len(b.visible_ids()) == 6
    texts = [b.problems_list.item(i).text() for i in range(b.problems_list.count())]
    assert any(t.startswith(f"{teacher / 'broken.toml'}:2:") for t in texts), texts
    assert any(f"{teacher / 'missing.toml'}:" in t and "missing field" in t for t in texts), texts
    assert b.problems_list.isVisible()
    b.set_filter(difficulty="hard")
    assert b.visible_ids() == ["mine"]


def test_lesson_walks_forward_and_back(qtbot, tmp_path, folder):
    (folder / "lessons").mkdir()
    lesson_file = folder / "lessons" / "intro.toml"
    lesson_file.write_text('title = "Intro"\nscenarios = ["branch", "leaf", "nope", "accum"]\n')
    title, found, problems = resolve_lesson(lesson_file)
    assert title == "Intro" and [s.id for s in found] == ["branch", "leaf", "accum"]
    assert len(problems) == 1 and "unknown scenario 'nope'" in problems[0]
    walker = LessonWalker(found, title)
    bar = LessonBar(walker)
    qtbot.addWidget(bar)
    seen = []
    walker.scenario_changed.connect(lambda s: seen.append(s.id))
    walker.start()
    assert bar.progress_label.text() == "1 / 3" and not bar.prev_button.isEnabled()
    qtbot.mouseClick(bar.next_button, Qt.LeftButton)
    assert walker.next()
    assert bar.progress_label.text() == "3 / 3" and not bar.next_button.isEnabled()
    assert not walker.next()                       # stays on the last one
    assert walker.previous()
    assert bar.progress_label.text() == "2 / 3"
    assert seen == ["branch", "leaf", "accum", "leaf"]


def test_a_lesson_named_from_its_own_folder_still_finds_the_folder_above(tmp_path, monkeypatch):
    """`graphscope --lesson week3.toml` typed in DIR/lessons: the parent of
    "week3.toml" is ".", and DIR's own "detach" lost to the bundled one."""
    d = tmp_path / "teacher"
    (d / "lessons").mkdir(parents=True)
    (d / "mine.toml").write_text(TEMPLATE.format(id="detach", title="Mine", category="debug",
                                                 difficulty="easy", question="Mine?"))
    (d / "lessons" / "week3.toml").write_text('title = "Week 3"\nscenarios = ["detach"]\n')
    monkeypatch.chdir(d / "lessons")
    title, [found], problems = resolve_lesson("week3.toml", scn.load_dir(scn.bundled_dir())[0])
    assert found.title == "Mine" and problems == []
