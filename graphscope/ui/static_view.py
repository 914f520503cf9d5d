"""What a static capture makes of the snippet's code, beside the eager graph (issue 5).

``StaticPanel`` asks for a capture (a function or nn.Module of the snippet,
example inputs, a second input that should take another branch) and shows the
results the worker sent back (``Trace.static``, see capture/static.py), one
tab per tool: a plain-language verdict, the error explained when the tool
refused, its warnings, the captured graph drawn on a GraphCanvas, the node list
and the tool's own text. For ``torch.jit.trace`` it puts the traced answer for
the second input beside eager PyTorch's.

``StaticCaptureController`` runs the editor's snippet once more in a worker
with the static request (``Run.static``), since the request is made after the
eager run; the window's own run is left alone.
"""
from __future__ import annotations

import ast
import html
import re
from typing import Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPlainTextEdit, QPushButton, QSplitter, QTabWidget,
                               QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from graphscope.model.layout import LayeredLayout
from graphscope.model.trace import Trace
from graphscope.ui.passes_view import MarkedCanvas

TOOLS = (("fx", "torch.fx"), ("jit", "torch.jit.trace"), ("export", "torch.export"),
         ("explain", "torch.compile (dynamo)"))


def static_graph(result: dict):
    """A model Graph of a static result's node list (fx / export / dynamo: args name
    earlier nodes; jit: ``%name`` inputs), for the canvas."""
    from graphscope.model.graph_types import Edge, Graph, Node
    g = Graph()
    rows = result.get("graph") or []
    names: dict = {}
    for i, row in enumerate(rows):
        op = row.get("op", "")
        name = str(row.get("name", i))
        nid = f"s{i}"
        if op in ("placeholder", "get_attr"):
            node = Node(id=nid, kind="tensor", label=name, detail=op, step=i, line=row.get("line"),
                        flags=frozenset({"leaf"}))
        elif op == "output":
            node = Node(id=nid, kind="tensor", label="output", detail="returned", step=i,
                        flags=frozenset())
        else:
            short = _short_target(str(row.get("target", "")))
            node = Node(id=nid, kind="op", label=short or op,
                        detail=(f"line {row['line']}" if row.get("line") else op), step=i,
                        line=row.get("line"), flags=frozenset({"grad_fn"}))
        g._add_node(node)   # the same growing path GraphBuilder uses
        for part in name.split(","):
            names[part.strip()] = nid
        for ref in _refs(str(row.get("args", ""))):
            src = names.get(ref) or names.get("%" + ref)
            if src is None and ref.startswith("%") and not ref[1:].isdigit():
                # a jit graph's input (%x) has no row of its own: draw it as one
                src = f"s{i}{ref}"
                g._add_node(Node(id=src, kind="tensor", label=ref[1:], detail="input", step=i,
                                 flags=frozenset({"leaf"})))
                names[ref] = src
            if src is not None and src != nid and nid not in g.succs[src]:
                g._add_edge(Edge(src, nid, "data", i))
    return g


def _short_target(target: str) -> str:
    """``aten.linear.default`` -> ``linear``, ``torch.relu`` -> ``relu``, ``fc1`` -> ``fc1``."""
    parts = target.split(".")
    if len(parts) >= 3 and parts[0] == "aten":
        return parts[1]
    return parts[-1]


def _refs(args: str) -> list:
    return re.findall(r"%?[A-Za-z_][\w.]*|%\d+", args)


# A file this long is data, not a snippet to capture statically: parsing it for
# the picker froze the window for 3.4 s of the 7 s a 1.8 MB file took to open,
# with the Static capture panel closed (GUI review). Nothing longer is parsed.
PARSE_MAX_CHARS = 200_000


def _parsed(source: str):
    """``source``'s module AST, or None (not Python, or too long to parse here)."""
    if len(source) > PARSE_MAX_CHARS:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):   # (ValueError: a NUL byte)
        return None


def candidate_targets(source: str) -> list:
    """Functions, nn.Module classes' instances and modules the snippet defines (for the picker)."""
    tree = _parsed(source)
    if tree is None:
        return []
    funcs, classes, instances = [], set(), []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            funcs.append(node.name)
        elif isinstance(node, ast.ClassDef):
            classes.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            fn = node.value.func
            cname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if cname in classes or (isinstance(fn, ast.Attribute) and cname[:1].isupper()):
                instances.append(node.targets[0].id)
    return instances + funcs


