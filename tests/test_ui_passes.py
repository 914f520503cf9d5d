"""The passes panel, the static-capture panel and the timing plot (issue 5), with
real traces and real results, offscreen. Screenshots go to $GRAPHSCOPE_SHOTS (a
temp dir by default) for looking at."""
import os

import pytest
from PySide6.QtCore import QRectF, Qt

from graphscope import protocol as P
from graphscope.model.trace import Trace
from graphscope.runner import run_to_trace
from graphscope.ui.passes_view import ONLY_B, PassesPanel
from graphscope.ui.static_view import StaticPanel, candidate_targets, static_graph
from graphscope.ui.timing_view import TimingPanel

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

DEPTH = '''import torch
import torch.nn as nn
torch.manual_seed(0)
layer = nn.Linear(4, 4)
def model(x):
    depth = 1 if x.sum() > 0 else 3
    for _ in range(depth):
        x = torch.relu(layer(x))
    return x.sum()
for sign in (1.0, -1.0):
    loss = model(sign * torch.ones(4))
    loss.backward()
'''

BRANCHY = '''import torch
import torch.nn as nn

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1

model = MLP()
'''


@pytest.fixture
def shots(tmp_path):
    d = os.environ.get("GRAPHSCOPE_SHOTS") or str(tmp_path)
    os.makedirs(d, exist_ok=True)
    return d


@pytest.fixture(scope="module")
def depth_trace():
    tr = run_to_trace(DEPTH, "<snippet>", timeout=60)
    assert tr.status == "ok", tr.error
    return tr


def _static_results(request):
    """What the worker sends back, made in-process the way the session hook will."""
    from graphscope.capture.static import run_static
    ns = {"__name__": "__main__"}
    exec(compile(BRANCHY, "<snippet>", "exec"), ns)
    tr = Trace(source=BRANCHY)
    run_static(ns, request, tr.apply)
    return tr.static


def test_side_by_side_marks_the_extra_layers_and_names_the_branch(qtbot, depth_trace, shots):
    panel = PassesPanel()
    qtbot.addWidget(panel)
    panel.resize(1400, 800)
    panel.show()
    panel.set_trace(depth_trace)
    assert panel.combo_a.count() == 2 and panel.combo_b.currentIndex() == 1
    d = panel.diff
    assert d is not None and d.only_a == [] and len(d.only_b) == 8
    assert set(panel.canvas_b.marks) == set(d.only_b)
    assert set(panel.canvas_b.marks.values()) == {ONLY_B}
    assert panel.canvas_b.isVisible()
    text = panel.summary_text()
    assert "line 6" in text and "diverged" in text and "True" in text and "False" in text
    # the marked nodes are really drawn where the canvas says they are
    r = panel.canvas_b.node_view_rect(d.only_b[0])
    assert r is not None and panel.canvas_b.rect().intersects(r.toRect())
    assert panel.grab().save(os.path.join(shots, "passes_side_by_side.png"))


def test_overlay_and_one_pass(qtbot, depth_trace, shots):
    panel = PassesPanel()
    qtbot.addWidget(panel)
    panel.resize(1400, 800)
    panel.show()
    panel.set_trace(depth_trace)
    panel.select(0, 1, "Overlay")
    assert not panel.canvas_b.isVisible()
    assert set(panel.canvas_a.marks.values()) == {ONLY_B}
    assert set(panel.diff.only_b) <= set(panel.canvas_a._graph.nodes)
    assert panel.grab().save(os.path.join(shots, "passes_overlay.png"))
    with qtbot.waitSignal(panel.pass_selected, timeout=2000) as sig:
        panel.select(1, mode="One pass")
    assert sig.args == [1]
    assert panel.diff is None and panel.canvas_a.marks == {}
    assert "freed" in panel.summary_text()
    labels = sorted(n.label for n in panel.canvas_a._graph.nodes.values() if n.kind == "op")
    assert labels.count("linear") == 3 and labels.count("relu") == 3
    assert panel.grab().save(os.path.join(shots, "passes_one.png"))


