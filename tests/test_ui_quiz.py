"""Quiz panel: question before anything runs, hidden output, keys, hint, reveal, score."""
import pytest
from PySide6.QtCore import Qt

from graphscope import scenarios as scn
from graphscope.ui.quiz import QuizPanel, QuizScore

# The offscreen platform says this on every show(); it is not about our code.
pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

TEMPLATE = '''
id = "{id}"
title = "{title}"
category = "predict_output"
difficulty = "intermediate"
question = "What does this print? Look at `y`."
options = [
  {{ key = "A", text = "tensor([2., 4.])" }},
  {{ key = "B", text = "tensor([3., 4.])" }},
  {{ key = "C", text = "RuntimeError" }},
  {{ key = "D", text = "Nothing" }},
]
answer = "{answer}"
hint = "Which branch runs?"
explanation = "The sum is 3, so y = x * 2... or is it?"
mistakes = ["Thinking the condition is checked at graph-build time.", "Forgetting grad_fn."]
note = "{note}"
reveal_hides_output = {hides}
snippet = """
import torch
x = torch.tensor([1.0, 2.0])
print(x * 2)
"""
expect = {{ stdout = "tensor([2., 4.])\\n" }}
'''


def make(tmp_path, sid="q1", answer="A", hides="true", note="PyTorch differs here."):
    p = tmp_path / f"{sid}.toml"
    p.write_text(TEMPLATE.format(id=sid, title=sid.upper(), answer=answer, hides=hides, note=note))
    return scn.load_file(p)


@pytest.fixture
def panel(qtbot, tmp_path):
    w = QuizPanel()
    qtbot.addWidget(w)
    w.resize(600, 900)
    w.show()
    return w


def test_question_shown_and_output_hidden_before_reveal(panel, tmp_path, qtbot):
    s = make(tmp_path)
    with qtbot.waitSignal(panel.output_hidden_changed) as sig:
        panel.set_scenario(s)
    assert sig.args == [True]
    assert panel.output_hidden and panel.hidden_label.isVisible()
    assert "<code>y</code>" in panel.question_label.text()
    assert [b.key for b in panel.buttons] == ["A", "B", "C", "D"]
    assert all(b.isVisible() for b in panel.buttons)
    # nothing about the answer is visible yet
    for w in (panel.explanation_label, panel.note_label, panel.mistakes_label,
              panel.result_label, panel.hint_label):
        assert not w.isVisible()
    assert all(b.mark == "" for b in panel.buttons)


def test_scenario_that_does_not_hide_output(panel, tmp_path):
    panel.set_scenario(make(tmp_path, hides="false"))
    assert not panel.output_hidden and not panel.hidden_label.isVisible()


def test_keys_pick_an_option_and_hint_shows(panel, tmp_path, qtbot):
    panel.set_scenario(make(tmp_path))
    with qtbot.waitSignal(panel.answer_chosen) as sig:
        qtbot.keyClick(panel, Qt.Key_C)
    assert sig.args == ["C"] and panel.chosen == "C"
    assert panel.option("C").isChecked() and not panel.option("A").isChecked()
    qtbot.keyClick(panel, Qt.Key_B)          # a pick can change before Reveal
    assert panel.chosen == "B" and not panel.option("C").isChecked()
    assert not panel.hint_label.isVisible()
    qtbot.mouseClick(panel.hint_button, Qt.LeftButton)
    assert panel.hint_label.isVisible() and "Which branch runs?" in panel.hint_label.text()


def test_reveal_marks_right_and_wrong_and_shows_explanation(panel, tmp_path, qtbot):
    s = make(tmp_path, answer="A")
    panel.set_scenario(s)
    panel.choose("B")
    with qtbot.waitSignal(panel.reveal_requested) as run_req, \
            qtbot.waitSignal(panel.output_hidden_changed) as hidden:
        qtbot.mouseClick(panel.reveal_button, Qt.LeftButton)
    assert run_req.args == [s]            # the window runs the snippet live on this
    assert hidden.args == [False] and not panel.hidden_label.isVisible()
    assert panel.option("A").mark == "right" and "\u2714" in panel.option("A").label_text()
    assert panel.option("B").mark == "wrong" and "\u2718" in panel.option("B").label_text()
    assert panel.option("C").mark == "" and panel.option("D").mark == ""
    assert "Not quite" in panel.result_label.text()
    assert panel.explanation_label.isVisible() and "sum is 3" in panel.explanation_label.text()
    assert panel.note_label.isVisible() and "PyTorch differs" in panel.note_label.text()
    assert panel.mistakes_label.isVisible() and panel.mistakes_label.text().count("<li>") == 2
    # a pick after Reveal changes nothing; the hint and Reveal are done with (they
    # looked usable after it, and a second Reveal ran the snippet again: visual review)
    panel.choose("A")
    assert panel.chosen == "B"
    assert not panel.hint_button.isEnabled() and not panel.reveal_button.isEnabled()
    # ... and their keys, typed into the panel, do nothing (code review: R ran it again)
    with qtbot.assertNotEmitted(panel.reveal_requested):
        qtbot.keyClick(panel, Qt.Key_R)
    qtbot.keyClick(panel, Qt.Key_H)
    assert not panel.hint_label.isVisible()
    panel.set_scenario(s)                    # the question again: open again
    assert panel.hint_button.isEnabled() and panel.reveal_button.isEnabled()