DEFAULT_INPUT = "torch.randn(3)"


def infer_request(focus: str, source: str) -> tuple[str, list, list]:
    """``(target, inputs, second_inputs)`` for capturing ``focus`` (a scenario's
    function or nn.Module class), read from the snippet without running it.

    The target: ``focus`` itself for a function; for a class, the variable the
    snippet binds an instance to (``enc = Encoder()``), else ``Encoder()``.
    The inputs: what the snippet itself passes, all evaluated later in the
    snippet's namespace after it ran (capture/static.py), so a module-level name
    like ``neg`` is fine: first the example ``torch.jit.trace`` was given, else
    the first call's arguments; the second input is a later call's different
    arguments (the input that may take another branch). Anything not found is
    left empty (the panel offers a default)."""
    tree = _parsed(source)
    if tree is None:
        return focus, [], []
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    target = focus
    names = {focus}
    if focus in classes:
        bound = [n.targets[0].id for n in tree.body
                 if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call)
                 and getattr(n.value.func, "id", None) == focus]
        target = bound[0] if bound else f"{focus}()"
        names = set(bound) or {focus}

    def is_target(func) -> bool:
        if isinstance(func, ast.Name):
            return func.id in names
        # Encoder()(x): a call on a fresh instance of the class
        return (isinstance(func, ast.Call) and isinstance(func.func, ast.Name)
                and func.func.id == focus and focus in classes)

    def args_of(call) -> list:
        return [ast.get_source_segment(source, a) or "" for a in call.args]

    traced, calls = None, []
    # only module-level code: a call inside a function names that function's locals
    top = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    for stmt in top:
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            is_trace = isinstance(fn, ast.Attribute) and fn.attr == "trace" and len(node.args) >= 2
            if is_trace and is_target(node.args[0]):
                ex = node.args[1]
                traced = [ast.get_source_segment(source, e) or "" for e in ex.elts] \
                    if isinstance(ex, ast.Tuple) else [ast.get_source_segment(source, ex) or ""]
            elif is_target(fn) and node.args:
                calls.append(args_of(node))
    calls = [c for c in calls if all(c)]
    inputs = traced or (calls[0] if calls else [])
    second = next((c for c in calls if c != inputs and len(c) == len(inputs)), [])
    return target, [i for i in inputs if i], second


