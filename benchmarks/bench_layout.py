"""Layout, graph and timeline speed on synthetic traces of 100 / 1k / 5k / 20k ops.

    .venv/bin/python benchmarks/bench_layout.py [--sizes 100,1000,5000,20000]

Three shapes: a chain of elementwise ops (the 20,000-op chain of
/work/shared/ANCHORS.md), an MLP training loop (fan-in 3 per linear, the
weights reused by every iteration), and an RNN unrolled over time whose weights and input sequence feed
every step (the shared-weights shape that stalls Graphviz). For each it prints
graph build time and incremental layout (in batches of messages, as the window
receives them),
the tidy pass, the resulting extent, and one timeline step (median of many).
No torch: the traces are made of protocol messages, as the worker would send.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphscope import protocol as P  # noqa: E402
from graphscope.model.graph import GraphBuilder  # noqa: E402
from graphscope.model.layout import COL, ROW, LayeredLayout  # noqa: E402
from graphscope.model.timeline import Timeline  # noqa: E402
from graphscope.model.trace import Trace  # noqa: E402


class _Maker:
    def __init__(self):
        self.msgs, self.seq, self.tid, self.oid = [], 0, 0, 0

    def tensor(self, shape=(4,), rg=True, leaf=False, grad_fn=None, created_by=None, param=False):
        t = self.tid
        self.tid += 1
        self.msgs.append(P.TensorInfo(id=t, shape=list(shape), dtype="float32", requires_grad=rg,
                                      is_leaf=leaf, grad_fn=grad_fn, created_by=created_by,
                                      is_param=param, seq=self.seq))
        return t

    def op(self, name, inputs, grad_fn="MulBackward0", kind="call", line=3):
        oid = self.oid
        self.oid += 1
        if kind == "factory":
            out = self.tensor(rg=True, leaf=True, created_by=oid)
        else:
            out = self.tensor(grad_fn=grad_fn, created_by=oid)
        self.msgs.append(P.Op(id=oid, seq=self.seq, name=name, qualname="torch." + name, line=line,
                              grad_enabled=True, inputs=list(inputs), outputs=[out],
                              grad_fn=None if kind == "factory" else grad_fn, kind=kind))
        self.seq += 1
        return oid, out

    def backward(self, ops_outs):
        """One backward pass over (op id, output, inputs) in reverse."""
        self.msgs.append(P.BackwardCall(id=0, seq=self.seq, kind="backward", line=9,
                                        roots=[ops_outs[-1][1]]))
        self.seq += 1
        g = {"value": None, "stats": {"numel": 4, "min": 0, "max": 1, "mean": 0.5, "std": 0.1},
             "shape": [4], "dtype": "float32"}
        for k, (oid, out, ins) in enumerate(reversed(ops_outs)):
            self.msgs.append(P.BackwardStep(id=k, seq=self.seq, call=0, grad_fn="MulBackward0",
                                            node=k, op=oid, tensor=out, grad_outputs=[g],
                                            grad_inputs=[g] * len(ins)))
            self.seq += 1


def chain(n):
    m = _Maker()
    _, t = m.op("randn", [], kind="factory")
    rec = []
    for i in range(n - 1):
        oid, out = m.op("mul", [t], line=3 + i % 5)
        rec.append((oid, out, [t]))
        t = out
    m.backward(rec)
    return m.msgs


def mlp(n):
    """A training loop over a 3-layer MLP: every iteration rebuilds the graph; the
    weights feed every iteration (fan-out over time) and each linear has fan-in 3."""
    m = _Maker()
    params = []
    for _ in range(3):
        _, W = m.op("randn", [], kind="factory")
        _, b = m.op("zeros", [], kind="factory")
        params.append((W, b))
    rec = []
    while m.oid < n:
        _, x = m.op("randn", [], kind="factory")
        _, y = m.op("randn", [], kind="factory")
        h = x
        for W, b in params:
            o, h2 = m.op("linear", [h, W, b], grad_fn="AddmmBackward0")
            rec.append((o, h2, [h, W, b]))
            o, h = m.op("relu", [h2], grad_fn="ReluBackward0")
            rec.append((o, h, [h2]))
        o, d = m.op("sub", [h, y], grad_fn="SubBackward0")
        rec.append((o, d, [h, y]))
        o, loss = m.op("mean", [d], grad_fn="MeanBackward0")
        rec.append((o, loss, [d]))
    m.backward(rec)
    return m.msgs


def rnn(n):
    """h = tanh(W x_t + U h): 5 ops per step, W, U, b and the sequence feed every step."""
    m = _Maker()
    _, W = m.op("randn", [], kind="factory")
    _, U = m.op("randn", [], kind="factory")
    _, b = m.op("randn", [], kind="factory")
    _, xs = m.op("randn", [], kind="factory")
    _, h = m.op("zeros", [], kind="factory")
    rec = []
    while m.oid < n:
        o1, xt = m.op("select", [xs], grad_fn="SelectBackward0")
        o2, a = m.op("matmul", [W, xt], grad_fn="MmBackward0")
        o3, c = m.op("matmul", [U, h], grad_fn="MmBackward0")
        o4, s = m.op("add", [a, c, b], grad_fn="AddBackward0")
        o5, h2 = m.op("tanh", [s], grad_fn="TanhBackward0")
        rec += [(o1, xt, [xs]), (o2, a, [W, xt]), (o3, c, [U, h]), (o4, s, [a, c, b]), (o5, h2, [s])]
        h = h2
    m.backward(rec)
    return m.msgs


BATCH = 200   # messages per batch, as the window receives them from the runner


def bench(name, msgs):
    t0 = time.perf_counter()
    b = GraphBuilder()
    lay = LayeredLayout()
    lay.graph = b.graph
    t_graph = t_layout = 0.0
    for i in range(0, len(msgs), BATCH):
        a = time.perf_counter()
        d = b.extend(msgs[i:i + BATCH])
        t_graph += time.perf_counter() - a
        if d.nodes:
            a = time.perf_counter()
            lay.add(d.nodes)
            t_layout += time.perf_counter() - a
    g = b.graph
    a = time.perf_counter()
    lay.tidy()
    t_tidy = time.perf_counter() - a
    x0, y0, x1, y1 = lay.bounds()
    tr = Trace()
    tr.extend(msgs)
    a = time.perf_counter()
    tl = Timeline(tr, g)
    t_tl = time.perf_counter() - a
    # one step: state() after moving the cursor by one, over the whole range
    n = len(tl)
    idx = list(range(0, n, max(1, n // 400)))
    times = []
    for i in idx:
        a = time.perf_counter()
        tl.set_cursor(i)
        tl.state()
        times.append(time.perf_counter() - a)
        a = time.perf_counter()
        tl.step_forward()
        tl.state()
        times.append(time.perf_counter() - a)
    ops = sum(1 for m in msgs if m.T == "op")
    print(f"{name:6s} {ops:6d} ops {len(g.nodes):6d} nodes | graph {t_graph*1000:7.1f} ms"
          f" | layout {t_layout*1000:7.1f} ms | tidy {t_tidy*1000:7.1f} ms"
          f" | extent {int((x1-x0)/COL)+1}x{int((y1-y0)/ROW)+1} cells ({(x1-x0+COL)/(y1-y0+ROW):.2f}:1)"
          f" | timeline {t_tl*1000:6.1f} ms | step median {statistics.median(times)*1000:.3f} ms"
          f" max {max(times)*1000:.2f} ms", flush=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,5000,20000")
    args = ap.parse_args()
    print("Synthetic traces; pure-Python model layer (no torch, no Qt). Target: 5k well under 1 s, 20k about 1 s.")
    # a yardstick for a shared machine: divide the times below by it to compare runs
    a = time.perf_counter()
    [dict(a=i) for i in range(200_000)]
    print(f"machine yardstick (200k small dicts): {(time.perf_counter() - a) * 1000:.0f} ms", flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        for name, make in (("chain", chain), ("mlp", mlp), ("rnn", rnn)):
            bench(name, make(size))


if __name__ == "__main__":
    main()
