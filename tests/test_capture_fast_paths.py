"""The capture's fast paths record the same facts as the slow ones they replaced."""
from __future__ import annotations

import gc
import math
import warnings

import torch

from graphscope import protocol as P
from graphscope.capture.session import run_snippet
from graphscope.capture.summaries import SummaryMemo, stats_of
from capture_helpers import capture


def test_two_pass_stats_equal_std_mean_on_big_tensors():
    # float32: the double results rounded, exactly torch's numbers (also a chunk
    # at a time, NOTE [stats of a big tensor], and of a transposed view)
    for n in (5000, 70_000, 300_001, 2_000_000):
        x = torch.randn(n) * 7 + 3
        s = stats_of(x)
        std, mean = torch.std_mean(x)
        assert (s["mean"], s["std"]) == (mean.item(), std.item())
        assert (s["min"], s["max"]) == (x.min().item(), x.max().item()) and s["numel"] == n
    # double (and integers, summarised in double): two-pass vs Welford, last digits only
    for x in (torch.randn(3001, dtype=torch.float64) * 7 + 3, torch.arange(5000),
              torch.randn(700, 600, dtype=torch.float64).t() * 1e3 + 5,
              torch.arange(1_000_000)):
        s = stats_of(x)
        std, mean = torch.std_mean(x.double())
        assert math.isclose(s["mean"], mean.item(), rel_tol=1e-12)
        assert math.isclose(s["std"], std.item(), rel_tol=1e-12)


def test_summary_memo_shares_until_the_tensor_changes_or_dies():
    memo = SummaryMemo(4)
    g = torch.ones(3)
    a = memo.summary(g)
    assert memo.summary(g) is a and a["value"] == [1.0, 1.0, 1.0]
    g.add_(1)                               # in place: version counter moves on
    b = memo.summary(g)
    assert b is not a and b["value"] == [2.0, 2.0, 2.0]
    big = torch.arange(10.0)
    assert memo.value_of(big, False)[1] is memo.value_of(big, False)[1]
    del g, big
    h = torch.zeros(3)                      # may reuse the dead tensor's address
    assert memo.summary(h)["value"] == [0.0, 0.0, 0.0]


def test_shared_gradient_summaries_match_the_real_gradients():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        z = y + 1
        w = z * z
        w.sum().backward()
        """)
    steps = [m for m in tr.messages if isinstance(m, P.BackwardStep)]
    by_name = {s.grad_fn: s for s in steps}
    add = by_name["AddBackward0"]
    # d(sum w)/dz = 2z = [8, 14]; the add passes it on unchanged, the first mul triples it
    assert add.grad_outputs[0]["value"] == [8.0, 14.0]
    assert add.grad_inputs[0]["value"] == [8.0, 14.0]
    first_mul = [s for s in steps if s.grad_fn == "MulBackward0"][-1]
    assert first_mul.grad_outputs[0]["value"] == [8.0, 14.0]
    assert first_mul.grad_inputs[0]["value"] == [24.0, 42.0]
    acc = by_name["AccumulateGrad"]
    assert acc.grad_after["value"] == [24.0, 42.0] and acc.grad_before is None


def test_gc_settings_are_restored_after_a_run():
    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    msgs: list = []
    end = run_snippet(P.Run(source="import gc, torch\nprint(gc.get_threshold()[0])\n"
                            "x = torch.ones(2) * 2\nraise ValueError('boom')\n"), msgs.append)
    assert end.status == "error"
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
    out = "".join(m.text for m in msgs if isinstance(m, P.Output))
    assert out == f"{before[0][0]}\n"       # young collections run as under plain Python


def test_custom_function_node_names_per_class():
    tr = capture("""
        import torch
        class Twice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return g * 2
        class Thrice(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 3
            @staticmethod
            def backward(ctx, g):
                return g * 3
        a = torch.ones(2, requires_grad=True)
        b = Twice.apply(a)
        c = Thrice.apply(b)
        c.sum().backward()
        """)
    names = [m.grad_fn for m in tr.messages if isinstance(m, P.BackwardStep)]
    assert "TwiceBackward" in names and "ThriceBackward" in names
    assert tr.tensor_by_name("b").grad_fn == "TwiceBackward"
    assert tr.tensor_by_name("c").grad_fn == "ThriceBackward"


def test_stats_shared_by_views_over_the_same_elements_only():
    # NOTE [same elements]: a transpose holds the same elements, a slice does not
    memo = SummaryMemo(4)
    w = torch.randn(50, 40)
    s = memo.summary(w)["stats"]
    t = memo.summary(w.t())
    assert t["stats"] is s and t["shape"] == [40, 50]
    assert memo.summary(w[:, :20])["stats"]["numel"] == 1000
    assert memo.summary(w.reshape(2000)[1:1001])["stats"] is not s
    w.t().mul_(2)                           # in place through the view: both versions move
    s2 = memo.summary(w.t())["stats"]
    assert s2 is not s and math.isclose(s2["max"], w.max().item())
    assert stats_of(w.t()) == {k: v for k, v in s2.items() if k != "hist"}


def test_new_grad_summary_reused_only_when_equal():
    memo = SummaryMemo(4)
    g = torch.randn(30, 20)
    memo.summary(g)
    copy = g.clone()
    assert memo.summary_as(copy, g)["stats"] is memo.summary(g)["stats"]
    other = g.clone().add_(1)
    st = memo.summary_as(other, g)["stats"]
    assert math.isclose(st["mean"], other.mean().item(), rel_tol=1e-6)


def test_transposed_weight_grads_keep_their_own_statistics():
    tr = capture(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "lin = torch.nn.Linear(30, 20)\n"
        "opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
        "x = torch.randn(8, 30)\n"
        "for _ in range(2):\n"
        "    opt.zero_grad()\n"
        "    lin(x).pow(2).sum().backward()\n"
        "    opt.step()\n"
        "w = lin.weight\n")
    torch.manual_seed(0)
    lin = torch.nn.Linear(30, 20)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    x = torch.randn(8, 30)
    for _ in range(2):
        opt.zero_grad()
        lin(x).pow(2).sum().backward()
        opt.step()
    acc = [s for s in tr.backward if s.grad_fn == "AccumulateGrad" and s.grad_after
           and s.grad_after["shape"] == [20, 30]]
    assert len(acc) == 2
    want = stats_of(lin.weight.grad)
    got = acc[-1].grad_after["stats"]
    assert (got["min"], got["max"], got["mean"]) == (want["min"], want["max"], want["mean"])
    assert math.isclose(got["std"], want["std"], rel_tol=1e-6)


def test_grad_reads_recorded_and_a_non_leaf_read_warns_at_the_snippet_line():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr = capture("import torch\n"
                     "x = torch.ones(2, requires_grad=True)\n"
                     "y = x * 2\n"
                     "g = y.grad\n"
                     "print(g, x.grad)\n", filename="snip.py")
    assert tr.stdout == "None None\n"
    leaf = [(w.filename, w.lineno) for w in caught if "not a leaf" in str(w.message)]
    assert leaf == [("snip.py", 4)]
    assert [(o.kind, o.line) for o in tr.ops if o.kind == "grad_read"] == [("grad_read", 4),
                                                                           ("grad_read", 5)]
