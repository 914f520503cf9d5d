"""Static captures and the eager-vs-traced timing (issue 5), against real torch.

run_static is called the way the session calls it after a snippet: with the
snippet's namespace, here made by exec'ing the snippet into a dict."""
import math

import pytest

torch = pytest.importorskip("torch")

from graphscope import protocol as P
from graphscope.capture.static import run_static
from graphscope.capture.timing import time_eager_vs_traced, timing_result
from graphscope.model.trace import Trace

SNIPPET = '''import torch
import torch.nn as nn
torch.manual_seed(0)

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h)

def branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1

model = MLP()
print("snippet ran")
'''


@pytest.fixture(scope="module")
def ns():
    namespace = {"__name__": "__main__", "__file__": "<snippet>"}
    exec(compile(SNIPPET, "<snippet>", "exec"), namespace)
    return namespace


def _capture(ns, capsys=None, **request):
    out = []
    run_static(ns, request, out.append)
    for msg in out:  # every result crosses the pipe as JSON
        assert P.decode(P.encode(msg)) == msg
    return {m.kind: m for m in out}


def test_mlp_is_captured_by_every_tool(ns, capsys):
    res = _capture(ns, target="model", inputs=["torch.randn(3, 4)"])
    assert set(res) == {"fx", "jit", "export", "explain"}
    assert all(r.ok for r in res.values()), {k: r.error for k, r in res.items()}
    fx = res["fx"]
    assert [n["op"] for n in fx.graph] == ["placeholder", "call_module", "call_function",
                                          "call_module", "output"]
    assert [n["target"] for n in fx.graph][1:4] == ["fc1", "torch.relu", "fc2"]
    assert fx.graph[2]["line"] == 12 and "relu" in fx.text
    assert [n["target"] for n in res["jit"].graph] == ["linear", "relu", "linear"]
    assert [n["target"] for n in res["export"].graph if n["op"] == "call_function"] == \
        ["aten.linear.default", "aten.relu.default", "aten.linear.default"]
    ex = res["explain"]
    assert ex.details["graph_count"] == 1 and ex.details["graph_break_count"] == 0
    # nothing the capture did reached the snippet's stdout
    assert capsys.readouterr().out == ""


def test_fx_cannot_capture_data_dependent_branch_and_says_why(ns):
    res = _capture(ns, target="branchy", inputs=["torch.tensor([1.0, 2.0])"], parts=["fx"])
    fx = res["fx"]
    assert not fx.ok
    assert fx.error["type"] == "TraceError"
    assert fx.error["line"] == 16                 # if x.sum() > 0:
    assert "Proxy" in fx.error["explanation"] and "bool" in fx.error["explanation"]


def test_jit_trace_freezes_the_branch_and_answers_differently(ns):
    res = _capture(ns, target="branchy", inputs=["torch.tensor([1.0, 2.0])"],
                   second_inputs=["torch.tensor([-1.0, -3.0])"], parts=["jit"])
    jit = res["jit"]
    assert jit.ok
    assert any(w["category"] == "TracerWarning" and w["line"] == 16 for w in jit.warnings)
    assert [n["target"] for n in jit.graph] == ["mul"]          # only the branch it saw
    d = jit.details
    assert d["eager"]["value"]["value"] == [-2.0, -4.0]        # x - 1: the other branch
    assert d["traced"]["value"]["value"] == [-2.0, -6.0]       # x * 2: frozen
    assert d["same"] is False and "frozen" in jit.summary


def test_export_refuses_and_dynamo_breaks_on_the_branch(ns):
    res = _capture(ns, target="branchy", inputs=["torch.tensor([1.0, 2.0])"],
                   parts=["export", "explain"])
    assert not res["export"].ok
    assert res["export"].error["line"] == 16
    assert "run time" in res["export"].error["explanation"]
    ex = res["explain"]
    assert ex.ok and ex.details["graph_break_count"] >= 1
    assert ex.details["breaks"][0]["line"] == 16


def test_each_part_independent_and_bad_requests_explained(ns):
    # jit/export/explain need an input; fx does not: fx still succeeds
    res = _capture(ns, target="model")
    assert res["fx"].ok
    assert not res["jit"].ok and "input" in res["jit"].error["explanation"]
    res = _capture(ns, target="nothing_here", parts=["fx", "jit"])
    assert set(res) == {"fx", "jit"}
    assert all(not r.ok and "nothing_here" in r.summary for r in res.values())
    res = _capture(ns, target="model", inputs=["1/0"], parts=["jit"])
    assert res["jit"].error["type"] == "ZeroDivisionError"


def test_static_results_land_in_the_trace_and_round_trip(ns):
    tr = Trace(source=SNIPPET)
    run_static(ns, {"target": "branchy", "inputs": ["torch.ones(2)"], "parts": ["fx", "jit"]},
               tr.apply)
    tr.apply(P.End(status="ok"))
    assert set(tr.static) == {"fx", "jit"} and tr.static["fx"]["ok"] is False
    again = Trace.from_json(tr.to_json())
    assert again.static == tr.static


def test_timing_gives_real_positive_numbers():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    d = time_eager_vs_traced(model, (torch.randn(4, 8),), iterations=12, warmup=2)
    assert len(d["eager_ms"]) == len(d["traced_ms"]) == d["iterations"] == 12
    assert all(t > 0 and math.isfinite(t) for t in d["eager_ms"] + d["traced_ms"])
    assert d["eager_median_ms"] > 0 and d["traced_median_ms"] > 0 and d["backward"]
    assert "vanish or even reverse" in d["caveat"]
    assert torch.get_num_threads() >= 1


def test_timing_request_through_run_static(ns):
    out = []
    run_static(ns, {"target": "model", "inputs": ["torch.randn(2, 4)"], "parts": [],
                    "timing": {"iterations": 6, "warmup": 1}}, out.append)
    assert [m.kind for m in out] == ["timing"]
    assert out[0].ok and out[0].details["eager_median_ms"] > 0
    res = timing_result(None, (), iterations=3, warmup=1)   # the default MLP
    assert res.ok and "MLP" in res.target


def _session_has_static_hook() -> bool:
    import inspect
    try:
        from graphscope.capture import session
    except ImportError:
        return False
    return "run_static" in inspect.getsource(session)


@pytest.mark.skipif(not _session_has_static_hook(),
                    reason="the session does not call capture.static.run_static yet")
def test_worker_runs_static_capture_after_the_snippet():
    from graphscope.runner import run_to_trace
    tr = run_to_trace(SNIPPET, "<snippet>", timeout=120,
                      static={"target": "branchy", "inputs": ["torch.tensor([1.0, 2.0])"],
                              "second_inputs": ["torch.tensor([-1.0, -3.0])"],
                              "parts": ["fx", "jit"]})
    assert tr.status == "ok", tr.error
    assert tr.stdout == "snippet ran\n"                     # the captures printed nothing
    assert not tr.static["fx"]["ok"] and tr.static["jit"]["details"]["same"] is False
    # the captures are not recorded as the snippet's ops
    assert not any(o.name == "mul" for o in tr.ops)
