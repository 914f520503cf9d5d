"""The timeline bar: first / back / play-pause / forward / last, a scrub strip, speed.

The bar only moves a cursor; the model (``model.timeline.Timeline``) owns it
and the window listens (STYLE.md: the model owns time). The strip paints the
forward steps and the backward steps in different colours so a learner sees
where backward begins, and can be dragged to scrub. With ``set_passes`` it also
names the run's passes (model/passes.py: each forward pass builds its own
graph) in bands above the track: "Pass 1", "Pass 2", ...
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from typing import Sequence

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import (QColor, QFont, QFontMetricsF, QIcon, QPainter, QPalette, QPen,
                           QPixmap, QPolygonF)
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QSizePolicy, QStyle,
                               QStyleOptionComboBox, QStylePainter, QToolButton,
                               QVBoxLayout, QWidget)

from graphscope.ui.theme import base_font_pt

# (label, steps per second; 0 = instant). The slow end is for explaining in a lecture.
SPEEDS = [("Lecture (1/s)", 1.0), ("Slow (2/s)", 2.0), ("Normal (5/s)", 5.0),
          ("Fast (20/s)", 20.0), ("Rapid (100/s)", 100.0), ("Instant", 0.0)]
DEFAULT_SPEED = 3


def control_icon(kind: str, color: str = "#1f2937", size: int = 64) -> QIcon:
    """A drawn icon (fonts on a lecture-room PC may lack the media glyphs).

    ``kind``: first | back | play | pause | forward | last | run | stop.
    """
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(color))
    s = size
    top, bot, mid = s * 0.22, s * 0.78, s * 0.5

    def tri(x0, x1):          # pointing right if x1 > x0
        p.drawPolygon(QPolygonF([QPointF(x0, top), QPointF(x1, mid), QPointF(x0, bot)]))

    def bar(x):
        p.drawRect(QRectF(x, top, s * 0.1, bot - top))

    if kind in ("play", "run"):
        if kind == "run":
            p.setBrush(QColor("#15803d"))
        tri(s * 0.3, s * 0.78)
    elif kind == "pause":
        p.drawRect(QRectF(s * 0.28, top, s * 0.14, bot - top))
        p.drawRect(QRectF(s * 0.58, top, s * 0.14, bot - top))
    elif kind == "stop":
        p.setBrush(QColor("#b91c1c"))
        p.drawRoundedRect(QRectF(s * 0.26, s * 0.26, s * 0.48, s * 0.48), s * 0.06, s * 0.06)
    elif kind == "forward":
        tri(s * 0.24, s * 0.66)
        bar(s * 0.68)
    elif kind == "back":
        tri(s * 0.76, s * 0.34)
        bar(s * 0.22)
    elif kind == "last":
        tri(s * 0.14, s * 0.46)
        tri(s * 0.42, s * 0.74)
        bar(s * 0.76)
    elif kind == "first":
        tri(s * 0.86, s * 0.54)
        tri(s * 0.58, s * 0.26)
        bar(s * 0.14)
    p.end()
    icon = QIcon(pm)
    # the disabled look drawn here, not left to the style: Qt greys an icon
    # toward the light palette, so a white icon of the dark theme stayed white
    # and a disabled "Last step" looked as usable as the others (GUI review)
    faded = QPixmap(size, size)
    faded.fill(Qt.GlobalColor.transparent)
    p = QPainter(faded)
    p.setOpacity(0.3)
    p.drawPixmap(0, 0, pm)
    p.end()
    icon.addPixmap(faded, QIcon.Mode.Disabled)
    return icon


TICK_GAP = 6   # px between two backward-call ticks at least (NOTE [a strip per pixel])


class ScrubStrip(QWidget):
    """A painted slider: one segment per run of forward / backward steps.

    ``value`` is the cursor, 0..maximum. Dragging emits ``scrubbed(value)``.
    """

    scrubbed = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._kinds: list[str] = []     # per step: "op" | "backward" | "backward_call"
        self._segments: list[tuple[int, int, str]] = []
        self._passes: list[tuple[int, int, str]] = []   # (first step, last step, label)
        self._value = 0
        self._available = 0             # steps received so far while a run streams
        self._strip_key, self._strip_val = None, ([], [])   # NOTE [a strip per pixel]
        self._kinds_version = 0
        self._calls: list[int] = []     # steps that are backward calls (the strip's ticks)
        # per segment: its first step, and the forward steps before it (a column's
        # share of each kind without going through the segments: NOTE [a strip per pixel])
        self._starts: list[int] = []
        self._ops_before: list[int] = []
        self.colors = {"op": QColor("#0072B2"), "backward": QColor("#D55E00"),
                       "track": QColor("#d1d5db"), "handle": QColor("#111827"),
                       "marker": QColor("#6b7280"), "text": QColor("#111827")}
        self.setMinimumHeight(26)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)

    def _band_height(self) -> int:
        return self.fontMetrics().height() + 4 if self._passes else 0

    def sizeHint(self) -> QSize:
        return QSize(400, max(26, int(self.fontMetrics().height() * 1.6)) + self._band_height())

    def minimumSizeHint(self) -> QSize:
        return QSize(100, self.minimumHeight() + self._band_height())

    def set_passes(self, passes: Sequence[tuple[int, int, str]]) -> None:
        """Bands above the track, one per pass: ``(first_step, last_step, label)``
        with steps as timeline indices (the cursor's values)."""
        self._passes = [(int(a), int(b), str(label)) for a, b, label in passes]
        self.updateGeometry()
        self.update()

    def passes(self) -> list[tuple[int, int, str]]:
        return list(self._passes)

    def set_kinds(self, kinds: Sequence[str]) -> None:
        self._kinds = []
        self._segments = []
        self._calls = []
        self._starts = []
        self._ops_before = []
        self.add_kinds(kinds)

    def add_kinds(self, kinds: Sequence[str]) -> None:
        """Steps that came after those the strip has: their segments only (a long
        run streams in hundreds of batches; all steps each time made every batch
        slower than the one before)."""
        segs = self._segments
        i = len(self._kinds)
        for k in kinds:
            if k == "backward_call":
                self._calls.append(i)
            k = "backward" if k.startswith("backward") else "op"
            if segs and segs[-1][2] == k and segs[-1][1] == i:
                segs[-1] = (segs[-1][0], i + 1, k)
            else:
                if segs:
                    a, b, last = segs[-1]
                    self._ops_before.append(self._ops_before[-1] + (b - a if last == "op" else 0))
                else:
                    self._ops_before.append(0)
                self._starts.append(i)
                segs.append((i, i + 1, k))
            i += 1
        self._kinds.extend(kinds)
        self._kinds_version += 1
        self._available = len(self._kinds)
        self.update()

    def maximum(self) -> int:
        return len(self._kinds)

    def value(self) -> int:
        return self._value

    def set_value(self, v: int) -> None:
        v = max(0, min(int(v), self.maximum()))
        if v != self._value:
            self._value = v
            self.update()

    # -- painting ---------------------------------------------------------------
    def _track_rect(self) -> QRectF:
        top = self._band_height()
        h = self.height() - top
        pad = 10
        return QRectF(pad, top + h * 0.3, max(1, self.width() - 2 * pad), h * 0.4)

    def _x_of(self, v: int) -> float:
        r = self._track_rect()
        n = max(1, self.maximum())
        return r.left() + r.width() * v / n

    def _strip(self, r: QRectF) -> tuple:
        """(coloured runs ``(x0, x1, kind)``, tick xs) of the track ``r``, at most one
        run and one tick per pixel column, remembered until the steps or the width
        change. NOTE [a strip per pixel]: a stopped training loop of 50,000 steps
        drew 25,000 segments twice and 17,000 ticks, each place computed from the
        widget's geometry again: 0.3-0.6 s a paint, so every arrow key froze the
        window (GUI review). A column shows the kind that covers most of it."""
        key = (self._kinds_version, r.left(), r.width())
        if self._strip_key == key:
            return self._strip_val
        n = max(1, self.maximum())
        left, scale = r.left(), r.width() / n
        segs = self._segments
        if len(segs) <= r.width():
            runs = [(left + a * scale, left + b * scale, k) for a, b, k in segs]
        else:
            # a column's forward steps from the running count at its two ends
            # (two bisections), not from the segments it covers: as a run
            # streams, every batch changes the scale and so every column, and
            # going through all segments again took 26 ms a batch at 210,000
            # steps (2.5 ms now)
            cols = int(math.ceil(r.width())) + 1
            starts, before = self._starts, self._ops_before

            def ops_upto(x: float) -> float:
                i = bisect_right(starts, x) - 1
                if i < 0:
                    return 0.0
                a, b, k = segs[i]
                return before[i] + (min(x, b) - a if k == "op" else 0.0)

            runs = []
            lo = ops_upto(0.0)
            right = left + r.width()
            for c in range(cols):
                s0, s1 = c / scale, min((c + 1) / scale, n)
                if s1 <= s0:
                    break
                hi = ops_upto(s1)
                ops, bws = hi - lo, (s1 - s0) - (hi - lo)
                lo = hi
                # (a tie is forward's, whatever the rounding of the two counts)
                k = "op" if ops >= bws - 1e-9 else "backward"
                x0 = left + c
                x1 = min(x0 + 1, right)
                if runs and runs[-1][2] == k and abs(runs[-1][1] - x0) < 1e-6:
                    runs[-1] = (runs[-1][0], x1, k)
                else:
                    runs.append((x0, x1, k))
        # ticks at least TICK_GAP px apart: one per pixel column covered the whole
        # strip of a 1,000-iteration loop in grey, and it read as disabled (visual
        # review); the pass bands above still say where each pass is
        ticks = []
        calls = self._calls
        j = 0
        while j < len(calls):
            x = int(left + calls[j] * scale)
            ticks.append(x)
            # the next call at least TICK_GAP px on, found, not walked to (a
            # loop's 10,000 calls)
            # (a step short of the place: the division may round past a call
            # exactly TICK_GAP px on, which the walk below takes: code review)
            j = max(j + 1, bisect_left(calls, (x + TICK_GAP - left) / scale - 1))
            while j < len(calls) and int(left + calls[j] * scale) - x < TICK_GAP:
                j += 1
        self._strip_key, self._strip_val = key, (runs, ticks)
        return runs, ticks

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = self._track_rect()
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self.colors["track"])
        p.drawRoundedRect(r, r.height() / 2, r.height() / 2)
        runs, ticks = self._strip(r)
        at = self._x_of(self._value)
        top, h = r.top(), r.height()
        for x0, x1, kind in runs:
            c = QColor(self.colors[kind])
            # the part already stepped through is solid, the rest faded
            cut = min(max(at, x0), x1)
            if cut > x0:
                p.setBrush(c)
                p.drawRect(QRectF(x0, top, cut - x0, h))
            if x1 > cut:
                c.setAlpha(90)
                p.setBrush(c)
                p.drawRect(QRectF(cut, top, x1 - cut, h))
        # a tick where each backward pass starts
        p.setPen(QPen(self.colors["marker"], 2))
        for x in ticks:
            p.drawLine(x, int(r.top() - 4), x, int(r.bottom() + 4))
        self._paint_passes(p, r)
        x = self._x_of(self._value)
        rad = (self.height() - self._band_height()) * 0.32
        # a ring that sets the handle off the track: white round a dark handle; round
        # a light one (dark and high-contrast themes) black: white on white sat on
        # the pale rest of the track (visual review)
        handle = self.colors["handle"]
        p.setPen(QPen(QColor("#000000" if handle.lightnessF() > 0.5 else "#ffffff"), 2.5))
        p.setBrush(handle)
        p.drawEllipse(QRectF(x - rad, r.center().y() - rad, 2 * rad, 2 * rad))
        p.end()

    def _paint_passes(self, p: QPainter, track: QRectF) -> None:
        """A bracket and a label per pass above the track; the pass the cursor is in
        in bold. Steps i..j of a pass cover the track from x(i) to x(j + 1)
        (the cursor value v is "v steps shown": step i is shown from v = i + 1)."""
        if not self._passes:
            return
        band_h = self._band_height()
        current = self._value - 1
        left, scale = track.left(), track.width() / max(1, self.maximum())
        for k, (a, b, label) in enumerate(self._passes):
            x0, x1 = left + a * scale + 2, left + (b + 1) * scale - 2
            if x1 - x0 < 4:
                continue
            inside = a <= current <= b
            shade = QColor(self.colors["marker"])
            shade.setAlpha(60 if inside else 28)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(shade)
            p.drawRoundedRect(QRectF(x0, 1, x1 - x0, band_h - 2), 4, 4)
            pen = QPen(self.colors["marker"], 2)
            p.setPen(pen)
            p.drawLine(QPointF(x0, band_h - 1), QPointF(x0, track.top()))
            p.drawLine(QPointF(x1, band_h - 1), QPointF(x1, track.top()))
            f = QFont(self.font())
            f.setBold(inside)
            p.setFont(f)
            p.setPen(self.colors["text"])
            p.drawText(QRectF(x0, 0, x1 - x0, band_h), Qt.AlignmentFlag.AlignCenter,
                       _band_text(label, QFontMetricsF(f), x1 - x0 - 6))

    # -- scrubbing --------------------------------------------------------------
    def _value_at(self, x: float) -> int:
        r = self._track_rect()
        n = self.maximum()
        return max(0, min(n, round((x - r.left()) / max(1.0, r.width()) * n)))

    def mousePressEvent(self, event) -> None:
        self._scrub(event.position().x())

    def mouseMoveEvent(self, event) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._scrub(event.position().x())

    def _scrub(self, x: float) -> None:
        v = self._value_at(x)
        if v != self._value:
            self.set_value(v)
            self.scrubbed.emit(v)


