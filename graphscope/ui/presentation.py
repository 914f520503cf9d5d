"""Presentation mode: one text-size control for every part, themes, blank screen, clicker keys.

``PresentationController`` owns the state a teacher changes at the projector
(active or not, text scale, theme, blanked) and pushes it to the window's parts
through their public ``set_text_scale`` / ``set_theme`` methods. It never
reaches into a part's internals, so the same controller drives a full window or
a bare test widget.

NOTE [no small print]: in presentation mode the smallest text is
``PRESENTATION_MIN_PX`` (18 px) at scale 1. Parts are scaled by one factor
relative to their normal size, so the factor is chosen to bring the window's
body text (``theme.base_font_pt``) to 18 px; the classroom widgets, whose body
text is ``NORMAL_PX``, are also given the minimum explicitly. The graph is
zoomable, so its minimum is kept by the view instead: the auto view keeps node
labels at least ``canvas_view.PRESENT_PX`` (18 px) on screen. Its second lines
(shape, the autograd node's name) are 70% of that and its tags ("no grad",
"freed") smaller still, so that a fitted graph keeps its shape; Bigger text
raises them with the rest (a UX review measured 12.7 px and 9-10 px: that is
not yet the hall's 18).
"""
from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QEvent, QObject, QRect, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPainter
from PySide6.QtWidgets import (QAbstractSpinBox, QApplication, QLabel, QLineEdit,
                               QPlainTextEdit, QSlider, QTextEdit, QWidget)

from graphscope.ui import theme as _theme
from graphscope.ui.list_keys import KeepsListKeys

NORMAL_PX = 14             # body text of the classroom widgets at scale 1
PRESENTATION_MIN_PX = 18   # NOTE [no small print]
SCALE_MIN, SCALE_MAX, SCALE_STEP = 0.5, 4.0, 0.1
PROJECTOR_SIZE = (1920, 1080)   # what "full screen" means without a real screen


def palette(name: str) -> dict:
    """Colours for the classroom widgets, taken from the window's theme data."""
    try:
        t = _theme.get_theme(name)
    except KeyError:
        t = _theme.get_theme(None)
    hc = t.name == "high-contrast"
    return {
        "bg": t.panel_bg, "fg": t.text, "muted": t.text_muted, "border": t.border,
        "button": t.window_bg, "accent": t.accent,
        "chosen_bg": t.selection_bg if not hc else "#1A1A00",
        # NOTE [no colour alone] in quiz.py: blue for right, vermillion for wrong
        "right": "#7CC8FF" if t.dark else _theme.OI_BLUE,
        "right_bg": "#00253D" if t.dark else "#DCEBF7",
        "wrong": "#FF7A3D" if t.dark else _theme.OI_VERMILLION,
        "wrong_bg": "#2E1200" if t.dark else "#FBE3D6",
        "hint_bg": "#1F1F00" if t.dark else "#FFFBE0",
        "note_bg": "#2E1200" if t.dark else "#FFF1E8",
    }


def window_base_px(widget: Optional[QWidget] = None) -> float:
    """The window's body text in pixels at scale 1 (theme.base_font_pt in points)."""
    dpi = 96.0
    screen = (widget.screen() if widget is not None else None) or QGuiApplication.primaryScreen()
    if screen is not None:
        dpi = screen.logicalDotsPerInch() or 96.0
    return _theme.base_font_pt(1.0) * dpi / 72.0


class BlankOverlay(QWidget):
    """A black sheet over the whole window (B in presentation mode), like a
    projector's blank button: the class looks at the teacher, not the screen."""

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.setObjectName("BlankOverlay")
        self.setAttribute(Qt.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.NoFocus)
        self.hide()
        parent.installEventFilter(self)

    def eventFilter(self, obj, ev):
        if obj is self.parent() and ev.type() == QEvent.Resize:
            self.setGeometry(QRect(0, 0, ev.size().width(), ev.size().height()))
        return False

    def paintEvent(self, _):
        QPainter(self).fillRect(self.rect(), QColor("#000000"))

    def set_blank(self, on: bool):
        if on:
            self.setGeometry(self.parent().rect())
            self.raise_()
        self.setVisible(on)


def _is_text_input(w) -> bool:
    if isinstance(w, (QLineEdit, QAbstractSpinBox)):
        return True
    if isinstance(w, (QPlainTextEdit, QTextEdit)):
        return not w.isReadOnly()
    return False


