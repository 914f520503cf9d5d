"""Compare the graphs two passes built (issue 5): what is new, what is gone, and why.

Two passes of the same code build two separate graphs. Nodes are matched by
what made them, not by identity (every pass makes new tensors):

- an op node by ``(op name, source line, k)``, ``k`` counting the ops of that
  name on that line within the pass (the 3rd ``rnn_tanh_cell`` of line 8);
- a tensor an op produced by its op's key and its output position;
- an input the pass did not make (a parameter, a tensor made before) by its node
  id when both passes use it, else by its name and the first op that used it.

The reason two passes differ is named too: the branch points (trace.branches,
a tensor's value read by ``if``/``while``/``.item()``) whose values differ, the
first place where the two op sequences part and the branch read just before it,
and the lines that ran a different number of times (a Python loop count).

Qt-free and torch-free.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from graphscope.model.graph import build_graph
from graphscope.model.passes import passes_of
from graphscope.snippet_source import source_lines

# Op kinds that make inputs or read facts: where they happen says nothing about the
# path the computation took, so the split point and loop counts ignore them.
_NOT_STRUCTURE = {"factory", "grad_read", "grad_write", "retain_grad", "requires_grad"}


@dataclass
class BranchPoint:
    """One source line where a tensor's value decided control flow, in both passes."""
    line: Optional[int]
    kind: str
    values_a: list
    values_b: list
    diverged: bool
    code: str = ""

    def text(self, a_name="A", b_name="B") -> str:
        where = f"line {self.line}" if self.line else "a line outside the snippet"
        code = f" ({self.code})" if self.code else ""
        return (f"{where}{code}: {a_name} read {_values_text(self.values_a)}, "
                f"{b_name} read {_values_text(self.values_b)}")


@dataclass
class PassDiff:
    a: int
    b: int
    nodes_a: list = field(default_factory=list)      # graph node ids of pass a's graph
    nodes_b: list = field(default_factory=list)
    matched: dict = field(default_factory=dict)      # node in a -> node in b
    only_a: list = field(default_factory=list)
    only_b: list = field(default_factory=list)
    edges_a: list = field(default_factory=list)      # (src, dst) within pass a
    edges_b: list = field(default_factory=list)
    edges_only_a: list = field(default_factory=list)
    edges_only_b: list = field(default_factory=list)
    branches: list = field(default_factory=list)     # [BranchPoint], diverged first
    divergence: Optional[dict] = None  # {index, line_a, line_b, op_a, op_b, branch}
    line_counts: list = field(default_factory=list)  # [{line, code, ops_a, ops_b}] lines that ran more/less
    shape_changes: list = field(default_factory=list)  # [{a, b, label, shape_a, shape_b}]
    summary: list = field(default_factory=list)      # plain-language sentences

    @property
    def same(self) -> bool:
        return not (self.only_a or self.only_b or self.edges_only_a or self.edges_only_b)

    @property
    def diverged_branches(self) -> list:
        return [b for b in self.branches if b.diverged]

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "only_a": self.only_a, "only_b": self.only_b,
                "matched": self.matched, "edges_only_a": [list(e) for e in self.edges_only_a],
                "edges_only_b": [list(e) for e in self.edges_only_b],
                "branches": [b.__dict__ for b in self.branches], "divergence": self.divergence,
                "line_counts": self.line_counts, "shape_changes": self.shape_changes,
                "summary": self.summary}


