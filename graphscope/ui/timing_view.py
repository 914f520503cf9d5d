"""What rebuilding the graph costs, measured: eager vs traced time per iteration (issue 5).

Plots the per-iteration times capture/timing.py measured in the worker (one
thread, after a warm-up) for eager PyTorch, which rebuilds the autograd graph
every iteration, and for the ``torch.jit.trace``d module, which replays one;
dashed lines mark the medians. The caveat travels with the numbers: for a tiny
model the difference can vanish or reverse.
"""
from __future__ import annotations

import html
from typing import Optional

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QBoxLayout, QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from graphscope.ui.theme import OI_BLUE, OI_ORANGE

EAGER = OI_ORANGE
TRACED = OI_BLUE


class TimingPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(self)
        self.plot.setBackground("w")
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setLabel("bottom", "iteration")
        self.plot.setLabel("left", "ms per iteration")  # no units=: no SI rescaling
        # nor a "(x0.001)" after the label for times under a millisecond (UX review)
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.plot.addLegend(offset=(10, 10))
        self.verdict = QLabel(self)
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.caveat = QLabel(self)
        self.caveat.setWordWrap(True)
        # the words beside the plot in a wide, low dock, below it in a tall one:
        # above and below it, they left the plot 25 px of a 232 px dock at
        # 1280x720 in presentation mode (visual review)
        words = QWidget(self)
        wcol = QVBoxLayout(words)
        wcol.setContentsMargins(0, 0, 0, 0)
        wcol.addWidget(self.verdict)
        wcol.addWidget(self.caveat)
        wcol.addStretch(1)
        # (scrolling when the dock is shorter than they are: cut, not squeezed)
        scroll = QScrollArea(self)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(words)
        self._box = QBoxLayout(QBoxLayout.Direction.TopToBottom, self)
        self._box.setContentsMargins(6, 6, 6, 6)
        self._box.addWidget(self.plot, 3)
        self._box.addWidget(scroll, 2)
        self.result: Optional[dict] = None
        self.outliers = 0
        self._colors = ("#FFFFFF", "#1F2937")
        self._scale = 1.0
        self.set_result(None)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        wide = event.size().width() > 2.2 * max(1, event.size().height())
        want = (QBoxLayout.Direction.LeftToRight if wide
                else QBoxLayout.Direction.TopToBottom)
        if self._box.direction() != want:
            self._box.setDirection(want)

    # the window's theme and text size (the plot kept a white panel and 9-10 px
    # grey axis text in high-contrast presentation mode: UX review)
    def set_colors(self, background: str, foreground: str) -> None:
        self._colors = (background, foreground)
        self.plot.setBackground(background)
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setPen(foreground)
            ax.setTextPen(foreground)
        self._style_legend()

    def set_text_scale(self, f: float) -> None:
        self._scale = max(0.5, float(f))
        font = QFont(self.font())
        font.setPointSizeF(10.0 * self._scale)
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setStyle(tickFont=font)
            ax.label.setFont(font)
        self._style_legend()

    def _style_legend(self) -> None:
        legend = self.plot.getPlotItem().legend
        if legend is None:
            return
        legend.setLabelTextColor(self._colors[1])
        legend.setLabelTextSize(f"{10.0 * self._scale:.0f}pt")
        bg = QColor(self._colors[0])
        bg.setAlpha(210)       # over the first points, which it covered: see through
        legend.setBrush(pg.mkBrush(bg))
        for _sample, label in legend.items:
            label.setText(label.text, color=self._colors[1], size=f"{10.0 * self._scale:.0f}pt")

    def set_result(self, result: Optional[dict]) -> None:
        """``result``: the ``timing`` entry of ``Trace.static`` (a StaticResult row)."""
        self.result = result
        self.outliers = 0
        self.plot.clear()
        self.plot.enableAutoRange()
        if not result:
            self.verdict.setText("Tick “also time eager vs traced” in Static capture to measure "
                                 "what rebuilding the graph costs on this machine.")
            self.caveat.setText("")
            return
        if not result.get("ok"):
            err = result.get("error") or {}
            self.verdict.setText(f"<b>Not measured.</b> {html.escape(result.get('summary') or '')}")
            self.caveat.setText(err.get("explanation", ""))
            return
        d = result.get("details") or {}
        eager, traced = d.get("eager_ms") or [], d.get("traced_ms") or []
        self.plot.plot(list(range(1, len(eager) + 1)), eager, pen=pg.mkPen(EAGER, width=2),
                       symbol="o", symbolSize=5, symbolBrush=EAGER, name="eager (graph rebuilt)")
        self.plot.plot(list(range(1, len(traced) + 1)), traced, pen=pg.mkPen(TRACED, width=2),
                       symbol="t", symbolSize=5, symbolBrush=TRACED, name="jit.trace (graph replayed)")
        self._style_legend()
        for value, colour in ((d.get("eager_median_ms"), EAGER), (d.get("traced_median_ms"), TRACED)):
            if value:
                self.plot.addItem(pg.InfiniteLine(pos=value, angle=0,
                                                  pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine)))
        # a busy machine throws a few iterations far off; keep the typical ones readable
        typical = sorted(eager + traced)
        if typical:
            p90 = typical[min(len(typical) - 1, int(0.9 * len(typical)))]
            top = max(p90, d.get("eager_median_ms") or 0, d.get("traced_median_ms") or 0) * 1.4
            self.plot.setYRange(0, top, padding=0)
            off = sum(1 for t in typical if t > top)
            self.outliers = off
        what = result.get("target") or "the model"
        self.verdict.setText(f"<b>{html.escape(what)}</b>, one training iteration "
                             f"({'forward + backward' if d.get('backward') else 'forward'}): "
                             f"{html.escape(d.get('verdict') or result.get('summary') or '')}")
        extra = (f" {self.outliers} slow iteration(s) above the plot's top were left off the scale "
                 "(the machine was busy); the medians include them." if self.outliers else "")
        self.caveat.setText(d.get("caveat", "") + extra)
        self.layout().activate()

    def medians(self) -> tuple:
        d = (self.result or {}).get("details") or {}
        return d.get("eager_median_ms"), d.get("traced_median_ms")