class PresentationController(QObject):
    """Presentation state and its keys.

    ``window``: the top-level widget (full screen, blank overlay).
    ``scale_targets``: callables ``f(factor, min_px)`` that apply a text scale
    (the window's parts, the quiz panel, the browser).
    ``theme_targets``: callables ``f(name)``.
    ``step_forward`` / ``step_back``: what the clicker's next/previous do.
    """

    active_changed = Signal(bool)
    scale_changed = Signal(float)
    fitted_changed = Signal(float)   # the user's scale the window had room for
    theme_changed = Signal(str)
    blank_changed = Signal(bool)

    def __init__(self, window: QWidget, parent=None):
        super().__init__(parent or window)
        self.window = window
        self.active = False
        self.scale = 1.0
        self.fitted_scale = 1.0    # ``scale``, or less where the window has no room
        self.theme = "light"
        self.blanked = False
        self.scale_targets: list[Callable[[float, int], None]] = []
        self.theme_targets: list[Callable[[str], None]] = []
        self.spotlight_targets: list[Callable[[bool], None]] = []
        self.step_forward: Optional[Callable[[], None]] = None
        self.step_back: Optional[Callable[[], None]] = None
        self.overlay = BlankOverlay(window)
        self._was_maximized = False
        self._normal_geometry = None
        self._normal_theme: Optional[str] = None
        self._filter_installed = False

    # -- the one text-size control --------------------------------------------
    def factor(self) -> float:
        """Scale factor given to every part: the user's scale, and in presentation
        mode enough on top to bring body text to PRESENTATION_MIN_PX."""
        if not self.active:
            return self.scale
        return self.scale * max(1.0, PRESENTATION_MIN_PX / window_base_px(self.window))

    def min_px(self) -> int:
        return round(PRESENTATION_MIN_PX * self.scale) if self.active else round(NORMAL_PX * self.scale * 0.8)

    def set_scale(self, scale: float):
        scale = round(min(SCALE_MAX, max(SCALE_MIN, float(scale))), 2)
        changed = scale != self.scale
        self.scale = scale
        self.apply_scale()
        if changed:
            self.scale_changed.emit(scale)

    def bigger(self):
        self.set_scale(self.scale + SCALE_STEP)

    def smaller(self):
        self.set_scale(self.scale - SCALE_STEP)

    def reset_scale(self):
        self.set_scale(1.0)

    def apply_scale(self):
        f, m = self.factor(), self.min_px()
        room_of = getattr(self.window, "text_scale_room", None)
        room = room_of() if room_of is not None else f
        fitted = self.scale
        if f > room:
            # the window has no room for it (main_window NOTE [text room]): every
            # part gets the window's cap, the smallest text shrinking alike
            fitted = self.scale * room / f
            m = max(1, round(m * room / f))
            f = room
        if abs(fitted - self.fitted_scale) > 1e-9:
            self.fitted_scale = fitted
            self.fitted_changed.emit(fitted)
        for target in self.scale_targets:
            target(f, m)

    # -- theme ------------------------------------------------------------------
    def set_theme(self, name: str):
        name = _theme.get_theme(name).name
        self.theme = name
        for target in self.theme_targets:
            target(name)
        self.theme_changed.emit(name)

    # -- full screen ------------------------------------------------------------
    def set_active(self, on: bool):
        on = bool(on)
        if on == self.active:
            return
        self.active = on
        w = self.window
        if on:
            self._was_maximized = w.isMaximized()
            self._normal_geometry = w.geometry()
            if QGuiApplication.platformName() == "offscreen":
                # No real screen (headless screenshots, tests): full screen means a
                # projector's 1920x1080, not the 800x600 of the virtual screen.
                w.resize(*PROJECTOR_SIZE)
            else:
                w.showFullScreen()
            self._install_filter()
        else:
            self.set_blank(False)
            if QGuiApplication.platformName() != "offscreen":
                w.showMaximized() if self._was_maximized else w.showNormal()
            if self._normal_geometry is not None:
                w.setGeometry(self._normal_geometry)
        for target in self.spotlight_targets:
            target(on)
        self.apply_scale()
        self.active_changed.emit(on)

    def toggle(self):
        self.set_active(not self.active)

    # -- blank screen -----------------------------------------------------------
    def set_blank(self, on: bool):
        on = bool(on)
        if on:
            self._install_filter()   # the keys that bring the screen back (handle_key)
        self.overlay.set_blank(on)
        if on != self.blanked:
            self.blanked = on
            self.blank_changed.emit(on)

    def toggle_blank(self):
        self.set_blank(not self.blanked)

    # -- clicker keys -------------------------------------------------------------
    def _install_filter(self):
        if not self._filter_installed:
            QApplication.instance().installEventFilter(self)
            self._filter_installed = True

    def handle_key(self, key: int, modifiers=Qt.NoModifier, focus=None) -> bool:
        """A key in presentation mode; True if it was a presentation key.

        Clickers send PageDown/PageUp (and some arrows); those work wherever the
        focus is. Arrows and Space step only when the focus is not in a text field,
        so the teacher can still edit the snippet. B / '.' (blank) are the window's
        shortcuts (classroom.py), so a B typed into the editor stays a letter.
        """
        if self.blanked:
            # A blank screen covers the window, menus and all, in or out of
            # presentation mode: Esc, B or '.' bring it back, and no key press
            # goes on to the hidden editor, Ctrl+V no more than a letter
            # (outside presentation mode nothing but the mode's own switch undid
            # it, and B and '.' were typed into the snippet: robustness review).
            # The window's Ctrl/Alt shortcuts still work (eventFilter).
            if key in (Qt.Key_Escape, Qt.Key_B, Qt.Key_Period) and not modifiers & (
                    Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier):
                self.set_blank(False)
            return True
        if modifiers & (Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier):
            return False
        if not self.active:
            return False
        # (a focused list keeps its arrows too: NOTE [a list keeps its keys])
        typing = _is_text_input(focus) or isinstance(focus, KeepsListKeys)
        forward = key == Qt.Key_PageDown or (not typing and key in (Qt.Key_Right, Qt.Key_Down, Qt.Key_Space))
        back = key == Qt.Key_PageUp or (not typing and key in (Qt.Key_Left, Qt.Key_Up))
        if forward and self.step_forward:
            self.step_forward()
            return True
        if back and self.step_back:
            self.step_back()
            return True
        return False

    def eventFilter(self, obj, ev):
        if ((self.active or self.blanked) and ev.type() in (QEvent.KeyPress, QEvent.ShortcutOverride)
                and isinstance(obj, QWidget) and obj.window() is self.window):
            if ev.type() == QEvent.ShortcutOverride:
                # while blank, shortcuts without Ctrl/Alt (B, '.', F5, F10) do not
                # fire: the key press is this filter's (handle_key); the window's
                # Ctrl shortcuts (save, quit, leave presentation mode) still do
                if self.blanked and not ev.modifiers() & (Qt.ControlModifier | Qt.AltModifier
                                                          | Qt.MetaModifier):
                    ev.accept()
                    return True
                return False
            if self.handle_key(ev.key(), ev.modifiers(), QApplication.focusWidget()):
                return True
        return False

    def shutdown(self):
        """Remove the application-wide key filter (window closing, tests)."""
        if self._filter_installed and QApplication.instance() is not None:
            QApplication.instance().removeEventFilter(self)
            self._filter_installed = False