def diff_passes(trace, a: int, b: int, graph=None) -> PassDiff:
    """Structural comparison of pass ``a`` and pass ``b`` of ``trace`` (pass indices)."""
    graph = graph if graph is not None else build_graph(trace)
    passes = passes_of(trace)
    pa, pb = passes[a], passes[b]
    ops = {o.id: o for o in trace.ops}
    used_a = _inputs_used(pa, ops)
    used_b = _inputs_used(pb, ops)
    shared = used_a & used_b
    kept_a = _kept_ops(pa, ops, shared, trace, pb)
    kept_b = _kept_ops(pb, ops, shared, trace, pa)
    side_a = _Side(graph, kept_a, ops, trace, shared)
    side_b = _Side(graph, kept_b, ops, trace, shared)
    common_ids = set(side_a.nodes) & set(side_b.nodes)
    keys_a = side_a.keys(common_ids)
    keys_b = side_b.keys(common_ids)
    by_key_b = {k: n for n, k in keys_b.items()}
    by_key_a = {k: n for n, k in keys_a.items()}

    d = PassDiff(a=a, b=b, nodes_a=list(side_a.nodes), nodes_b=list(side_b.nodes))
    for n in side_a.nodes:
        m = by_key_b.get(keys_a[n])
        if m is None:
            d.only_a.append(n)
        else:
            d.matched[n] = m
    d.only_b = [n for n in side_b.nodes if keys_b[n] not in by_key_a]
    d.edges_a, d.edges_b = side_a.edges, side_b.edges
    ek_a = {(keys_a[s], keys_a[t]) for s, t in side_a.edges}
    ek_b = {(keys_b[s], keys_b[t]) for s, t in side_b.edges}
    d.edges_only_a = [(s, t) for s, t in side_a.edges if (keys_a[s], keys_a[t]) not in ek_b]
    d.edges_only_b = [(s, t) for s, t in side_b.edges if (keys_b[s], keys_b[t]) not in ek_a]

    lines = source_lines(trace.source or "")
    d.branches = _branch_points(trace, pa, pb, ops, lines)
    d.divergence = _divergence(trace, kept_a, kept_b, ops, pa, pb, lines)
    if d.divergence and d.divergence.get("branch_line") is not None:
        for bp in d.branches:  # the read right before the split is the one that decided it
            if bp.line == d.divergence["branch_line"]:
                bp.diverged = True
        d.branches.sort(key=lambda bp: (not bp.diverged, bp.line or 0))
    d.line_counts = _line_counts(kept_a, kept_b, ops, lines)
    d.shape_changes = _shape_changes(graph, d.matched, trace)
    d.summary = _summary(d, pa, pb, graph)
    return d


# -- which ops and nodes make up a pass's graph ------------------------------------------

def _inputs_used(p, ops) -> set:
    used = set()
    for i in p.ops:
        op = ops.get(i)
        if op is not None:
            used.update(op.inputs)
    return used


def _kept_ops(p, ops, shared, trace, other) -> list:
    """The pass's ops without set-up of state both passes share (a module's weights
    initialised in the first pass), without factories nothing ever used, and
    without work done only for the other pass (its input made ahead of time)."""
    consumed = set()
    for op in trace.ops:
        consumed.update(op.inputs)
    used_other = _inputs_used(other, ops)
    kept = []
    for i in p.ops:
        op = ops.get(i)
        if op is None:
            continue
        outs = op.outputs or op.inputs
        if op.kind == "factory" and outs and not any(t in consumed for t in outs):
            continue
        if op.kind in ("factory", "inplace", "requires_grad") and outs and all(t in shared for t in outs):
            continue
        kept.append(i)
    # one sweep from the end drops whole chains made for the other pass
    used_here: Counter = Counter()
    for i in kept:
        used_here.update(ops[i].inputs)
    feeds_dropped: set = set()
    for i in reversed(list(kept)):
        op = ops[i]
        if op.outputs and op.kind not in ("item", "bool", "grad_read") \
                and not any(used_here[t] for t in op.outputs) \
                and any(t in used_other or t in feeds_dropped for t in op.outputs):
            kept.remove(i)
            used_here.subtract(op.inputs)
            feeds_dropped.update(op.inputs)
    return kept