def test_static_panel_shows_refusal_frozen_branch_and_graph(qtbot, shots):
    static = _static_results({"target": "branchy", "inputs": ["torch.tensor([1.0, 2.0])"],
                              "second_inputs": ["torch.tensor([-1.0, -3.0])"],
                              "parts": ["fx", "jit", "explain"]})
    panel = StaticPanel()
    qtbot.addWidget(panel)
    panel.resize(1300, 800)
    panel.show()
    panel.set_source(BRANCHY)
    assert [panel.target.itemText(i) for i in range(panel.target.count())] == ["model", "branchy"]
    panel.set_results(static, BRANCHY)
    fx = panel.views["fx"].verdict.toPlainText()
    assert "Not captured" in fx and "Proxy" in fx and "line 14" in fx
    jit = panel.views["jit"]
    # a trace that silently answers differently from eager is shown first
    assert panel.tabs.currentWidget() is jit
    assert "x" in [n.label for n in jit.canvas._graph.nodes.values() if n.kind == "tensor"]
    assert "different" in jit.verdict.toPlainText() and "TracerWarning" in jit.verdict.toPlainText()
    assert "[-2.0, -4.0]" in jit.verdict.toPlainText() and "[-2.0, -6.0]" in jit.verdict.toPlainText()
    assert [n.label for n in jit.canvas._graph.nodes.values() if n.kind == "op"] == ["mul"]
    assert jit.nodes.topLevelItemCount() == 1
    assert "Graph breaks" in panel.views["explain"].verdict.toPlainText()
    assert panel.grab().save(os.path.join(shots, "static_jit.png"))
    panel.tabs.setCurrentWidget(panel.views["fx"])
    assert panel.grab().save(os.path.join(shots, "static_fx.png"))


def test_static_graph_of_an_mlp_and_the_request_form(qtbot):
    static = _static_results({"target": "model", "inputs": ["torch.randn(2, 4)"], "parts": ["fx", "export"]})
    g = static_graph(static["fx"])
    assert [n.label for n in g.nodes.values() if n.kind == "op"] == ["fc1", "relu", "fc2"]
    assert len(g.edges) == 4                                  # x -> fc1 -> relu -> fc2 -> output
    ge = static_graph(static["export"])
    assert [n.label for n in ge.nodes.values() if n.kind == "op"] == ["linear", "relu", "linear"]
    panel = StaticPanel()
    qtbot.addWidget(panel)
    panel.set_request("branchy", ["torch.ones(2)"], ["-torch.ones(2)"])
    panel.with_timing.setChecked(True)
    with qtbot.waitSignal(panel.capture_requested, timeout=2000) as sig:
        panel.button.click()
    req = sig.args[0]
    assert req["target"] == "branchy" and req["inputs"] == ["torch.ones(2)"]
    assert req["second_inputs"] == ["-torch.ones(2)"] and req["timing"]["iterations"] > 0
    assert candidate_targets("def f(:\n") == []


def test_timing_plot_shows_measured_numbers(qtbot, shots):
    from graphscope.capture.timing import timing_result
    res = P.to_dict(timing_result(None, (), iterations=30, warmup=5))
    panel = TimingPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 500)
    panel.show()
    panel.set_result(res)
    eager, traced = panel.medians()
    assert eager > 0 and traced > 0
    curves = panel.plot.getPlotItem().listDataItems()
    assert len(curves) == 2 and all(len(c.getData()[1]) == 30 for c in curves)
    assert "ms" in panel.verdict.text() and "reverse" in panel.caveat.text()
    assert panel.grab().save(os.path.join(shots, "timing.png"))
    panel.set_result(None)
    assert panel.plot.getPlotItem().listDataItems() == []


