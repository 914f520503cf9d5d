"""Passes and pass diffs (issue 5), on traces recorded by a real worker."""
import json

import pytest

from graphscope.model.graph import build_graph
from graphscope.model.graph_diff import diff_passes
from graphscope.model.passes import Pass, split_passes
from graphscope.model.trace import Trace
from graphscope.runner import run_to_trace

RNN = '''import torch
import torch.nn as nn
torch.manual_seed(0)
cell = nn.RNNCell(3, 4)
for length in (2, 5):
    h = torch.zeros(1, 4)
    for t in range(length):
        h = cell(torch.randn(1, 3), h)
    loss = h.sum()
    loss.backward()
'''

WHILE = '''import torch
def grow(y):
    while y.item() < 5:
        y = y * 2
    return y
a = grow(torch.tensor(1.0, requires_grad=True))
b = grow(torch.tensor(3.0, requires_grad=True))
'''

DEPTH = '''import torch
import torch.nn as nn
torch.manual_seed(0)
layer = nn.Linear(4, 4)
def model(x):
    depth = 1 if x.sum() > 0 else 3
    for _ in range(depth):
        x = torch.relu(layer(x))
    return x.sum()
for x in (torch.ones(4), -torch.ones(4)):
    loss = model(x)
    loss.backward()
'''

RETAIN = '''import torch
w = torch.tensor([1.0, 2.0], requires_grad=True)
for i in range(3):
    loss = (w * w).sum()
    loss.backward(retain_graph=(i == 1))
print(w.grad)
'''


@pytest.fixture(scope="module")
def traces():
    out = {}
    for name, src in (("rnn", RNN), ("while", WHILE), ("depth", DEPTH), ("retain", RETAIN)):
        tr = run_to_trace(src, "<snippet>", timeout=60)
        assert tr.status == "ok", (name, tr.error)
        out[name] = tr
    return out


def _labels(trace, graph, node_ids, kind="op"):
    return [graph.nodes[n].label for n in node_ids if graph.nodes[n].kind == kind]


def test_one_pass_per_backward_call_with_its_own_steps(traces):
    tr = traces["rnn"]
    passes = split_passes(tr)
    assert [p.kind for p in passes] == ["backward", "backward"]
    assert [p.call for p in passes] == [c.id for c in tr.backward_calls]
    # every op and every backward step belongs to exactly one pass
    assert sorted(i for p in passes for i in p.ops) == sorted(o.id for o in tr.ops)
    assert sorted(i for p in passes for i in p.backward) == sorted(s.id for s in tr.backward)
    for p in passes:
        assert {tr.backward[i].call for i in p.backward} == {p.call}
    cells = [[tr.op_by_id(i).name for i in p.ops].count("rnn_tanh_cell") for p in passes]
    assert cells == [2, 5]
    assert passes[1].lines == (6, 10)
    # the trace carries the same thing as JSON-ready dicts, and they survive a round trip
    assert tr.passes == [p.to_dict() for p in passes]
    again = Trace.from_json(tr.to_json())
    assert again.passes == tr.passes
    assert set(tr.passes[0]) >= {"index", "kind", "ops", "backward", "lines", "retained"}


def test_retain_graph_marks_the_kept_pass(traces):
    passes = split_passes(traces["retain"])
    assert [p.retained for p in passes] == [False, True, False]
    assert all(p.kind == "backward" for p in passes)
    # the print(w.grad) after the loop is a read, not a pass of its own
    assert len(passes) == 3


def test_without_backward_each_computation_is_a_pass(traces):
    tr = traces["while"]
    passes = split_passes(tr)
    assert [p.kind for p in passes] == ["graph", "graph"]
    muls = [[tr.op_by_id(i).name for i in p.ops].count("mul") for p in passes]
    assert muls == [3, 1]


def test_trace_file_without_passes_gets_them_on_load(traces):
    d = json.loads(traces["while"].to_json())
    d["passes"] = []
    assert len(Trace.from_dict(d).passes) == 2


def test_rnn_diff_extra_steps_only_in_longer_sequence(traces):
    tr = traces["rnn"]
    g = build_graph(tr)
    d = diff_passes(tr, 0, 1, graph=g)
    assert d.only_a == []
    assert _labels(tr, g, d.only_b) == ["rnn_tanh_cell"] * 3
    # the two shared cell steps and the sum are matched
    assert sorted(_labels(tr, g, d.matched)) == ["rnn_tanh_cell", "rnn_tanh_cell", "sum"]
    assert d.diverged_branches == []
    assert d.line_counts[0]["line"] == 8 and (d.line_counts[0]["ops_a"], d.line_counts[0]["ops_b"]) == (2, 5)
    text = " ".join(d.summary)
    assert "plain Python" in text and "Line 8" in text and "freed after its backward" in text
    # the sum reads a different h: that edge differs
    assert any(g.nodes[t].label == "sum" for _, t in d.edges_only_b)