BUTTONS_MAX_SCALE = 2.0   # text scale past which the controls stop growing


class TimelineBar(QWidget):
    """Stepping controls. Emits requests; the window moves the Timeline's cursor."""

    first_requested = Signal()
    back_requested = Signal()
    play_toggled = Signal(bool)
    forward_requested = Signal()
    last_requested = Signal()
    cursor_requested = Signal(int)
    speed_changed = Signal(float)      # steps per second, 0 = instant
    # a control was used with the mouse: the window hands the keyboard to the
    # stepping keys (the controls take no focus, so it stayed in the editor,
    # where Space typed a space instead of playing)
    used = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        # two rows: the scrub strip gets the whole width (a presenter scrubs it),
        # the buttons, position and speed sit under it
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 2, 6, 2)
        outer.setSpacing(2)
        self.strip = ScrubStrip(self)
        self.strip.scrubbed.connect(self.cursor_requested)
        self.strip.scrubbed.connect(lambda _v: self.used.emit())
        outer.addWidget(self.strip)
        lay = QHBoxLayout()
        lay.setSpacing(6)
        outer.addLayout(lay)

        def button(kind, tip, signal):
            b = QToolButton(self)
            b.setIcon(control_icon(kind))
            b.setToolTip(tip)
            b.setAutoRaise(False)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(signal)
            b.clicked.connect(self.used)
            lay.addWidget(b)
            return b

        self.first_button = button("first", "First step (Home)", self.first_requested)
        self.back_button = button("back", "Step back (Left / PageUp)", self.back_requested)
        self.play_button = button("play", "Play / pause (Space)", self._on_play_clicked)
        self.play_button.setCheckable(True)
        self.forward_button = button("forward", "Step forward (Right / PageDown)",
                                     self.forward_requested)
        self.last_button = button("last", "Last step (End)", self.last_requested)
        self.position_label = _PositionLabel(self)
        lay.addSpacing(8)
        lay.addWidget(self.position_label, 1)
        self.speed_box = _SpeedBox(self)
        self.speed_box.setToolTip("Playback speed: slow for explaining in a lecture, or instant")
        self.speed_box.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        for label, _ in SPEEDS:
            self.speed_box.addItem(label)
        self.speed_box.setCurrentIndex(DEFAULT_SPEED)
        self.speed_box.currentIndexChanged.connect(
            lambda i: self.speed_changed.emit(SPEEDS[i][1]))
        lay.addWidget(self.speed_box)
        self._icon_color = "#1f2937"
        self._checked_icon_color = "#0B1F33"
        self.set_text_scale(1.0)
        # nothing to step through yet: greyed as the toolbar's are (they looked usable
        # under "0 / 0" before the first run)
        for b in (self.first_button, self.back_button, self.forward_button, self.last_button):
            b.setEnabled(False)

    def speed(self) -> float:
        return SPEEDS[self.speed_box.currentIndex()][1]

    def set_speed(self, steps_per_second: float) -> None:
        best = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i][1] - steps_per_second))
        self.speed_box.setCurrentIndex(best)

    def set_playing(self, playing: bool) -> None:
        self.play_button.blockSignals(True)
        self.play_button.setChecked(playing)
        # pressed while playing: drawn in the colour of text on a pressed button (in
        # high contrast a white pause on the white pressed background was a blank
        # square: UX review)
        self.play_button.setIcon(control_icon("pause", self._checked_icon_color) if playing
                                 else control_icon("play", self._icon_color))
        self.play_button.blockSignals(False)

    def is_playing(self) -> bool:
        return self.play_button.isChecked()

    def _on_play_clicked(self) -> None:
        playing = self.play_button.isChecked()
        self.set_playing(playing)
        self.play_toggled.emit(playing)

    def set_steps(self, kinds: Sequence[str]) -> None:
        if len(kinds) < self.strip.maximum() or not kinds:
            self.strip.set_passes([])    # a new run: the old passes no longer apply
        self.strip.set_kinds(kinds)

    def step_count(self) -> int:
        return self.strip.maximum()

    def add_steps(self, kinds: Sequence[str]) -> None:
        """The steps after the ``step_count()`` the bar has (a run streaming in)."""
        if kinds:
            self.strip.add_kinds(kinds)

    def set_passes(self, passes: Sequence[tuple[int, int, str]]) -> None:
        """Name the run's passes on the scrub strip: ``[(first_step, last_step, label)]``."""
        self.strip.set_passes(passes)

    def set_cursor(self, value: int, total: int, phase: str = "",
                   pass_index: int | None = None) -> None:
        """``pass_index``: the band the cursor is in (FrameState.focus), said in
        words: a long run's bands are too narrow to name, and its earlier passes
        fade (visual review: "Step 1700 of 3460" said nothing of it)."""
        self.strip.set_value(value)
        self.position_label.set_position(value, total, phase,
                                         None if pass_index is None else
                                         (pass_index + 1, len(self.strip.passes())))
        for b in (self.first_button, self.back_button):
            b.setEnabled(value > 0)
        for b in (self.forward_button, self.last_button):
            b.setEnabled(value < total)

    def set_colors(self, forward: str, backward: str, track: str, handle: str,
                   pressed_text: str | None = None) -> None:
        """The strip's colours; ``handle`` is the icons' too, ``pressed_text`` the
        pause icon's on the pressed Play button (the theme's selection text)."""
        self.strip.colors.update(op=QColor(forward), backward=QColor(backward),
                                 track=QColor(track), handle=QColor(handle), text=QColor(handle))
        self.strip.update()
        self._icon_color = handle
        self._checked_icon_color = pressed_text or handle
        for b, kind in ((self.first_button, "first"), (self.back_button, "back"),
                        (self.forward_button, "forward"), (self.last_button, "last")):
            b.setIcon(control_icon(kind, handle))
        self.set_playing(self.is_playing())

    def position_text(self) -> str:
        """What the position label says in full ("Step 8 of 8  —  backward"),
        whichever of its forms it shows."""
        return self.position_label.full_text()

    def set_text_scale(self, f: float) -> None:
        font = QFont(self.font())
        font.setPointSizeF(12.0 * f)
        # the controls grow up to twice their size, no more: at 300-400% text
        # they made the window's smallest width 1,382-1,706 px, wider than a
        # 1280 px projector (robustness review); the scrub strip's pass names
        # above them keep the full size
        c = min(f, BUTTONS_MAX_SCALE)
        # (the window's style sheet sizes every widget's text: this one, nearer,
        # caps the controls; the strip paints its own)
        # (the padding too: the window's grew to 32 px a side at 400% and left the
        # capped buttons' icons 16 px wide)
        self.setStyleSheet(f"QLabel, QComboBox, QToolButton {{ font-size: {base_font_pt(c):.1f}pt; }}"
                           f" QToolButton {{ padding: {round(3 * c)}px {round(8 * c)}px; }}")
        for b in (self.first_button, self.back_button, self.play_button,
                  self.forward_button, self.last_button):
            b.setIconSize(QSize(int(24 * c), int(24 * c)))
            b.setMinimumSize(int(40 * c), int(36 * c))
        self.strip.setMinimumHeight(int(26 * f))
        self.strip.setFont(font)
        self.strip.updateGeometry()


