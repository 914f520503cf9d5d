"""A run divided into passes: each forward pass builds its own graph (issue 5).

PyTorch builds the autograd graph anew on every forward pass and, unless
``retain_graph`` keeps it, frees it when backward has walked it. A *pass* is
that unit:

- ``kind == "backward"``: the forward work that feeds one backward call plus
  the backward steps of that call, the ops the engine itself ran meanwhile
  (double backward with ``create_graph``), and what the snippet did with the
  gradients before its next pass began (NOTE [a pass's tail]). This is also
  each iteration of a training loop.
- ``kind == "forward"``: forward work after the last backward call (or in a
  run without any backward), which nothing walked back through.
- ``kind == "graph"``: in a run without any backward call, one connected
  computation (``run(x1)`` then ``run(x2)``): ops joined by the tensors they
  pass on. Parameters and other leaves that require grad are shared by
  every pass, so they do not join passes. The op that made such a leaf,
  and work that records no graph (a model's initialisation, a ``no_grad``
  block, a print), are set-up: no pass of their own, but part of the first
  computation begun after them.

NOTE [a pass's tail]: a pass is a graph PyTorch recorded and the backward call
that walked it. Between one backward call and the next, a training loop
updates its weights (in place, under ``no_grad``), clips and zeroes the
gradients, logs the loss (``total += loss.item()``, ``mae = (out - y).abs()``)
and then makes the next input and runs the next forward. The first of these
use the pass just finished and end it (left in the next one, the last update
was a "pass without backward" after every loop); the rest begin the next pass.
Each statement (the ops of one line, so all of ``opt.step()``) is one or the
other: the finished pass's if it reads or writes a ``.grad``; else the next
pass's if the next backward's roots are computed from it; else the finished
pass's if it reads a result of the finished graph or of the tail, or
updates a tensor that requires grad in place; else (an ``if`` on the next
input) whichever side it falls on. The
two sides split at one place (after the last of the tail's statements before
the next forward records graph), so each pass is one unbroken run of steps,
as the timeline draws it.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Optional

from graphscope.model.summary import counted


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
    new_graph: bool = True            # it recorded graph of its own (not only a backward
                                      # again through a graph kept by retain_graph)

    @property
    def label(self) -> str:
        a, b = self.lines
        where = f"lines {a}-{b}" if a is not None and a != b else (f"line {a}" if a else "")
        what = {"backward": "forward + backward", "forward": "forward only",
                "graph": "forward"}.get(self.kind, self.kind)
        if self.kind == "backward" and not self.new_graph:
            what = "backward only"   # again through a graph kept by retain_graph
        parts = [what]
        if self.ops:
            parts.append(counted(len(self.ops), "op"))
        if self.backward:
            parts.append(counted(len(self.backward), "backward step"))
        return f"Pass {self.index + 1}: " + ", ".join(parts) + (f" ({where})" if where else "")

    def to_dict(self) -> dict:
        return {"index": self.index, "kind": self.kind, "ops": list(self.ops),
                "backward": list(self.backward), "call": self.call,
                "lines": list(self.lines), "retained": self.retained,
                "new_graph": self.new_graph}

    @classmethod
    def from_dict(cls, d: dict) -> "Pass":
        return cls(index=int(d.get("index", 0)), kind=str(d.get("kind", "forward")),
                   ops=list(d.get("ops") or []), backward=list(d.get("backward") or []),
                   call=d.get("call"), lines=tuple(d.get("lines") or (None, None)),
                   retained=bool(d.get("retained")), new_graph=bool(d.get("new_graph", True)))


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
        p.new_graph = any(_builds_graph(trace, o) for o in p.ops)
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
    # segments[k]: the ops after window k-1 up to the end of window k; the last one,
    # the ops after the last window.
    segments: list = [[] for _ in range(len(calls) + 1)]
    k = 0
    for op in sorted(trace.ops, key=lambda o: o.seq):
        while k < len(calls) and op.seq > windows[k][1]:
            k += 1
        segments[k].append(op)
    passes[0].ops = [op.id for op in segments[0]]
    for k in range(1, len(calls) + 1):
        seg = segments[k]
        start = calls[k].seq if k < len(calls) else None
        before = [op for op in seg if start is None or op.seq < start]
        during = seg[len(before):]
        roots = calls[k].roots if k < len(calls) else None
        tail, rest = _split_gap(trace, before, roots)        # NOTE [a pass's tail]
        if k == len(calls) and not any(_records_graph(op) for op in rest):
            tail, rest = before, []   # after the last backward: no new graph, no pass
        passes[k - 1].ops.extend(op.id for op in tail)
        rest_ids = [op.id for op in rest + during]
        if k < len(calls):
            passes[k].ops = rest_ids
        elif rest_ids:
            passes.append(Pass(index=0, kind="forward", ops=rest_ids))
    return passes


def _split_gap(trace, ops, roots) -> tuple:
    """(the tail of the pass before, the start of the next) of the ops between a
    backward call and the next one's (NOTE [a pass's tail]), each in seq order and
    each one unbroken run of steps (a pass's band on the timeline). ``roots``: the
    next backward call's roots (None after the last call)."""
    if not ops:
        return [], []
    # A statement is one side or the other: the ops inside ``opt.step()`` share its
    # line, and one of them reading a gradient makes the whole call an update.
    runs: list = []
    for op in ops:
        if runs and op.line is not None and runs[-1][-1].line == op.line:
            runs[-1].append(op)
        else:
            runs.append([op])
    # the next pass's graph: what its backward's roots were computed from here
    feeds: set = set()
    if roots is not None:
        need = set(roots)
        for op in reversed(ops):
            if op.kind not in _CHANGES and any(t in need for t in op.outputs):
                feeds.add(op.id)
                need.update(op.inputs)
    tensors = trace.tensors
    fresh: set = set()      # made here by the next pass's set-up (or neither side's)
    used: set = set()       # made here by the tail
    kinds = []
    for run in runs:
        kind = _statement_kind(run, feeds, fresh, used, tensors)
        kinds.append(kind)
        # (an in-place op's output is the tensor it changed: made before)
        (used if kind == "tail" else fresh).update(
            t for op in run if op.kind not in _SAME_TENSOR for t in op.outputs)
    graph = [i for i, run in enumerate(runs) if kinds[i] != "tail"
             and any(_records_graph(op) for op in run)
             and (roots is None or any(op.id in feeds for op in run))]
    first = graph[0] if graph else len(runs)
    boundary = max((i + 1 for i in range(first) if kinds[i] == "tail"), default=0)
    return ([op for run in runs[:boundary] for op in run],
            [op for run in runs[boundary:] for op in run])


_GRAD_KINDS = {"grad_read", "grad_write", "retain_grad"}
# op kinds whose output is the tensor they were given (changed), not a new one
_SAME_TENSOR = {"inplace", "requires_grad", "hook", "unhook", "retain_grad"}
# op kinds that change a tensor or its .grad rather than compute a new tensor
_CHANGES = _SAME_TENSOR | _GRAD_KINDS


def _statement_kind(run, feeds, fresh, used, tensors) -> str:
    """``tail``: what a step does with its pass's results (NOTE [a pass's tail]): it
    reads or writes a ``.grad``; or, unless the next backward's roots are computed
    from it, it reads what the tail made, changes in place a tensor that requires
    grad (a parameter's update), reads one without recording graph (validation
    under ``no_grad``) or reads a result of the finished graph (``loss``, ``out``:
    logging). ``head``: the next backward's roots are computed from it (a
    new input, a frozen teacher's output, the forward reading a re-made weight).
    ``""``: neither (an ``if`` on the next input); it goes with its neighbours."""
    head = other = False
    made: set = set()
    for op in run:
        if op.kind in _GRAD_KINDS:
            return "tail"
        head = head or op.id in feeds
        for t in op.inputs:
            if t in fresh or t in made:
                continue
            if t in used:
                other = True
                continue
            info = tensors.get(t)
            if info is None:
                continue
            if info.grad_fn or (info.requires_grad and (op.kind == "inplace"
                                                        or not _records_graph(op))):
                # a read of the finished graph; a parameter's update; a look at the
                # weights that records nothing (a validation step under no_grad:
                # code review, it went to the next pass)
                other = True
        if op.kind not in _SAME_TENSOR:
            made.update(op.outputs)
    if head:
        return "head"
    return "tail" if other else ""


def _records_graph(op) -> bool:
    """The op added a node to an autograd graph (its output has a ``grad_fn``)."""
    return op.grad_fn is not None and not op.failed


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
    for op in ops:
        for t in op.inputs:
            if _shared_leaf(trace, t):
                # (the op that made it is set-up, placed below: with its first
                # user, ``b = torch.tensor(...)`` made before ``f(a)`` put f(b)'s
                # pass before and after f(a)'s, two bands over each other)
                continue
            if t in producer:
                union(producer[t], op.id)
        for t in op.outputs:
            producer.setdefault(t, op.id)
    groups: dict = {}
    for op in ops:
        groups.setdefault(find(op.id), []).append(op.id)
    ordered = sorted(groups.values(), key=lambda ids: ids[0])
    # A group that builds no graph (a lone factory, a print's item(), a module's
    # initialisation) is the set-up of a computation that follows. So is one whose
    # graph only decided a branch: a graph counts when a result of it is bound to
    # a name (``loss``, the ``y`` of ``while y.item() < 5``) or never read (a
    # result left unnamed), and that of ``if (w * 2).sum() > 0`` ends, unnamed,
    # in a comparison.
    read = {t for op in ops for t in op.inputs}
    kept = {op.id for op in ops if _records_graph(op)
            and any(t not in read or _named(trace, t) for t in op.outputs)}
    builders = [ids for ids in ordered if not kept.isdisjoint(ids)]
    if not builders:
        return [Pass(index=0, kind="forward", ops=[o.id for o in ops])]
    # a group that builds none joins the first computation begun after its last op
    # (``a, b = make(), make()``: b's set-up ran before a's computation, and is b's)
    builders.sort(key=lambda ids: min(i for i in ids if i in kept))
    starts = [min(i for i in ids if i in kept) for ids in builders]
    members = [list(ids) for ids in builders]
    for ids in ordered:
        if not kept.isdisjoint(ids):
            continue
        k = min(bisect_right(starts, max(ids)), len(builders) - 1)
        members[k].extend(ids)
    passes = [Pass(index=0, kind="graph", ops=sorted(m)) for m in members]
    if len(passes) == 1:
        passes[0].kind = "forward"
    return passes


def _named(trace, tid) -> bool:
    t = trace.tensors.get(tid)
    return t is not None and bool(t.name)


def _shared_leaf(trace, tid) -> bool:
    t = trace.tensors.get(tid)
    return t is not None and (t.is_param or (t.is_leaf and t.requires_grad))


def _builds_graph(trace, op_id) -> bool:
    """The op recorded graph, as opposed to making an input, reading a value or
    changing a tensor outside autograd (a module's initialisation, ``no_grad``)."""
    op = trace.op_by_id(op_id)
    return op is not None and _records_graph(op)


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


def shown_passes(trace) -> list:
    """The passes a run is shown as (the timeline bar's bands, the layout's blocks):
    none for a run of one pass, where one band over everything says nothing; none
    either for a run without backward where a computation is tiny (the condition
    of an ``if`` would read as a pass of its own, which confuses)."""
    passes = passes_of(trace)
    if len(passes) < 2:
        return []
    if not any(p.kind == "backward" for p in passes) and min(len(p.ops) for p in passes) < 3:
        return []
    return passes


def node_passes(graph, passes) -> dict:
    """``{node id: position in passes}`` for every node of ``graph``
    (NOTE [a pass is a block] in layout.py).

    A node is its op's pass (a tensor: the op that made it). A node no pass
    holds (a ghost copy of a shared weight, a leaf made outside every pass, a
    set-up op) goes with the earliest pass that uses it, else with the latest
    one it was computed from, else with the first."""
    if len(passes) < 2:
        return {}
    where = {}
    for i, p in enumerate(passes):
        for op_id in p.ops:
            where.setdefault(op_id, i)
    out = {}
    loose = []
    for nid, n in graph.nodes.items():
        # (a ghost carries its original's op: it goes with the pass that uses it)
        i = where.get(n.op) if n.op is not None and n.ghost_of is None else None
        if i is None:
            loose.append(nid)
        else:
            out[nid] = i
    succs, preds = graph.succs, graph.preds
    for nid in loose:
        users = [out[s] for s in succs.get(nid, ()) if s in out]
        if users:
            out[nid] = min(users)
    for nid in loose:
        if nid not in out:
            makers = [out[q] for q in preds.get(nid, ()) if q in out]
            out[nid] = max(makers) if makers else 0
    return out