def test_while_diff_names_the_loop_condition_and_values(traces):
    tr = traces["while"]
    g = build_graph(tr)
    d = diff_passes(tr, 0, 1, graph=g)
    assert _labels(tr, g, d.only_a) == ["mul", "mul"]
    assert d.only_b == []
    bp = d.diverged_branches[0]
    assert bp.line == 3 and bp.values_a == [1.0, 2.0, 4.0, 8.0] and bp.values_b == [3.0, 6.0]
    assert "while y.item() < 5" in bp.code
    assert d.divergence["branch_line"] == 3
    assert (d.divergence["value_a"], d.divergence["value_b"]) == (2.0, 6.0)
    assert d.divergence["name_a"] == "mul" and d.divergence["name_b"] is None


def test_depth_diff_names_the_if_and_the_extra_layers(traces):
    tr = traces["depth"]
    g = build_graph(tr)
    d = diff_passes(tr, 0, 1, graph=g)
    assert d.only_a == []
    assert sorted(_labels(tr, g, d.only_b)) == ["linear", "linear", "relu", "relu"]
    bp = d.diverged_branches[0]
    assert (bp.line, bp.kind, bp.values_a, bp.values_b) == (6, "bool", [True], [False])
    assert "line 6" in " ".join(d.summary)


def test_same_code_same_data_same_graph(traces):
    tr = traces["retain"]
    d = diff_passes(tr, 0, 2)
    assert d.same and d.branches == [] and d.divergence is None
    assert "same graph" in d.summary[0]
    assert len(d.matched) == len(d.nodes_a) == len(d.nodes_b) > 0
    # matched, yet each pass made its own op nodes: the graph is a new object each time
    assert all(a != b for a, b in d.matched.items() if a.startswith("o"))


def test_pass_dict_round_trip():
    p = Pass(index=2, kind="backward", ops=[1, 2], backward=[0], call=1, lines=(3, 5), retained=True)
    assert Pass.from_dict(json.loads(json.dumps(p.to_dict()))) == p


def _passes_of(src):
    tr = run_to_trace(src, "<snippet>", timeout=60)
    assert tr.status in ("ok", "error"), tr.error
    return tr, split_passes(tr)


def _spans(tr, passes):
    """(first seq, last seq) of each pass's ops."""
    return [(min(tr.op_by_id(i).seq for i in p.ops), max(tr.op_by_id(i).seq for i in p.ops))
            for p in passes if p.ops]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_a_training_loops_update_ends_the_pass_whose_gradients_it_used(optimizer):
    """Each iteration is one pass, its update included: the last update was a
    "pass without backward" of its own (leftover of the tenth session), and the
    updates sat in the pass after theirs."""
    tr, passes = _passes_of(f'''import torch
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
opt = torch.optim.{optimizer}(model.parameters(), lr=0.1)
for i in range(3):
    opt.zero_grad()
    x = torch.randn(4, 2)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    print(round(loss.item(), 4))
''')
    assert [p.kind for p in passes] == ["backward"] * 3
    assert all(p.new_graph for p in passes)
    for p in passes:
        lines = [tr.op_by_id(i).line for i in p.ops]
        assert lines.count(10) > 0 and 7 in lines       # its own update, its own input
    # the passes follow one another: no op of one lies between two of another's
    spans = _spans(tr, passes)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:]))
    # zero_grad of the next iteration ends this one, the next input begins the next
    second = [tr.op_by_id(i) for i in passes[1].ops]
    assert second[0].line == 7 and second[0].kind == "factory"


def test_a_models_initialisation_and_a_branch_test_are_no_passes_of_their_own():
    """Without backward: nn.Linear's initialisation (in place, under no_grad) made
    two passes of one op each, and the graph of ``if x.sum() > 0`` one more for each
    call; b's set-up, run before a's computation, went to a's pass."""
    tr, passes = _passes_of('''import torch
torch.manual_seed(0)
layer = torch.nn.Linear(2, 2)
def f(x):
    if x.sum() > 0:
        return layer(x).sum()
    return layer(x.exp()).sum()
a = torch.tensor([1.0, 2.0], requires_grad=True)
b = torch.tensor([-1.0, -2.0], requires_grad=True)
ya, yb = f(a), f(b)
''')
    assert [p.kind for p in passes] == ["graph", "graph"]
    names = [[tr.op_by_id(i).name for i in p.ops] for p in passes]
    assert "exp" not in names[0] and "exp" in names[1]
    assert [n.count("gt") for n in names] == [1, 1]
    assert "kaiming_uniform_" in names[0]
    # a and b, made before f(a), are its set-up: the passes do not overlap (b's
    # factory went with f(b), whose band then began inside f(a)'s)
    assert [n.count("tensor") for n in names] == [2, 0]
    _one_run_each(tr, passes)