def test_installed_in_the_main_window_after_a_run(qtbot, tmp_path, shots):
    from PySide6.QtCore import QSettings
    from graphscope.runner import Runner
    from graphscope.ui.main_window import MainWindow
    from graphscope.ui.passes_view import install_passes_views
    runner = Runner(warm=False)
    try:
        w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
                       runner=runner)
        w.ask_unsaved = lambda *_: "discard"
        qtbot.addWidget(w)
        panels = install_passes_views(w)
        assert install_passes_views(w) is panels          # installed once (the window did)
        w.resize(1600, 1000)
        w.show()
        w.set_speed(0)
        assert not panels["docks"]["passes"].isVisible()  # the View menu opens it
        panels["docks"]["passes"].toggleViewAction().trigger()
        w.load_snippet(DEPTH, "depth.py")
        with qtbot.waitSignal(w.run_finished, timeout=60_000):
            w.run()
        passes = panels["passes"]
        assert passes.combo_a.count() == 2
        assert len(passes.diff.only_b) == 8
        assert [panels["static"].target.itemText(i)
                for i in range(panels["static"].target.count())] == ["layer", "model"]
        assert panels["docks"]["passes"].isVisible()
        assert w.grab().save(os.path.join(shots, "window_with_passes.png"))
        # presentation reaches the panels' canvases too (a review: they kept
        # desk-sized labels on the projector)
        w.set_presentation(True)
        assert w._panel_canvases() and all(c.presentation for c in w._panel_canvases())
        w.set_presentation(False)
        assert not any(c.presentation for c in w._panel_canvases())
        # another snippet: the passes of the one before are not shown as its own,
        # neither while it is in the editor nor while it runs (GUI review)
        w.load_snippet("import torch\nx = torch.ones(2, requires_grad=True)\n", "other.py")
        assert passes.combo_a.count() == 0 and passes.canvas_a.geometry_model().nodes == {}
        # nor their captions, nor a second canvas (visual review)
        assert passes.canvas_a.caption == "" and not passes.canvas_b.isVisible()
        assert not passes.combo_b.isVisible()
        assert [panels["static"].target.itemText(i)
                for i in range(panels["static"].target.count())] == []
        with qtbot.waitSignal(w.run_finished, timeout=60_000):
            w.run()
            assert passes.combo_a.count() == 0
        assert passes.combo_a.count() == 1
        panels["capture"].shutdown()
    finally:
        w.controller.shutdown()
        runner.close()


def test_a_scenario_focus_fills_the_static_request(qtbot):
    """``focus`` names the function or module; the inputs are read from the snippet
    (what torch.jit.trace was given, then a later call's different input)."""
    from graphscope import scenarios
    from graphscope.ui.static_view import DEFAULT_INPUT, infer_request
    sc = scenarios.find("static-jit-trace-branch")
    assert infer_request(sc.focus, sc.snippet) == ("f", ["torch.ones(2)"], ["neg"])
    sc = scenarios.find("static-jit-trace-rnn")       # a class: its instance in the snippet
    assert infer_request(sc.focus, sc.snippet) == ("enc", ["torch.randn(2, 2)"], ["five"])
    sc = scenarios.find("static-jit-trace-loop")      # a tuple of example inputs
    assert infer_request(sc.focus, sc.snippet) == (
        "repeat", ["torch.ones(1)", "torch.tensor(3)"], ["torch.ones(1)", "torch.tensor(1)"])
    sc = scenarios.find("static-fx-rnn")              # Encoder()(x): a fresh instance
    assert infer_request(sc.focus, sc.snippet) == ("Encoder()", ["torch.randn(5, 2)"], [])
    sc = scenarios.find("static-fx-branch")           # nothing to read: the panel's default
    assert infer_request(sc.focus, sc.snippet) == ("f", [], [])
    panel = StaticPanel()
    qtbot.addWidget(panel)
    panel.set_focus(sc.focus, sc.snippet)
    assert panel.request()["target"] == "f" and panel.request()["inputs"] == [DEFAULT_INPUT]


