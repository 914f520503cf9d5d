"""Capture overhead: plain Python vs run_snippet in-process (torch.set_num_threads(1)).

Each workload runs as a snippet; "plain" execs the same code object in a fresh
module dict without any recorder, "capture" goes through
graphscope.capture.session.run_snippet with a list as emit (so the cost of
JSON and the pipe is not included: that is the worker's). "floor" runs the
snippet under a TorchFunctionMode that records nothing, then with a no-op
hook on every backward Node as well: what the mechanism itself costs. Medians of N runs,
each in fresh state (new namespace, gc.collect before), plain and capture
interleaved so machine load hits both. Besides wall time the CPU time of this
process is compared ("cpu ratio"): on a shared, loaded machine it is the
steadier number. Also: memory held by the recorded messages of the 20,000-op
chain (tracemalloc, current size after the run).

    .venv/bin/python benchmarks/bench_capture.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

import torch
from torch.overrides import TorchFunctionMode

from graphscope import protocol as P
from graphscope.capture.session import run_snippet

CHAIN = """
import torch
torch.manual_seed(0)
x = torch.randn(16, requires_grad=True)
y = x
for i in range(10000):
    y = y * 1.0001
    y = y + 0.0001
y.sum().backward()
"""

MLP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
xb = torch.randn(32, 64)
yb = torch.randint(0, 10, (32,))
for step in range(200):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
"""

TRANSFORMER = """
import torch
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                         dropout=0.0, batch_first=True)
enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
src = torch.randn(8, 16, 64)
out = enc(src)
out.sum().backward()
"""

WORKLOADS = [("chain 20,000 ops + backward", CHAIN),
             ("MLP training, 200 steps", MLP),
             ("2-layer TransformerEncoder fwd+bwd", TRANSFORMER)]


def plain(source: str) -> tuple[float, float]:
    """(wall, cpu) seconds of the snippet under plain Python."""
    code = compile(source, "<snippet>", "exec")
    g = {"__name__": "__main__"}
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    exec(code, g)
    return time.perf_counter() - t0, time.process_time() - c0


class _BareMode(TorchFunctionMode):
    """The floor of the mechanism the capture is built on: a TorchFunctionMode
    that records nothing, and (``hooks``) a no-op post hook on every autograd
    Node of each backward call, put on and taken off as the recorder does.
    Whatever records an op or a backward step pays at least this."""

    def __init__(self, hooks: bool) -> None:
        super().__init__()
        self.hooks = hooks

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.hooks and (func is torch.Tensor.backward or func is torch.autograd.grad):
            roots = args[0] if isinstance(args[0], (list, tuple)) else [args[0]]
            handles, seen = [], set()
            stack = [t.grad_fn for t in roots if t.grad_fn is not None]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                handles.append(node.register_hook(_noop_hook))
                stack.extend(n for n, _ in node.next_functions if n is not None)
            try:
                return func(*args, **kwargs)
            finally:
                for h in handles:
                    h.remove()
        return func(*args, **kwargs)


def _noop_hook(grad_inputs, grad_outputs):
    return None


def bare(source: str, hooks: bool) -> tuple[float, float]:
    """(wall, cpu) of the snippet under _BareMode."""
    code = compile(source, "<snippet>", "exec")
    g = {"__name__": "__main__"}
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    with _BareMode(hooks):
        exec(code, g)
    return time.perf_counter() - t0, time.process_time() - c0


def captured(source: str) -> tuple[float, float, int]:
    """(wall, cpu, number of messages) of the snippet under run_snippet."""
    msgs: list = []
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    end = run_snippet(P.Run(source=source, max_ops=10_000_000), msgs.append)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    assert end.status == "ok", end
    return dt, dc, len(msgs)


def trace_memory(source: str) -> tuple[float, int]:
    gc.collect()
    tracemalloc.start()
    msgs: list = []
    run_snippet(P.Run(source=source, max_ops=10_000_000), msgs.append)
    cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return cur / 1e6, len(msgs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    for _, src in WORKLOADS:   # warm up imports and kernels
        plain(src)
        captured(src)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"medians of {a.repeat}")
    print(f"{'workload':38} {'plain ms':>9} {'capture ms':>11} {'ratio':>6} "
          f"{'cpu ratio':>9} {'messages':>9} {'floor: mode':>12} {'+ node hooks':>13}")
    for name, src in WORKLOADS:
        p, c, pc, cc, f1, f2, n = [], [], [], [], [], [], 0
        for _ in range(a.repeat):
            dt, dc = plain(src)
            p.append(dt)
            pc.append(dc)
            dt, dc, n = captured(src)
            c.append(dt)
            cc.append(dc)
            f1.append(bare(src, False)[1])
            f2.append(bare(src, True)[1])
        mp, mc = statistics.median(p), statistics.median(c)
        pcpu = statistics.median(pc)
        cpu = statistics.median(cc) / pcpu
        print(f"{name:38} {mp*1e3:9.1f} {mc*1e3:11.1f} {mc/mp:6.2f} {cpu:9.2f} {n:9,} "
              f"{statistics.median(f1) / pcpu:11.2f}x {statistics.median(f2) / pcpu:12.2f}x")
    print("\nfloor (cpu ratios): the same snippet under a TorchFunctionMode that records "
          "nothing,\nthen also with a no-op hook on every backward Node: the least any "
          "recorder on\nthis mechanism pays before it writes down a single fact.")
    mb, n = trace_memory(CHAIN)
    print(f"\nmemory held by the recorded messages of the 20,000-op chain: {mb:.1f} MB "
          f"({n:,} messages, tracemalloc)")


if __name__ == "__main__":
    main()