class _SpeedBox(QComboBox):
    """The speed list, closed, shows the speed's name alone ("Normal"); open, the
    names with their rates ("Normal (5/s)"). Sized for the whole label, the bar set
    the centre column's smallest width; sized for seven characters, it showed
    "Normal (5/s" and "Very fast (" cut off (visual review). The names are seven
    letters at most: two more made the timeline, and the centre column, wide
    enough that a lesson closed the scenario browser at 1024 px."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(max(len(_speed_name(label)) for label, _ in SPEEDS))

    def displayed_text(self) -> str:
        return _speed_name(self.currentText())

    def paintEvent(self, event) -> None:
        if self.displayed_text() == self.currentText():
            super().paintEvent(event)
            return
        p = QStylePainter(self)      # (as QComboBox::paintEvent, but for the text)
        p.setPen(self.palette().color(QPalette.ColorRole.Text))
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        opt.currentText = self.displayed_text()
        p.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        p.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)


def _speed_name(label: str) -> str:
    """"Normal (5/s)" -> "Normal"."""
    return label.split(" (")[0]


class _PositionLabel(QLabel):
    """"Step 7 of 3,460  —  forward, pass 1 of 203" in the longest form that fits
    its width: one line; the phase on a line of its own; then shorter words.
    A word-wrapped label broke it anywhere: at 1024 px and 150% text, five
    lines of one or two words ("Step 7", "of 3,460", "—", ...: visual review).
    The lines fit the height of the buttons beside them."""

    def __init__(self, parent=None):
        super().__init__("0 / 0", parent)
        self._forms: list = ["0 / 0"]

    def set_position(self, value: int, total: int, phase: str = "",
                     pass_of: tuple | None = None) -> None:
        step, step_short = f"Step {value:,} of {total:,}", f"{value:,} / {total:,}"
        where, where_short = ([phase], [phase]) if phase else ([], [])
        if pass_of is not None:
            where.append(f"pass {pass_of[0]:,} of {pass_of[1]:,}")
            where_short.append(f"{pass_of[0]:,}/{pass_of[1]:,}")
        if not where:
            self._forms = [step, step_short]
        else:
            where, where_short = ", ".join(where), ", ".join(where_short)
            self._forms = [f"{step}  \u2014  {where}", f"{step}\n{where}",
                           f"{step_short}\n{where_short}", step_short]
        self._fit()

    def full_text(self) -> str:
        return self._forms[0]

    def _fit(self) -> None:
        form = _first_fitting(self._forms, self.fontMetrics(), self.contentsRect().width(),
                              self._forms[-1])
        if form != self.text():
            self.setText(form)

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        return QSize(fm.horizontalAdvance(self._forms[0]) + 4, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        fm = self.fontMetrics()
        lines = self._forms[-1].split("\n")
        return QSize(max(fm.horizontalAdvance(ln) for ln in lines) + 4,
                     fm.lineSpacing() * 2 + 2)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.FontChange:
            self._fit()


def _band_text(label: str, fm, width: float) -> str:
    """The longest of a band's label forms that fits: "Pass 3: no backward",
    "no backward", "Pass 3", "3" (a cut "Pass 3: no …" would hide the point)."""
    head, _, tail = label.partition(": ")
    words = head.split()
    return _first_fitting((label, tail, head, words[-1] if words else ""), fm, width)


def _first_fitting(forms, fm, width: float, otherwise: str = "") -> str:
    """The first of ``forms`` (longest first) whose every line fits ``width``;
    ``otherwise`` when none does."""
    for text in forms:
        if text and all(fm.horizontalAdvance(ln) <= width for ln in text.split("\n")):
            return text
    return otherwise