def test_a_plain_files_own_call_fills_the_example_input(qtbot):
    """A plain file (no scenario focus) left Example input empty though the
    snippet calls ``net(torch.randn(3, 4))``, and its grey placeholder looked
    like a value given; each capture then said "PyTorch says: _NeedsInputs",
    GraphScope's own exception (UX review)."""
    from graphscope import protocol as P
    from graphscope.capture.static import _NeedsInputs, _failure
    src = ("import torch\nimport torch.nn as nn\n"
           "class Net(nn.Module):\n"
           "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n"
           "    def forward(self, x):\n        return self.fc(x)\n"
           "net = Net()\nout = net(torch.randn(3, 4))\nnet(torch.zeros(1, 4))\n")
    panel = StaticPanel()
    qtbot.addWidget(panel)
    assert panel.inputs.placeholderText().startswith("e.g.")
    panel.set_source(src)
    assert panel.request()["target"] == "net"
    assert panel.request()["inputs"] == ["torch.randn(3, 4)"]
    assert panel.request()["second_inputs"] == ["torch.zeros(1, 4)"]
    panel.inputs.setText("torch.ones(5, 4)")              # the learner's own stays
    panel.set_source(src + "\n")
    assert panel.request()["inputs"] == ["torch.ones(5, 4)"]
    # a scenario's (its focus) stays too when its snippet is run again, also where
    # the snippet has nothing to read for the target (a run emptied them: code review)
    panel.set_source("import torch\ndef f(x):\n    return x * 2\n", new_snippet=True)
    assert panel.request()["target"] == "f" and panel.request()["inputs"] == []
    panel.set_focus("f", "import torch\ndef f(x):\n    return x * 2\n")
    assert panel.request()["inputs"] == ["torch.randn(3)"]
    panel.set_source("import torch\ndef f(x):\n    return x * 2\n")
    assert panel.request()["inputs"] == ["torch.randn(3)"]
    panel.set_source(src, new_snippet=True)               # another snippet: its own
    assert panel.request()["target"] == "net"
    assert panel.request()["inputs"] == ["torch.randn(3, 4)"]
    # nothing given and nothing to read: GraphScope says so in its own words
    r = _failure("jit", "net", _NeedsInputs("torch.jit.trace runs the code once with a real "
                                            "input; none was given."), "snippet.py")
    view = panel.views["jit"]
    view.set_result(P.to_dict(r))
    text = view.verdict.toPlainText()
    assert "PyTorch says" not in text and "_NeedsInputs" not in text
    assert "Example input" in text


def test_a_static_capture_of_a_snippet_no_longer_open_is_not_shown(qtbot, tmp_path):
    """A capture requested, then another scenario opened before it came back: its
    results read as the new snippet's (robustness review)."""
    from PySide6.QtCore import QSettings
    from graphscope.model.trace import Trace
    from graphscope.ui.main_window import MainWindow
    from graphscope.ui.passes_view import install_passes_views
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    w.ask_unsaved = lambda *_: "discard"
    qtbot.addWidget(w)
    panels = install_passes_views(w)
    try:
        w.load_snippet("import torch\nx = torch.ones(2)\n", "old.py")
        old = Trace(source=w.editor.toPlainText())
        old.static = {"fx": {"ok": True, "target": "f"}}
        w.load_snippet("import torch\ny = torch.zeros(2)\n", "new.py")
        panels["capture"].captured.emit(old)
        status = panels["static"].status.text()
        assert "changed while it was being captured" in status and "Captured by" not in status
        panels["capture"].captured.emit(Trace(source=w.editor.toPlainText()))
        assert "No static results came back" in panels["static"].status.text()
    finally:
        panels["capture"].shutdown()
        w.controller.shutdown()


def test_a_pass_graph_is_drawn_below_its_caption(qtbot, depth_trace):
    """In a short, wide panel the caption "Pass 1: …" was drawn over the graph's top
    row (first-time user review); the summary said "pass 1 built 4 ops" under a
    header of "10 ops" (it counts the graph's ops: "pass 1's graph has")."""
    panel = PassesPanel()
    qtbot.addWidget(panel)
    panel.resize(1380, 330)
    panel.show()
    panel.set_trace(depth_trace)
    for canvas in (panel.canvas_a, panel.canvas_b):
        assert canvas.caption and canvas.top_inset() > 0
        canvas.fit()
        tops = [canvas.node_view_rect(n).top() for n in canvas.geometry_model().nodes]
        assert min(tops) >= canvas.top_inset() - 1
    assert "pass 1's graph has" in panel.summary_text()