class StaticResultView(QWidget):
    """One tool's result: verdict, explanation, warnings, graph, node list, text."""

    def __init__(self, kind: str, parent=None):
        super().__init__(parent)
        self.kind = kind
        # the verdict can be long (a warning, the second input compared): it
        # scrolls in its own column rather than pushing the graph off the panel
        self.verdict = QTextBrowser(self)
        self.verdict.setOpenLinks(False)
        self.verdict.setFrameShape(QFrame.Shape.NoFrame)
        self.canvas = MarkedCanvas(self)
        self.canvas.set_animated(False)
        self.canvas.empty_message = "Not captured yet"
        self.nodes = QTreeWidget(self)
        self.nodes.setHeaderLabels(["name", "op", "target", "args", "line"])
        self.nodes.setRootIsDecorated(False)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setFont(QFont("monospace"))
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        right = QTabWidget(self)
        right.addTab(self.nodes, "Nodes")
        right.addTab(self.text, "As printed")
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.verdict)
        split.addWidget(self.canvas)
        split.addWidget(right)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 4)
        split.setStretchFactor(2, 3)
        split.setSizes([400, 400, 300])
        self.split = split
        col = QVBoxLayout(self)
        col.setContentsMargins(4, 4, 4, 4)
        col.addWidget(split, 1)
        self.result: Optional[dict] = None

    def set_result(self, r: Optional[dict]) -> None:
        self.result = r
        self.nodes.clear()
        if not r:
            self.verdict.setText("Not captured yet.")
            self.canvas.clear()
            self.canvas.empty_message = "Not captured yet"
            self.text.setPlainText("")
            return
        parts = [f"<p style='font-size:larger'><b>{'Captured' if r.get('ok') else 'Not captured'}"
                 f"</b>: {html.escape(r.get('summary') or '')}</p>"]
        err = r.get("error")
        if err and not r.get("ok"):
            line = f" (line {err['line']})" if err.get("line") else ""
            why = err.get("explanation") or ""
            if why and why not in (r.get("summary") or ""):    # said once is enough
                parts.append(f"<p><b>Why{line}:</b> {html.escape(why)}</p>")
            if not err.get("ours"):   # (GraphScope's own "no input": no PyTorch message)
                parts.append(f"<p><i>PyTorch says:</i> <code>{html.escape(err.get('type', ''))}: "
                             f"{html.escape(_first_line(err.get('message', '')))}</code></p>")
        for w in r.get("warnings") or []:
            line = f" (line {w['line']})" if w.get("line") else ""
            parts.append(f"<p><b>{html.escape(w['category'])}{line}:</b> "
                         f"{html.escape(_first_line(w['message'], 220))}</p>")
        det = r.get("details") or {}
        if self.kind == "jit" and "eager" in det:
            parts.append(_comparison_html(det))
        if self.kind == "explain" and det.get("breaks"):
            rows = "".join(f"<li>{'line ' + str(b['line']) + ': ' if b.get('line') else ''}"
                           f"{html.escape(b['reason'])}</li>" for b in det["breaks"])
            parts.append(f"<p><b>Graph breaks</b> (where compiled code hands back to Python):</p><ul>{rows}</ul>")
        if self.kind == "explain" and det.get("guards"):
            parts.append(f"<p><b>Guards</b> ({len(det['guards'])}; the graph is reused while they hold), "
                         f"e.g. <code>{html.escape(det['guards'][-1])}</code></p>")
        self.verdict.setText("".join(parts))
        for row in r.get("graph") or []:
            QTreeWidgetItem(self.nodes, [str(row.get("name", "")), str(row.get("op", "")),
                                         str(row.get("target", "")), str(row.get("args", "")),
                                         str(row.get("line") or "")])
        for i in range(5):
            self.nodes.resizeColumnToContents(i)
        self.text.setPlainText(r.get("text") or (err or {}).get("message", ""))
        if r.get("graph"):
            g = static_graph(r)
            layout = LayeredLayout(g)
            layout.tidy()
            self.canvas.set_graph(g, layout)
            self.canvas.set_caption({"fx": "torch.fx graph", "jit": "frozen jit graph",
                                     "export": "exported graph", "explain": "dynamo graphs"}[self.kind])
            self.canvas.fit()
        else:
            self.canvas.clear()
            self.canvas.empty_message = "No graph: this tool did not capture the code"


def _comparison_html(det: dict) -> str:
    eager, traced = det.get("eager") or {}, det.get("traced") or {}
    same = det.get("same")
    verdict = ("<b style='color:#D55E00'>different</b>: the traced graph took the branch it saw "
               "while tracing" if same is False else ("the same" if same else "not comparable"))
    return (f"<p><b>Second input</b> <code>{html.escape(_val(det.get('second_input')))}</code>:<br>"
            f"eager PyTorch returns <code>{html.escape(_val(eager.get('value')) or eager.get('error') or '')}</code>, "
            f"the traced version returns <code>{html.escape(_val(traced.get('value')) or traced.get('error') or '')}"
            f"</code>: {verdict}.</p>")


def _val(v) -> str:
    if isinstance(v, list) and len(v) == 1:
        v = v[0]
    if isinstance(v, dict) and "shape" in v:
        if v.get("value") is not None:
            return str(v["value"])
        st = v.get("stats") or {}
        return f"{'x'.join(map(str, v['shape']))} tensor, mean {st.get('mean', 0):.3g}"
    return "" if v is None else str(v)