class ScaleSlider(QWidget):
    """The one text-size control: a slider and its percentage, bound to a controller."""

    def __init__(self, controller: PresentationController, parent=None):
        super().__init__(parent)
        from PySide6.QtWidgets import QHBoxLayout
        self.controller = controller
        lay = QHBoxLayout(self)
        lay.setContentsMargins(4, 0, 4, 0)
        self.caption = QLabel("Text")
        self.slider = QSlider(Qt.Horizontal)
        self.slider.setObjectName("TextScaleSlider")
        self.slider.setRange(round(SCALE_MIN * 100), round(SCALE_MAX * 100))
        self.slider.setSingleStep(10)
        self.slider.setPageStep(25)
        self.slider.setFixedWidth(160)
        self.slider.setFocusPolicy(Qt.NoFocus)
        self.value_label = QLabel()
        for w in (self.caption, self.slider, self.value_label):
            lay.addWidget(w)
        self._sync(controller.scale)
        # while dragged, the label follows and the text is scaled once, on release:
        # each value restyled the whole window (0.25-0.43 s a step, so a drag lagged
        # behind the hand: GUI review); a click on the groove still applies at once
        self.slider.setTracking(False)
        self.slider.sliderMoved.connect(lambda v: self.value_label.setText(f"{v}%"))
        self.slider.valueChanged.connect(lambda v: controller.set_scale(v / 100))
        controller.scale_changed.connect(self._sync)
        controller.fitted_changed.connect(lambda _f: self._sync(controller.scale))

    def _sync(self, scale: float):
        self.slider.blockSignals(True)
        self.slider.setValue(round(scale * 100))
        self.slider.blockSignals(False)
        # the label says the size shown; where the window had no room for the
        # size asked (main_window NOTE [text room]) the tooltip says so
        shown = min(scale, self.controller.fitted_scale)
        self.value_label.setText(f"{round(shown * 100)}%")
        tip = "" if round(shown * 100) >= round(scale * 100) else (
            f"Asked for {round(scale * 100)}%: this window has room for {round(shown * 100)}%."
            " A bigger window (or full screen) shows text bigger.")
        for w in (self.value_label, self.slider):
            w.setToolTip(tip)