def test_a_backward_again_through_a_kept_graph_says_so():
    tr, passes = _passes_of('''import torch
x = torch.tensor(3.0, requires_grad=True)
y = x * x
y.backward(retain_graph=True)
print(x.grad)
y.backward()
print(x.grad)
''')
    assert [p.new_graph for p in passes] == [True, False]
    assert passes[1].label.startswith("Pass 2: backward only, 1 op, 2 backward steps")
    assert Pass.from_dict(json.loads(json.dumps(passes[1].to_dict()))).label == passes[1].label
    assert Trace.from_json(tr.to_json()).passes == tr.passes


def _one_run_each(tr, passes):
    """Each pass's ops are one unbroken run of the trace's ops (its timeline band)."""
    order = {o.id: i for i, o in enumerate(sorted(tr.ops, key=lambda o: o.seq))}
    for p in passes:
        idx = sorted(order[i] for i in p.ops)
        assert idx == list(range(idx[0], idx[0] + len(idx))) if idx else True, p.label


@pytest.mark.parametrize("loop", [
    # the next input made before the update (code review: pass k+1 took the input,
    # pass k the update after it, and the bands overlapped)
    "    x = torch.randn(3)\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n"
    "    w.grad = None\n",
    # a frozen teacher's no_grad forward reads weights that require grad: it is the
    # next pass's set-up, not the tail of this one
    "    w.grad = None\n    x = torch.randn(3)\n    with torch.no_grad():\n"
    "        t = (teacher * x).sum()\n",
    # logging that records graph (code review: the update stayed in the next pass)
    "    mae = (out - 1).abs().mean()\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n"
    "    w.grad = None\n",
    # a weight made again each step: the next forward reads the tail's tensor
    "    w = (w - 0.1 * w.grad).detach().requires_grad_()\n",
], ids=["input-first", "teacher", "graph-logging", "remade-weight"])
def test_each_iteration_is_one_unbroken_pass(loop):
    tr, passes = _passes_of(
        "import torch\nw = torch.randn(3, requires_grad=True)\nteacher = torch.randn(3, "
        "requires_grad=True)\nx = torch.randn(3)\nt = torch.zeros(())\n"
        "for i in range(3):\n    out = (w * x).sum() + t\n    out.backward()\n" + loop)
    assert [p.kind for p in passes] == ["backward"] * 3
    _one_run_each(tr, passes)
    # every iteration's use of its gradient is in the pass that made it, and the
    # teacher's forward (made for the next pass) is not
    for p in passes:
        assert any(tr.op_by_id(i).kind in ("grad_read", "grad_write") for i in p.ops), p.label
    if "teacher" in loop:
        # the teacher's forward (line 12) reads weights that require grad, yet it makes
        # the next pass's input: none in the first pass, each in the one it feeds
        at_12 = [sum(tr.op_by_id(i).line == 12 for i in p.ops) for p in passes]
        assert at_12[0] == 0 and at_12[1] > 0


def test_a_multi_op_if_test_is_no_pass_of_its_own():
    """``if (w * 2).sum() > 0`` made a pass of its 5 ops (code review): a graph whose
    results are unnamed and end in a comparison only decided a branch."""
    tr, passes = _passes_of('''import torch
w = torch.randn(3, requires_grad=True)
if (w * 2).sum() > 0:
    y = (w.exp() * 3).mean()
else:
    y = (w.sin() * 3).mean()
''')
    assert len(passes) == 1 and passes[0].kind == "forward"


def test_a_validation_step_after_the_update_ends_its_epoch():
    """``with torch.no_grad(): val = (w * x).sum()`` after ``opt.step()`` reads the
    weights and records nothing: it went to the next pass, and the last pass held
    two epochs' validation (code review)."""
    tr, passes = _passes_of('''import torch
w = torch.ones(2, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
x = torch.ones(2)
for ep in range(3):
    loss = (w * x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        val = (w * x).sum()
    print("val", val.item())
''')
    assert len(passes) == 3
    assert [sum(tr.op_by_id(i).line == 11 for i in p.ops) for p in passes] == [2, 2, 2]
    _one_run_each(tr, passes)
