"""Classroom wiring: the quiz panel, scenario browser, lessons, presentation mode and
export, added to the main window through its public seams only (``add_side_panel``,
``load_snippet``, ``run``, ``set_text_scale``, ``set_theme``, its actions and menus).

``install(window, args)`` is what ``ui/app.py`` calls; ``args`` may carry
``scenario`` (an id), ``scenarios`` (a teacher's folder), ``lesson`` (a lesson
file) and ``presentation`` (bool). It returns True when it opened a scenario, so
the app does not also open the welcome scenario.

A scenario with ``reveal_hides_output`` asks that printed output not give the
answer away before Reveal: the quiz's ``output_hidden_changed`` drives the
window's ``set_output_hidden`` (main_window.py NOTE [hidden output]); the run
and the graph are never held back.

The quiz sits in the window's right column as a tab beside the inspector
(``add_side_tab``), so at a projector the graph keeps most of the screen.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QVBoxLayout, QWidget

from graphscope import scenarios as _scn
from graphscope.model.summary import counted
from graphscope.ui import clipboard_export
from graphscope.ui import theme as _theme
from graphscope.ui.lesson import LessonBar, LessonWalker, open_lesson_file
from graphscope.ui.presentation import PresentationController, ScaleSlider
from graphscope.ui.quiz import OPTION_KEYS, PICK_DIGITS, PICK_LETTERS, QuizPanel, QuizScore
from graphscope.ui.scenario_browser import ScenarioBrowser


def _lesson_source(path) -> str:
    """The browser's source key of a lesson's problems (NOTE [sources]): one lesson
    file, one key, whether named as typed or as Reload keeps it."""
    return f"lesson {Path(path).absolute()}"


def _arg(args, name, default=None):
    return getattr(args, name, default) if args is not None else default


class Classroom(QObject):
    """Everything classroom-side that lives in one window (``window.classroom``)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.scenario = None
        self._opening = False     # open_scenario is loading its snippet
        self.lesson_report = None  # the last lesson opened (lesson.OpenedLesson)
        self.lesson_path = None    # ... and the file of the lesson walked now (reload)
        self.score = QuizScore()
        self.quiz = QuizPanel(score=self.score)
        self.browser = ScenarioBrowser()
        self.walker = LessonWalker(parent=self)
        self.lesson_bar = LessonBar(self.walker, go_next=self.next_scenario,
                                    go_previous=self.previous_scenario)
        self.presentation = PresentationController(window)
        self._load_bundled()
        self._build_docks()
        self._build_actions()
        self._wire()
        self._lesson_actions()
        self.apply_theme(window.theme.name)
        self.presentation.apply_scale()

    # -- construction ------------------------------------------------------------
    def _load_bundled(self):
        try:
            found, problems = _scn.load_dir(_scn.bundled_dir())
        except Exception as e:   # a broken bundle must not stop the window
            found, problems = [], [f"{_scn.bundled_dir()}:1: {e}"]
        self.browser.set_scenarios(found, problems)

    def _build_docks(self):
        w = self.window
        # the lesson bar sits on top of the quiz: "Intro   < Previous  3 / 10  Next >"
        quiz_box = QWidget()
        col = QVBoxLayout(quiz_box)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.lesson_bar)
        col.addWidget(self.quiz, 1)
        self.lesson_bar.hide()
        # a tab beside the inspector, added when the first scenario opens (a plain
        # file needs no quiz and keeps the tab bar hidden)
        self.quiz_dock = quiz_box
        self.browser_dock = w.add_side_panel(self.browser, "Scenarios",
                                             Qt.DockWidgetArea.LeftDockWidgetArea)
        self.browser_dock.hide()
        # opened from the menu (Ctrl+Shift+B) it took what Qt gave it, 268 of 1600 px,
        # and titles wrapped to four lines (first-time user review): its share, as
        # when a folder opens it
        self.browser_dock.visibilityChanged.connect(
            lambda shown: shown and QTimer.singleShot(0, self.size_docks))
        # the one text-size control, always in reach (status bar, right)
        self.scale_slider = ScaleSlider(self.presentation)
        w.statusBar().addPermanentWidget(self.scale_slider)

    def _action(self, text, slot, shortcuts=(), tip="", checkable=False) -> QAction:
        a = QAction(text, self.window)
        if shortcuts:
            a.setShortcuts([QKeySequence(s) for s in shortcuts])
        if tip:
            a.setToolTip(tip)
            a.setStatusTip(tip)
        a.setCheckable(checkable)
        a.triggered.connect(slot)
        self.window.addAction(a)   # window-wide; a focused text field keeps its letters
        return a

    def _build_actions(self):
        w, A = self.window, self._action
        self.browse_action = self.browser_dock.toggleViewAction()
        self.browse_action.setText("Scenario &browser")
        self.browse_action.setShortcut(QKeySequence("Ctrl+Shift+B"))
        self.open_folder_action = A("Open scenario &folder…", self.open_folder_dialog)
        self.open_lesson_action = A("Open &lesson…", self.open_lesson_dialog)
        self.reload_action = A("Re&load scenarios and lesson", self.reload, ["Ctrl+Shift+R"],
                               "Read the scenario folders and the lesson again (Ctrl+Shift+R)")
        self.next_action = A("&Next scenario", self.next_scenario, ["N", "Ctrl+PgDown"],
                             "Next scenario in the lesson (N, Ctrl+PageDown)")
        self.prev_action = A("&Previous scenario", self.previous_scenario, ["P", "Ctrl+PgUp"],
                             "Previous scenario in the lesson (P, Ctrl+PageUp)")
        # Keys A-G pick the option keyed that letter, 1-8 the one in that place
        # (NOTE [keys that pick] in quiz.py). B is also the projector's blank key:
        # in presentation mode B blanks and the answer B is 2 (_bind_letter_keys).
        # (the menu lists the digits' actions, named by the keys of the options;
        # the letters' are the window's alone: NOTE [keys that pick] in quiz.py)
        self.option_actions = [
            A(f"Answer {OPTION_KEYS[i]}", lambda _=False, i=i: self._pick(self.quiz.key_at(i)),
              [str(i + 1)]) for i in range(PICK_DIGITS)]
        self.letter_actions = [
            A(f"Answer {k}", lambda _=False, k=k: self._pick(self.quiz.key_for_letter(k)), [k])
            for k in OPTION_KEYS[:PICK_LETTERS]]
        self.hint_action = A("&Hint", self.quiz.show_hint, ["H"], "Show the hint (H)")
        self.reveal_action = A("&Reveal", self.quiz.reveal, ["R"],
                               "Run the snippet and mark the answer (R)")
        self.present_action = A("&Presentation mode", self.presentation.toggle,
                                ["Ctrl+Shift+P"], "Full screen, big text, clicker keys",
                                checkable=True)
        # (keys in presentation mode only: outside it, a '.' typed on the graph by a
        # student who thought the code had the keyboard blacked the window out, with
        # nothing on screen to say how to get it back: student review)
        self.blank_action = A("&Blank screen", self.presentation.toggle_blank, [],
                              "Black out the screen (B or '.' in presentation mode; Esc ends it)",
                              checkable=True)
        self.spotlight_action = A("&Spotlight current node", self._set_spotlight, [],
                                  "Dim everything but the current node", checkable=True)
        self.reset_scale_action = A("Normal text size", self.presentation.reset_scale, ["Ctrl+Alt+0"])
        # The window's own bigger/smaller text actions scale only the window; route
        # them through the one control so the quiz and browser scale too.
        for act, slot, extra in ((w.bigger_action, self.presentation.bigger, "Ctrl+="),
                                 (w.smaller_action, self.presentation.smaller, "Ctrl+-")):
            try:
                act.triggered.disconnect()
            except (RuntimeError, TypeError):
                pass
            act.triggered.connect(slot)
            keys = list(act.shortcuts())
            if QKeySequence(extra) not in keys:
                act.setShortcuts(keys + [QKeySequence(extra)])
        self.theme_actions = {}
        for act in w.theme_menu.actions():   # keep the quiz in step with the window's theme menu
            act.triggered.connect(lambda _=False: self._sync_theme())

        mb = w.menuBar()
        sm = mb.addMenu("S&cenarios")
        self.scenarios_menu = sm
        for a in (self.browse_action, self.open_folder_action, self.open_lesson_action,
                  self.reload_action):
            sm.addAction(a)
        sm.addSeparator()
        for a in (self.prev_action, self.next_action):
            sm.addAction(a)
        sm.addSeparator()
        for a in (*self.option_actions, self.hint_action, self.reveal_action):
            sm.addAction(a)
        pm = mb.addMenu("&Present")
        self.present_menu = pm
        for a in (self.present_action, self.blank_action, self.spotlight_action):
            pm.addAction(a)
        pm.addSeparator()
        for a in (w.bigger_action, w.smaller_action, self.reset_scale_action):
            pm.addAction(a)
        tm = pm.addMenu("Theme")
        for name in _theme.theme_names():
            t = _theme.get_theme(name)
            act = tm.addAction(t.title)
            act.setCheckable(True)
            act.triggered.connect(lambda _=False, n=name: self.presentation.set_theme(n))
            self.theme_actions[name] = act
        pm.addSeparator()
        em = pm.addMenu("&Export")
        self.export_menu = em
        for label, what, fmt in (("Graph as PNG…", "graph", "png"), ("Graph as SVG…", "graph", "svg"),
                                 ("Window as PNG…", "window", "png"),
                                 ("Window as SVG…", "window", "svg")):
            em.addAction(label).triggered.connect(
                lambda _=False, a=what, f=fmt: self.export_dialog(a, f))
        em.addSeparator()
        self.copy_graph_action = A("Copy graph", lambda: self.copy("graph"), ["Ctrl+Shift+C"])
        self.copy_window_action = A("Copy window", lambda: self.copy("window"))
        em.addAction(self.copy_graph_action)
        em.addAction(self.copy_window_action)
        # under File too, where a first-time user looked for it (Present › Export only
        # was found by nobody: first-time user review); Help stays the last menu
        file_menu = getattr(w, "file_menu", None)
        if file_menu is not None:
            file_menu.insertAction(w.quit_action, em.menuAction())
            file_menu.insertSeparator(w.quit_action)
        help_menu = getattr(w, "help_menu", None)
        if help_menu is not None:
            mb.removeAction(help_menu.menuAction())
            mb.addAction(help_menu.menuAction())
        self._update_quiz_actions()

    def _wire(self):
        p, w = self.presentation, self.window
        # (the graph's reading size: the user's, as far as the window had room for
        # it; p.scale there made labels 35% bigger than the size shown: code review)
        p.scale_targets += [lambda f, m: w.set_text_scale(f, p.fitted_scale),
                            self.quiz.set_text_scale, self.browser.set_text_scale,
                            self.lesson_bar.set_text_scale]
        # a resize that changes the window's room for text scales every part again
        w.on_text_room_changed = p.apply_scale
        p.theme_targets += [w.set_theme, self.apply_theme]
        p.spotlight_targets.append(self._spotlight_for_presentation)
        p.step_forward, p.step_back = w.step_forward, w.step_back
        p.active_changed.connect(self._on_presentation_changed)
        p.blank_changed.connect(self.blank_action.setChecked)
        self.browser.scenario_activated.connect(self.open_scenario)
        self.walker.scenario_changed.connect(self._on_lesson_moved)
        self.quiz.reveal_requested.connect(self._on_reveal)
        self.quiz.output_hidden_changed.connect(w.set_output_hidden)
        w.snippet_loaded.connect(self._on_snippet_loaded)
        w.destroyed.connect(lambda *_: p.shutdown())

    # -- scenarios ---------------------------------------------------------------
    def open_scenario(self, scenario):
        """Snippet into the editor (not run), question into the quiz panel."""
        if isinstance(scenario, str):
            found = self.browser.find(scenario) or _scn.find(scenario, self._folders())
            if found is None:
                self.window.set_status(f"No scenario with id '{scenario}'.", error=True)
                return False
            scenario = found
        if not self.window.confirm_replace():
            return False   # the user keeps the snippet they were editing
        self.scenario = scenario
        self._opening = True
        try:
            self.window.load_snippet(scenario.snippet, scenario.snippet_filename)
        finally:
            self._opening = False
        self.quiz.set_scenario(scenario)
        self.browser.show_current(scenario.id)
        w = self.window
        if w.side_tabs.indexOf(self.quiz_dock) < 0:
            w.add_side_tab(self.quiz_dock, "Quiz")
            QTimer.singleShot(0, self.size_docks)   # again once the window is laid out
        w.show_side_tab(self.quiz_dock)
        self._fill_static_request(scenario)
        walker = self.walker
        if scenario in walker.scenarios and walker.current is not scenario:
            walker.index = walker.scenarios.index(scenario)
            self._lesson_actions()   # (opened from the browser: code review)
        walker.away = bool(walker.scenarios) and scenario not in walker.scenarios
        self.lesson_bar.refresh()
        self._update_quiz_actions()
        # The keys the status line names (A-D, R, H, N, P) are window-wide actions, and a
        # focused editor keeps its letters: left there, "D" then "R" typed "dr" into the
        # snippet and revealed a SyntaxError (UX review). The graph takes the keyboard,
        # as it does when a run starts; a click in the code edits it.
        w.canvas.setFocus(Qt.FocusReason.OtherFocusReason)
        hint = self._pick_hint()
        title = scenario.title.rstrip()
        # "…in PyTorch?. Pick an answer" (GUI review): a title that ends a sentence
        # gets no second full stop
        stop = "" if title.endswith((".", "?", "!", ":", "…")) else "."
        self.window.set_status(f"{title}{stop} {hint}".rstrip())
        return True

    def _pick_hint(self) -> str:
        if not self.quiz.buttons:
            return ""
        if self.presentation.active:   # B blanks the screen there (_bind_letter_keys)
            return f"Pick an answer ({self.quiz.digit_keys()}), then Reveal (R) runs it."
        return f"Pick an answer ({self.quiz.pick_keys()}), then Reveal (R) runs it."

    def size_docks(self):
        """The window shares its width (``arrange``: the graph gets the most); the
        browser, when open, gets about 22%."""
        w = self.window
        if self.browser_dock.isVisible():
            w.resizeDocks([self.browser_dock], [max(300, round(w.width() * 0.22))],
                          Qt.Orientation.Horizontal)
        w.arrange()

    def _fill_static_request(self, scenario):
        """A scenario that names a function or module (``focus``) fills the static
        panel's request: target and example inputs read from the snippet."""
        views = getattr(self.window, "_passes_views", None)
        focus = getattr(scenario, "focus", None)
        if views and focus:
            views["static"].set_focus(focus, scenario.snippet)
        # a static-capture scenario whose snippet makes no tensor (torch.fx traces
        # with Proxy objects) left the canvas saying only that (visual review)
        self.window.canvas.empty_hint = (
            f"View \u203a Static capture shows what torch.fx and torch.jit make of {focus}"
            if focus else "")

    def _folders(self):
        return [*self.browser.folders, _scn.bundled_dir()]

    def add_folder(self, path) -> list:
        """A teacher's folder: its scenarios join the browser; returns the problems."""
        found, problems = self.browser.add_folder(path)
        self.browser_dock.show()
        self.size_docks()
        n = len(found)
        msg = f"Loaded {counted(n, 'scenario')} from {path}"
        if problems:
            msg += f"; {counted(len(problems), 'problem')} (see the Scenarios panel)"
        self.window.set_status(msg + ".", error=bool(problems))
        return problems

    def open_lesson(self, path, index: int = 0) -> list:
        """The lesson file at ``path``, at its ``index``-th scenario; returns its problems."""
        opened = open_lesson_file(path, self.browser.scenarios, self.browser.folders)
        self.lesson_report = opened      # app.py says what went wrong on stderr too
        title, found, problems = opened.title, list(opened.scenarios), list(opened.problems)
        if not found:
            # the lesson open stays open (it was replaced by an empty one: review)
            if problems:
                self.browser.add_scenarios([], problems, source=_lesson_source(path))
                self.browser_dock.show()
            self.window.set_status(opened.status(), error=True)
            return problems
        if not self.window.confirm_replace():
            return problems   # kept the edited snippet: no lesson over it
        self.walker.title = title
        self.walker.description = opened.description
        self.walker.scenarios = found
        self.walker.index = 0
        self.browser.add_scenarios([], problems, source=_lesson_source(path))   # (none now: gone)
        if problems:
            self.browser_dock.show()
        self.lesson_path = Path(path)
        self.lesson_bar.setVisible(True)
        w = self.window
        width = w.width()
        self.walker.start(index)
        dock = self.browser_dock
        if not problems and dock.isVisible() and not dock.isFloating() and \
                w.main_split.minimumSizeHint().width() + dock.minimumSizeHint().width() > width:
            # the lesson bar walks the lesson; beside the side column and the
            # editor the browser left no room on a 1024 px projector, and the
            # window grew past the screen (GUI review): it closes when the
            # window was too narrow for both (the Scenarios menu opens it again)
            dock.hide()
            w.resize(width, w.height())
        if problems:   # over the first scenario's status: which ids were not found
            self.window.set_status(opened.status(), error=True)
        self._lesson_actions()
        return problems

    # The edited snippet is asked about before the lesson moves: on Cancel it
    # stays where it was (moved first, a scenario from outside the lesson left
    # nothing to move it back to)
    # (and only when it can move: with no lesson open, or at its end, N asked about
    # the edits and, given up, left them in the editor counted as saved: closing
    # then lost them without asking, robustness review)
    def next_scenario(self):
        self._move(self.walker.can_next(), self.walker.next, "last")

    def previous_scenario(self):
        self._move(self.walker.can_previous(), self.walker.previous, "first")

    def _move(self, can: bool, step, end: str) -> None:
        if not can:
            self.window.set_status(f"This is the lesson's {end} scenario." if self.walker.scenarios
                                   else "No lesson is open (Scenarios \u203a Open lesson\u2026).")
        elif self.window.confirm_replace():
            step()

    def _on_lesson_moved(self, scenario):
        if not self.open_scenario(scenario) and self.scenario in self.walker.scenarios:
            # (asked again and declined: a save that failed) the lesson stays put
            self.walker.index = self.walker.scenarios.index(self.scenario)
        self.lesson_bar.refresh()
        self._lesson_actions()

    def _lesson_actions(self) -> None:
        """Next / Previous scenario always answer: at a lesson's ends they say so
        (disabled there, N on the last scenario did nothing: teacher review), and
        without a lesson that none is open (disabled, N fell to the graph, whose
        "the graph has the keyboard" answered nothing: UX review); the lesson
        bar's buttons grey out where the lesson cannot move."""
        self.next_action.setEnabled(True)
        self.prev_action.setEnabled(True)

    def _on_snippet_loaded(self):
        """A snippet that is not the scenario's (a file, New): the quiz is left.
        The student's own file kept the scenario's output hidden "until Reveal",
        and Reveal would have run their file and scored the scenario's answer
        (GUI review)."""
        if self._opening or self.scenario is None:
            return
        self.scenario = None
        self.browser.show_current(None)
        self.window.canvas.empty_hint = ""
        self.quiz.set_scenario(None)      # output shown again (output_hidden_changed)
        self._update_quiz_actions()
        # the Quiz tab stayed in front, "No scenario" where the student's own run
        # has its nodes to inspect (visual review): the inspector comes forward, and
        # the quiz (with a lesson's bar) is a click on its tab away
        if self.window.side_tabs.currentWidget() is self.quiz_dock:
            self.window.show_side_tab(self.window.inspector)
        # the bar said "2 / 10" over the student's own file (GUI review): what is
        # on screen is not the lesson's, as for a scenario from outside it
        if self.walker.scenarios:
            self.walker.away = True
            self.lesson_bar.refresh()

    # -- quiz ------------------------------------------------------------------
    def _on_reveal(self, scenario):
        self._update_quiz_actions()
        self.window.run()      # the live run is the proof: graph, output, error

    def output_hidden(self) -> bool:
        return self.window.output_hidden

    def _pick(self, key):
        if key is not None:
            self.quiz.choose(key)

    def _update_quiz_actions(self):
        has = self.quiz.scenario is not None
        open_ = has and not self.quiz.revealed      # (after Reveal a pick changes nothing)
        for i, a in enumerate(self.option_actions):
            key = self.quiz.key_at(i) if has else None
            a.setEnabled(key is not None and open_)
            a.setText(f"Answer {key} ({i + 1})" if key is not None
                      else f"Answer {OPTION_KEYS[i]} ({i + 1})")
            a.setVisible(key is not None or i < 4)   # (the menu lists the options there are)
        for a, k in zip(self.letter_actions, OPTION_KEYS):
            a.setEnabled(open_ and self.quiz.key_for_letter(k) is not None)
        self.hint_action.setEnabled(open_ and bool(getattr(self.quiz.scenario, "hint", "")))
        self.reveal_action.setEnabled(open_)

    # -- presentation ------------------------------------------------------------
    def _bind_letter_keys(self, presenting: bool):
        """B blanks in presentation mode (clickers send B or '.'), picks answer B otherwise."""
        self.letter_actions[1].setShortcuts([] if presenting else [QKeySequence("B")])
        self.blank_action.setShortcuts([QKeySequence("B"), QKeySequence(".")] if presenting
                                       else [])
        # Space steps forward while presenting, as a slide show's does (and as
        # presentation.handle_key says); the window's play/pause took it first
        self.window.play_action.setShortcuts([] if presenting else [QKeySequence("Space")])

    def _on_presentation_changed(self, on: bool):
        w = self.window
        self._bind_letter_keys(on)
        self.present_action.setChecked(on)
        self.spotlight_action.setChecked(on)
        if on:
            self.browser_dock.setVisible(False)
        w.set_presentation(on)
        self.size_docks()
        QTimer.singleShot(0, self.size_docks)
        pick = f"{self.quiz.digit_keys()} pick an answer, " if on and self.quiz.buttons else ""
        w.set_status(f"Presentation mode: PageDown/PageUp step, {pick}B blanks the screen, "
                     "Ctrl+= / Ctrl+- text size, Ctrl+Shift+P leaves." if on else "Presentation mode off.")

    def _spotlight_for_presentation(self, on: bool):
        self._set_spotlight(on)

    def _set_spotlight(self, on: bool):
        canvas = self.window.canvas
        if hasattr(canvas, "set_spotlight"):
            canvas.set_spotlight(bool(on))
        self.spotlight_action.setChecked(bool(on))

    def apply_theme(self, name: str):
        self.quiz.set_theme(name)
        for n, act in self.theme_actions.items():
            act.setChecked(n == name)
        self.presentation.theme = name

    def _sync_theme(self):
        self.apply_theme(self.window.theme.name)

    # -- export ------------------------------------------------------------------
    def export(self, what: str, path) -> Path:
        return clipboard_export.export(self.window, what, path)

    def export_dialog(self, what: str, fmt: str):
        start = str(Path.home() / f"graphscope-{what}.{fmt}")
        path, _ = QFileDialog.getSaveFileName(self.window, f"Export {what} as {fmt.upper()}",
                                              start, f"{fmt.upper()} (*.{fmt})")
        if path:
            p = Path(path)
            if p.suffix.lower() not in (".png", ".svg"):
                # the format chosen, as the dialog's filter said ("noext" gave only
                # "could not write": GUI review); Save As adds .py the same way
                p = p.with_name(p.name + f".{fmt}")
                if p.exists() and not self.window.ask_replace(p):
                    return
            path = str(p)
            try:
                self.export(what, path)
                self.window.set_status(f"Saved {path}")
            except OSError as e:
                self.window.set_status(f"Could not save {path}: {e}", error=True)

    def copy(self, what: str):
        clipboard_export.copy(self.window, what)
        self.window.set_status(f"Copied the {what} to the clipboard (PNG and SVG).")

    # -- dialogs ---------------------------------------------------------------
    def open_folder_dialog(self):
        d = QFileDialog.getExistingDirectory(self.window, "Open a scenario folder")
        if d:
            self.add_folder(d)

    def reload(self):
        """Scenarios › Reload: the folders opened and the lesson read again, and the
        scenario on screen from its file as it is now (a teacher editing a
        scenario during a lecture had to restart the app: teacher review). What
        is on screen stays what it was: a scenario from outside the lesson, or
        the student's own file, is not replaced by the lesson's (code review)."""
        problems = self.browser.reload()
        current = self.scenario.id if self.scenario is not None else None
        walker = self.walker
        reloaded = False      # the lesson read again: its scenarios are the files' now
        if self.lesson_path is not None:
            opened = open_lesson_file(self.lesson_path, self.browser.scenarios,
                                      self.browser.folders)
            problems += list(opened.problems)
            self.browser.add_scenarios([], opened.problems, source=_lesson_source(self.lesson_path))
            if opened.scenarios:
                reloaded = True
                walker.title, walker.description = opened.title, opened.description
                walker.scenarios = list(opened.scenarios)
                walker.index = min(walker.index, len(walker.scenarios) - 1)
            self.lesson_bar.refresh()
            self._lesson_actions()
        if current is not None:
            # (from the lesson only when it was read again: a lesson that no longer
            # loads keeps its old copies, and the edited file was not shown: code review)
            fresh = next((s for s in walker.scenarios if s.id == current), None) \
                if reloaded and not walker.away else None
            # then its own file read again: a teacher's copy the lesson no longer
            # lists was replaced by the bundled scenario of that id (GUI review)
            fresh = fresh or self._reread(self.scenario) or self.browser.find(current) \
                or _scn.find(current, self._folders())
            if fresh is not None:
                self.open_scenario(fresh)     # (asks first if its snippet was edited)
        n, k = len(self.browser.scenarios), len(self.browser.folders)
        msg = f"Reloaded: {counted(n, 'scenario')}, {counted(k, 'folder')}"
        if self.lesson_path is not None:
            msg += f" and the lesson {self.lesson_path.name}"
        if problems:
            msg += f"; {counted(len(problems), 'problem')} (see the Scenarios panel)"
        self.window.set_status(msg + ".", error=bool(problems))

    @staticmethod
    def _reread(scenario):
        """``scenario`` read again from its file, or None (gone, or now broken:
        the browser's copy or another folder's then)."""
        path = getattr(scenario, "path", None)
        try:
            fresh = _scn.load_file(path) if path is not None else None
        except Exception:
            return None
        return fresh if fresh is not None and fresh.id == scenario.id else None

    def open_lesson_dialog(self):
        # beside the teacher's own scenarios when a folder is open, else the bundled ones
        folders = [f / "lessons" for f in reversed(self.browser.folders)] + [
            *reversed(self.browser.folders), _scn.bundled_dir() / "lessons"]
        start = str(next((f for f in folders if f.is_dir()), _scn.bundled_dir()))
        f, _ = QFileDialog.getOpenFileName(self.window, "Open a lesson", start, "Lesson (*.toml)")
        if f:
            self.open_lesson(f)


def install_classroom(window, args=None) -> Classroom:
    """Add the classroom features to ``window`` and apply ``args``; returns the Classroom."""
    c = getattr(window, "classroom", None)
    if c is None:
        c = Classroom(window)
        window.classroom = c
    folder = _arg(args, "scenarios")
    if folder:
        c.add_folder(folder)
    lesson = _arg(args, "lesson")
    sid = _arg(args, "scenario")
    if lesson:
        c.open_lesson(lesson)
    if sid:
        c.open_scenario(sid)
    if _arg(args, "presentation"):
        c.presentation.set_active(True)
    return c


def install(window, args=None) -> bool:
    """What ``ui/app.py`` calls. True when a scenario was opened (so the app does not
    open the welcome scenario as well)."""
    c = install_classroom(window, args)
    return c.scenario is not None