def _first_line(text: str, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


class StaticPanel(QWidget):
    """The request form and one tab per static tool."""

    capture_requested = Signal(dict)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.target = QComboBox(self)
        self.target.setEditable(True)
        self.inputs = QLineEdit(self)
        # "e.g.": the grey example read as an input already given (UX review)
        self.inputs.setPlaceholderText("e.g. torch.randn(3, 4)   (one expression per argument, ; between)")
        self.second = QLineEdit(self)
        self.second.setPlaceholderText("e.g. torch.tensor([-1.0, -3.0])   (should take the other branch)")
        self._source = ""
        self._offered = ("", "")     # the inputs last filled in from the snippet
        self.target.currentTextChanged.connect(self._offer_inputs)
        self.with_timing = QCheckBox("also time eager vs traced", self)
        self.button = QPushButton("Capture statically", self)
        self.button.clicked.connect(self.request_capture)
        self.held = False      # a quiz before Reveal: set_held
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        # one row for the request, one for the action: the results get the height
        form = QGridLayout()
        form.addWidget(QLabel("Function or module:", self), 0, 0)
        form.addWidget(self.target, 0, 1)
        form.addWidget(QLabel("Example input:", self), 0, 2)
        form.addWidget(self.inputs, 0, 3)
        form.addWidget(QLabel("Second input:", self), 0, 4)
        form.addWidget(self.second, 0, 5)
        form.setColumnStretch(1, 1)
        form.setColumnStretch(3, 2)
        form.setColumnStretch(5, 2)
        row = QHBoxLayout()
        row.addWidget(self.with_timing)
        row.addWidget(self.status, 1)
        row.addWidget(self.button)
        self.tabs = QTabWidget(self)
        self.views = {}
        for kind, title in TOOLS:
            v = StaticResultView(kind, self)
            self.views[kind] = v
            self.tabs.addTab(v, title)
            v.set_result(None)
        col = QVBoxLayout(self)
        col.setContentsMargins(6, 6, 6, 6)
        col.addLayout(form)
        col.addLayout(row)
        col.addWidget(self.tabs, 1)

    def set_source(self, source: str, new_snippet: bool = False) -> None:
        """Offer the snippet's functions and modules as targets, and for the one
        chosen the inputs the snippet itself passes it (``infer_request``): a
        plain file's ``net(torch.randn(3, 4))`` left the box empty, and each
        capture failed for want of an input (UX review). ``new_snippet``:
        another snippet was loaded, whose inputs replace what the boxes held;
        else (the same snippet, run again) what they hold stays, the learner's
        and a scenario's alike (a run emptied a scenario's: code review), and
        only empty boxes are filled."""
        current = self.target.currentText()
        self._source = source
        self.target.blockSignals(True)
        self.target.clear()
        self.target.addItems(candidate_targets(source))
        if current and not new_snippet:      # (another snippet's target is not this one's)
            self.target.setCurrentText(current)
        self.target.blockSignals(False)
        empty = not (self.inputs.text().strip() or self.second.text().strip())
        if new_snippet or empty:
            self._offer_inputs(force=True)

    def _offer_inputs(self, *_args, force: bool = False) -> None:
        """The inputs read from the snippet for the chosen target, over what the
        boxes hold only when that was read from the snippet too (``force``: over
        anything); a target without any leaves the boxes as they are unless
        forced."""
        typed = self.inputs.text().strip(), self.second.text().strip()
        if not force and typed != self._offered:
            return       # the learner's own, or a scenario's (set_request)
        target = self.target.currentText().strip()
        _t, inputs, second = infer_request(target, self._source) if target else ("", [], [])
        if not force and not inputs:
            return
        self.inputs.setText("; ".join(inputs))
        self.second.setText("; ".join(second))
        self._offered = ("; ".join(inputs), "; ".join(second))

    def set_focus(self, focus: str, source: str) -> None:
        """Fill the request for a scenario's ``focus`` (see ``infer_request``);
        without inputs to read, a default the learner can edit."""
        target, inputs, second = infer_request(focus, source)
        self.set_request(target, inputs or [DEFAULT_INPUT], second)
        if not self.held:
            self.status.setText(f"Ready to capture {target} statically: check the example "
                                "input and press \u201cCapture statically\u201d.")

    def set_request(self, target: str, inputs=(), second_inputs=()) -> None:
        self.target.blockSignals(True)
        self.target.setCurrentText(target)
        self.target.blockSignals(False)
        self.inputs.setText("; ".join(inputs))
        self.second.setText("; ".join(second_inputs))
        self._offered = None     # not read from the snippet: a target change keeps them

    def request(self) -> dict:
        split = lambda s: [x.strip() for x in s.split(";") if x.strip()]
        req = {"target": self.target.currentText().strip(), "inputs": split(self.inputs.text()),
               "second_inputs": split(self.second.text())}
        if self.with_timing.isChecked():
            req["timing"] = {"iterations": 60, "warmup": 10}
        return req

    def request_capture(self) -> None:
        if self.held:
            return
        req = self.request()
        if not req["target"]:
            self.status.setText("Name a function or nn.Module from the snippet first.")
            return
        self.capture_requested.emit(req)

    def set_held(self, held: bool) -> None:
        """Before a quiz's Reveal (NOTE [hidden output] in main_window.py): no
        capture, and none shown. static-jit-trace-branch asks what the traced
        version returns for the second input, and the panel, filled in for it,
        printed both answers (first-time user review)."""
        self.held = bool(held)
        self.button.setEnabled(not held)
        if held:
            for v in self.views.values():
                v.set_result(None)
            self.status.setText("Hidden until Reveal: a static capture would answer this "
                                "quiz. Reveal (R) first.")
        elif self.status.text().startswith("Hidden until Reveal"):
            self.status.setText("Press \u201cCapture statically\u201d.")

    def set_busy(self, busy: bool) -> None:
        self.button.setEnabled(not busy and not self.held)
        if busy:
            self.status.setText("Running the snippet again and capturing it statically "
                                "(the first capture takes a few seconds while torch loads its compilers)…")

    def clear_results(self) -> None:
        """No results shown (another snippet is open)."""
        for v in self.views.values():
            v.set_result(None)
        if not self.held:      # (a quiz's "Hidden until Reveal" stays)
            self.status.setText("Press \u201cCapture statically\u201d.")

    def set_results(self, static: dict, source: str = "", end=None) -> None:
        static = static or {}
        target = next((r.get("target") for r in static.values() if isinstance(r, dict) and r.get("target")), None)
        if target and static.get("fx", static.get("jit")):
            self.target.setCurrentText(target)
        for kind, v in self.views.items():
            v.set_result(static.get(kind))
        if not any(k in static for k, _ in TOOLS):
            why = ""
            if end is not None and end.status != "ok":
                why = f" The snippet ended with status {end.status}" + (
                    f" ({end.error.type}: {end.error.message})" if end.error else "") + "."
            self.status.setText("No static results came back." + why)
        else:
            ok = [title for k, title in TOOLS if (static.get(k) or {}).get("ok")]
            self.status.setText(f"Captured by: {', '.join(ok) or 'none of the tools'}. "
                                "Eager PyTorch needs none of this: it builds the graph anew on every call.")
        # open the most telling tab: a trace that silently answers differently from
        # eager PyTorch, else the first tool that refused, else fx
        jit = static.get("jit") or {}
        if jit.get("ok") and (jit.get("details") or {}).get("same") is False:
            self.tabs.setCurrentWidget(self.views["jit"])
            return
        for kind, _ in TOOLS:
            r = static.get(kind)
            if r and not r.get("ok"):
                self.tabs.setCurrentWidget(self.views[kind])
                break


class StaticCaptureController(QObject):
    """Runs the snippet in a worker with a static request; ``captured(Trace)`` when done."""

    captured = Signal(object)

    def __init__(self, parent=None, timeout: float = 120.0, runner=None):
        super().__init__(parent)
        from graphscope.ui.run_controller import RunController
        self.controller = RunController(self, timeout=timeout, runner=runner)
        self.controller.batch.connect(self._on_batch)
        self.controller.finished.connect(self._on_finished)
        self.trace: Optional[Trace] = None

    def capture(self, source: str, request: dict, filename: str = "<snippet>") -> None:
        self.trace = Trace(source=source, filename=filename)
        self.controller.run_fields = {**self.controller.run_fields,
                                      "static": dict(request, filename=filename)}
        self.controller.run(source, filename)

    def is_running(self) -> bool:
        return self.controller.is_running()

    def shutdown(self) -> None:
        self.controller.shutdown()

    def _on_batch(self, msgs: list) -> None:
        if self.trace is not None:
            self.trace.extend(msgs)

    def _on_finished(self, end) -> None:
        if self.trace is None:
            return
        self.trace.apply(end)
        self.captured.emit(self.trace)
