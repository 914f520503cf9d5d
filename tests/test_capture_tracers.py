"""Static tracers inside a snippet (NOTE [static tracers] in recorder.py): torch.jit.trace
and torch.fx run exactly as under plain python, and nothing they run is recorded.
Through real workers: the warnings they print are part of what is compared."""
from __future__ import annotations

from capture_helpers import plain_run, worker_trace

JIT_BRANCH = """\
import torch
def f(x):
    if x.sum() > 0:
        return x * 2
    return x - 1
tf = torch.jit.trace(f, torch.ones(3))
a = tf(torch.ones(3))
b = f(-torch.ones(3))
print(a, tf(-torch.ones(3)), b)
"""


def test_jit_trace_output_is_byte_identical_and_nothing_inside_is_recorded():
    out, err = plain_run(JIT_BRANCH, "jit_branch.py")
    assert "jit_branch.py:3: TracerWarning" in err      # the learner's warning, from line 3
    tr = worker_trace(JIT_BRANCH, "jit_branch.py")
    assert tr.status == "ok", tr.error
    assert (tr.stdout, tr.stderr) == (out, err)
    # only the snippet's own calls: three ones, the neg, and the eager f(-x) on line 8
    # (sum, gt, bool, sub); none of the traced run or its trace check (isclose, all, ...)
    assert [(o.name, o.line) for o in tr.ops] == [
        ("ones", 6), ("ones", 7), ("ones", 8), ("neg", 8), ("sum", 3), ("gt", 3),
        ("bool", 3), ("sub", 5), ("ones", 9), ("neg", 9)]
    assert [b.line for b in tr.branches] == [3]          # the eager branch only
    assert {t.dtype for t in tr.tensors.values()} == {"float32", "bool"}


def test_jit_trace_of_a_module_records_only_the_eager_calls():
    src = """\
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    tm = torch.jit.trace(model, torch.randn(4, 3))
    x = torch.randn(2, 3)
    print(torch.allclose(tm(x), model(x)))
    """
    out, err = plain_run(src, "jit_mod.py")
    tr = worker_trace(src, "jit_mod.py")
    assert (tr.status, tr.stdout, tr.stderr) == ("ok", out, err) and out == "True\n"
    lines = {o.name: o.line for o in tr.ops}
    assert lines["linear"] == 6 and lines["relu"] == 6
    assert sum(o.name == "linear" for o in tr.ops) == 1   # not the traced or checked runs
    assert not any(o.name in ("isclose", "all", "double") for o in tr.ops)


def test_fx_symbolic_trace_sees_proxies_and_records_only_real_calls():
    src = """\
    import torch
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2)
        def forward(self, x):
            return torch.relu(self.lin(x)) * 2
    m = M()
    gm = torch.fx.symbolic_trace(m)
    print(gm.code)
    x = torch.ones(1, 3)
    print(torch.allclose(gm(x), m(x)))
    """
    out, err = plain_run(src, "fx_mod.py")
    tr = worker_trace(src, "fx_mod.py")
    assert (tr.status, tr.stdout, tr.stderr) == ("ok", out, err)
    assert "torch.relu" in out and out.endswith("True\n")
    # symbolic_trace ran no op; the two real forwards (gm and m) did
    assert not any(o.line == 9 for o in tr.ops)
    assert [o.name for o in tr.ops if o.name in ("linear", "relu", "mul")] == \
        ["linear", "relu", "mul"] * 2