class _Side:
    """One pass's nodes and edges in the whole-run graph, and keys to match them."""

    def __init__(self, graph, kept, ops, trace, shared):
        self.graph, self.ops, self.trace = graph, ops, trace
        self.shared = shared
        self.kept = kept
        self.kept_set = set(kept)
        nodes: dict = {}
        self.first_use: dict = {}   # external node -> (consumer op id, argument position)
        for i in kept:
            for nid in graph.op_nodes.get(i, ()):
                nodes[nid] = None
            op = ops[i]
            for pos, tid in enumerate(op.inputs):
                src = graph.in_src.get((i, tid))
                if src is not None:
                    nodes[src] = None
                    self.first_use.setdefault(src, (i, pos))
        self.nodes = [n for n in nodes if n in graph.nodes]
        in_pass = set(self.nodes)
        self.edges = [(e.src, e.dst) for e in graph.edges if e.src in in_pass and e.dst in in_pass]
        self.opkey = {}
        count: Counter = Counter()
        for i in kept:
            op = ops[i]
            base = (op.name, op.line)
            self.opkey[i] = base + (count[base],)
            count[base] += 1

    def keys(self, common_ids) -> dict:
        out, seen = {}, Counter()
        for n in self.nodes:
            k = self._key(n, common_ids)
            seen[k] += 1
            out[n] = k if seen[k] == 1 else k + (("dup", seen[k]),)
        return out

    def _key(self, nid, common_ids):
        node = self.graph.nodes[nid]
        if node.kind == "op":
            return ("op",) + self.opkey.get(node.op, (nid,))
        if nid in common_ids:
            return ("in", nid)
        if node.ghost_of is not None or (node.tensor in self.shared and not (
                node.op in self.kept_set and self.ops[node.op].kind != "factory")):
            # a tensor both passes use (a weight): known by its identity and where it goes
            # in; drawn as itself or as a ghost copy depending on how often it was used
            if node.ghost_of is not None and "@o" in nid:
                consumer = int(nid.rsplit("@o", 1)[1])
            else:
                use = self.first_use.get(nid)
                consumer = use[0] if use else None
            return ("shared", node.tensor, self.opkey.get(consumer))
        if node.op in self.kept_set and nid not in common_ids and self.ops[node.op].kind != "factory":
            op = self.ops[node.op]
            pos = op.outputs.index(node.tensor) if node.tensor in op.outputs else -1
            return ("out",) + self.opkey[node.op] + (pos,)
        if nid in common_ids:
            return ("in", nid)
        use = self.first_use.get(nid)
        consumer = self.opkey.get(use[0]) if use else None
        # an input the pass made or got: known by where it goes in, not by the line that
        # made it (the second pass's input is usually made on another line)
        return ("in", consumer, use[1] if use else None)


# -- why they differ ----------------------------------------------------------------------

def _branches_of(trace, p, ops):
    ids = set(p.ops)
    seqs = [ops[i].seq for i in p.ops if i in ops]
    lo, hi = (min(seqs), max(seqs)) if seqs else (None, None)
    out = []
    for br in sorted(trace.branches, key=lambda x: x.seq):
        if br.op is not None and br.op in ops:
            if br.op in ids:
                out.append(br)
        elif lo is not None and lo <= br.seq <= hi + 1:
            out.append(br)
    return out


def _branch_points(trace, pa, pb, ops, lines) -> list:
    ba, bb = _branches_of(trace, pa, ops), _branches_of(trace, pb, ops)
    order, per_a, per_b, kinds = [], {}, {}, {}
    for br, per in [(x, per_a) for x in ba] + [(x, per_b) for x in bb]:
        if br.line not in kinds:
            order.append(br.line)
            kinds[br.line] = br.kind
        per.setdefault(br.line, []).append(br.value)
    out = []
    for line in order:
        va, vb = per_a.get(line, []), per_b.get(line, [])
        decided = kinds[line] == "bool"
        # a bool read differs in a decision; a value read (item) steers the program
        # if it was read a different number of times, or the sequence split after it
        diverged = (va != vb) if decided else (len(va) != len(vb))
        out.append(BranchPoint(line=line, kind=kinds[line], values_a=va, values_b=vb,
                               diverged=diverged, code=_code(lines, line)))
    out.sort(key=lambda bp: (not bp.diverged, bp.line or 0))
    return out


