"""Quiz panel: one scenario's question, options, hint, reveal and the session score.

The panel never runs anything itself. It shows the question and options before
any code runs, asks for the output to stay hidden when the scenario says seeing
it would give the answer away, and on Reveal emits ``reveal_requested`` so the
window (wired in ``classroom.py``) runs the snippet live. That keeps the panel
testable without a window or a worker.

NOTE [no colour alone]: right and wrong options are marked with a glyph and a
word as well as a colour (Okabe-Ito blue / vermillion), so the marks read the
same to colour-blind viewers and on a washed-out projector.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Optional

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import (QBoxLayout, QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea,
                               QSizePolicy, QVBoxLayout, QWidget)

from graphscope.ui.presentation import NORMAL_PX, palette

OPTION_KEYS = "ABCDEFGH"


def _letter_key(k: str) -> bool:
    """``k`` is one of the letters A-H (an option keyed "AB" is not: code review)."""
    return len(k) == 1 and k in OPTION_KEYS

PICK_LETTERS = 7     # A-G pick an option from the keyboard (H is Hint) ...
PICK_DIGITS = 8      # ... and so do 1-8, by place: NOTE [keys that pick]


@dataclass
class QuizScore:
    """Score for the session: the first answer given to each scenario counts."""
    answers: dict = field(default_factory=dict)   # scenario id -> (chosen, correct: bool)

    def record(self, scenario_id: str, chosen: str, correct: bool) -> bool:
        """Record an answer; False if this scenario was already answered."""
        if scenario_id in self.answers:
            return False
        self.answers[scenario_id] = (chosen, correct)
        return True

    @property
    def correct(self) -> int:
        return sum(1 for _, ok in self.answers.values() if ok)

    @property
    def answered(self) -> int:
        return len(self.answers)

    def text(self) -> str:
        return f"Score {self.correct} / {self.answered}"


def rich(text: str) -> str:
    """Plain scenario text -> minimal HTML: `code` spans, paragraphs, line breaks."""
    if not text:
        return ""
    parts = re.split(r"(`[^`]+`)", str(text).strip())
    out = []
    for p in parts:
        if len(p) > 2 and p.startswith("`") and p.endswith("`"):
            out.append(f"<code>{html.escape(p[1:-1])}</code>")
        else:
            out.append(html.escape(p))
    body = "".join(out)
    # the problem set marks its checks "[OK]" (a tick lost on the way to plain
    # text); the scenario keeps its words, the panel shows the tick (UX review)
    body = body.replace(" [OK]", " \u2714")
    return body.replace("\n\n", "<br><br>").replace("\n", "<br>")


_LONG_TOKEN = re.compile(r"\S{15,}")
# after = ( [ , anywhere; after . and _ before a letter ("torch.nn.functional.",
# "binary_cross_entropy_with_logits"), not inside a number ("1.5000")
_BREAK_AFTER = re.compile(r"([=(\[,])(?=\S)|([._])(?=[A-Za-z])")


def breakable(text: str) -> str:
    """Break opportunities (U+200B) inside long tokens: after ``=``, ``(``, ``[``
    and ``,``, and after ``.`` and ``_`` before a letter. A label wraps only at
    spaces, so "grad_fn=<AddBackward0>)" ran out of a narrow option button and was
    cut (UX review at 1280x720), and a teacher's option
    "torch.nn.functional.binary_cross_entropy_with_logits" looked the same as the
    one below it (teacher review). Only for text nobody copies (a button's
    label): copied, the breaks would come along."""
    return _LONG_TOKEN.sub(
        lambda m: _BREAK_AFTER.sub(lambda b: b.group(0) + "\u200b", m.group(0)), text)


def _option_list(scenario) -> list[tuple[str, str]]:
    opts = getattr(scenario, "options", None) or []
    result = []
    for i, o in enumerate(opts):
        if isinstance(o, dict):
            result.append((str(o.get("key", OPTION_KEYS[i])).upper(), str(o.get("text", ""))))
        elif isinstance(o, (list, tuple)) and len(o) == 2:
            result.append((str(o[0]).upper(), str(o[1])))
        else:   # an object with key/text, or a bare string
            key = getattr(o, "key", None) or OPTION_KEYS[i]
            result.append((str(key).upper(), str(getattr(o, "text", o))))
    return result


def _mistakes(scenario) -> list[str]:
    m = getattr(scenario, "mistakes", None) or []
    if isinstance(m, str):
        return [m] if m.strip() else []
    return [str(x) for x in m if str(x).strip()]


class OptionButton(QPushButton):
    """One answer option: the key in a badge-like prefix, the text wrapped."""

    def __init__(self, key: str, text: str, parent=None):
        super().__init__(parent)
        self.key = key
        self.option_text = text
        self.mark = ""          # "" | "right" | "wrong" | "chosen"
        self.setCheckable(True)
        self.setFocusPolicy(Qt.NoFocus)   # keys A-D go to the panel, never "click" twice
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Minimum)
        self._label = QLabel(self)
        self._label.setWordWrap(True)
        self._label.setTextFormat(Qt.RichText)
        self._label.setAttribute(Qt.WA_TransparentForMouseEvents)
        self._label.setMinimumWidth(40)
        self._label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        lay.addWidget(self._label)
        self.refresh()

    def refresh(self):
        glyph = {"right": "\u2714 ", "wrong": "\u2718 "}.get(self.mark, "")
        word = {"right": "  <b>(correct)</b>", "wrong": "  <b>(your answer)</b>"}.get(self.mark, "")
        text = rich(breakable(self.option_text))
        self._label.setText(f"<b>{glyph}{self.key}</b>&nbsp;&nbsp;{text}{word}")
        self.setProperty("mark", self.mark or "none")
        self.style().unpolish(self)
        self.style().polish(self)
        self.updateGeometry()

    def sizeHint(self):
        s = self._label.sizeHint()
        m = self.layout().contentsMargins()
        s.setHeight(self._label.heightForWidth(max(self.width() - 24, 100)) + m.top() + m.bottom())
        return s

    def hasHeightForWidth(self):
        return True

    def heightForWidth(self, w):
        m = self.layout().contentsMargins()
        return self._label.heightForWidth(max(w - m.left() - m.right(), 50)) + m.top() + m.bottom()

    def label_text(self) -> str:
        return self._label.text()


class QuizPanel(QWidget):
    """The question of one scenario, its options (keys A-D), Hint and Reveal.

    Signals: ``answer_chosen(key)``, ``reveal_requested(scenario)`` (the window
    runs the snippet), ``output_hidden_changed(bool)`` (hide console and printed
    values while True), ``score_changed(correct, answered)``.
    """

    answer_chosen = Signal(str)
    reveal_requested = Signal(object)
    output_hidden_changed = Signal(bool)
    score_changed = Signal(int, int)

    def __init__(self, scenario=None, score: QuizScore | None = None, parent=None):
        super().__init__(parent)
        self.setObjectName("QuizPanel")
        self.setFocusPolicy(Qt.StrongFocus)
        self.scenario = None
        self.score = score if score is not None else QuizScore()
        self._answered_before = None   # scenario id answered before this visit
        self.chosen: str | None = None
        self.revealed = False
        self.hint_shown = False
        self.output_hidden = False
        self._scale = 1.0
        self._min_px = NORMAL_PX
        self._theme = "light"
        self.buttons: list[OptionButton] = []
        self._build()
        self.set_scenario(scenario)

    # -- construction --------------------------------------------------------
    def _build(self):
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = QScrollArea(self)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.scroll.viewport().installEventFilter(self)   # (_fit_buttons)
        outer.addWidget(self.scroll)
        body = QWidget()
        body.setObjectName("QuizBody")
        self.scroll.setWidget(body)
        lay = QVBoxLayout(body)
        lay.setContentsMargins(14, 12, 14, 12)
        lay.setSpacing(10)

        self.meta_label = QLabel(objectName="QuizMeta", wordWrap=True)
        self.title_label = QLabel(objectName="QuizTitle", wordWrap=True)
        self.question_label = QLabel(objectName="QuizQuestion", wordWrap=True)
        self.question_label.setTextFormat(Qt.RichText)
        self.question_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        for w in (self.meta_label, self.title_label, self.question_label):
            lay.addWidget(w)

        self.options_box = QVBoxLayout()
        self.options_box.setSpacing(8)
        lay.addLayout(self.options_box)

        row = QBoxLayout(QBoxLayout.LeftToRight)
        self.buttons_row = row   # one above the other in a narrow column (resizeEvent)
        self.hint_button = QPushButton("Hint (H)", objectName="QuizHintButton")
        self.reveal_button = QPushButton("Reveal (R)", objectName="QuizRevealButton")
        self.hint_button.clicked.connect(self.show_hint)
        self.reveal_button.clicked.connect(self.reveal)
        for b in (self.hint_button, self.reveal_button):
            b.setFocusPolicy(Qt.NoFocus)
            row.addWidget(b)
        row.addStretch(1)
        lay.addLayout(row)
        self.score_label = QLabel(objectName="QuizScore")
        # (wrapped: "…, your first answer here, B (not right), is the one counted"
        # on one line widened the quiz column past the window's edge)
        self.score_label.setWordWrap(True)
        lay.addWidget(self.score_label)

        self.hidden_label = QLabel(
            "Output is hidden until Reveal: it would give the answer away.",
            objectName="QuizHiddenNote", wordWrap=True)
        self.hint_label = QLabel(objectName="QuizHint", wordWrap=True)
        self.result_label = QLabel(objectName="QuizResult", wordWrap=True)
        self.explanation_label = QLabel(objectName="QuizExplanation", wordWrap=True)
        self.note_label = QLabel(objectName="QuizNote", wordWrap=True)
        self.mistakes_label = QLabel(objectName="QuizMistakes", wordWrap=True)
        # the note ("What PyTorch really does") right under the verdict, before the
        # Why: where the printed key is wrong, its Why said so "correctly" beside a
        # RuntimeError on the graph, and the note correcting it was below the fold
        # at 1280x720 (visual review)
        for w in (self.hidden_label, self.hint_label, self.result_label,
                  self.note_label, self.explanation_label, self.mistakes_label):
            w.setTextFormat(Qt.RichText)
            w.setTextInteractionFlags(Qt.TextSelectableByMouse)
            lay.addWidget(w)
        # NOTE [a column that holds]: a word wider than the column (a long API name in
        # a question or option) made its label ask for that width; the body grew past
        # the scroll area, which scrolls only up and down, and every line of the panel
        # was cut at the right edge (teacher review). The labels ask for no width of
        # their own: they wrap in the column's width, and a word that still does not
        # fit is cut alone.
        for w in (self.meta_label, self.title_label, self.question_label, self.score_label,
                  self.hidden_label, self.hint_label, self.result_label,
                  self.explanation_label, self.note_label, self.mistakes_label):
            w.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
            w.setMinimumWidth(40)
        lay.addStretch(1)
        self._apply_style()

    # -- scenario ------------------------------------------------------------
    def set_scenario(self, scenario):
        """Show a new scenario's question, unanswered and unrevealed."""
        self.scenario = scenario
        sid = str(scenario.id) if scenario is not None else None
        self._answered_before = sid if sid in self.score.answers else None
        self.chosen = None
        self.revealed = False
        self.hint_shown = False
        for b in self.buttons:
            self.options_box.removeWidget(b)
            b.hide()          # (deleted later: gone from the picture now)
            b.deleteLater()
        self.buttons = []
        if scenario is None:
            self.meta_label.setText("")
            self.meta_label.hide()      # (an empty grey strip above "No scenario")
            self.title_label.setText("No scenario")
            self.question_label.setText("Open a scenario from the browser (Scenarios menu).")
        else:
            cat = str(getattr(scenario, "category", "") or "").replace("_", " ")
            diff = str(getattr(scenario, "difficulty", "") or "")
            self.meta_label.setText(" \u00b7 ".join(x for x in (cat.title(), diff) if x))
            self.meta_label.setVisible(bool(self.meta_label.text()))
            self.title_label.setText(str(getattr(scenario, "title", "") or scenario.id))
            self.question_label.setText(rich(getattr(scenario, "question", "")))
            for key, text in _option_list(scenario):
                b = OptionButton(key, text)
                b.clicked.connect(lambda _=False, k=key: self.choose(k))
                self.options_box.addWidget(b)
                b.show()    # a child added to a shown parent stays hidden until told
                self.buttons.append(b)
        for w in (self.hint_label, self.result_label, self.explanation_label,
                  self.note_label, self.mistakes_label):
            w.clear()
            w.hide()
        has_hint = bool(scenario is not None and getattr(scenario, "hint", ""))
        self.hint_button.setEnabled(has_hint)
        self.reveal_button.setEnabled(scenario is not None)
        self._set_output_hidden(bool(scenario is not None
                                     and getattr(scenario, "reveal_hides_output", True)))
        self._update_score()
        self._apply_style()

    @property
    def answer(self) -> str | None:
        a = getattr(self.scenario, "answer", None)
        return str(a).upper() if a else None

    # -- learner actions -----------------------------------------------------
    def choose(self, key: str):
        """Pick an option (before Reveal; the pick can change until then)."""
        key = key.upper()
        if self.revealed or not any(b.key == key for b in self.buttons):
            for b in self.buttons:   # a checkable button toggles itself: undo
                b.setChecked(b.key == self.chosen)
            return
        self.chosen = key
        for b in self.buttons:
            b.setChecked(b.key == key)
        self.answer_chosen.emit(key)

    def show_hint(self):
        if self.scenario is None or not getattr(self.scenario, "hint", "") or self.revealed:
            return
        self.hint_shown = True
        self.hint_label.setText(f"<b>Hint</b><br>{rich(self.scenario.hint)}")
        self.hint_label.show()
        self._bring_to_top(self.hint_label)

    def reveal(self):
        """Mark the right option (and a wrong pick), show explanation, note and
        common mistakes, unhide output, count the score, and ask for a live run."""
        if self.scenario is None or self.revealed:
            # (done: H and R typed into the panel after Reveal ran the snippet again
            # though the buttons were off: code review)
            return
        self.revealed = True
        right = self.answer
        for b in self.buttons:
            b.mark = "right" if b.key == right else ("wrong" if b.key == self.chosen else "")
            b.setChecked(b.key == self.chosen)
            b.refresh()
        if self.chosen is None:
            verdict = f"The answer is <b>{right}</b>."
        elif self.chosen == right:
            verdict = f"\u2714 <b>Correct</b>: {right}."
        else:
            verdict = f"\u2718 <b>Not quite</b>: you chose {self.chosen}, the answer is <b>{right}</b>."
        self.result_label.setText(verdict)
        self.result_label.setProperty("verdict", "none" if self.chosen is None
                                      else ("right" if self.chosen == right else "wrong"))
        self.result_label.show()
        expl = getattr(self.scenario, "explanation", "")
        if expl:
            self.explanation_label.setText(f"<b>Why</b><br>{rich(expl)}")
            self.explanation_label.show()
        note = getattr(self.scenario, "note", "")
        if note:
            self.note_label.setText(f"<b>What PyTorch really does</b><br>{rich(note)}")
            self.note_label.show()
        mistakes = _mistakes(self.scenario)
        if mistakes:
            items = "".join(f"<li>{rich(m)}</li>" for m in mistakes)
            self.mistakes_label.setText(f"<b>Common mistakes</b><ul>{items}</ul>")
            self.mistakes_label.show()
        if self.chosen is not None:
            self.score.record(str(self.scenario.id), self.chosen, self.chosen == right)
        self._update_score()
        self._set_output_hidden(False)
        # done: the hint and a second Reveal (which ran the snippet again) looked
        # usable after it, and a pick did nothing (visual review); Run runs it again
        self.hint_button.setEnabled(False)
        self.reveal_button.setEnabled(False)
        self._apply_style()
        self._bring_to_top(self.result_label)
        self.reveal_requested.emit(self.scenario)

    def _bring_to_top(self, label) -> None:
        """Scroll the column so that ``label`` (the verdict, the hint) starts at
        its top once laid out: in presentation mode at 1280x720 the verdict sat at
        612 px of a 467 px column, and the keys that would scroll step the
        timeline there (UX review). A column with room does not move."""
        def scroll():
            body = self.scroll.widget()
            if body is None or label.isHidden():
                return
            body.layout().activate()
            top = label.mapTo(body, QPoint(0, 0)).y()
            view = self.scroll.viewport().height()
            bar = self.scroll.verticalScrollBar()
            if top + min(label.height(), view) > bar.value() + view or top < bar.value():
                bar.setValue(min(bar.maximum(), max(0, top - 8)))
        scroll()
        QTimer.singleShot(0, self, scroll)   # (again once the labels' heights are final)

    # NOTE [keys that pick]: a digit picks by place (1 the first option, up to 8);
    # a letter A-G picks the option keyed that letter, or, when no option is keyed
    # by a letter ("1", "2", "3"), the option in that place. A teacher's options
    # keyed "1", "2", "3", or a fifth option E, could not be picked (teacher
    # review); options keyed B, C, D had 1 and 2 both pick B (code review).
    def key_at(self, i: int) -> Optional[str]:
        """The key of the ``i``-th option (digit ``i + 1``), None past the last."""
        return self.buttons[i].key if 0 <= i < len(self.buttons) else None

    def key_for_letter(self, letter: str) -> Optional[str]:
        """The key of the option letter ``letter`` picks (NOTE [keys that pick])."""
        letter = letter.upper()
        keys = [b.key for b in self.buttons]
        if letter in keys:
            return letter
        if not any(_letter_key(k) for k in keys) and _letter_key(letter):
            return self.key_at(OPTION_KEYS.index(letter))
        return None

    def pick_keys(self) -> str:
        """What the keys that pick are, for the status line: "A-C", "B, C, E" or "1-3"."""
        keys = [b.key for b in self.buttons]
        if not keys:
            return ""
        if all(_letter_key(k) and k in OPTION_KEYS[:PICK_LETTERS] for k in keys):
            at = [OPTION_KEYS.index(k) for k in keys]
            if at == list(range(at[0], at[0] + len(at))) and len(at) > 1:
                return f"{keys[0]}-{keys[-1]}"
            return ", ".join(keys)
        return self.digit_keys()

    def digit_keys(self) -> str:
        """The digits that pick, "1-3" (presentation mode, where B blanks, names these)."""
        return f"1-{min(len(self.buttons), PICK_DIGITS)}"

    def handle_key(self, key: int, text: str = "") -> bool:
        """Quiz keys: a letter or a digit picks (NOTE [keys that pick]), H hint,
        R reveal. True if used."""
        t = (text or "").upper()
        pick = None
        if len(t) == 1 and t in OPTION_KEYS[:PICK_LETTERS]:
            pick = self.key_for_letter(t)
        elif len(t) == 1 and t in "12345678":      # ("²".isdigit(), and int() refuses it)
            pick = self.key_at(int(t) - 1)
        if pick is not None:
            self.choose(pick)
            return True
        if t == "H":
            self.show_hint()
            return True
        if t == "R":
            self.reveal()
            return True
        return False

    def keyPressEvent(self, e: QKeyEvent):
        if not (e.modifiers() & (Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier)) \
                and self.handle_key(e.key(), e.text()):
            e.accept()
            return
        super().keyPressEvent(e)

    # -- view state ----------------------------------------------------------
    def _set_output_hidden(self, hidden: bool):
        self.hidden_label.setVisible(hidden)
        if hidden != self.output_hidden:
            self.output_hidden = hidden
            self.output_hidden_changed.emit(hidden)

    def _update_score(self):
        text = self.score.text()
        sid = self._answered_before
        if sid is not None and sid in self.score.answers:
            # back at a scenario answered before (P in a lesson): it looked new, and
            # a second answer went uncounted without a word (UX review)
            chosen, ok = self.score.answers[sid]
            text += (f" · your first answer here, {chosen} "
                     f"({'right' if ok else 'not right'}), is the one counted")
        self.score_label.setText(text)
        self.score_changed.emit(self.score.correct, self.score.answered)

    def option(self, key: str) -> OptionButton:
        return next(b for b in self.buttons if b.key == key.upper())

    # -- presentation --------------------------------------------------------
    def eventFilter(self, obj, event):
        if obj is self.scroll.viewport() and event.type() == QEvent.Resize:
            self._fit_buttons()
        return super().eventFilter(obj, event)

    def _fit_buttons(self) -> None:
        """Hint and Reveal side by side where they fit, else one above the other: at
        the window's smallest size the two asked 230 px of a 153 px column, and the
        whole column was cut at its right edge, the title mid-word (GUI review)."""
        if getattr(self, "buttons_row", None) is None:
            return      # (a resize while the panel is being built)
        m = self.scroll.widget().layout().contentsMargins()
        need = (self.hint_button.sizeHint().width() + self.reveal_button.sizeHint().width()
                + self.buttons_row.spacing() + m.left() + m.right())
        want = QBoxLayout.LeftToRight if self.scroll.viewport().width() >= need \
            else QBoxLayout.TopToBottom
        if self.buttons_row.direction() != want:
            self.buttons_row.setDirection(want)

    def set_text_scale(self, factor: float, min_px: int | None = None):
        """Scale every text in the panel; ``min_px`` is the smallest text allowed."""
        self._scale = max(0.5, float(factor))
        if min_px is not None:
            self._min_px = int(min_px)
        self._apply_style()
        self._fit_buttons()     # (bigger text: bigger buttons)

    def set_theme(self, name: str):
        self._theme = name
        self._apply_style()

    def base_px(self) -> int:
        return max(self._min_px, round(NORMAL_PX * self._scale))

    def _apply_style(self):
        px = self.base_px()
        c = palette(self._theme)
        f = QFont(self.font())
        f.setPixelSize(px)
        self.setFont(f)
        self.setStyleSheet(f"""
            #QuizPanel, #QuizBody {{ background: {c['bg']}; color: {c['fg']}; }}
            QLabel {{ color: {c['fg']}; font-size: {px}px; }}
            #QuizMeta {{ color: {c['muted']}; font-size: {px}px; font-weight: 600; }}
            #QuizTitle {{ font-size: {round(px * 1.35)}px; font-weight: 700; }}
            #QuizQuestion {{ font-size: {round(px * 1.15)}px; }}
            code {{ font-family: monospace; }}
            QPushButton {{ font-size: {px}px; padding: {px // 3}px {px}px;
                           background: {c['button']}; color: {c['fg']};
                           border: 2px solid {c['border']}; border-radius: 6px; }}
            QPushButton:disabled {{ color: {c['muted']}; }}
            OptionButton {{ text-align: left; }}
            OptionButton:checked {{ border: 4px solid {c['accent']}; background: {c['chosen_bg']}; }}
            OptionButton[mark="right"] {{ border: 4px solid {c['right']}; background: {c['right_bg']}; }}
            OptionButton[mark="wrong"] {{ border: 4px dashed {c['wrong']}; background: {c['wrong_bg']}; }}
            #QuizScore {{ font-weight: 700; }}
            #QuizHiddenNote {{ color: {c['muted']}; font-style: italic; }}
            #QuizHint {{ background: {c['hint_bg']}; border-left: 5px solid {c['accent']}; padding: 6px; }}
            #QuizResult {{ font-size: {round(px * 1.2)}px; }}
            #QuizResult[verdict="right"] {{ color: {c['right']}; }}
            #QuizResult[verdict="wrong"] {{ color: {c['wrong']}; }}
            #QuizNote {{ background: {c['note_bg']}; border-left: 5px solid {c['wrong']}; padding: 6px; }}
            #QuizMistakes {{ padding: 2px; }}
        """)
        for b in self.buttons:
            b.style().unpolish(b)
            b.style().polish(b)
        self.result_label.style().unpolish(self.result_label)
        self.result_label.style().polish(self.result_label)
