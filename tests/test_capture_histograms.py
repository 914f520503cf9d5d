"""Histograms in the stats of big floating tensors (NOTE [histograms] in summaries.py)."""
from __future__ import annotations

import torch

from graphscope.capture.summaries import SummaryMemo, _hist
from capture_helpers import capture


def test_histogram_matches_torch_histc_and_skips_nan_and_inf():
    torch.manual_seed(0)
    for n in (300, 5000):                      # torch.histogram's path and bincount's
        x = torch.randn(n) * 3 + 1
        lo, hi = torch.aminmax(x)
        h = _hist(x, lo.item(), hi.item())
        assert h["counts"] == torch.histc(x, 20, lo.item(), hi.item()).long().tolist()
        assert len(h["edges"]) == 21 and h["edges"][0] == lo.item() and h["edges"][-1] == hi.item()
    x = torch.arange(100.0)
    x[3], x[5], x[7] = float("nan"), float("inf"), -float("inf")
    memo = SummaryMemo(10, (1.0, 0.0))
    st = memo.value_of(x)[1]
    assert sum(st["hist"]["counts"]) == 97 and st["hist"]["edges"][-1] == 99.0
    assert "hist" not in memo.value_of(torch.arange(100))[1]          # integers: none
    assert memo.value_of(torch.full((50,), 2.0))[1]["hist"] == {"edges": [1.5, 2.5],
                                                                "counts": [50]}
    assert "hist" not in memo.value_of(torch.full((50,), float("nan")))[1]


def test_budget_spent_only_first_seen_tensors_lose_it_final_grads_keep_it():
    memo = SummaryMemo(10, (0.0, 0.0))        # no time at all for histograms
    a, b = torch.randn(500), torch.randn(500)
    assert "hist" in memo.value_of(a)[1]      # the first one always gets one ...
    assert "hist" not in memo.value_of(b)[1]  # ... then the budget is spent
    assert "hist" in memo.value_of(b, final=True)[1]
    # a backward step's summary has none; the same tensor's final .grad adds it
    g = torch.randn(400)
    s = memo.summary(g)
    assert "hist" not in s["stats"]
    assert "hist" in memo.value_of(g, final=True)[1] and "hist" not in s["stats"]


def test_traced_big_tensors_and_final_grads_carry_histograms():
    tr = capture("""
        import torch
        torch.manual_seed(0)
        w = torch.randn(20, 30, requires_grad=True)
        idx = torch.arange(600).reshape(20, 30)
        (w.tanh() * 2).sum().backward()
        """)
    assert tr.status == "ok", tr.error
    w = tr.tensor_by_name("w")
    assert sum(w.stats["hist"]["counts"]) == 600 and len(w.stats["hist"]["edges"]) == 21
    assert sum(w.grad_stats["hist"]["counts"]) == 600
    assert "hist" not in tr.tensor_by_name("idx").stats
    for step in tr.backward:                  # per-step gradients: statistics only
        for s in step.grad_inputs + step.grad_outputs:
            assert s is None or s["stats"] is None or "hist" not in s["stats"]


def test_a_broadcast_view_is_summarised_from_its_distinct_elements():
    """A stride-0 view repeats its elements: statistics and histogram are those of
    every element, worked out from one slice (NOTE [broadcast views]); over all of
    ``x[:, None].expand(30000, 30000)`` they took 21 s and 7 GB (capture review)."""
    import pytest
    from graphscope.capture.summaries import _hist_of, stats_of
    x = torch.tensor([[0.5, -2.0, 3.0], [1.0, 7.0, -4.0]])
    for view in (x[:, None, :].expand(2, 5, 3), x.expand(4, 2, 3), x[:1].expand(3, 3),
                 torch.tensor(2.0).expand(6), x.half()[:, None].expand(2, 4, 3)):
        got, want = stats_of(view, True), stats_of(view.contiguous(), True)
        assert got["numel"] == want["numel"] and got["hist"] == want["hist"], view.shape
        for k in ("min", "max", "mean", "std"):
            rel = 1e-3 if view.dtype == torch.half else 1e-6
            assert got[k] == pytest.approx(want[k], rel=rel), (k, view.shape)
        assert _hist_of(view, got) == _hist_of(view.contiguous(), want)
    big = torch.arange(100000.0)[:, None].expand(100000, 100000)
    st = stats_of(big, True)          # (all 1e10 elements: an 80 GB copy, which failed)
    assert st is not None and st["numel"] == 10 ** 10 and st["max"] == 99999.0
    assert sum(st["hist"]["counts"]) == 10 ** 10
