"""The inspector: everything known about the selected node at the cursor's step.

For an op: the op, its autograd node, line, module path, grad mode, inputs and
outputs. For a tensor: shape, dtype, requires_grad, is_leaf, grad_fn, its
value, and its gradient once backward has reached it at this step (the frame
says which gradients exist by then, so stepping back hides them again).
Larger tensors get statistics and a histogram (pyqtgraph).
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QTextLayout, QTextOption
from PySide6.QtWidgets import (QFrame, QGridLayout, QLabel, QPlainTextEdit, QScrollArea,
                               QSizePolicy, QVBoxLayout, QWidget)

from graphscope.model.node_text import shape_text, tensor_label
from graphscope.model.grad_receivers import arriving_tensors, inner_receivers, receivers
from graphscope.model.summary import format_summary
from graphscope.model.timeline import QUIZ_ANSWERS
from graphscope.model.values import value_at
from graphscope.ui.editor import monospace_font
from graphscope.ui.legend import legend_rows, swatch

VALUE_CHARS = 1200
HISTOGRAM_MIN = 8          # elements from which a histogram says more than the numbers


def _flatten(v) -> list:
    if isinstance(v, list):
        out = []
        for x in v:
            out.extend(_flatten(x))
        return out
    return [v]


def _numbers(v) -> list[float]:
    return [float(x) for x in _flatten(v)
            if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x))]


def tensor_summary(t) -> dict:
    """protocol.TensorInfo -> the Summary dict format_summary reads."""
    return {"value": t.value, "stats": t.stats, "shape": list(t.shape or []), "dtype": t.dtype}


def grad_summary(t) -> Optional[dict]:
    if t.grad is None and not t.grad_stats:
        return None
    return {"value": t.grad, "stats": t.grad_stats, "shape": list(t.shape or []), "dtype": t.dtype}


# how a Branch's kind reads in the inspector (protocol.Branch: "bool" is an if / while)
_READ_AS = {"bool": "if / while", "item": ".item()", "tolist": ".tolist()", "int": "int()",
            "float": "float()", "index": "an index", "complex": "complex()"}


class Inspector(QWidget):
    """Shows one node; ``show_node(node, trace, frame)`` or ``clear_node()``."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._scale = 1.0
        self._rows: dict[str, str] = {}
        self.values_hidden = False     # a quiz hides values until Reveal (main_window NOTE [hidden output])
        self._last = None              # (node, trace, frame, caption, graph) shown, to redraw on unhide
        self._graph = None             # the graph of the node shown (show_node)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        outer.addWidget(scroll)
        body = QWidget()
        scroll.setWidget(body)
        lay = QVBoxLayout(body)
        lay.setContentsMargins(10, 8, 10, 8)
        lay.setSpacing(6)
        self.caption_label = QLabel("", body)
        self.caption_label.setProperty("role", "muted")
        lay.addWidget(self.caption_label)
        self.title_label = QLabel("Nothing selected", body)
        self.title_label.setWordWrap(True)
        # a long name may be cut, but never widens the column past its view (at
        # 150% in a 1024 px window "weight_hidden" did, and every line beside it
        # was cut at the right: visual review); it breaks after "_" and "."
        self.title_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.subtitle_label = QLabel("Click a node in the graph or a line in the editor.", body)
        self.subtitle_label.setWordWrap(True)
        self.subtitle_label.setProperty("role", "muted")
        lay.addWidget(self.title_label)
        lay.addWidget(self.subtitle_label)
        self._grid_host = QWidget(body)
        self._grid = QGridLayout(self._grid_host)
        self._grid.setContentsMargins(0, 4, 0, 4)
        self._grid.setHorizontalSpacing(10)
        self._grid.setVerticalSpacing(4)
        self._grid.setColumnStretch(1, 1)
        self._pairs: list = []
        self._stacked = False        # keys in their values' lines: a narrow column
        self._grid_host.installEventFilter(self)   # (its width decides _stacked)
        lay.addWidget(self._grid_host)
        self.value_caption = QLabel("Value", body)
        self.value_text = QPlainTextEdit(body)
        self.value_text.setReadOnly(True)
        self.grad_caption = QLabel("Gradient", body)
        for c in (self.value_caption, self.grad_caption):
            c.setWordWrap(True)   # a long caption wraps instead of widening the panel
        self.grad_text = QPlainTextEdit(body)
        self.grad_text.setReadOnly(True)
        for w in (self.value_text, self.grad_text):
            w.installEventFilter(self)   # refitted when its width changes (_fit_height)
        self.plot = pg.PlotWidget(body)
        self.plot.setMinimumHeight(140)
        self.plot.setMaximumHeight(200)
        self.plot.setMenuEnabled(False)
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.plot.setTitle("")
        # the plot is of the value: right under it, and said so in its title (under
        # ".grad at this step" a weight's heat map read as its gradient's: visual review)
        for w in (self.value_caption, self.value_text, self.plot, self.grad_caption,
                  self.grad_text):
            lay.addWidget(w)
        lay.addStretch(1)
        # what the canvas's colours and marks mean, always at hand for a class
        # (Qt rich text ignores ``border`` on a span: each swatch is a small painted pixmap)
        self.legend_label = QLabel("<b>Legend</b>", body)
        self.legend_label.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.legend_label)
        self.legend = QWidget(body)
        self.legend_grid = QGridLayout(self.legend)
        self.legend_grid.setContentsMargins(0, 0, 0, 0)
        self.legend_grid.setHorizontalSpacing(8)
        self.legend_grid.setVerticalSpacing(3)
        self.legend_grid.setColumnStretch(1, 1)
        lay.addWidget(self.legend)
        self._legend_theme = None
        self._hist_color = "#0072B2"
        self.plot_kind = None          # "histogram" | "heatmap" | None
        self.set_text_scale(1.0)
        self.clear_node()

    # -- appearance -----------------------------------------------------------
    def set_text_scale(self, f: float) -> None:
        self._scale = f
        t = QFont(self.font())
        t.setPointSizeF(15.0 * f)
        t.setBold(True)
        self.title_label.setFont(t)
        body = QFont(self.font())
        body.setPointSizeF(11.5 * f)
        for w in (self.subtitle_label, self.value_caption, self.grad_caption, self.caption_label,
                  self.legend_label):
            w.setFont(body)
        for w in (self.value_caption, self.grad_caption):
            f2 = QFont(body)
            f2.setBold(True)
            w.setFont(f2)
        mono = monospace_font(11.0 * f)
        self.value_text.setFont(mono)
        self.grad_text.setFont(mono)
        self._body_font = body
        self._refill_grid()
        if self._legend_theme is not None:
            self.set_legend(self._legend_theme)

    def set_legend(self, theme) -> None:
        """Fill the legend from a ui.theme.Theme: swatches painted with the canvas's own
        fill, border and mark colours, so they look like the nodes they explain."""
        self._legend_theme = theme
        rows = legend_rows(theme)
        grid = self.legend_grid
        while grid.count():
            item = grid.takeAt(0)
            if item.widget() is not None:
                item.widget().hide()      # (deleted later: gone from the picture now)
                item.widget().deleteLater()
        body = getattr(self, "_body_font", self.font())
        h = QFontMetricsF(body).height()
        dpr = self.devicePixelRatioF() or 1.0
        self.legend_swatches = []
        for i, (spec, text) in enumerate(rows):
            icon = QLabel(self.legend)
            icon.setPixmap(swatch(spec, h * 2.6, h * 1.15, body, dpr))
            # narrow columns (1024x768): the legend's longest word, requires_grad=True,
            # made the body 201 px wide in a 178 px view, and every line of the
            # inspector was cut at the right (UX review); it breaks after "=" now
            # and the label shrinks as the grid's values do
            label = QLabel(text.replace("=", "=\u200b"), self.legend)
            label.setWordWrap(True)
            label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            label.setFont(body)
            grid.addWidget(icon, i, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(label, i, 1)
            self.legend_swatches.append((spec, icon))

    def set_colors(self, background: str, foreground: str, accent: str) -> None:
        self.plot.setBackground(background)
        for axis in ("left", "bottom"):
            ax = self.plot.getAxis(axis)
            ax.setPen(foreground)
            ax.setTextPen(foreground)
        self._hist_color = accent

    # -- content ----------------------------------------------------------------
    def rows(self) -> dict[str, str]:
        """The key/value rows shown (tests read this)."""
        return dict(self._rows)

    def eventFilter(self, obj, event) -> bool:
        if obj is self.value_text or obj is self.grad_text:
            _refit_on_resize(obj, event)
        elif obj is self._grid_host and event.type() == QEvent.Type.Resize \
                and event.size().width() != event.oldSize().width() \
                and self._wants_stacked() != self._stacked:
            self._refill_grid()
        return super().eventFilter(obj, event)

    def _wants_stacked(self) -> bool:
        """Whether the keys go into their values' lines: when beside the longest
        key a value would get less than about nine characters (at 1024x768 and
        150% text "float32" showed as "fl" under the scroll bar: visual review)."""
        if not self._rows:
            return False
        fm = QFontMetricsF(getattr(self, "_body_font", self.font()))
        keys = max(fm.horizontalAdvance(k) for k in self._rows)
        return self._grid_host.width() < keys + 10 + fm.horizontalAdvance("0" * 9)

    def clear_node(self, note: str = "") -> None:
        """No node shown; ``note``: what the current step did instead (it drew none)."""
        self._last = None
        self.caption_label.setText("At this step" if note else "")
        self.caption_label.setVisible(bool(note))
        self.title_label.setText("Nothing drawn" if note else "Nothing selected")
        self.subtitle_label.setText(note + (" " if note else "")
                                    + "Click a node in the graph or a line in the editor.")
        self._rows = {}
        self._refill_grid()
        for w in (self.value_caption, self.value_text, self.grad_caption, self.grad_text, self.plot):
            w.hide()

    def set_values_hidden(self, hidden: bool) -> None:
        """Hide tensor values, gradients and branch outcomes (a quiz before Reveal)."""
        self.values_hidden = bool(hidden)
        if self._last is not None:
            self.show_node(*self._last)

    def show_node(self, node, trace, frame=None, caption: str = "", graph=None) -> None:
        """Show ``node`` (a model.graph.Node) as it is at ``frame`` (a FrameState).
        ``caption``: a small line above the title ("At this step", "Selected");
        ``graph``: the drawn graph the node is in (which in-place changes it drew
        as new nodes: NOTE [values after in-place])."""
        self._last = (node, trace, frame, caption, graph)
        self._graph = graph
        self.caption_label.setText(caption)
        self.caption_label.setVisible(bool(caption))
        op = _lookup_op(node, trace)
        tensor = _lookup_tensor(node, trace)
        if getattr(node, "kind", "") == "op" and "branch" in (getattr(node, "flags", ()) or ()):
            self._show_decision(node, op, trace, frame)
        elif getattr(node, "kind", "") == "op" and op is not None:
            self._show_op(node, op, trace, frame)
        elif tensor is not None:
            self._show_tensor(node, tensor, trace, frame)
        else:
            self.title_label.setText(_breakable(getattr(node, "label", "?")))
            self.subtitle_label.setText(" ".join(getattr(node, "detail", "") or []) if
                                        isinstance(getattr(node, "detail", ""), list)
                                        else str(getattr(node, "detail", "") or ""))
            self._rows = {"line": str(node.line)} if getattr(node, "line", None) else {}
            self._refill_grid()
            for w in (self.value_caption, self.value_text, self.grad_caption, self.grad_text, self.plot):
                w.hide()

    def _show_decision(self, node, op, trace, frame=None) -> None:
        """A branch point (graph.py NOTE [branch nodes]): the condition and the way it went."""
        self.title_label.setText(_breakable(node.label))
        self.subtitle_label.setText("Python control flow decided by a tensor's value")
        rows = {"line": str(node.line) if node.line else "-"}
        if op is not None and op.inputs:
            rows["read from"] = ", ".join(_tensor_name(trace, i) for i in op.inputs)
        at = getattr(frame, "detail_at", None) if frame is not None else None
        went = at(node) if at is not None else node.detail
        rows["went"] = "hidden until Reveal" if self.values_hidden else (went or "not yet")
        rows["note"] = ("autograd does not record this decision: another value would run "
                        "other code and build a different graph")
        self._rows = rows
        self._refill_grid()
        for w in (self.value_caption, self.value_text, self.grad_caption, self.grad_text, self.plot):
            w.hide()

    def _show_op(self, node, op, trace, frame) -> None:
        self.title_label.setText(_breakable(op.name))
        handed_back = bool(op.outputs) and not op.versions and set(op.outputs) <= set(op.inputs)
        if handed_back:
            # Dropout in eval mode hands back its input: the grad_fn recorded is that
            # tensor's own (AddmmBackward0 of the Linear before it), and the
            # inspector named the dropout op by it (visual review)
            self.subtitle_label.setText("no autograd node of its own: it hands back its input")
        else:
            self.subtitle_label.setText(op.grad_fn or ("no autograd node (not tracked)"
                                                        if not op.grad_enabled
                                                        else "no autograd node"))
        rows = {"op": op.qualname, "line": str(op.line) if op.line else "-"}
        if op.module:
            rows["module"] = op.module
        rows["grad mode"] = "inference mode" if op.inference else (
            "enabled" if op.grad_enabled else "disabled (no_grad)")
        rows["inputs"] = ", ".join(_tensor_name(trace, i) for i in op.inputs) or "-"
        rows["outputs"] = ", ".join(_tensor_name(trace, i) for i in op.outputs) or "-"
        if op.scalars:
            rows["arguments"] = ", ".join(str(s) for s in op.scalars)
        if op.versions:
            rows["in-place"] = "; ".join(f"{_tensor_name(trace, int(k))} version {a}\u2192{b}"
                                         for k, (a, b) in op.versions.items())
        if op.subgraph:
            # NOTE [composite ops]: the autograd nodes this one call made, output first
            rows["autograd nodes"] = subgraph_text(op.subgraph)
        freed = getattr(frame, "freed_at", None) if frame is not None else None
        at = freed.get(getattr(node, "id", None)) if freed else None
        if at is not None and at <= frame.cursor:
            # NOTE [released] in capture/backward.py
            # (what a second pass would do is the answer of a quiz: backward-twice
            # asks it, so before Reveal the row says what happened, not what follows:
            # first-time user review)
            rows["saved values"] = ("freed by the backward pass that ran it (no retain_graph)"
                                    if self.values_hidden else
                                    "freed by the backward pass that ran it (no "
                                    "retain_graph): another pass through here raises")
        self._rows = rows
        self._refill_grid()
        grads = None if self.values_hidden else self._backward_grads_for(op, trace, frame)
        self.value_caption.hide()
        self.value_text.hide()
        self.plot.hide()
        if grads:
            self.grad_caption.setText("Gradients at this backward step")
            self.grad_text.setPlainText(grads)
            _fit_height(self.grad_text, 16)
            self.grad_caption.show()
            self.grad_text.show()
        else:
            self.grad_caption.hide()
            self.grad_text.hide()

    def _show_tensor(self, node, t, trace, frame) -> None:
        name = _tensor_name(trace, t.id)
        self.title_label.setText(_breakable(name))
        shape = shape_text(t.shape, "\u00d7")
        self.subtitle_label.setText(f"tensor {shape} {t.dtype}")
        rows = {"shape": "(" + ", ".join("?" if d is None else str(d) for d in t.shape or ())
                          + ("," if len(t.shape or ()) == 1 else "") + ")",
                "dtype": t.dtype, "device": t.device,
                "requires_grad": str(t.requires_grad), "is_leaf": str(t.is_leaf),
                "grad_fn": t.grad_fn or "None"}
        # the marks shown at this step, as the canvas draws them (NOTE [late flags] in
        # model/graph.py: a later requires_grad_(), a missing requires_grad's note
        # came from step 1, and before a quiz's Reveal: code review)
        shown = getattr(frame, "shown_flags", None) if frame is not None else None
        flags = set(shown(node) if shown is not None and getattr(node, "id", None) is not None
                    else getattr(node, "flags", ()) or ())
        if self.values_hidden:
            flags -= QUIZ_ANSWERS
        if t.requires_grad and "requires_grad" in (getattr(node, "flags", ()) or ()) \
                and "requires_grad" not in flags:
            rows["requires_grad"] = "False"    # requires_grad_() comes later
        # the node's own op: a later in-place change makes a newer node (t~1) and
        # leaves the TensorInfo with the tensor's final grad_fn, which this node
        # never had (y made by mul showed CopySlices)
        made = getattr(node, "op", None)
        if made is None:
            made = t.created_by
        op = trace.op_by_id(made) if made is not None else None
        if op is not None and (op.outputs[:1] == [t.id] or str(t.id) in (op.versions or ())):
            rows["grad_fn"] = op.grad_fn or "None"
        if t.is_param:
            rows["parameter"] = "yes (nn.Parameter)"
        if t.retains_grad:
            rows["retains_grad"] = "True"
        if op is not None:
            rows["made by"] = f"{op.name} (line {op.line})" if op.line else op.name
        elif not t.is_leaf and t.grad_fn:
            # part of a graph, but no recorded call made it: say so rather than
            # leave an orphan unexplained (docs/trace-format.md lists these calls)
            rows["made by"] = ("a call GraphScope cannot see (TorchScript, "
                               "as_subclass, another thread)")
        hooks = _hooks_text(trace, t.id)
        if hooks:
            # a hook may replace the gradient on its way in: what was sent is not
            # what arrives, and nothing else on screen says why
            rows["hooks"] = hooks
        branches = [b for b in trace.branches if b.tensor == t.id]
        if branches:
            # where the program read this tensor's value (if / while, .item()): "decided:
            # item → 40.25" for a print's loss.item() read as a branch (first-time
            # user review); only an if or while decided something
            rows["read by Python"] = "; ".join(
                f"line {b.line}: {_READ_AS.get(b.kind, b.kind)} \u2192 {b.value!r}"
                for b in branches[:4]) + (
                f" (+{len(branches) - 4} more)" if len(branches) > 4 else "")
        if "missing_requires_grad" in flags:
            if "no_grad" in flags or "inference" in flags:
                rows["note"] = ("made with gradients disabled, so it has no grad_fn; "
                                "a later backward needed it")
            else:
                rows["note"] = ("a later backward needed this tensor, but it was created "
                                "without requires_grad=True")
        if self.values_hidden and "read by Python" in rows:
            rows["read by Python"] = "hidden until Reveal"
        self._rows = rows
        self._refill_grid()
        summary = tensor_summary(t)
        self.value_caption.setText("Value when created")
        # NOTE [values after in-place] in model/values.py: the value this node holds now
        cur = getattr(frame, "current", None) if frame is not None else None
        at = value_at(trace, t.id, getattr(node, "op", None), getattr(cur, "seq", None),
                      self._graph)
        if at is not None and at.changed_by is not None:
            summary = {**summary, "value": at.value, "stats": at.stats}
            by = at.changed_by
            where = f" (line {by.line})" if by.line else ""
            if at.own:
                text = f"Value after {by.name}{where}"
            elif at.through is not None:
                # NOTE [aliases]: changed through another tensor on the same memory
                text = (f"Value at this step, after {by.name} on "
                        f"{_tensor_name(trace, at.through)}{where}, which shares its memory")
            else:
                text = f"Value at this step, after {by.name}{where}"
            self.value_caption.setText(text)
        if at is not None and at.stale is not None:
            # changed in place since, but too big for each new value to be kept
            by = at.stale
            where = f", line {by.line}" if by.line else ""
            # the tensor of its group the op changed (not always its first input: out=)
            group = trace.aliases_of(t.id)
            hit = [int(k) for k in (by.versions or {}) if int(k) in group and int(k) != t.id]
            changed = (_tensor_name(trace, hit[0]) if hit else
                       _tensor_name(trace, by.inputs[0]) if by.inputs else "the tensor changed")
            why = f"it shares memory with {changed}" if at.shared else "too big to keep"
            self.value_caption.setText(f"{self.value_caption.text()}; changed since by "
                                       f"{by.name}{where} ({why})")
        if self.values_hidden:
            # the caption too: "after add_ on x, which shares its memory"
            # would answer a quiz about shared memory
            self.value_caption.setText("Value")
            self.value_text.setPlainText("Hidden until Reveal (R): the value would give "
                                         "the answer away.")
            _fit_height(self.value_text, 3)
            self.value_caption.show()
            self.value_text.show()
            self.grad_caption.hide()
            self.grad_text.hide()
            self.plot.hide()
            return
        self.value_text.setPlainText(format_summary(summary, VALUE_CHARS))
        _fit_height(self.value_text, 8)
        self.value_caption.show()
        self.value_text.show()
        grad = self._grad_at_frame(t, frame)
        if grad is not None:
            # a non-leaf keeps what reached it in .grad only after retain_grad():
            # the retain_grad lesson asks exactly this, so the caption must not say .grad
            kept = t.is_leaf or getattr(t, "retains_grad", False)
            self.grad_caption.setText(".grad at this step" if kept else
                                      "Gradient that reached it (not kept: .grad stays None)")
            self.grad_text.setPlainText(grad)
            _fit_height(self.grad_text, 8)
            self.grad_caption.show()
            self.grad_text.show()
        else:
            self.grad_caption.hide()
            self.grad_text.hide()
        self._show_histogram(summary)

    def _grad_at_frame(self, t, frame) -> Optional[str]:
        if frame is None:
            return None
        leaf = (getattr(frame, "leaf_grads", None) or {}).get(t.id)
        if leaf is not None:
            before, after = leaf
            a = format_summary(after, VALUE_CHARS) if after else "None"
            if t.id not in (getattr(frame, "grad_changed", None) or ()):
                return a   # changed at an earlier step: what it is now
            b = format_summary(before, 300) if before else "None"
            return f"before: {b}\nafter:  {a}"
        g = (getattr(frame, "grad_of", None) or {}).get(t.id)
        if g is not None:
            return g if isinstance(g, str) else format_summary(g, VALUE_CHARS)
        return None

    def _backward_grads_for(self, op, trace, frame) -> Optional[str]:
        cur = getattr(frame, "current", None) if frame is not None else None
        if cur is None or getattr(cur, "kind", None) != "backward":
            return None
        step = _backward_step(trace, getattr(cur, "backward", None))
        if step is not None and step.op is None and step.within == op.id:
            # a Node inside this op (NOTE [composite ops]): its gradients, unpaired
            lines = [f"{step.grad_fn} runs (inside {op.name}):"]
            lines += [f"gradient arrives:\n  {format_summary(g, 300)}"
                      for g in step.grad_outputs or [] if g]
            named = inner_receivers(trace, step)
            if named:
                for tid, label, g in named:
                    who = _tensor_name(trace, tid) if tid is not None else label
                    lines.append(f"gradient sent to {who}:\n  {format_summary(g, 300)}")
            else:
                lines += [f"gradient sent on:\n  {format_summary(g, 300)}"
                          for g in step.grad_inputs or [] if g]
            return "\n".join(lines)
        if step is None or step.op != op.id:
            return None
        lines = [f"{step.grad_fn} runs:"]
        outs = [_tensor_name(trace, t) for t in arriving_tensors(op, step)]
        for i, g in enumerate(step.grad_outputs or []):
            who = outs[i] if i < len(outs) else f"output {i}"
            lines.append(f"gradient of {who} arrives:\n  {format_summary(g, 300) if g else 'None'}")
        for tid, label, g in receivers(trace, step, op):
            who = _tensor_name(trace, tid) if tid is not None else label
            lines.append(f"gradient sent to {who}:\n  {format_summary(g, 300)}")
        return "\n".join(lines)

    def _show_heatmap(self, value) -> bool:
        """A 2-D value (a weight matrix) as a heat map; True when shown."""
        if not (isinstance(value, list) and len(value) >= 2 and all(
                isinstance(r, list) and len(r) == len(value[0]) and len(r) >= 2 for r in value)):
            return False
        try:
            import numpy as np
            data = np.array(value, dtype=float)
        except (ValueError, TypeError):
            return False
        if data.ndim != 2:
            # a 3-D value passes the check above too; pyqtgraph would take a depth of
            # 3 or 4 for colour channels, and raise on more (inside a paint: a crash)
            return False
        img = pg.ImageItem(data.T)      # ImageItem's first axis is x: columns across
        img.setColorMap(pg.colormap.get("viridis"))
        self.plot.addItem(img)
        self.plot.getViewBox().invertY(True)
        # row and column numbers on the cells' centres, and what the colours mean
        # (a review: ticks 0, 0.5, 1 ... between the cells, and no scale)
        rows, cols = data.shape
        self.plot.getAxis("bottom").setTicks([_cell_ticks(cols)])
        self.plot.getAxis("left").setTicks([_cell_ticks(rows)])
        lo, hi = float(np.nanmin(data)), float(np.nanmax(data))
        self.plot.setTitle(f"value: dark {lo:.3g} \u2192 yellow {hi:.3g}",
                           size=f"{10 * getattr(self, '_scale', 1.0):.0f}pt")
        self.plot.show()
        self.plot.autoRange()
        self.plot_kind = "heatmap"
        return True

    def _show_histogram(self, summary: dict) -> None:
        self.plot.clear()
        self.plot.getViewBox().invertY(False)
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setTicks(None)   # (a heat map's cell indices)
        self.plot_kind = None
        if self._show_heatmap(summary.get("value")):
            return
        stats = summary.get("stats") or {}
        hist = stats.get("hist") if isinstance(stats, dict) else None
        edges = counts = None
        if isinstance(hist, dict) and hist.get("edges") and hist.get("counts"):
            edges, counts = hist["edges"], hist["counts"]
        else:
            nums = _numbers(summary.get("value"))
            if len(nums) >= HISTOGRAM_MIN:
                lo, hi = min(nums), max(nums)
                bins = min(24, max(4, int(len(nums) ** 0.5) + 1))
                if hi == lo:
                    hi = lo + 1.0
                width = (hi - lo) / bins
                counts = [0] * bins
                for x in nums:
                    counts[min(bins - 1, int((x - lo) / width))] += 1
                edges = [lo + i * width for i in range(bins + 1)]
        if not edges:
            self.plot.hide()
            return
        x0 = edges[:-1]
        widths = [b - a for a, b in zip(edges[:-1], edges[1:])]
        bars = pg.BarGraphItem(x0=x0, width=widths, height=counts, brush=self._hist_color,
                               pen=pg.mkPen(None))
        self.plot.addItem(bars)
        self.plot.setTitle("distribution of the value")
        self.plot.show()
        self.plot.autoRange()
        self.plot_kind = "histogram"

    def histogram_shown(self) -> bool:
        return not self.plot.isHidden()

    def _refill_grid(self) -> None:
        # labels are reused, not recreated: the grid refills on every step
        pairs = self._pairs
        font = getattr(self, "_body_font", self.font())
        while len(pairs) < len(self._rows):
            key = QLabel(self._grid_host)
            key.setProperty("role", "muted")
            key.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            val = QLabel(self._grid_host)
            val.setWordWrap(True)
            val.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            val.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
            r = len(pairs)
            self._grid.addWidget(key, r, 0)
            self._grid.addWidget(val, r, 1)
            pairs.append((key, val))
        self._stacked = stacked = self._wants_stacked()
        items = list(self._rows.items())
        for i, (key, val) in enumerate(pairs):
            if i < len(items):
                k, v = items[i]
                key.setText(k)
                # zero-width spaces let long names (torch.Tensor.__pow__) wrap, but
                # not numbers: "→ 2." then "2448943745589922e-12" read as 2 (UX review)
                text = _BREAKABLE_DOT.sub(".\u200b", v)
                val.setText(f"{k}: {text}" if stacked else text)
                if key.font() != font:
                    key.setFont(font)
                    val.setFont(font)
                key.setVisible(not stacked)
                val.show()
            else:
                key.hide()
                val.hide()


def _breakable(name) -> str:
    """A name with places to break after its "_" and "." (not in numbers)."""
    return _BREAKABLE_DOT.sub(".\u200b", str(name)).replace("_", "_\u200b")


_BREAKABLE_DOT = re.compile(r"(?<![0-9])\.|\.(?![0-9])")   # a dot not inside a number


def _cell_ticks(n: int) -> list:
    """(position, label) of every cell index on a heat map's axis (each k-th when
    there are many): the centre of cell i is i + 0.5."""
    step = max(1, -(-n // 8))
    return [(i + 0.5, str(i)) for i in range(0, n, step)]


def _hooks_text(trace, tid: int) -> Optional[str]:
    """"registered at line 3 (removed at line 6), line 8: while registered, ...":
    the hooks the snippet put on tensor ``tid``, each with the line that removed
    it, if one did (NOTE [hook removal]); None if it put none. One pass over the ops."""
    hooks, removed = [], {}
    for o in trace.ops:
        kind = o.kind
        if (kind == "hook" or kind == "unhook") and o.inputs[:1] == [tid]:
            if kind == "unhook":
                removed[o.undoes] = o.line
            elif not o.failed:
                hooks.append(o)
    if not hooks:
        return None
    parts = []
    for o in hooks[:4]:
        text = f"line {o.line}" if o.line is not None else "a library call"
        if o.id in removed:
            gone = removed[o.id]
            text += f" (removed at line {gone})" if gone is not None else " (removed)"
        parts.append(text)
    more = f" and {len(hooks) - 4} more" if len(hooks) > 4 else ""
    return ("registered at " + ", ".join(parts) + more
            + ": while registered, a hook runs on each gradient that reaches it")


def _refit_on_resize(edit: QPlainTextEdit, event) -> None:
    """A text box fitted before the panel was laid out (or resized since, or given
    another font: presentation mode's text size) wraps otherwise: fit it again."""
    kind = event.type()
    if kind == QEvent.Type.FontChange or (
            kind == QEvent.Type.Resize and event.size().width() != event.oldSize().width()):
        lines = edit.property("fit_lines")
        if lines:
            _fit_height(edit, int(lines))


def _fit_height(edit: QPlainTextEdit, max_lines: int) -> None:
    """A read-only text box as tall as its text (up to ``max_lines``), no taller.
    Lines are counted as Qt wraps them, at word boundaries (counted by width
    alone, "gradient of (y * 3).sum() arrives:" was one line short, and the
    box showed its last line behind a scroll bar)."""
    fm = edit.fontMetrics()
    # at the width left when the scroll bar shows: counted without it, a line that
    # just fits wrapped once the box was too short, which brought the bar
    sb = edit.verticalScrollBar()
    bar = 0 if sb.isVisible() else sb.sizeHint().width()
    width = max(1.0, float(edit.viewport().width() or 260) - bar
                - 2 * edit.document().documentMargin())
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    lines = 0
    for line in edit.toPlainText().split("\n"):
        layout = QTextLayout(line, edit.font())
        layout.setTextOption(option)
        layout.beginLayout()
        n = 0
        while n <= max_lines:
            row = layout.createLine()
            if not row.isValid():
                break
            row.setLineWidth(width)
            n += 1
        layout.endLayout()
        lines += max(1, n)
        if lines >= max_lines:
            break
    edit.setProperty("fit_lines", max_lines)
    lines = max(1, min(lines, max_lines))
    # (half a line to spare: the plain text edit shows a scroll bar when the last
    # line does not fit to the pixel, which a bigger font's rounding can cost)
    edit.setFixedHeight(int((lines + 0.5) * fm.lineSpacing() + 2 * edit.frameWidth()
                            + edit.document().documentMargin() * 2 + 4))


def _backward_step(trace, bid):
    """The BackwardStep with id ``bid`` (ids count up from 0 in execution order)."""
    if bid is None:
        return None
    if not isinstance(bid, int):
        return bid
    bw = trace.backward
    if 0 <= bid < len(bw) and bw[bid].id == bid:
        return bw[bid]
    return next((b for b in bw if b.id == bid), None)


def _lookup_op(node, trace):
    op = getattr(node, "op", None)
    if op is None:
        return None
    if isinstance(op, int):
        return trace.op_by_id(op)
    return op


def _lookup_tensor(node, trace):
    t = getattr(node, "tensor", None)
    if t is None:
        return None
    if isinstance(t, int):
        return trace.tensors.get(t)
    return trace.tensors.get(t.id, t)


def subgraph_text(subgraph: list, limit: int = 8) -> str:
    """``Op.subgraph`` as text, the output's node first and each node followed by
    the nodes it sends gradients to: one as ``A \u2190 B``, several in brackets,
    ``A \u2190 (B \u2190 C, D \u2190 E)``, as a batched ``@``'s two operands are.
    At most ``limit`` nodes are named; the rest are counted."""
    shown: set = set()

    def text(i: int) -> str:
        shown.add(i)
        name = subgraph[i][0]
        kids = [k for k in subgraph[i][1] if 0 <= k < len(subgraph) and k not in shown]
        if not kids:
            return name
        if len(shown) + 1 > limit:
            return name + " \u2190 \u2026"
        parts = [text(k) for k in kids if k not in shown]
        if not parts:
            return name
        if len(parts) == 1:
            return f"{name} \u2190 {parts[0]}"
        return f"{name} \u2190 ({', '.join(parts)})"

    out = text(0)
    rest = len(subgraph) - len(shown)
    return out + (f" (+{rest} more)" if rest > 0 else "")


def _tensor_name(trace, tid: Any) -> str:
    t = trace.tensors.get(tid)
    if t is None:
        return f"t{tid}"
    return tensor_label(trace, t)
