"""The graph the window draws: tensors and ops as nodes, data flow as edges.

Built from protocol messages, either all at once (``build_graph(trace)``) or
one message at a time while a run streams in (``GraphBuilder.apply``), which
returns what changed so a view can add exactly those nodes.

NOTE [step numbering]: the timeline (model/timeline.py) has one step per Op,
per BackwardCall and per BackwardStep, in ``seq`` order (protocol NOTE [seq]).
``Node.step`` / ``Edge.step`` are indices into that list. The builder counts
those messages as they arrive, which gives the same numbers because the worker
emits them in ``seq`` order; ``build_graph`` replays a stored trace through
``step_events`` so both agree with ``Timeline.steps``.

NOTE [node ids]: ``t<id>`` a tensor, ``o<id>`` an op, ``t<id>@o<op>`` a ghost
copy of a heavily shared tensor drawn next to one consumer (see FANOUT_LIMIT),
``t<id>~<k>`` the tensor after its k-th in-place change (or an op that handed
back a tensor already drawn): the data-flow graph stays acyclic, and later
consumers connect to the newest version.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import gc
import dataclasses
from bisect import bisect_left
from typing import Iterable, Optional

from graphscope import protocol as P
from graphscope.model.branch_nodes import BranchDecisions
from graphscope.model.graph_types import Edge, Graph, GraphDelta, Node, RegionBox
from graphscope.model.label_cut import EXPR_CHARS, expr_label
from graphscope.model.node_text import (dtype_text, made_by_text, shape_text, tensor_detail,
                                        tensor_label)
from graphscope.model.trace import ModuleTexts, note_module_text

# A tensor used by more consumers than this (an RNN's weights over 500 steps,
# the input sequence) gets a ghost copy beside each further consumer, so no edge
# spans the whole graph (the shape that stalls Graphviz, /work/shared/ANCHORS.md).
# A weight shared by two layers (the shared-weights lesson) stays one node.
__all__ = ["FANOUT_LIMIT", "EXPR_CHARS", "Edge", "Graph", "GraphBuilder", "GraphDelta", "Node",
           "RegionBox", "build_graph", "changed_tensors", "expr_label", "gc_paused",
           "inplace_tracked", "shape_text", "step_events", "tensor_detail", "tensor_label"]

FANOUT_LIMIT = 4

# Ops that make no op node: the factory's output tensor stands for itself, and
# reads of .grad, .item(), bool() and flag changes are facts about tensors.
_NO_OP_NODE = {"factory", "grad_read", "grad_write", "retain_grad", "requires_grad",
               "item", "bool", "hook", "unhook"}

# flags a tensor node keeps when its TensorInfo changes (the rest come from the info)
# a TensorUpdate with only these fields, is_leaf and grad_fn unchanged: requires_grad_()
# on a leaf (NOTE [toggles and ghosts])
_TOGGLE_FIELDS = frozenset({"requires_grad", "is_leaf", "grad_fn"})
_KEPT_FLAGS = frozenset({"no_grad", "inference", "detached", "inplace", "view", "module", "hook",
                         "error", "branch"})

# NOTE [late flags]: marks of an event that can come after the node appeared; the
# same in a streamed run and in build_graph (tensor facts such as retains_grad are
# final from the start in build_graph, so they are not among them). Not "branch":
# a value is read right after it is made, and in a training loop (``if loss <
# best``) every iteration's mark would redraw the whole graph's cached layer.
LATE_FLAGS = frozenset({"error", "inplace", "hook", "missing_requires_grad"})

FLAGS = frozenset({"requires_grad", "leaf", "param", "grad_fn", "no_grad", "inference",
                   "detached", "missing_requires_grad", "retains_grad", "error", "branch",
                   "inplace", "view", "module", "hook"})


def changed_tensors(op: P.Op) -> list:
    """Ids of the tensors an in-place op changed: the version counters say
    (``x[0] = 5`` returns nothing)."""
    return [int(k) for k in (op.versions or {})] or [t for t in op.outputs if t in op.inputs]


def inplace_tracked(op: P.Op, changed: list, tensors: dict) -> bool:
    """Whether autograd recorded an in-place op (then the changed tensor gets a new
    node, ``t<id>~<k>``; else it keeps its node, marked ``inplace``): it does on a
    non-leaf that requires grad (a leaf that requires grad may only change under
    no_grad, e.g. inside ``nn.init.kaiming_uniform_``)."""
    if not op.grad_enabled:
        return False   # under no_grad: op.grad_fn is the tensor's old node, not a new one
    return bool(op.grad_fn) or any(
        (i := tensors.get(t)) is not None and i.requires_grad and not i.is_leaf
        for t in changed)


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector around a bulk build.

    Building tens of thousands of small records triggers full collections that
    rescan the whole trace each time; measured on a 20,000-op chain they cost
    more than the build itself (benchmarks/bench_layout.py). The records made
    here hold no reference cycles that need collecting.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def step_events(trace) -> list:
    """Ops, backward calls and backward steps of ``trace`` in timeline order (by seq)."""
    ev = list(trace.ops) + list(trace.backward_calls) + list(trace.backward)
    ev.sort(key=lambda m: m.seq)
    return ev


class GraphBuilder(BranchDecisions):
    """Grows a Graph one protocol message at a time.

    ``apply(msg)`` returns a GraphDelta. Messages that are not about the graph
    (Output, Truncated, ...) give an empty delta. The builder keeps its own
    small lookups; it never modifies a Trace.
    """

    def __init__(self, fanout_limit: int = FANOUT_LIMIT, source: str = ""):
        self.graph = Graph()
        self.source = source                # the snippet: branch nodes quote its conditions
        self.fanout_limit = fanout_limit
        self.step = -1                      # index of the last step seen
        self.tensors: dict[int, P.TensorInfo] = {}
        self.ops: dict[int, P.Op] = {}
        self.uses: dict[int, int] = {}      # tensor id -> consumers so far
        self.versions: dict[int, int] = {}  # tensor id -> version nodes made
        self.region_msgs: list[P.Region] = []
        self._branch_tensors: set[int] = set()
        self._module_texts = ModuleTexts()   # tensor id -> module call text (note_module_text)
        self._missing: set[int] = set()     # tensor ids flagged missing_requires_grad
        self._error: Optional[P.ErrorInfo] = None
        self._ghosts: dict[int, list[str]] = {}  # tensor id -> ghost node ids
        self._pending: dict[int, tuple] = {}     # factory outputs not drawn yet -> (op, step)
        self._active_region: Optional[int] = None  # grad-off block the last op ran in
        self._decisions: dict = {}          # line -> _Decision (this pass; NOTE [branch nodes])
        self._undecided: list = []          # decisions whose direction waits for the next op
        self._to_link: list = []            # decisions not yet joined to the op they sent the program to
        self._tree = None                   # the snippet's AST, parsed at the first branch
        self._decision_count: dict = {}     # line -> decision nodes made there
        # NOTE [views after an in-place change]
        self._view_root: dict[int, int] = {}  # view's tensor id -> the tensor it views
        self._views: dict[int, list] = {}     # that tensor -> its views
        self._stale: dict[int, int] = {}      # tensor id -> in-place op that changed it since
        # build_graph only: Trace.named_after and Trace.requires_grad_after (a
        # streamed run is told by TensorUpdate when it happens)
        self._named_after: dict[int, int] = {}
        self._rg_after: dict[int, list] = {}
        self._rg_seqs: dict[int, list] = {}   # their seqs, for a bisect
        self._seq = -1                      # seq of the step being applied

    # -- dispatch -------------------------------------------------------------
    def apply(self, msg) -> GraphDelta:
        h = getattr(self, "_on_" + msg.T, None)
        if h is None:
            return GraphDelta()
        return h(msg)

    def _restyle(self, node: Node, flags: frozenset, d: GraphDelta) -> None:
        """Give a drawn node new flags: the one place they change once it is drawn.
        NOTE [late flags]: a node's marks are its final flags, but some say what
        happened later: w, made at step 0, carried the "in-place" tag and the
        error's fill from the start when the in-place change that raised was step
        21 (GUI review). The step each such flag is raised at is kept here, in
        ``Graph.flag_steps``; the timeline leaves it off before that step."""
        raised = (flags - node.flags) & LATE_FLAGS
        node.flags = flags
        d.changed.append(node)
        if raised and node.step is not None and node.step < self.step:
            for f in raised:
                self.graph.note_flag(node.id, f, self.step)

    def extend(self, msgs: Iterable) -> GraphDelta:
        d = GraphDelta()
        with gc_paused():
            for m in msgs:
                d.merge(self.apply(m))
        return d

    # -- tensors ----------------------------------------------------------------
    def _on_tensor(self, msg: P.TensorInfo) -> GraphDelta:
        self.tensors[msg.id] = msg
        return self._refresh_tensor(msg.id)

    def _on_tensor_update(self, msg: P.TensorUpdate) -> GraphDelta:
        old = self.tensors.get(msg.id)
        if old is None:
            return GraphDelta()
        known = {f.name for f in dataclasses.fields(P.TensorInfo)}
        self.tensors[msg.id] = dataclasses.replace(
            old, **{k: v for k, v in msg.fields.items() if k in known and k != "id"})
        if msg.id in self._pending and any(msg.fields.get(k) for k in ("name", "retains_grad", "requires_grad")):
            d = GraphDelta()
            self._materialise(msg.id, None, self.step, d)
            return d
        new = self.tensors[msg.id]
        toggled = (msg.fields.keys() <= _TOGGLE_FIELDS and new.is_leaf == old.is_leaf
                   and new.grad_fn == old.grad_fn)
        return self._refresh_tensor(msg.id, ghosts=not toggled)

    def _refresh_tensor(self, tid: int, ghosts: bool = True) -> GraphDelta:
        """Restyle the tensor's nodes after its facts changed. NOTE [toggles and
        ghosts]: after ``requires_grad_()`` alone (``ghosts=False``) the copies drawn
        next to earlier consumers keep the look they had there, as they showed
        the tensor at that use; restyling them all made a freeze/unfreeze loop
        quadratic (2,000 iterations: 1.8 s to build, each toggle touching every
        earlier use)."""
        d = GraphDelta()
        if tid not in self.graph.tensor_node:
            return d            # not drawn yet (the usual case: TensorInfo precedes its op)
        info = self.tensors[tid]
        for nid in self._tensor_node_ids(tid, ghosts):
            node = self.graph.nodes[nid]
            label, detail, flags = self._tensor_text(info, node)
            if (label, detail, flags) != (node.label, node.detail, node.flags):
                node.label, node.detail = label, detail
                self._restyle(node, flags, d)
        return d

    def _tensor_node_ids(self, tid: int, ghosts: bool = True) -> list[str]:
        # the original, its versions and (unless told) its ghosts
        ids = []
        base = f"t{tid}"
        if base in self.graph.nodes:
            ids.append(base)
        for k in range(1, self.versions.get(tid, 0) + 1):
            ids.append(f"{base}~{k}")
        if ghosts:
            ids.extend(self._ghosts.get(tid, ()))
        return ids

    def _tensor_text(self, info: Optional[P.TensorInfo], node: Node):
        tid = node.tensor
        name = info.name if info and info.name else None
        label = name or self._expr_label(tid, node) or f"t{tid}"
        detail = tensor_detail(info)
        kept = node.flags & _KEPT_FLAGS if node.flags else _NO_FLAGS
        if info is not None:
            # requires_grad as at this step (build_graph's info is the final one)
            facts = (self._requires_grad(info), info.is_leaf, info.is_param, bool(info.grad_fn),
                     info.retains_grad)
        else:
            facts = None
        key = (kept, facts, tid in self._branch_tensors,
               tid in self._missing and node.ghost_of is None, "~" in node.id)
        # a few dozen combinations over a whole run: one shared frozenset each
        flags = _FLAG_SETS.get(key)
        if flags is None:
            flags = _FLAG_SETS[key] = _tensor_flags(*key)
        return label, detail, flags

    def _expr_label(self, tid: int, node: Node) -> Optional[str]:
        """An unnamed tensor shown by the snippet's text that made it (``y ** 2``,
        not ``t3``: a lecture hall cannot tell t3 from t17), or of the module
        call that returned it (``self.conv(x)``)."""
        op_id = node.op
        if op_id is None:
            # drawn first as an input: the op that made it draws no node of its own
            # (``w.grad``, a read) but still has its text, as tensor_label finds it
            info = self.tensors.get(tid)
            op_id = info.created_by if info is not None else None
        return (made_by_text(self.ops.get(op_id) if op_id is not None else None, tid,
                             self._name_of)
                or expr_label(self._module_texts.get(tid)))

    def _name_of(self, tid: int) -> Optional[str]:
        info = self.tensors.get(tid)
        return info.name if info is not None else None

    def _on_module(self, msg: P.ModuleCall) -> GraphDelta:
        delta = GraphDelta()
        for tid in note_module_text(self._module_texts, msg):
            if tid in self.tensors:
                delta.merge(self._refresh_tensor(tid))
        return delta

    def _new_tensor_node(self, nid: str, tid: int, step: int, op: Optional[P.Op],
                         extra=(), ghost_of=None) -> Node:
        info = self.tensors.get(tid)
        node = Node(id=nid, kind="tensor", label="", detail="", op=op.id if op else None,
                    tensor=tid, line=op.line if op else None, step=step,
                    flags=frozenset(extra), ghost_of=ghost_of)
        node.label, node.detail, node.flags = self._tensor_text(info, node)
        return self.graph._add_node(node)

    # -- ops ------------------------------------------------------------------------
    def _on_op(self, op: P.Op) -> GraphDelta:
        d = self._op(op)
        if self._to_link:
            self._link_decisions(op, d)   # NOTE [where a decision sent the program]
        return d

    def _op(self, op: P.Op) -> GraphDelta:
        self.step += 1
        self._seq = op.seq
        step = self.step
        self.ops[op.id] = op
        g = self.graph
        d = GraphDelta()
        if self._undecided or self._decisions:
            self._decisions_before_op(op, d)
        created = g.op_nodes.setdefault(op.id, [])
        if getattr(op, "failed", None):
            # also a factory or a fact (``torch.tensor(2, requires_grad=True)``,
            # ``.item()`` of a vector): the node marks where the run failed
            self._failed_op(op, step, d, created)
            return d
        if op.kind in _NO_OP_NODE:
            self._on_fact_op(op, step, d, created)
            return d
        outputs = op.outputs
        if op.kind == "inplace":
            # which tensors changed: the version counters say (``x[0] = 5`` returns nothing)
            changed = changed_tensors(op)
            if not inplace_tracked(op, changed, self.tensors):
                self._untracked_inplace(op, changed, step, d, created)
                return d
            outputs = op.outputs or changed

        is_detach = op.kind == "detach" or op.name == "detach"
        kind = op.kind
        if kind == "view" and op.alias is not None and not op.alias:
            kind = "call"   # a reshape that had to copy: not a view (NOTE [aliases])
        is_view = kind == "view"
        # an op that handed back its input itself (dropout in eval mode, ``.float()``
        # of a float tensor, ``contiguous()``): nothing new was made, autograd
        # recorded nothing, and the tensor goes on from its own node
        same = [] if op.kind in ("inplace", "detach") or op.versions else [
            t for t in outputs if t in op.inputs and self._same_node(t, op)]
        if same:
            outputs = [t for t in outputs if t not in same]
        handed_back = bool(same) and not outputs
        made_node = bool(op.grad_fn) and not handed_back
        op_flags, out_extra = _op_flag_sets(made_node, op.grad_enabled, op.inference,
                                            kind, is_detach, bool(op.module))

        # inputs first (new source nodes), then the op, then its outputs
        in_nodes = []
        for tid in op.inputs:
            src = self._input_node(tid, op, step, d)
            in_nodes.append((tid, src))
        if op.kind == "inplace":
            for tid in self._bases_written(op, changed_tensors(op)):
                in_nodes.append((tid, self._input_node(tid, op, step, d)))
        detail = "returns its input" if handed_back else (op.grad_fn or "no grad")
        onode = Node(id=f"o{op.id}", kind="op", label=op.name,
                     detail=detail, op=op.id, line=op.line, step=step,
                     flags=op_flags)
        g._add_node(onode)
        d.nodes.append(onode)
        created.append(onode.id)
        for tid, src in in_nodes:
            g.in_src[(op.id, tid)] = src
            kind = "detach" if is_detach else self._edge_kind(tid, op)
            d.edges.append(g._add_edge(Edge(src, onode.id, kind, step)))

        for tid in outputs:
            self._stale.pop(tid, None)
            nid = self._output_node_id(tid)
            tnode = self._new_tensor_node(nid, tid, step, op, out_extra)
            g.tensor_node[tid] = nid
            g.out_node[(op.id, tid)] = nid
            self.uses[tid] = 0
            d.nodes.append(tnode)
            created.append(nid)
            info = self.tensors.get(tid)
            if is_detach:
                kind = "detach"
            elif info is not None and not self._requires_grad(info):
                kind = "nograd"
            elif not op.grad_enabled:
                kind = "nograd"
            else:
                kind = "data"
            d.edges.append(g._add_edge(Edge(onode.id, nid, kind, step)))
        if is_view and op.grad_enabled and op.inputs:
            root = self._view_root.get(op.inputs[0], op.inputs[0])
            for tid in outputs:
                if tid != root:
                    self._view_root[tid] = root
                    self._views.setdefault(root, []).append(tid)
        elif op.kind == "inplace":
            self._mark_stale(op, outputs)
        self._place_in_regions(created, op, d)
        return d

    # NOTE [views after an in-place change]: a view and its base share memory,
    # and autograd follows that: after ``y.mul_(3)`` a view ``v = y[:2]`` made
    # before gets a new node the next time it is used (``AsStridedBackward0``,
    # whose input is y's new node), and after ``v.mul_(10)`` the base y has one
    # too (``CopySlices``). Drawn from its first node alone, ``(v * 5)`` would
    # hang off the ``getitem`` of the y before ``mul_``, and a learner adding up
    # the picture gets x.grad without the factor 3 that PyTorch applies. So an
    # in-place op that autograd recorded marks the other tensors over the same
    # memory (the base and every view of it) stale, and the next op that uses
    # one draws a new version of it first: a view hangs off its base's newest
    # node, a base off the in-place op that changed it through a view.
    def _mark_stale(self, op: P.Op, drawn: list) -> None:
        roots = {self._view_root.get(t, t) for t in changed_tensors(op)}
        for root in roots:
            for tid in [root, *self._views.get(root, ())]:
                if tid not in drawn and tid in self.graph.tensor_node:
                    self._stale[tid] = op.id

    def _bases_written(self, op: P.Op, changed: list) -> list:
        """NOTE [writes through a view]: ``v[0, 0] = 100`` with ``v = y.view(2, 2)``
        (or ``v.mul_(x)``) changes y, and autograd records it on y: its ``CopySlices`` takes y's
        history as its first input and sends y's whole gradient there, never
        through the view's node. So the base a view input belongs to goes into
        the op too, an edge from the y before the change, and the backward
        step's gradient is drawn on it (not on the view's edge, which would
        have the learner walk back through a ``ViewBackward0`` that never runs)."""
        roots = {self._view_root.get(t) for t in op.inputs}
        return [t for t in changed if t in roots and t not in op.inputs]

    def _redraw_stale(self, tid: int, step: int, d: GraphDelta) -> None:
        """A new version node for stale ``tid`` (NOTE [views after an in-place change])."""
        g = self.graph
        op_id = self._stale.pop(tid)
        root = self._view_root.get(tid, tid)
        if root == tid:
            src = f"o{op_id}"
        else:
            if root in self._stale:
                self._redraw_stale(root, step, d)
            src = g.tensor_node.get(root)
        if src is None or src not in g.nodes:
            return
        op = self.ops.get(op_id)
        nid = self._output_node_id(tid)
        node = self._new_tensor_node(nid, tid, step, op, {"view"} if root != tid else ())
        g.tensor_node[tid] = nid
        if root == tid:
            # the base as the op left it: where the op's steps for it (CopySlices)
            # receive their gradient (NOTE [writes through a view])
            g.out_node.setdefault((op_id, tid), nid)
        self.uses[tid] = 0
        d.nodes.append(node)
        d.edges.append(g._add_edge(Edge(src, nid, "data", step)))

    def _written_in_a_region(self, op: P.Op, selves: list) -> bool:
        """Whether an untracked in-place change of drawn tensors alone is the
        snippet's own update in a grad-off block it wrote (``with torch.no_grad():
        w += 1``, the lesson on in-place changes of leaves): then it is drawn, as
        an op that ends there. Library initialisation (``uniform_`` inside
        ``nn.Linear``) does not run in such a block, and stays a mark."""
        if op.grad_enabled or op.line is None or op.module is not None:
            return False
        if not any(t in self.graph.tensor_node for t in selves):
            return False
        return any(b.lines[0] <= op.line <= b.lines[1] for b in self.graph.regions)

    def _same_node(self, tid: int, op: P.Op) -> bool:
        """Whether ``op``, handing back its input ``tid``, left it the node it had
        (so autograd recorded nothing): its grad_fn is the tensor's own."""
        info = self.tensors.get(tid)
        return info is not None and (op.grad_fn or None) == (info.grad_fn or None)

    def _failed_op(self, op: P.Op, step: int, d: GraphDelta, created: list) -> None:
        """A call that raised: its inputs went in and nothing came out. Drawn as
        what it was ("raised RuntimeError"), not as an op autograd left out (a
        failed in-place op has no version change, and read as untracked)."""
        srcs = [(t, self._input_node(t, op, step, d), self._edge_kind(t, op))
                for t in op.inputs]
        self._dead_end_op(op, f"raised {op.failed}", {"error"}, srcs, step, d, created)

    def _untracked_inplace(self, op: P.Op, selves: list, step: int, d: GraphDelta,
                           created: list) -> None:
        """An in-place change autograd did not record (``uniform_`` initialising a weight,
        ``w -= lr * w.grad`` under no_grad): the tensor keeps its node, marked ``inplace``;
        an op node only when other tensors went in (it then ends there, drawing no cycle)."""
        g = self.graph
        others = [t for t in op.inputs if t not in selves]
        for tid in selves:
            self._add_flag(tid, "inplace", d)
        if others or self._written_in_a_region(op, selves):
            flags = {"inplace", "no_grad"} if not op.grad_enabled else {"inplace"}
            # the changed tensor is read as any input is, past the fan-out limit
            # by a copy next to the op: a training loop's ``w -= lr * w.grad``
            # drew 1,000 edges from the first w, 170,000 units long, and the
            # canvas spent seconds dashing them (code review)
            srcs = [(t, self._input_node(t, op, step, d)) for t in others]
            srcs += [(t, self._input_node(t, op, step, d)) for t in selves
                     if t in g.tensor_node]
            self._dead_end_op(op, "no grad", flags, [(t, s, "nograd") for t, s in srcs],
                              step, d, created)

    def _dead_end_op(self, op: P.Op, detail: str, flags, srcs: list, step: int,
                     d: GraphDelta, created: list) -> None:
        """An op node that ends there (no output drawn): ``srcs`` are (tensor id,
        its node, edge kind) of what went in."""
        g = self.graph
        onode = Node(id=f"o{op.id}", kind="op", label=op.name, detail=detail, op=op.id,
                     line=op.line, step=step, flags=frozenset(flags))
        g._add_node(onode)
        d.nodes.append(onode)
        created.append(onode.id)
        for t, src, kind in srcs:
            g.in_src[(op.id, t)] = src
            d.edges.append(g._add_edge(Edge(src, onode.id, kind, step)))
        self._place_in_regions(created, op, d)

    def _add_flag(self, tid: int, flag: str, d: GraphDelta) -> None:
        """``flag`` on every node drawing tensor ``tid`` (changed ones into ``d``)."""
        for nid in self._tensor_node_ids(tid):
            node = self.graph.nodes[nid]
            if flag not in node.flags:
                self._restyle(node, node.flags | {flag}, d)

    def _on_fact_op(self, op: P.Op, step: int, d: GraphDelta, created: list) -> None:
        if op.kind == "factory":
            for tid in op.outputs:
                info = self.tensors.get(tid)
                # (as it was made: build_graph's info is the final one)
                if info is not None and self._requires_grad(info):
                    self._materialise(tid, op, step, d)
                else:
                    # NOTE [deferred factory tensors]: a plain tensor from a factory is
                    # drawn when it is first used, named or asked about, so the
                    # temporaries a library makes (torch.empty inside nn.Linear) stay
                    # out of the picture, and an input lands next to its consumer.
                    self._pending[tid] = (op, step)
        elif op.kind == "grad_read":
            # reading x.grad where x can never get one: the missing requires_grad lesson
            for tid in op.inputs:
                if tid in self._pending:
                    self._materialise(tid, None, step, d)
                info = self.tensors.get(tid)
                if info is not None and not self._requires_grad(info):
                    d.merge(self._flag_missing([tid]))
        elif op.kind == "hook":
            # a hook the snippet put on the tensor: it may change every gradient
            # that reaches it, so the node says so (a "hook" tag)
            for tid in op.inputs[:1]:
                if tid in self._pending:
                    self._materialise(tid, None, step, d)
                self._add_flag(tid, "hook", d)
        elif op.kind in ("requires_grad", "retain_grad"):
            for tid in op.inputs:
                if tid in self.tensors:   # NOTE [toggles and ghosts]
                    d.merge(self._refresh_tensor(tid, ghosts=op.kind != "requires_grad"))
                if op.kind == "requires_grad":
                    self._note_requires_grad(tid, step)

    def _note_requires_grad(self, tid: int, step: int) -> None:
        """NOTE [late flags]: ``requires_grad_()`` (or ``.requires_grad = True``) on a
        tensor drawn before: its ∇ and its colour come at this step. (A tensor's
        facts are final from its first step in build_graph, so this is said here,
        the same in a streamed run: w of requires-grad-inplace was drawn requiring
        grad at the line that made it without, second visual review.)"""
        info = self.tensors.get(tid)
        if info is None or not self._requires_grad(info):   # (on now, not at the end)
            return
        for nid in self._tensor_node_ids(tid, ghosts=False):
            node = self.graph.nodes[nid]
            if node.step is not None and node.step < step:
                self.graph.note_flag(nid, "requires_grad", step)

    def _materialise(self, tid: int, op: Optional[P.Op], step: int, d: GraphDelta) -> str:
        """Draw a factory's output (now, or later: NOTE [deferred factory tensors])."""
        g = self.graph
        pend = self._pending.pop(tid, None)
        if op is None and pend is not None:
            op = pend[0]
        extra = set()
        if op is not None:
            if not op.grad_enabled:
                extra.add("inference" if op.inference else "no_grad")
            if op.inference:
                extra.add("inference")
        nid = self._output_node_id(tid)
        node = self._new_tensor_node(nid, tid, step, op, extra)
        g.tensor_node[tid] = nid
        self.uses[tid] = 0
        d.nodes.append(node)
        if op is not None:
            g.out_node[(op.id, tid)] = nid
            g.op_nodes.setdefault(op.id, []).append(nid)
            self._place_in_regions([nid], op, d)
        return nid

    def flush_named(self, line: Optional[int] = None, before: Optional[int] = None) -> GraphDelta:
        """Draw deferred tensors a streamed run would have drawn by now, before the
        step with seq ``before`` (all of them when None): ``build_graph`` knows
        only the tensors' final facts. A tensor the trace says was named (or asked
        to retain or require grad) after the step with seq ``Trace.named_after[id]``
        is drawn once that step is past (``for x in (torch.tensor(..), ..)`` names
        the second x an iteration later); one named in its own line, once an
        event of another line comes."""
        d = GraphDelta()
        after = self._named_after
        for tid, (op, _) in list(self._pending.items()):
            seq = after.get(tid)
            if seq is not None:
                due = before is None or seq < before
            else:
                info = self.tensors.get(tid)
                due = info is not None and info.name and (line is None or op.line != line)
            if due:
                self._materialise(tid, None, self.step, d)
        return d

    def _input_node(self, tid: int, op: P.Op, step: int, d: GraphDelta) -> str:
        g = self.graph
        if tid in self._pending:
            self._materialise(tid, None, step, d)
        if tid in self._stale:
            self._redraw_stale(tid, step, d)
        nid = g.tensor_node.get(tid)
        if nid is None:
            # first seen as an input (made outside the recorder, e.g. at import)
            nid = f"t{tid}"
            node = self._new_tensor_node(nid, tid, step, None)
            node.line = op.line
            g.tensor_node[tid] = nid
            self.uses[tid] = 0
            d.nodes.append(node)
        n = self.uses.get(tid, 0) + 1
        self.uses[tid] = n
        if n > self.fanout_limit:
            gid = f"{nid}@o{op.id}"
            if gid not in g.nodes:
                base = g.nodes[nid]
                ghost = Node(id=gid, kind="tensor", label=base.label, detail=base.detail,
                             op=base.op, tensor=tid, line=base.line, step=step,
                             flags=(base.flags - {"missing_requires_grad"}
                                    if "missing_requires_grad" in base.flags else base.flags),
                             ghost_of=nid)
                g._add_node(ghost)
                self._ghosts.setdefault(tid, []).append(gid)
                d.nodes.append(ghost)
            return gid
        return nid

    def _output_node_id(self, tid: int) -> str:
        base = f"t{tid}"
        if base not in self.graph.nodes:
            return base
        k = self.versions.get(tid, 0) + 1
        self.versions[tid] = k
        return f"{base}~{k}"

    def _edge_kind(self, tid: int, op: P.Op) -> str:
        info = self.tensors.get(tid)
        if not op.grad_enabled:
            return "nograd"
        if info is not None and not self._requires_grad(info):
            return "nograd"
        return "data"

    def _requires_grad(self, info: P.TensorInfo) -> bool:
        """Whether the tensor required grad at the step being applied: its info
        says so in a streamed run; ``build_graph`` has the final info, and the
        trace's record of a later change (``x.float().requires_grad_()``: the
        edge float -> x carries no gradient, as drawn while it streamed)."""
        changes = self._rg_after.get(info.id)
        if changes is None:
            return info.requires_grad
        seqs = self._rg_seqs.get(info.id)
        if seqs is None:
            seqs = self._rg_seqs[info.id] = [after for after, _ in changes]
        i = bisect_left(seqs, self._seq)   # the changes made before this step
        # each entry is a change: before the first, it was the other
        return changes[i - 1][1] if i else not changes[0][1]

    # -- regions ---------------------------------------------------------------------
    def _on_region(self, msg: P.Region) -> GraphDelta:
        d = GraphDelta()
        if msg.grad_enabled:
            return d
        g = self.graph
        self.region_msgs.append(msg)
        box = RegionBox(label=msg.label, kind=msg.kind, node_ids=[],
                        lines=(msg.start_line, msg.end_line))
        g.regions.append(box)
        idx = len(g.regions) - 1
        d.regions_changed = True
        # ops that already ran inside it (a region message may come after them)
        for op_id, nids in g.op_nodes.items():
            op = self.ops.get(op_id)
            if op is not None and op.line is not None and msg.start_line <= op.line <= msg.end_line:
                for nid in nids:
                    node = g.nodes[nid]
                    if node.region is None:
                        node.region = idx
                        box.node_ids.append(nid)
                        d.changed.append(node)
        return d

    def _place_in_regions(self, nids: list, op: P.Op, d: GraphDelta) -> None:
        if op.line is None or not self.graph.regions:
            return
        if op.grad_enabled:
            # made with grad on: in no box, whatever lines the box spans (torch.
            # enable_grad() inside a no_grad block drew its tracked result inside
            # the no_grad box: fuzz review)
            self._active_region = None
            return
        hit = None
        for idx, box in enumerate(self.graph.regions):
            if box.lines[0] <= op.line <= box.lines[1]:
                hit = idx
                break
        if hit is not None:
            self._active_region = hit
        elif self._active_region is not None:
            # a function called from inside the block: its lines are elsewhere, but
            # grad was still off because the block had not ended
            hit = self._active_region
        elif op.line in self._function_lines() and (cands := [
                i for i, b in enumerate(self.graph.regions)
                if (b.kind == "inference_mode") == bool(op.inference)]) and len(cands) == 1:
            # the op's line is inside a function; with one such block in the snippet it
            # can only have been that one (an Op carries the innermost line only). Not
            # a line at module level: that is a block not found in the source
            # (``ng = torch.no_grad; with ng():``), and it went into the other one
            # (fuzz review)
            hit = cands[0]
        else:
            self._active_region = None
            return
        box = self.graph.regions[hit]
        for nid in nids:
            node = self.graph.nodes[nid]
            if node.region is None:
                node.region = hit
                box.node_ids.append(nid)
        d.regions_changed = True

    def _function_lines(self) -> frozenset:
        """Lines of the snippet inside a function's or lambda's body (read once)."""
        lines = self.__dict__.get("_fn_lines")
        if lines is None:
            lines = set()
            try:
                tree = ast.parse(self.source or "")
            except (SyntaxError, ValueError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    body = node.body if isinstance(node.body, list) else [node.body]
                    for b in body:
                        lines.update(range(b.lineno, (b.end_lineno or b.lineno) + 1))
            lines = self._fn_lines = frozenset(lines)
        return lines

    # -- backward, end -------------------------------------------------------------
    def _on_backward_call(self, msg: P.BackwardCall) -> GraphDelta:
        self.step += 1
        self._seq = msg.seq
        self._decisions.clear()      # a new pass decides afresh (NOTE [branch nodes])
        self._undecided.clear()
        self._to_link.clear()
        d = GraphDelta()
        roots = [r for r in msg.roots if r in self.tensors]
        culprits = set()
        for r in roots:
            if not self._requires_grad(self.tensors[r]):
                culprits |= self._missing_sources(r)
        for tid in msg.inputs:   # autograd.grad(outputs, inputs) with an input that has no grad
            info = self.tensors.get(tid)
            if info is not None and not self._requires_grad(info):
                culprits.add(tid)
        if culprits:
            d.merge(self._flag_missing(sorted(culprits)))
        for r, seed in zip(msg.roots, msg.seeds):
            if seed is not None:
                self._seed_edge(seed, r, d)
        return d

    # NOTE [seed gradients]: ``y.backward(gradient=v)`` (``grad_outputs=`` of
    # autograd.grad) starts the pass from v where a scalar starts it from 1: an edge
    # "seed" from v into y, at the backward call's step (v stood alone beside the
    # graph in the gradient-argument scenario, whose question is what v does: visual
    # review). Not where v is made from y (``torch.ones_like(y)``): the graph stays
    # acyclic, and v is drawn out of y already.
    def _seed_edge(self, seed: int, root: int, d: GraphDelta) -> None:
        g = self.graph
        dst = g.tensor_node.get(root)
        if dst is None or seed not in self.tensors:
            return
        src = self._input_node_plain(seed)
        if src is None or src == dst or dst in g.succs.get(src, ()):
            return
        if self._behind(src, dst):     # is y behind v? (a few nodes: v is a factory's)
            return
        d.edges.append(g._add_edge(Edge(src, dst, "seed", self.step)))

    def _behind(self, node: str, of: str) -> bool:
        """Whether ``node`` was computed from ``of`` (an edge ``node -> of`` would
        close a cycle); True as well when that is too far to tell (10,000 nodes)."""
        preds = self.graph.preds
        seen, stack = {node}, [node]
        while stack:
            for q in preds.get(stack.pop(), ()):
                if q == of:
                    return True
                if q not in seen:
                    if len(seen) > 10_000:
                        return True    # too far to tell: no edge rather than a cycle
                    seen.add(q)
                    stack.append(q)
        return False

    def _on_backward(self, msg: P.BackwardStep) -> GraphDelta:
        self.step += 1
        return GraphDelta()

    def _on_end(self, msg: P.End) -> GraphDelta:
        d = GraphDelta()
        err = msg.error
        if err is None:
            return d
        self._error = err
        targets = []
        if err.op is not None:
            targets += self.graph.op_nodes.get(err.op, [])[:1]
        if err.tensor is not None and err.tensor in self.graph.tensor_node:
            targets.append(self.graph.tensor_node[err.tensor])
        for nid in targets:
            node = self.graph.nodes[nid]
            self._restyle(node, node.flags | {"error"}, d)
        return d

    def _missing_sources(self, root: int) -> set:
        """Tensors without requires_grad where the graph behind ``root`` was cut:
        leaves made without requires_grad=True, and outputs of ops run with grad
        disabled. Walks back iteratively (a recursion would die on long chains)."""
        found, seen, stack = set(), set(), [root]
        while stack:
            tid = stack.pop()
            if tid in seen:
                continue
            seen.add(tid)
            info = self.tensors.get(tid)
            if info is None or self._requires_grad(info):
                continue
            op = self.ops.get(info.created_by) if info.created_by is not None else None
            if op is None or op.kind == "factory":
                if _is_float(info.dtype):
                    found.add(tid)
                continue
            if not op.grad_enabled or op.kind == "detach" or op.name == "detach":
                found.add(tid)
                continue
            stack.extend(op.inputs)
        return found

    def _flag_missing(self, tids) -> GraphDelta:
        d = GraphDelta()
        for tid in tids:
            self._missing.add(tid)
            nid = f"t{tid}"
            node = self.graph.nodes.get(nid)
            if node is not None and "missing_requires_grad" not in node.flags:
                self._restyle(node, node.flags | {"missing_requires_grad"}, d)
        return d


_NO_FLAGS: frozenset = frozenset()
_FLAG_SETS: dict = {}


_FACT_FLAGS = ("requires_grad", "leaf", "param", "grad_fn", "retains_grad")


def _tensor_flags(kept, facts, branch, missing, version) -> frozenset:
    flags = set(kept)
    if facts is not None:   # (requires_grad, is_leaf, is_param, grad_fn, retains_grad)
        flags.update(name for name, on in zip(_FACT_FLAGS, facts) if on)
    if branch:
        flags.add("branch")
    if missing:
        flags.add("missing_requires_grad")
    if version:
        # a later version: is_leaf/grad_fn of the TensorInfo describe the first sight
        flags.add("inplace")
    return frozenset(flags)


@functools.lru_cache(maxsize=256)
def _op_flag_sets(grad_fn: bool, grad_enabled: bool, inference: bool, kind: str,
                  detach: bool, module: bool) -> tuple:
    """(flags of the op node, flags its outputs start with); few combinations, cached."""
    op_flags, out = set(), set()
    if grad_fn:
        op_flags.add("grad_fn")
    if not grad_enabled:
        op_flags.add("inference" if inference else "no_grad")
        out.add("inference" if inference else "no_grad")
    if inference:
        op_flags.add("inference")
        out.add("inference")
    if kind == "inplace":
        op_flags.add("inplace")
    if kind == "view":
        op_flags.add("view")
        out.add("view")
    if detach:
        op_flags.add("detached")
        out.add("detached")
    if module:
        op_flags.add("module")
        out.add("module")
    return frozenset(op_flags), frozenset(out)


def _is_float(dtype) -> bool:
    s = dtype_text(dtype)
    return s.startswith(("float", "bfloat", "complex", "half", "double"))


def build_graph(trace) -> Graph:
    """The whole graph of a (finished or partial) trace."""
    with gc_paused():
        return _build_graph(trace)


def _build_graph(trace) -> Graph:
    b = GraphBuilder(source=getattr(trace, "source", "") or "")
    # tensors first: their final facts (names, flags) label the nodes from the start
    for info in trace.tensors.values():
        b.tensors[info.id] = info
    b._module_texts.update(trace._module_texts)
    b._named_after = getattr(trace, "named_after", None) or {}
    b._rg_after = getattr(trace, "requires_grad_after", None) or {}
    for r in trace.regions:
        b.apply(r)
    branches = sorted(trace.branches, key=lambda m: m.seq)
    bi = 0
    for ev in step_events(trace):
        while bi < len(branches) and branches[bi].seq < ev.seq:
            b.apply(branches[bi])
            bi += 1
        if b._pending:
            b.flush_named(getattr(ev, "line", None), ev.seq)
        b.apply(ev)
    for br in branches[bi:]:
        b.apply(br)
    b.flush_named()
    if trace.end is not None:
        b.apply(trace.end)
    return b.graph