def test_score_counts_first_answer_per_scenario(panel, tmp_path, qtbot):
    a, b, c = make(tmp_path, "q1", "A"), make(tmp_path, "q2", "C"), make(tmp_path, "q3", "D")
    panel.set_scenario(a)
    panel.choose("A")
    with qtbot.waitSignal(panel.score_changed) as sig:
        panel.reveal()
    assert sig.args == [1, 1] and panel.score_label.text() == "Score 1 / 1"
    panel.reveal()                           # revealing twice does not count twice
    assert panel.score.answered == 1
    panel.set_scenario(b)
    panel.choose("A")
    panel.reveal()
    assert (panel.score.correct, panel.score.answered) == (1, 2)
    panel.set_scenario(c)
    panel.reveal()                           # revealed without a pick: not scored
    assert panel.score.answered == 2 and "answer is <b>D</b>" in panel.result_label.text()
    panel.set_scenario(a)                    # back to an answered one: the score stays
    # ... and says so (UX review: it looked new, and a second answer went uncounted)
    assert "your first answer here, A (right), is the one counted" in panel.score_label.text()
    panel.choose("B")
    panel.reveal()
    assert panel.score_label.text().startswith("Score 1 / 2 \u00b7 your first answer here, A")
    panel.set_scenario(b)
    assert "first answer here, A (not right)" in panel.score_label.text()


def test_score_is_shared_between_panels():
    score = QuizScore()
    assert score.record("x", "A", True) and not score.record("x", "B", False)
    assert score.text() == "Score 1 / 1"


def test_text_scale_applies_with_minimum(panel, tmp_path):
    panel.set_scenario(make(tmp_path))
    panel.set_text_scale(1.0)
    small = panel.base_px()
    panel.set_text_scale(2.0)
    assert panel.base_px() == 2 * small
    assert f"font-size: {2 * small}px" in panel.styleSheet()
    panel.set_text_scale(0.5, min_px=18)
    assert panel.base_px() == 18


def test_a_long_option_wraps_inside_its_button(panel, tmp_path):
    """ "tensor([3., 4., 5.], grad_fn=<AddBackward0>)" in a 1280x720 window's quiz
    column lost its end: a label wraps only at spaces (UX review)."""
    from PySide6.QtGui import QTextDocument, QTextOption
    text = open(make(tmp_path).path).read().replace(
        "tensor([3., 4.])", "tensor([3., 4., 5.], grad_fn=<AddBackward0>)")
    (tmp_path / "long.toml").write_text(text.replace('id = "q1"', 'id = "long"'))
    panel.set_scenario(scn.load_file(tmp_path / "long.toml"))
    label = panel.option("B")._label
    doc = QTextDocument()
    doc.setDefaultFont(label.font())
    doc.setHtml(label.text())
    opt = doc.defaultTextOption()
    opt.setWrapMode(QTextOption.WrapMode.WordWrap)      # a QLabel's wrapping
    doc.setDefaultTextOption(opt)
    width = 200
    doc.setTextWidth(width)
    assert doc.idealWidth() <= width
    assert "AddBackward0>)" in label.text().replace("\u200b", "").replace("&gt;", ">").replace("&lt;", "<")


def test_the_note_of_a_revisited_scenario_keeps_the_column_as_wide_as_it_was(panel, tmp_path):
    """"…, your first answer here, B (not right), is the one counted" on one line
    widened the quiz column past a 1280 px window's edge, and the options of the
    scenario before stayed drawn over the new ones until deleted (screenshot)."""
    from PySide6.QtGui import QFontMetrics
    a, b = make(tmp_path, "q1", "A"), make(tmp_path, "q2", "C")
    panel.set_scenario(a)
    old = list(panel.buttons)
    panel.choose("B")
    panel.reveal()
    panel.set_scenario(b)
    assert not any(x.isVisible() for x in old)
    panel.set_scenario(a)
    label = panel.score_label
    assert "is the one counted" in label.text()
    one_line = QFontMetrics(label.font()).horizontalAdvance(label.text())
    assert label.minimumSizeHint().width() < one_line / 2     # it wraps


