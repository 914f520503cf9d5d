"""The graph's records: nodes, edges, region boxes, the ``Graph`` that holds
them and the ``GraphDelta`` a build step returns (graph.py builds them; NOTE
[node ids] there says how nodes are named)."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Optional

@dataclass(eq=False, slots=True)
class Node:
    id: str
    kind: str                      # "tensor" | "op"
    label: str
    detail: str
    op: Optional[int] = None       # op id (op nodes; tensors: the op that made it)
    tensor: Optional[int] = None   # tensor id (tensor nodes)
    line: Optional[int] = None
    step: Optional[int] = None
    flags: frozenset = frozenset()
    ghost_of: Optional[str] = None
    region: Optional[int] = None   # index into Graph.regions

    def __repr__(self):
        return f"Node({self.id!r}, {self.label!r}, {self.detail!r}, step={self.step}, flags={sorted(self.flags)})"


@dataclass(frozen=True, slots=True)
class Edge:
    src: str
    dst: str
    kind: str                      # "data" | "nograd" | "detach" | "control" (branch_nodes.py) | "seed"
    step: Optional[int] = None


@dataclass
class RegionBox:
    label: str                     # "torch.no_grad(), lines 3-4"
    kind: str                      # no_grad | inference_mode | set_grad_enabled
    node_ids: list
    lines: tuple                   # (start_line, end_line)


@dataclass
class GraphDelta:
    """What one message changed: new nodes/edges in order, nodes whose text or flags changed."""
    nodes: list = field(default_factory=list)
    edges: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    regions_changed: bool = False

    def __bool__(self):
        return bool(self.nodes or self.edges or self.changed or self.regions_changed)

    def merge(self, other: "GraphDelta") -> None:
        if not (other.nodes or other.edges or other.changed or other.regions_changed):
            return
        self.nodes += other.nodes
        self.edges += other.edges
        seen = {n.id for n in self.changed}
        self.changed += [n for n in other.changed if n.id not in seen]
        self.regions_changed |= other.regions_changed


class Graph:
    """Nodes in insertion order (which is step order), edges, regions, adjacency."""

    def __init__(self):
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.regions: list[RegionBox] = []
        self.preds: dict[str, list[str]] = {}
        self.succs: dict[str, list[str]] = {}
        self.tensor_node: dict[int, str] = {}        # tensor id -> newest node carrying it
        self.op_nodes: dict[int, list[str]] = {}     # op id -> nodes that op created
        self.in_src: dict[tuple, str] = {}           # (op id, tensor id) -> node feeding it
        self.out_node: dict[tuple, str] = {}         # (op id, tensor id) -> node it produced
        self._node_steps: list[int] = []             # step of each node, in order
        # NOTE [late flags]: node id -> {flag: step} for the marks of events that
        # came after the node appeared (an in-place change, the error, a hook, a
        # missing requires_grad, a later requires_grad_())
        self.flag_steps: dict[str, dict[str, int]] = {}
        # a decision node's text as it was at each step it changed ("1.5 → loop body",
        # then "3×, last 6.0 → loop ended"): node id -> [(step, detail)]
        self.detail_steps: dict[str, list] = {}
        self.late_count = 0                          # entries after a node's own step
        self._nx = None
        self._nx_size = -1

    def note_flag(self, node_id: str, flag: str, step: int) -> None:
        """NOTE [late flags] in graph.py: ``flag`` of ``node_id`` was raised at ``step``
        (the first time only)."""
        fs = self.flag_steps.setdefault(node_id, {})
        if flag not in fs:
            fs[flag] = step
            self.late_count += 1

    # -- queries ------------------------------------------------------------
    def __len__(self):
        return len(self.nodes)

    def node(self, node_id: str) -> Optional[Node]:
        return self.nodes.get(node_id)

    def edge_kind(self, src: str, dst: str) -> Optional[str]:
        for e in self.edges:
            if e.src == src and e.dst == dst:
                return e.kind
        return None

    def count_upto(self, step: int) -> int:
        """How many nodes (a prefix of ``nodes``) exist at timeline step ``step``."""
        return bisect.bisect_right(self._node_steps, step)

    def nodes_of_line(self, line: int) -> list[str]:
        """Nodes created by ops on source line ``line`` (editor click -> selection)."""
        return [n.id for n in self.nodes.values() if n.line == line and n.ghost_of is None]

    def nodes_of_tensor(self, tensor_id: int) -> list[str]:
        """Every node drawing this tensor: original, versions and ghosts."""
        return [n.id for n in self.nodes.values() if n.tensor == tensor_id]

    @property
    def nx(self):
        """A networkx.DiGraph view (built on demand; for analysis, not hot loops)."""
        if self._nx is None or self._nx_size != (len(self.nodes), len(self.edges)):
            import networkx as nx
            g = nx.DiGraph()
            for n in self.nodes.values():
                g.add_node(n.id, kind=n.kind, label=n.label, step=n.step)
            for e in self.edges:
                g.add_edge(e.src, e.dst, kind=e.kind, step=e.step)
            self._nx, self._nx_size = g, (len(self.nodes), len(self.edges))
        return self._nx

    # -- growing (GraphBuilder only) -----------------------------------------
    def _add_node(self, node: Node) -> Node:
        self.nodes[node.id] = node
        self.preds[node.id] = []
        self.succs[node.id] = []
        # steps are non-decreasing in insertion order (NOTE [step numbering])
        s = node.step if node.step is not None else (self._node_steps[-1] if self._node_steps else 0)
        if self._node_steps and s < self._node_steps[-1]:
            s = self._node_steps[-1]
        self._node_steps.append(s)
        return node

    def _add_edge(self, edge: Edge) -> Edge:
        self.edges.append(edge)
        self.succs[edge.src].append(edge.dst)
        self.preds[edge.dst].append(edge.src)
        return edge