def _divergence(trace, kept_a, kept_b, ops, pa, pb, lines) -> Optional[dict]:
    # inputs are made anywhere; the computation is what must follow the same path
    kept_a = [i for i in kept_a if ops[i].kind not in _NOT_STRUCTURE]
    kept_b = [i for i in kept_b if ops[i].kind not in _NOT_STRUCTURE]
    sa = [(ops[i].name, ops[i].line) for i in kept_a]
    sb = [(ops[i].name, ops[i].line) for i in kept_b]
    i = 0
    while i < len(sa) and i < len(sb) and sa[i] == sb[i]:
        i += 1
    if i == len(sa) and i == len(sb):
        return None
    op_a = kept_a[i] if i < len(kept_a) else None
    op_b = kept_b[i] if i < len(kept_b) else None
    # the last branch read before the split, in either pass
    limit_a = ops[op_a].seq if op_a is not None else float("inf")
    limit_b = ops[op_b].seq if op_b is not None else float("inf")
    cand = [br for br in _branches_of(trace, pa, ops) if br.seq < limit_a]
    cand_b = [br for br in _branches_of(trace, pb, ops) if br.seq < limit_b]
    br_a = cand[-1] if cand else None
    br_b = cand_b[-1] if cand_b else None
    line = br_a.line if br_a is not None else (br_b.line if br_b is not None else None)
    return {"index": i, "op_a": op_a, "op_b": op_b,
            "line_a": ops[op_a].line if op_a is not None else None,
            "line_b": ops[op_b].line if op_b is not None else None,
            "name_a": ops[op_a].name if op_a is not None else None,
            "name_b": ops[op_b].name if op_b is not None else None,
            "branch_line": line, "code": _code(lines, line),
            "value_a": br_a.value if br_a is not None else None,
            "value_b": br_b.value if br_b is not None else None}


def _line_counts(kept_a, kept_b, ops, lines) -> list:
    ca = Counter(ops[i].line for i in kept_a if ops[i].kind not in _NOT_STRUCTURE)
    cb = Counter(ops[i].line for i in kept_b if ops[i].kind not in _NOT_STRUCTURE)
    out = []
    for line in sorted(set(ca) | set(cb), key=lambda x: (x is None, x)):
        if ca[line] != cb[line]:
            out.append({"line": line, "code": _code(lines, line), "ops_a": ca[line], "ops_b": cb[line]})
    return out


def _shape_changes(graph, matched, trace) -> list:
    out = []
    for na, nb in matched.items():
        a, b = graph.nodes[na], graph.nodes[nb]
        if a.kind != "tensor" or a.tensor == b.tensor:
            continue
        ta, tb = trace.tensors.get(a.tensor), trace.tensors.get(b.tensor)
        if ta is not None and tb is not None and list(ta.shape) != list(tb.shape):
            out.append({"a": na, "b": nb, "label": a.label,
                        "shape_a": list(ta.shape), "shape_b": list(tb.shape)})
    return out


def _summary(d: PassDiff, pa, pb, graph) -> list:
    A, B = f"pass {pa.index + 1}", f"pass {pb.index + 1}"
    out = []
    ops_a = sum(1 for n in d.nodes_a if graph.nodes[n].kind == "op")
    ops_b = sum(1 for n in d.nodes_b if graph.nodes[n].kind == "op")
    if d.same:
        out.append(f"{A} and {B} built the same graph ({_n(ops_a, 'op')}), each as a new "
                   "object: PyTorch rebuilt it from scratch.")
    else:
        # "graph of": the passes' headers count every op they ran, the update under
        # no_grad included ("10 ops" over "pass 1 built 4 ops": first-time user review)
        out.append(f"{A}'s graph has {_n(ops_a, 'op')}, {B}'s {ops_b}; "
                   f"{_n(len(d.only_a), 'node')} only in {A}, {len(d.only_b)} only in {B}.")
    for bp in d.diverged_branches:
        out.append(f"The data sent the program another way at {bp.text(A, B)}.")
    dv = d.divergence
    if dv is not None:
        step = lambda name, line: f"{name} (line {line})" if name else "nothing more"
        out.append(f"The passes part after {_n(dv['index'], 'identical op')}: {A} then ran "
                   f"{step(dv['name_a'], dv['line_a'])}, {B} ran {step(dv['name_b'], dv['line_b'])}.")
        if dv["branch_line"] is not None:
            code = f" ({dv['code']})" if dv["code"] else ""
            out.append(f"The last value read before that, at line {dv['branch_line']}{code}: "
                       f"{_fmt(dv['value_a'])} in {A}, {_fmt(dv['value_b'])} in {B}.")
    if not d.diverged_branches and not d.same:
        lc = [c for c in d.line_counts if c["line"] is not None]
        if lc:
            c = lc[0]
            code = f" ({c['code']})" if c["code"] else ""
            out.append(f"No tensor value steered the control flow here: plain Python did. Line "
                       f"{c['line']}{code} ran {c['ops_a']} ops in {A} and {c['ops_b']} in {B} "
                       "(a loop count or an argument, e.g. a sequence's length).")
    for sc in d.shape_changes[:3]:
        out.append(f"{sc['label']} has shape {_shape(sc['shape_a'])} in {A} and {_shape(sc['shape_b'])} in {B}.")
    for p in (pa, pb):
        if p.kind == "backward":
            fate = "kept (retain_graph=True)" if p.retained else "freed after its backward"
            out.append(f"Pass {p.index + 1}'s graph was {fate}.")
    return out