def test_a_word_wider_than_the_column_does_not_widen_the_panel(panel, tmp_path, qtbot):
    """NOTE [a column that holds]: a long API name in an option and in the question
    made the panel's body 415 px wide in a 297 px column, which scrolls only up and
    down: every line was cut at the right edge, and options A and B, both beginning
    "torch.nn.functional.binary_cross_entropy", looked the same (teacher review)."""
    name = "torch.nn.functional.binary_cross_entropy_with_logits"
    text = open(make(tmp_path).path).read()
    text = text.replace('text = "tensor([2., 4.])"', f'text = "{name}"')
    text = text.replace('text = "tensor([3., 4.])"', 'text = "torch.nn.functional.binary_cross_entropy"')
    text = text.replace("What does this print? Look at `y`.", f"Which one is {name}_and_more_of_it?")
    (tmp_path / "long.toml").write_text(text.replace('id = "q1"', 'id = "long"'))
    panel.resize(297, 700)
    panel.set_scenario(scn.load_file(tmp_path / "long.toml"))
    panel.reveal()
    qtbot.wait(50)
    body = panel.scroll.widget()
    assert body.width() <= panel.scroll.viewport().width()
    assert all(b.width() <= body.width() for b in panel.buttons)
    # the option's name wraps at its dots and underscores, whole
    label = panel.option("A")._label
    assert label.heightForWidth(label.width()) > label.fontMetrics().lineSpacing() * 1.5
    assert name in label.text().replace("\u200b", "")


def test_keys_that_are_not_one_letter_or_not_ascii_digits(panel, tmp_path):
    """An option keyed "AB" counted as a letter key ("AB" in "ABCDEFGH"), and "²",
    a digit to str.isdigit, raised in int() (a second code review)."""
    text = open(make(tmp_path).path).read().replace('key = "A"', 'key = "AB"').replace(
        'answer = "A"', 'answer = "AB"')
    (tmp_path / "ab.toml").write_text(text.replace('id = "q1"', 'id = "ab"'))
    panel.set_scenario(scn.load_file(tmp_path / "ab.toml"))
    assert panel.pick_keys() == "1-4"
    assert panel.handle_key(0, "\u00b2") is False
    assert panel.handle_key(0, "1") and panel.chosen == "AB"


def test_hint_and_reveal_go_one_above_the_other_in_a_narrow_column(panel, tmp_path, qtbot):
    """GUI review: at the window's smallest size the two buttons side by side asked
    230 px of a 153 px column, and the whole quiz was cut at its right edge."""
    from PySide6.QtWidgets import QBoxLayout
    panel.set_scenario(make(tmp_path))
    assert panel.buttons_row.direction() == QBoxLayout.LeftToRight
    panel.resize(150, 700)
    qtbot.wait(50)
    assert panel.buttons_row.direction() == QBoxLayout.TopToBottom
    body = panel.scroll.widget()
    assert body.minimumSizeHint().width() <= panel.scroll.viewport().width()
    panel.resize(600, 700)
    qtbot.wait(50)
    assert panel.buttons_row.direction() == QBoxLayout.LeftToRight


def test_reveal_and_hint_scroll_a_short_column_to_what_they_show(panel, tmp_path, qtbot):
    """In presentation mode at 1280x720 the verdict sat below the fold (612 px
    of a 467 px column) and the keys that would scroll step the timeline there
    (UX review): Reveal and Hint bring what they show to the column's top."""
    from PySide6.QtCore import QPoint
    panel.set_scenario(make(tmp_path))
    panel.set_text_scale(1.6)
    panel.resize(300, 260)
    panel.show()
    qtbot.waitExposed(panel)
    view = panel.scroll.viewport()

    def top(label):
        return label.mapTo(view, QPoint(0, 0)).y()

    def in_view(label):       # its start, and as much of it as the view can hold
        return 0 <= top(label) and top(label) + min(label.height(), view.height() - 8) \
            <= view.height()
    assert not in_view(panel.result_label) or panel.result_label.isHidden()
    panel.show_hint()
    qtbot.waitUntil(lambda: in_view(panel.hint_label))
    panel.scroll.verticalScrollBar().setValue(0)
    panel.choose("B")
    panel.reveal()
    qtbot.waitUntil(lambda: in_view(panel.result_label))
    # the note that corrects the printed key starts on screen, before the Why
    # (visual review: practice-2's Why agreed with the wrong key above the fold)
    assert top(panel.note_label) < view.height()
    assert top(panel.note_label) < top(panel.explanation_label)
