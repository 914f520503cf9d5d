"""A run divided into passes: each forward pass builds its own graph (issue 5).

PyTorch builds the autograd graph anew on every forward pass and, unless
``retain_graph`` keeps it, frees it when backward has walked it. A *pass* is
that unit:

- ``kind == "backward"``: the forward work that feeds one backward call (every
  op after the previous backward call, up to this one) plus the backward steps
  of that call, and the ops the engine itself ran meanwhile (double backward
  with ``create_graph``). This is also each iteration of a training loop.
- ``kind == "forward"``: forward work after the last backward call (or in a
  run without any backward), which nothing walked back through.
- ``kind == "graph"``: in a run without any backward call, one connected
  computation (``run(x1)`` then ``run(x2)``): ops joined by the tensors they
  pass on. Parameters and other leaves that require grad are shared by
  every pass, so they do not join passes; the op that made such a leaf
  goes with its first user.

Qt-free and torch-free: reads only the trace's rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# Op kinds that read a tensor without building graph: they do not make a pass of their own.
_PASSIVE = {"grad_read", "item", "bool", "retain_grad"}


@dataclass
class Pass:
    index: int
    kind: str                         # backward | forward | graph
    ops: list = field(default_factory=list)        # op ids, execution order
    backward: list = field(default_factory=list)   # BackwardStep ids
    call: Optional[int] = None        # BackwardCall id
    lines: tuple = (None, None)       # first and last snippet line involved
    retained: bool = False            # graph kept after backward (retain_graph / create_graph)
    seq: tuple = (None, None)         # first and last seq of its events

    @property
    def label(self) -> str:
        a, b = self.lines
        where = f"lines {a}-{b}" if a is not None and a != b else (f"line {a}" if a else "")
        what = {"backward": "forward + backward", "forward": "forward only",
                "graph": "forward"}.get(self.kind, self.kind)
        extra = f", {len(self.backward)} backward steps" if self.backward else ""
        return f"Pass {self.index + 1}: {what}, {len(self.ops)} ops{extra}" + (f" ({where})" if where else "")

    def to_dict(self) -> dict:
        return {"index": self.index, "kind": self.kind, "ops": list(self.ops),
                "backward": list(self.backward), "call": self.call,
                "lines": list(self.lines), "retained": self.retained}

    @classmethod
    def from_dict(cls, d: dict) -> "Pass":
        return cls(index=int(d.get("index", 0)), kind=str(d.get("kind", "forward")),
                   ops=list(d.get("ops") or []), backward=list(d.get("backward") or []),
                   call=d.get("call"), lines=tuple(d.get("lines") or (None, None)),
                   retained=bool(d.get("retained")))


def split_passes(trace) -> list:
    """The passes of a trace, in execution order (see the module docstring)."""
    if trace.backward_calls:
        passes = _by_backward(trace)
    else:
        passes = _by_component(trace)
    call_lines = {c.id: c.line for c in trace.backward_calls}
    for i, p in enumerate(passes):
        p.index = i
        p.lines = _lines(trace, p, call_lines)
    return passes


def passes_as_dicts(trace) -> list:
    """``trace.passes``: the JSON-ready form (docs/trace-format.md)."""
    return [p.to_dict() for p in split_passes(trace)]


def passes_of(trace) -> list:
    """Pass objects for a trace, from ``trace.passes`` when filled, else computed."""
    if getattr(trace, "passes", None):
        return [Pass.from_dict(d) for d in trace.passes]
    return split_passes(trace)


# -- one pass per backward call ------------------------------------------------------

def _by_backward(trace) -> list:
    calls = sorted(trace.backward_calls, key=lambda c: c.seq)
    steps_of: dict = {}
    for s in trace.backward:
        steps_of.setdefault(s.call, []).append(s)
    # The window of each call: from its seq to its last backward step. Ops inside that
    # window ran during backward (create_graph, hooks) and belong to that pass.
    windows = []
    for c in calls:
        steps = steps_of.get(c.id, [])
        end = max([c.seq] + [s.seq for s in steps])
        windows.append((c.seq, end))
    passes = [Pass(index=0, kind="backward", call=c.id,
                   backward=[s.id for s in steps_of.get(c.id, [])],
                   retained=bool(c.retain_graph or c.create_graph),
                   seq=windows[i])
              for i, c in enumerate(calls)]
    trailing = Pass(index=0, kind="forward")
    k = 0
    for op in sorted(trace.ops, key=lambda o: o.seq):
        while k < len(calls) and op.seq > windows[k][1]:
            k += 1
        if k < len(calls):
            passes[k].ops.append(op.id)
        else:
            trailing.ops.append(op.id)
    if trailing.ops and not all(_passive(trace, i) for i in trailing.ops):
        passes.append(trailing)
    elif trailing.ops and passes:
        passes[-1].ops.extend(trailing.ops)  # a trailing print(x.grad): part of the last pass
    return passes


def _passive(trace, op_id) -> bool:
    op = trace.op_by_id(op_id)
    return op is None or op.kind in _PASSIVE


# -- one pass per connected computation --------------------------------------------------

def _by_component(trace) -> list:
    ops = sorted(trace.ops, key=lambda o: o.seq)
    if not ops:
        return []
    parent = {o.id: o.id for o in ops}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            # keep the earlier op as the root so components order by their first op
            if ra < rb:
                parent[rb] = ra
            else:
                parent[ra] = rb

    producer: dict = {}     # tensor id -> op id that made it
    first_user: dict = {}   # shared leaf -> first op that used it
    for op in ops:
        for t in op.inputs:
            if _shared_leaf(trace, t):
                if t not in first_user:
                    first_user[t] = op.id
                    if t in producer:
                        union(producer[t], op.id)
                continue
            if t in producer:
                union(producer[t], op.id)
        for t in op.outputs:
            producer.setdefault(t, op.id)
    groups: dict = {}
    for op in ops:
        groups.setdefault(find(op.id), []).append(op.id)
    ordered = sorted(groups.values(), key=lambda ids: ids[0])
    # A group that builds no graph (a lone factory, a print's item()) joins the next one:
    # it is the set-up of the computation that follows.
    passes, pending = [], []
    for ids in ordered:
        if not any(_builds_graph(trace, i) for i in ids):
            pending.extend(ids)
            continue
        passes.append(Pass(index=0, kind="graph", ops=sorted(pending + ids)))
        pending = []
    if pending:
        if passes:
            passes[-1].ops = sorted(passes[-1].ops + pending)
        else:
            passes.append(Pass(index=0, kind="forward", ops=sorted(pending)))
    if len(passes) == 1:
        passes[0].kind = "forward"
    return passes


def _shared_leaf(trace, tid) -> bool:
    t = trace.tensors.get(tid)
    return t is not None and (t.is_param or (t.is_leaf and t.requires_grad))


def _builds_graph(trace, op_id) -> bool:
    """Computation, as opposed to making an input or reading a value."""
    op = trace.op_by_id(op_id)
    return op is not None and op.kind not in _PASSIVE and op.kind != "factory"


# -- helpers ---------------------------------------------------------------------------

def _lines(trace, p, call_lines) -> tuple:
    lines = []
    for i in p.ops:
        op = trace.op_by_id(i)
        if op is not None and op.line:
            lines.append(op.line)
    if call_lines.get(p.call):
        lines.append(call_lines[p.call])
    return (min(lines), max(lines)) if lines else (None, None)


def pass_of_op(passes, op_id) -> Optional[int]:
    for p in passes:
        if op_id in p.ops:
            return p.index
    return None