def _n(k, word) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def _shape(s) -> str:
    return "x".join(str(x) for x in s) if s else "scalar"


def _code(lines, line) -> str:
    if line is None or not (1 <= line <= len(lines)):
        return ""
    text = lines[line - 1].strip()
    return text if len(text) <= 60 else text[:57] + "..."


def _values_text(vs) -> str:
    if not vs:
        return "nothing"
    shown = ", ".join(_fmt(v) for v in vs[:8]) + (", ..." if len(vs) > 8 else "")
    times = "once" if len(vs) == 1 else f"{len(vs)} times"
    return f"{shown} ({times})"


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


# -- one pass's graph on its own ------------------------------------------------------------

def pass_subgraph(graph, node_ids, extra_edges=()):
    """A new Graph holding only ``node_ids`` of ``graph`` (one pass, or two overlaid) and
    the edges between them, plus ``extra_edges`` ((src, dst, kind) between kept ids).
    Nodes are copies: flags and labels of the whole-run graph, steps kept."""
    import dataclasses as _dc
    from graphscope.model.graph_types import Edge, Graph, RegionBox
    keep = [n for n in dict.fromkeys(node_ids) if n in graph.nodes]
    keep.sort(key=lambda n: (graph.nodes[n].step if graph.nodes[n].step is not None else -1))
    sub = Graph()
    for nid in keep:
        # Graph is grown through these two by GraphBuilder; a public Graph.subgraph would
        # be the cleaner seam (asked for in issue 5's report)
        sub._add_node(_dc.replace(graph.nodes[nid]))
    inside = set(keep)
    for e in graph.edges:
        if e.src in inside and e.dst in inside:
            sub._add_edge(e)
    for src, dst, kind in extra_edges:
        if src in inside and dst in inside and dst not in sub.succs.get(src, ()):
            sub._add_edge(Edge(src, dst, kind))
    for box in graph.regions:
        ids = [n for n in box.node_ids if n in inside]
        if ids:
            sub.regions.append(RegionBox(box.label, box.kind, ids, box.lines))
            idx = len(sub.regions) - 1
            for n in ids:
                sub.nodes[n].region = idx
    for n in sub.nodes.values():
        if n.region is not None and (n.region >= len(sub.regions) or n.id not in sub.regions[n.region].node_ids):
            n.region = None
    return sub


def overlay_subgraph(graph, d: PassDiff):
    """Both passes on one canvas: pass a's graph plus the nodes only pass b made, with
    pass b's edges redrawn onto pass a's matching nodes."""
    back = {vb: va for va, vb in d.matched.items()}
    extra = []
    for src, dst in d.edges_only_b:
        extra.append((back.get(src, src), back.get(dst, dst), "data"))
    return pass_subgraph(graph, list(d.nodes_a) + list(d.only_b), extra)


def pass_nodes(trace, index: int, graph=None) -> list:
    """Graph node ids of pass ``index``'s own graph (its ops, what they made, what they used)."""
    from graphscope.model.passes import Pass
    graph = graph if graph is not None else build_graph(trace)
    p = passes_of(trace)[index]
    ops = {o.id: o for o in trace.ops}
    kept = _kept_ops(p, ops, set(), trace, Pass(index=-1, kind="none"))
    return _Side(graph, kept, ops, trace, set()).nodes
