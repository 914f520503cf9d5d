"""Each pass's own graph, and two passes compared (issue 5).

``PassesPanel`` lists the run's passes (model/passes.py). It shows one pass's
graph on its own (a new object, built again, freed after its backward unless
``retain_graph`` kept it), or two passes side by side or overlaid, with the
nodes only one of them built outlined in that pass's colour, and, in words,
the branch points where the data sent the program another way
(model/graph_diff.py).

``install_passes_views(window)`` docks this panel, the static-capture panel and
the timing plot into the main window through its public seams
(``add_side_panel``, ``run_finished``, ``live``).
"""
from __future__ import annotations

import html
import math
from typing import Optional

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QSplitter, QTextBrowser,
                               QVBoxLayout, QWidget)

from graphscope.model.graph import build_graph
from graphscope.model.graph_diff import (PassDiff, diff_passes, overlay_subgraph, pass_nodes,
                                         pass_subgraph)
from graphscope.model.layout import LayeredLayout
from graphscope.model.passes import passes_of
from graphscope.ui.graph_canvas import GraphCanvas
from graphscope.ui.theme import OI_BLUE, OI_ORANGE

RETIDY_MAX = 5000    # nodes a canvas re-wraps for its new shape (live_run.RELAYOUT_MAX's size)
STACK_MIN = 220      # px each of two canvases needs to be put one above the other
GRAPH_ASPECT = 2.5   # width / height a pass's graph reads best in (a layered chain)

ONLY_A = OI_ORANGE   # Okabe-Ito: orange and blue stay apart for colour-blind viewers
ONLY_B = OI_BLUE
MODES = ("One pass", "Side by side", "Overlay")