def test_a_pass_is_shown_whole_in_a_short_panel_and_after_a_resize(qtbot, depth_trace):
    """NOTE [a pass shown whole]: a dock opened at the window's bottom (1380x330) put
    the two passes one above the other in strips of 130 px; the first then followed
    a node at a readable zoom (a corner of its graph, cut by the caption) and the
    other, wrapped for the size the panel had before, was fitted without labels."""
    panel = PassesPanel()
    qtbot.addWidget(panel)
    panel.resize(700, 700)
    panel.show()
    panel.set_trace(depth_trace)
    panel.resize(1380, 330)        # the dock takes its height after it is filled
    qtbot.wait(400)                # (the re-wrap waits for the resizing to stop)
    assert panel.split.orientation() == Qt.Orientation.Horizontal   # side by side
    for canvas in (panel.canvas_a, panel.canvas_b):
        area = QRectF(canvas.rect()).adjusted(-1, canvas.top_inset() - 1, 1, 1)
        rects = [canvas.node_view_rect(n) for n in canvas.geometry_model().nodes]
        assert rects and all(area.contains(r) for r in rects)
        assert abs(canvas.view_aspect() / canvas._wrapped_for - 1) < 0.15
    # a tall dock puts one above the other: side by side each was a narrow column
    # with its caption cut and its labels gone (visual review)
    panel.resize(700, 1000)
    qtbot.wait(400)
    assert panel.split.orientation() == Qt.Orientation.Vertical
    for canvas in (panel.canvas_a, panel.canvas_b):
        assert canvas.view_aspect() > 1.0


def test_the_timing_plot_takes_the_windows_theme_and_text_size(qtbot, tmp_path):
    """In high-contrast presentation mode the rebuild-cost plot stayed a white
    panel with 9-10 px grey axis text (UX review)."""
    from PySide6.QtCore import QSettings
    from graphscope.ui.main_window import MainWindow
    from graphscope.ui.theme import get_theme
    w = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    timing = w._passes_views["timing"]
    w.set_theme("high-contrast")
    t = get_theme("high-contrast")
    assert timing.plot.backgroundBrush().color().name().lower() == t.panel_bg.lower()
    axis = timing.plot.getAxis("bottom")
    assert axis.textPen().color().name().lower() == t.text.lower()
    small = axis.style["tickFont"].pointSizeF() if axis.style.get("tickFont") else 0
    w.set_text_scale(1.8)
    big = axis.style["tickFont"].pointSizeF()
    assert big >= 1.8 * 9 and big > small
    assert not timing.plot.getAxis("left").autoSIPrefix     # no "(x0.001)" on the label
    w.controller.shutdown()


def test_the_timing_plot_keeps_its_height_in_a_low_dock(qtbot):
    """Above and below the plot, the verdict and the caveat left it 25 px of a
    232 px dock at 1280x720 in presentation mode (visual review): in a wide,
    low panel they go beside it."""
    from PySide6.QtWidgets import QBoxLayout
    from graphscope.ui.timing_view import TimingPanel
    panel = TimingPanel()
    qtbot.addWidget(panel)
    panel.set_result({"ok": True, "target": "f", "details": {
        "eager_ms": [0.01] * 60, "traced_ms": [0.005] * 60, "eager_median_ms": 0.01,
        "traced_median_ms": 0.005, "verdict": "eager is 2x slower here",
        "caveat": "Measured on this machine, one thread. " * 8}})
    panel.resize(1280, 232)
    panel.show()
    qtbot.waitExposed(panel)
    qtbot.waitUntil(lambda: panel._box.direction() == QBoxLayout.Direction.LeftToRight)
    qtbot.waitUntil(lambda: panel.plot.height() >= 0.7 * panel.height())
    panel.resize(600, 700)                       # tall: the words below it again
    qtbot.waitUntil(lambda: panel._box.direction() == QBoxLayout.Direction.TopToBottom)


def test_a_file_of_data_is_not_parsed_for_the_static_picker():
    """A 1.8 MB file took 7 s to open, 3.4 s of it parsing for the closed Static
    capture panel's picker (GUI review): past PARSE_MAX_CHARS nothing is parsed."""
    from graphscope.ui.static_view import PARSE_MAX_CHARS, infer_request
    code = "def f(x):\n    return x * 2\n\nf(torch.ones(2))\n"
    assert candidate_targets(code) == ["f"]
    assert infer_request("f", code)[1] == ["torch.ones(2)"]
    data = code + "x = 1\n" * (PARSE_MAX_CHARS // 6 + 1)
    assert candidate_targets(data) == [] and infer_request("f", data) == ("f", [], [])