class MarkedCanvas(GraphCanvas):
    """A GraphCanvas that outlines some nodes in a colour of their own (only in A / B)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.marks: dict[str, str] = {}      # node id -> colour
        self.caption = ""
        self.empty_message: Optional[str] = None   # what an empty canvas says instead
        # the graph is fitted below the caption (drawn over the graph's top row, the
        # caption hid "w * x - 1" and "loss": first-time user review)
        self.top_inset = lambda: self._caption_height() if self.caption else 0
        # NOTE [a pass shown whole]: a pass is compared as a whole, so the canvas
        # fits it rather than following a node (in a short panel it followed one
        # at a readable zoom and showed a corner of the graph cut by the caption),
        # and a resized canvas wraps the graph again for its new shape once the
        # resizing stops, as the main canvas does (it was tidied for the size the
        # panel had before the dock opened: a chain fitted into 130 px, unlabelled)
        self.set_follow(False)
        self._wrapped_for: Optional[float] = None   # the aspect the layout was tidied for
        self._rewrap_timer = QTimer(self)
        self._rewrap_timer.setSingleShot(True)
        self._rewrap_timer.setInterval(120)
        self._rewrap_timer.timeout.connect(self._rewrap)
        self.resized.connect(self._rewrap_timer.start)

    def show_graph(self, graph, layout, trace) -> None:
        """``set_graph`` with the layout wrapped for this canvas's shape."""
        self.set_graph(graph, layout, trace)   # (first: the layout is scaled to the text)
        self._wrapped_for = None
        self._rewrap()

    def _rewrap(self) -> None:
        layout = self._layout
        if layout is None or self.width() < 20 or self.height() < 20 \
                or len(layout.positions) > RETIDY_MAX:
            return
        aspect = self.view_aspect()
        if self._wrapped_for is not None and abs(aspect / self._wrapped_for - 1) < 0.15:
            self.fit()
            return
        self._wrapped_for = aspect
        self.animate_to(layout.tidy(aspect=aspect, readable=self.readable_zoom()))
        self.fit()

    def empty_text(self) -> str:
        if self.empty_message is not None:
            return self.empty_message
        return super().empty_text()

    def set_marks(self, marks: dict) -> None:
        self.marks = dict(marks)
        self.update()

    def set_caption(self, text: str) -> None:
        self.caption = text
        self.update()

    def _caption_font(self):
        f = self.font()
        f.setPointSizeF(11 * max(1.0, getattr(self, "_text_scale", 1.0)))
        f.setBold(True)
        return f

    def _caption_height(self) -> int:
        return QFontMetrics(self._caption_font()).height() + 12

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing)
        for nid, colour in self.marks.items():
            r = self.node_view_rect(nid)
            if r is None:
                continue
            pen = QPen(QColor(colour), 3.0, Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(r.adjusted(-5, -5, 5, 5), 6, 6)
        if self.caption:
            # on a strip of the canvas's own colour: a view that follows a step may
            # still pan the graph under it
            h = self._caption_height()
            p.fillRect(QRectF(0, 0, self.width(), h), QColor(self.theme().canvas_bg))
            p.setFont(self._caption_font())
            p.setPen(QColor(self.theme().text))
            p.drawText(QRectF(10, 6, self.width() - 20, h - 6), Qt.AlignmentFlag.AlignLeft,
                       self.caption)
        p.end()


class PassesPanel(QWidget):
    """Pass selector (A, B), view mode, the canvases and the diff in words."""

    pass_selected = Signal(int)
    node_clicked = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.trace = None
        self.graph = None
        self.passes: list = []
        self.diff: Optional[PassDiff] = None
        self.combo_a = QComboBox(self)
        self.combo_b = QComboBox(self)
        self.mode = QComboBox(self)
        self.mode.addItems(MODES)
        self.mode.setCurrentIndex(1)
        for c in (self.combo_a, self.combo_b):
            c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.combo_a.currentIndexChanged.connect(self._on_selection_changed)
        self.combo_b.currentIndexChanged.connect(self._on_selection_changed)
        self.mode.currentIndexChanged.connect(self._on_selection_changed)

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Pass", self))
        bar.addWidget(self.combo_a)
        self.vs_label = QLabel("compared with", self)
        bar.addWidget(self.vs_label)
        bar.addWidget(self.combo_b)
        bar.addStretch(1)
        bar.addWidget(QLabel("View:", self))
        bar.addWidget(self.mode)

        self.canvas_a = MarkedCanvas(self)
        self.canvas_b = MarkedCanvas(self)
        for c in (self.canvas_a, self.canvas_b):
            c.set_animated(False)
            c.empty_message = "Run a snippet: each pass's graph is drawn here"
            c.node_clicked.connect(self.node_clicked)
        self.split = QSplitter(Qt.Orientation.Horizontal, self)
        self.split.addWidget(self.canvas_a)
        self.split.addWidget(self.canvas_b)
        self.legend = QLabel(self)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.text = QTextBrowser(self)
        self.text.setOpenLinks(False)

        col = QVBoxLayout(self)
        col.setContentsMargins(6, 6, 6, 6)
        col.addLayout(bar)
        below = QWidget(self)
        bcol = QVBoxLayout(below)
        bcol.setContentsMargins(0, 0, 0, 0)
        bcol.addWidget(self.legend)
        bcol.addWidget(self.text, 1)
        self.vsplit = QSplitter(Qt.Orientation.Vertical, self)
        self.vsplit.addWidget(self.split)
        self.vsplit.addWidget(below)
        self.vsplit.setStretchFactor(0, 3)
        self.vsplit.setStretchFactor(1, 1)
        self.vsplit.setSizes([600, 180])
        col.addWidget(self.vsplit, 1)
        self._show_empty()

    # -- data ---------------------------------------------------------------------
    def set_trace(self, trace, graph=None) -> None:
        """Show the passes of a finished trace (``graph``: the run's whole graph, if built)."""
        self.trace = trace
        self.graph = graph if graph is not None else build_graph(trace)
        self.passes = passes_of(trace)
        for c, default in ((self.combo_a, 0), (self.combo_b, 1)):
            c.blockSignals(True)
            c.clear()
            c.addItems([p.label for p in self.passes])
            c.setCurrentIndex(min(default, len(self.passes) - 1))
            c.blockSignals(False)
        if len(self.passes) < 2:
            self.mode.blockSignals(True)
            self.mode.setCurrentIndex(0)
            self.mode.blockSignals(False)
        self._on_selection_changed()

    def select(self, a: int, b: Optional[int] = None, mode: Optional[str] = None) -> None:
        """Choose the passes (indices) and the view ("One pass", "Side by side", "Overlay")."""
        for w in (self.combo_a, self.combo_b, self.mode):
            w.blockSignals(True)
        self.combo_a.setCurrentIndex(a)
        if b is not None:
            self.combo_b.setCurrentIndex(b)
        if mode is not None:
            self.mode.setCurrentIndex(MODES.index(mode))
        for w in (self.combo_a, self.combo_b, self.mode):
            w.blockSignals(False)
        self._on_selection_changed()

    # -- reacting -----------------------------------------------------------------
    def _on_selection_changed(self, *_) -> None:
        if not self.passes:
            self._show_empty()
            return
        a = max(0, self.combo_a.currentIndex())
        b = max(0, self.combo_b.currentIndex())
        mode = MODES[self.mode.currentIndex()]
        two = mode != "One pass" and len(self.passes) > 1
        self.combo_b.setVisible(two)
        self.vs_label.setVisible(two)
        self.pass_selected.emit(a)
        if not two:
            self._show_one(a)
        else:
            self.diff = diff_passes(self.trace, a, b, graph=self.graph)
            if mode == "Side by side":
                self._show_side_by_side(a, b)
            else:
                self._show_overlay(a, b)
            self._show_diff_text(a, b)

    def _nodes_of(self, index: int) -> list:
        return pass_nodes(self.trace, index, self.graph)

    def _show_one(self, a: int) -> None:
        self.diff = None
        p = self.passes[a]
        self._one_canvas()
        sub = pass_subgraph(self.graph, self._nodes_of(a))
        self._put(self.canvas_a, sub, {}, p.label)
        fate = ""
        if p.kind == "backward":
            fate = (" Its graph was <b>kept</b> after backward (retain_graph=True), so a second "
                    "backward through it works." if p.retained else
                    " Its graph was <b>freed</b> when backward had walked it: the next pass builds "
                    "a new one.")
        self.legend.setText("")
        self.text.setText(
            f"<b>{html.escape(p.label)}</b>. PyTorch built this graph while the pass ran "
            f"({len(p.ops)} ops{', ' + str(len(p.backward)) + ' backward steps' if p.backward else ''})."
            + fate)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._orient()

    def _orient(self) -> None:
        """Side by side in a tall panel; one above the other in a wide, short one
        (a docked panel at the bottom): graphs are wider than tall, and each then
        gets the whole width, so its labels stay readable."""
        # Each canvas gets the shape nearer a graph's (wider than tall, GRAPH_ASPECT),
        # one above the other only where each keeps STACK_MIN px: in a short dock
        # two strips of 130 px drew one pass cut and the other unlabelled; in a
        # tall one, side by side, each was a narrow column (visual review)
        w, h = max(1, self.split.width()), max(1, self.split.height())
        side, stacked = (w / 2) / h, w / (h / 2)
        stack = h >= 2 * STACK_MIN and \
            abs(math.log(stacked / GRAPH_ASPECT)) < abs(math.log(side / GRAPH_ASPECT))
        want = Qt.Orientation.Vertical if stack else Qt.Orientation.Horizontal
        if self.split.orientation() != want:
            self.split.setOrientation(want)
            if self.canvas_b.isVisible():
                n = self.split.width() if want == Qt.Orientation.Horizontal else self.split.height()
                self.split.setSizes([max(1, n // 2), max(1, n // 2)])

    def _show_side_by_side(self, a: int, b: int) -> None:
        d = self.diff
        self.canvas_b.show()
        self._orient()
        n = self.split.width() if self.split.orientation() == Qt.Orientation.Horizontal \
            else self.split.height()
        half = max(1, n // 2)
        self.split.setSizes([half, half])
        sa = pass_subgraph(self.graph, d.nodes_a)
        sb = pass_subgraph(self.graph, d.nodes_b)
        self._put(self.canvas_a, sa, {n: ONLY_A for n in d.only_a}, self.passes[a].label)
        self._put(self.canvas_b, sb, {n: ONLY_B for n in d.only_b}, self.passes[b].label)
        self._legend(a, b)

    def _show_overlay(self, a: int, b: int) -> None:
        d = self.diff
        self._one_canvas()
        sub = overlay_subgraph(self.graph, d)
        marks = {n: ONLY_A for n in d.only_a}
        marks.update({n: ONLY_B for n in d.only_b})
        self._put(self.canvas_a, sub, marks, f"Pass {a + 1} and pass {b + 1} overlaid")
        self._legend(a, b)

    def _one_canvas(self) -> None:
        self.canvas_b.hide()
        self.split.setSizes([max(1, self.split.width(), self.split.height()), 0])

    def _put(self, canvas: MarkedCanvas, sub, marks: dict, caption: str) -> None:
        canvas.set_caption(caption)    # (first: the fit leaves room for it)
        canvas.show_graph(sub, LayeredLayout(sub), self.trace)
        canvas.set_frame(None)
        canvas.set_marks(marks)

    def _legend(self, a: int, b: int) -> None:
        d = self.diff
        self.legend.setText(
            f"<span style='color:{ONLY_A}'>&#9632;</span> only in pass {a + 1} ({len(d.only_a)}) "
            f"&nbsp;&nbsp; <span style='color:{ONLY_B}'>&#9632;</span> only in pass {b + 1} "
            f"({len(d.only_b)}) &nbsp;&nbsp; unmarked: built by both ({len(d.matched)})")

    def _show_diff_text(self, a: int, b: int) -> None:
        d = self.diff
        items = "".join(f"<li>{html.escape(s)}</li>" for s in d.summary)
        bps = ""
        if d.branches:
            rows = "".join(
                f"<li>{'<b>diverged</b> ' if bp.diverged else 'same way '}"
                f"{html.escape(bp.text(f'pass {a + 1}', f'pass {b + 1}'))}</li>"
                for bp in d.branches)
            bps = f"<p><b>Branch points</b> (a tensor's value decided Python control flow):</p><ul>{rows}</ul>"
        self.text.setText(f"<ul>{items}</ul>{bps}")

    def clear(self) -> None:
        """Show no run: a new snippet or a new run (the panel showed the passes of
        the snippet before until the new run ended: GUI review), and none of its
        captions or its second canvas (visual review)."""
        self.trace, self.graph, self.passes, self.diff = None, None, [], None
        for c in (self.combo_a, self.combo_b):
            c.blockSignals(True)
            c.clear()
            c.blockSignals(False)
        self.combo_b.hide()
        self.vs_label.hide()
        self._show_empty()

    def _show_empty(self) -> None:
        for c in (self.canvas_a, self.canvas_b):
            c.clear()
            c.set_caption("")
            c.set_marks({})
        self._one_canvas()
        self.legend.setText("")
        self.text.setText("Run a snippet: each forward pass (each backward call, or each "
                          "separate computation) appears here as its own graph.")

    # -- for tests and screenshots ----------------------------------------------------
    def summary_text(self) -> str:
        return self.text.toPlainText()


def install_passes_views(window) -> dict:
    """Dock the passes panel, the static-capture panel and the timing plot into the
    main window, using only its public seams. Returns the panels by name.

    The docks start hidden (the View menu opens them), so the default window is
    editor, graph and inspector; a hidden panel is filled when it is opened, so a
    big run costs nothing here until someone looks. Installing twice returns the
    first installation."""
    if getattr(window, "_passes_views", None):
        return window._passes_views
    from graphscope.ui.static_view import StaticPanel, StaticCaptureController
    from graphscope.ui.timing_view import TimingPanel

    passes = PassesPanel(window)
    static = StaticPanel(window)
    timing = TimingPanel(window)
    docks = {
        "passes": window.add_side_panel(passes, "Passes", Qt.DockWidgetArea.BottomDockWidgetArea),
        "static": window.add_side_panel(static, "Static capture", Qt.DockWidgetArea.BottomDockWidgetArea),
        "timing": window.add_side_panel(timing, "Rebuild cost", Qt.DockWidgetArea.BottomDockWidgetArea),
    }
    window.tabifyDockWidget(docks["passes"], docks["static"])
    window.tabifyDockWidget(docks["static"], docks["timing"])
    docks["passes"].raise_()
    for d in docks.values():
        d.hide()
    capture = StaticCaptureController(window)
    shown = {"trace": None}     # the trace the panels show

    def refresh(*_):
        live = getattr(window, "live", None)
        if live is None or not live.finished or shown["trace"] is live.trace:
            return
        if not any(d.isVisible() for d in docks.values()):
            return
        shown["trace"] = live.trace
        passes.set_trace(live.trace, live.graph)
        static.set_source(live.trace.source)
        if live.trace.static:
            static.set_results(live.trace.static, live.trace.source)
            timing.set_result((live.trace.static or {}).get("timing"))

    def on_run_finished(_end):
        refresh()

    def on_run_started():
        shown["trace"] = None
        passes.clear()

    def on_snippet_loaded():
        # another snippet: what was shown was the one before's (GUI review); a
        # static capture is kept across runs of the same snippet, not past it
        on_run_started()
        static.clear_results()
        static.set_source(window.editor.source(), new_snippet=True)
        timing.set_result(None)

    def on_visibility(visible: bool, dock):
        if visible and not dock.isFloating():
            # a graph needs height: the dock takes nearly half the window
            window.resizeDocks([dock], [int(window.height() * 0.46)], Qt.Orientation.Vertical)
        refresh()

    for d in docks.values():
        d.visibilityChanged.connect(lambda v, d=d: on_visibility(v, d))

    def on_capture_requested(request: dict):
        static.set_busy(True)
        capture.capture(window.editor.source(), request)

    def on_captured(trace):
        static.set_busy(False)
        if static.held:
            return     # a quiz began meanwhile: its answer stays hidden until Reveal
        if trace.source != window.editor.source():
            # another snippet was opened (or this one edited) meanwhile: its
            # results would read as the new one's (robustness review)
            static.status.setText("The snippet changed while it was being captured: "
                                  "press \u201cCapture statically\u201d again.")
            return
        static.set_results(trace.static or {}, trace.source, end=trace.end)
        t = (trace.static or {}).get("timing")
        if t:
            timing.set_result(t)
            docks["timing"].raise_()

    window.run_finished.connect(on_run_finished)
    window.run_started.connect(on_run_started)
    window.snippet_loaded.connect(on_snippet_loaded)
    static.capture_requested.connect(on_capture_requested)
    capture.captured.connect(on_captured)
    def on_node_clicked(nid: str):
        live = getattr(window, "live", None)
        if live is not None and nid in live.graph.nodes:
            window.select_node(nid)   # the pass views copy the run's node ids

    passes.node_clicked.connect(on_node_clicked)
    panels = {"passes": passes, "static": static, "timing": timing, "capture": capture,
              "docks": docks}
    window._passes_views = panels   # keep them reachable (tests, scenarios)
    return panels
