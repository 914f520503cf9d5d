"""Geometry of the graph canvas in scene units: node boxes, edge ends, step order, hit grid.

The canvas, the PNG/SVG export and the benchmark all draw from one ``SceneGeometry``
built from the model's ``Graph`` and a layout's positions. It is grown incrementally
while a run streams in (``add``), so a live build never rebuilds what is placed.

NOTE [step order]: nodes and edges are kept sorted by the timeline step at which they
appear (an edge appears when it and both its ends have). Showing the state at cursor
``c`` is then a prefix of each sorted list (``bisect``), which is what lets the canvas
cache the picture up to one step and draw only the few newer items on top.
"""
from __future__ import annotations

import itertools
import math
from bisect import bisect_right
from dataclasses import dataclass, field

from PySide6.QtCore import QLineF, QPointF, QRectF

# Used when a layout offers no node_size(); scene units.
DEFAULT_TENSOR_SIZE = (132.0, 52.0)
DEFAULT_OP_SIZE = (104.0, 36.0)
NEVER = math.inf          # step of items that are always visible
GRID_CELL = 240.0         # hit-grid cell, scene units (about two nodes)
EDGE_CELLS_MAX = 256      # an edge spanning more grid cells than this is kept in a list


def node_style(node, flags=None) -> str:
    """Which fill group a node is drawn in (also the group of its low-detail rect);
    ``flags``: the ones shown, by default all of the node's."""
    flags = (node.flags if flags is None else flags) or ()
    if "error" in flags:
        return "error"
    if node.kind == "op":
        return "op_nograd" if ("no_grad" in flags or "inference" in flags) else "op"
    if "missing_requires_grad" in flags:
        return "missing"
    if "requires_grad" in flags or "grad_fn" in flags:    # as is_tracked, on these flags
        return "tracked"
    return "untracked"


def is_tracked(node) -> bool:
    """A tensor autograd tracks: it requires grad or has a grad_fn."""
    flags = node.flags or ()
    return "requires_grad" in flags or "grad_fn" in flags


def _step(value) -> float:
    return -1.0 if value is None else float(value)


@dataclass(slots=True)
class NodeGeom:
    id: str
    node: object
    x: float          # centre
    y: float
    w: float
    h: float
    step: float
    style: str

    @property
    def rect(self) -> QRectF:
        return QRectF(self.x - self.w / 2, self.y - self.h / 2, self.w, self.h)


@dataclass(eq=False, slots=True)
class EdgeGeom:
    src: str
    dst: str
    kind: str
    step: float       # effective: when the edge and both ends are visible
    seq: int = 0      # insertion order (dedupes edges filed under several grid cells)
    # NOTE [an input read twice]: ``x * x`` reads x twice, and the graph has two
    # edges x -> mul; drawn on one line they looked like one input, and the 2x
    # of the gradient had no cause on screen. One line carries a "×2" mark (the
    # backward step's chip sums the two gradients on it: "1.0 + 1.0")
    mult: int = 1


@dataclass
class SceneGeometry:
    """Node boxes and edges of one graph in scene coordinates."""
    nodes: dict = field(default_factory=dict)      # id -> NodeGeom (insertion order)
    edges: list = field(default_factory=list)      # [EdgeGeom]
    version: int = 0                               # bumped on every change
    _order: list = field(default_factory=list)     # node ids sorted by step
    _steps: list = field(default_factory=list)     # their steps
    _edge_order: list = field(default_factory=list)
    _edge_steps: list = field(default_factory=list)
    _sorted: bool = True
    _grid: dict = field(default_factory=dict)
    _bounds: QRectF | None = None
    _edge_keys: dict = field(default_factory=dict)  # (src, dst, kind) -> (EdgeGeom, step)
    row_pitch: float = 70.0                        # the layout's row distance (edge lanes)
    # how far a grad-mode region's box reaches above its nodes: its padding and
    # label (canvas_regions.py; set by ScenePainter with the text scale). Lanes
    # keep out of that band (NOTE [lanes over a region]).
    region_head: float = 44.0
    region_foot: float = 40.0    # ... and below them: the "no grad" tags
    _routes: dict = field(default_factory=dict)    # (src, dst) -> lane points or None
    _routes_version: int = -1
    _columns: tuple = (None, -1)                   # ({column centre x: half width}, version)
    # NOTE [edge grid]: edges are filed, like nodes, under the grid cells their centre
    # to centre box covers (long ones in _long_edges), so a zoomed-in paint culls
    # before it touches the tens of thousands of edges up to the cursor.
    _edge_grid: dict = field(default_factory=dict)
    _long_edges: list = field(default_factory=list)
    _prefix: tuple = (-1, None)                    # (version, prefix boxes in step order)
    _sizes: dict = field(default_factory=dict)     # (kind, label, detail) -> (w, h)
    _size_fn: object = None
    _grid_ready: bool = False
    _edge_grid_ready: bool = False
    _edges_of: object = None                       # the graph whose edges were scanned
    _edges_scanned: int = 0
    _pending: list = field(default_factory=list)   # edges waiting for an end to be placed
    _ins: dict = field(default_factory=dict)       # dst id -> {src id: None} (NOTE [input ports])
    _ports: tuple = (-1, None)                     # (version, {dst id: {src id: dy}})
    _region_index: tuple = (None, -1)              # ({cell: region nodes}, version)

    # -- building -------------------------------------------------------------
    @classmethod
    def build(cls, graph, positions, size_of=None) -> "SceneGeometry":
        g = cls()
        g.add(graph, list(graph.nodes), positions, size_of)
        return g

    def add(self, graph, node_ids, positions, size_of=None) -> list:
        """Add ``node_ids`` (already placed in ``positions``) and every edge of ``graph``
        not yet known whose ends are both known. Returns the ids actually added (a node
        without a position yet is skipped; call again once the layout has placed it)."""
        added = []
        nodes = self.nodes
        gnodes = graph.nodes
        order, steps = self._order, self._steps
        last = steps[-1] if steps else -math.inf
        sorted_ = self._sorted
        grid_ready = self._grid_ready
        if size_of != self._size_fn:
            self._sizes, self._size_fn = {}, size_of
        # a layout whose boxes depend only on the label's length says so (layout.py)
        by_len = bool(getattr(size_of, "by_length", False))
        styles: dict = {}      # (kind, flags) -> style: flags are shared frozensets
        for nid in node_ids:
            if nid in nodes:
                continue
            node = gnodes.get(nid)
            pos = positions.get(nid)
            if node is None or pos is None:
                continue
            w, h = self._box_size(node, by_len)
            st = node.step
            st = -1.0 if st is None else float(st)
            skey = (node.kind, node.flags)
            style = styles.get(skey)
            if style is None:
                style = styles[skey] = node_style(node)
            ng = NodeGeom(nid, node, float(pos[0]), float(pos[1]), w, h, st, style)
            nodes[nid] = ng
            if st < last:
                sorted_ = False
            else:
                last = st
            order.append(nid)
            steps.append(st)
            if grid_ready:
                self._grid_insert(ng)
            added.append(nid)
        self._sorted = sorted_
        # graph.edges only grows: scan what is new since the last call, plus the edges
        # that were waiting for an end to be placed (O(new) per live batch, not O(E))
        if graph is not self._edges_of:
            self._edges_of, self._edges_scanned, self._pending = graph, 0, []
        fresh = graph.edges[self._edges_scanned:]
        self._edges_scanned = len(graph.edges)
        todo = self._pending + fresh if self._pending else fresh
        self._pending = []
        keys = self._edge_keys
        edge_grid = self._edge_grid_ready
        n0 = len(self.edges)
        estep = self._edge_steps[-1] if self._edge_steps else -math.inf
        for e in todo:
            key = (e.src, e.dst, e.kind)
            seen = keys.get(key)
            if seen is not None:
                if e.step is not None and e.step == seen[1]:
                    seen[0].mult += 1   # the same op reads it again (NOTE [an input read twice])
                    self.version += 1
                continue
            sg, dg = nodes.get(e.src), nodes.get(e.dst)
            if sg is None or dg is None:
                self._pending.append(e)
                continue
            st = -1.0 if e.step is None else float(e.step)
            if sg.step > st:
                st = sg.step
            if dg.step > st:
                st = dg.step
            eg = EdgeGeom(e.src, e.dst, e.kind, st, len(self.edges))
            keys[key] = (eg, e.step)
            if st < estep:
                self._sorted = False
            else:
                estep = st
            if edge_grid:
                self._edge_grid_insert(eg)
            self.edges.append(eg)
            srcs = self._ins.get(e.dst)
            if srcs is None:
                self._ins[e.dst] = {e.src: None}   # ordered, and O(1) per edge
            else:
                srcs[e.src] = None
            self._edge_order.append(eg)
            self._edge_steps.append(st)
        if added or len(self.edges) != n0:
            self.version += 1
            self._bounds = None
        return added

    def edge_geom(self, src: str, dst: str, kind: str = "data"):
        """The EdgeGeom drawn from ``src`` to ``dst`` (one for all its reads: ``mult``)."""
        e = self._edge_keys.get((src, dst, kind))
        return e[0] if e is not None else None

    def in_port(self, s: "NodeGeom", d: "NodeGeom") -> float:
        """How far below ``d``'s middle (negative: above) the edge from ``s`` enters it.

        NOTE [input ports]: every edge used to end at the middle of its node's
        left side, so the two inputs of ``w * h`` merged into one lane and one
        arrowhead and an op's inputs could not be counted. A node with several
        inputs spreads them over its left side, ordered by where their sources
        sit (top to bottom, then left to right), so they do not cross; the
        places are fixed whatever the cursor shows, so nothing jumps while
        stepping."""
        srcs = self._ins.get(d.id)
        if srcs is None or len(srcs) < 2:
            return 0.0
        ver, ports = self._ports
        if ver != self.version or ports is None:
            ports = {}
            self._ports = (self.version, ports)
        table = ports.get(d.id)
        if table is None:
            nodes = self.nodes
            placed = sorted((nodes[i].y, nodes[i].x, i) for i in srcs if i in nodes)
            k = len(placed)
            gap = min(PORT_GAP, d.h * 0.6 / (k - 1)) if k > 1 else 0.0
            table = ports[d.id] = {i: (j - (k - 1) / 2) * gap
                                   for j, (_y, _x, i) in enumerate(placed)}
        return table.get(s.id, 0.0)

    def ensure_index(self, edges: bool = True) -> None:
        """Build the hit grid and (``edges``) the edge grid (NOTE [edge grid]) if not
        built yet. They are built lazily: a fitted first paint of a huge graph needs
        neither, so the canvas builds them once it is drawn."""
        if not self._grid_ready:
            self._grid = {}
            for ng in self.nodes.values():
                self._grid_insert(ng)
            self._grid_ready = True
        if edges and not self._edge_grid_ready:
            self._edge_grid, self._long_edges = {}, []
            for eg in self.edges:
                self._edge_grid_insert(eg)
            self._edge_grid_ready = True

    def move(self, positions) -> None:
        """Move nodes to new centres (the tidy pass); keeps everything else."""
        for nid, (x, y) in positions.items():
            ng = self.nodes.get(nid)
            if ng is not None:
                ng.x, ng.y = float(x), float(y)
        self._boxes_changed()

    def _boxes_changed(self) -> None:
        """Placed boxes moved or changed size: what is derived from them is remade."""
        self._grid_ready = self._edge_grid_ready = False   # rebuilt when next asked
        self._prefix = (-1, None)
        self._bounds = None
        self.version += 1

    def _box_size(self, node, by_len: bool) -> tuple:
        """(w, h) of ``node``'s box from the size function, memoised by what it
        depends on (the label's length only, for a layout that says so)."""
        detail, label = node.detail, node.label
        key = (node.kind, (len(label) if label else 0) if by_len else label,
               tuple(detail) if isinstance(detail, list) else detail)
        wh = self._sizes.get(key)
        if wh is None:
            wh = self._sizes[key] = _size(node, self._size_fn)
        return wh

    def resize(self, node_ids) -> bool:
        """Size ``node_ids`` again for their labels and details now. A node is
        first drawn with what its first message says: a tensor made by
        ``w = torch.tensor(1.0, requires_grad=True)`` is labelled with that
        expression until the next message names it ``w``, and its box kept the
        width of the expression (or, the other way round, a short first label
        left a later long name elided). Which one a picture showed depended on
        whether the window drew between the two messages. Returns whether any
        box changed."""
        by_len = bool(getattr(self._size_fn, "by_length", False))
        changed = False
        for nid in node_ids:
            ng = self.nodes.get(nid)
            if ng is None:
                continue
            wh = self._box_size(ng.node, by_len)
            if (ng.w, ng.h) != wh:
                ng.w, ng.h = wh
                changed = True
        if changed:
            self._boxes_changed()
        return changed

    def _ensure_sorted(self) -> None:
        if self._sorted:
            return
        self._prefix = (-1, None)
        self._order.sort(key=lambda i: self.nodes[i].step)
        self._steps = [self.nodes[i].step for i in self._order]
        self._edge_order.sort(key=lambda e: e.step)
        self._edge_steps = [e.step for e in self._edge_order]
        self._sorted = True

    # -- queries ---------------------------------------------------------------
    def nodes_upto(self, limit: float, start: float = -math.inf) -> list:
        """Nodes visible at cursor ``limit`` that were not yet at ``start`` (step order)."""
        self._ensure_sorted()
        lo = 0 if start == -math.inf else bisect_right(self._steps, start)
        hi = bisect_right(self._steps, limit)
        return [self.nodes[i] for i in self._order[lo:hi]]

    def count_between(self, start: float, limit: float) -> int:
        self._ensure_sorted()
        lo = 0 if start == -math.inf else bisect_right(self._steps, start)
        return max(0, bisect_right(self._steps, limit) - lo)

    def edges_upto(self, limit: float, start: float = -math.inf) -> list:
        self._ensure_sorted()
        lo = 0 if start == -math.inf else bisect_right(self._edge_steps, start)
        hi = bisect_right(self._edge_steps, limit)
        return self._edge_order[lo:hi]

    def base_for(self, limit: float, keep: int) -> float:
        """A step at or below ``limit`` such that about ``keep`` nodes lie between it and
        ``limit``: a cache built there serves the next ``keep`` steps back or forth."""
        self._ensure_sorted()
        hi = bisect_right(self._steps, limit)
        lo = hi - keep
        if lo <= 0:
            return -math.inf
        return self._steps[lo - 1]

    def bounds(self, limit: float = NEVER) -> QRectF:
        """Bounding box of the nodes visible at ``limit`` (all nodes by default)."""
        if limit == NEVER and self._bounds is not None:
            return QRectF(self._bounds)
        if limit == NEVER:
            hi = len(self._order)
        else:
            self._ensure_sorted()
            hi = bisect_right(self._steps, limit)
        if hi == 0:
            return QRectF()
        # the box of every prefix of the step order, once per version: following the
        # current node asks for the box at each step (O(log n) instead of O(n))
        ver, boxes = self._prefix
        if ver != self.version or boxes is None:
            self._ensure_sorted()
            # nodes only ever append in step order while a run streams in: extend the
            # boxes of the last call (move() and a re-sort drop them: _prefix = (-1, None))
            if boxes is None or len(boxes) > len(self._order):
                boxes = []
            if boxes:
                x0, y0, x1, y1 = boxes[-1]
            else:
                x0 = y0 = math.inf
                x1 = y1 = -math.inf
            nodes = self.nodes
            for nid in itertools.islice(self._order, len(boxes), None):
                ng = nodes[nid]
                hw, hh = ng.w / 2, ng.h / 2
                if ng.x - hw < x0:
                    x0 = ng.x - hw
                if ng.x + hw > x1:
                    x1 = ng.x + hw
                if ng.y - hh < y0:
                    y0 = ng.y - hh
                if ng.y + hh > y1:
                    y1 = ng.y + hh
                boxes.append((x0, y0, x1, y1))
            self._prefix = (self.version, boxes)
        x0, y0, x1, y1 = boxes[hi - 1]
        r = QRectF(x0, y0, x1 - x0, y1 - y0)
        if limit == NEVER:
            self._bounds = QRectF(r)
        return r

    def last_upto(self, limit: float):
        """The newest node visible at ``limit`` (None when there is none)."""
        self._ensure_sorted()
        hi = bisect_right(self._steps, limit)
        return self.nodes[self._order[hi - 1]] if hi else None

    def typical_height(self) -> float:
        if not self.nodes:
            return DEFAULT_OP_SIZE[1]
        cached = getattr(self, "_typical", None)
        if cached is None or cached[0] != len(self.nodes):
            first = [ng.h for _, ng in zip(range(200), self.nodes.values())]
            cached = self._typical = (len(self.nodes), min(DEFAULT_TENSOR_SIZE[1], min(first)))
        return cached[1]

    def tiny_items(self):
        """For the lowest level of detail: ``({style: (steps, rects)}, {edge kind: (steps,
        lines)})`` in step order, built once per geometry version so a full redraw of
        20,000 nodes is a few ``drawRects``/``drawLines`` calls on list prefixes."""
        cached = getattr(self, "_tiny", None)
        if cached is not None and cached[0] == self.version:
            return cached[1], cached[2]
        self._ensure_sorted()
        nodes: dict = {}
        for nid in self._order:
            ng = self.nodes[nid]
            steps, rects = nodes.setdefault(ng.style, ([], []))
            steps.append(ng.step)
            rects.append(QRectF(ng.x - ng.w / 2, ng.y - ng.h / 2, ng.w, ng.h))
        edges: dict = {}
        for e in self._edge_order:
            s, d = self.nodes[e.src], self.nodes[e.dst]
            steps, lines = edges.setdefault(e.kind, ([], []))
            route = edge_route(self, s, d, check=False) if d.x < s.x else None
            if route is None:
                steps.append(e.step)
                lines.append(QLineF(s.x, s.y, d.x, d.y))
                continue
            # a wrapped chain's jump back to the next row follows its lane, not a
            # slash across the whole picture
            for a, b in zip(route, route[1:]):
                steps.append(e.step)
                lines.append(QLineF(a, b))
        self._tiny = (self.version, nodes, edges)
        return nodes, edges

    # -- hit testing -------------------------------------------------------------
    def _cells(self, x0, y0, x1, y1):
        for cx in range(int(math.floor(x0 / GRID_CELL)), int(math.floor(x1 / GRID_CELL)) + 1):
            for cy in range(int(math.floor(y0 / GRID_CELL)), int(math.floor(y1 / GRID_CELL)) + 1):
                yield cx, cy

    def _grid_insert(self, ng: NodeGeom) -> None:
        # a node no bigger than a cell is filed under its centre's cell only; lookups
        # search the neighbouring cells too. Bigger ones go into every cell they cover.
        if ng.w <= GRID_CELL and ng.h <= GRID_CELL:
            c = (int(math.floor(ng.x / GRID_CELL)), int(math.floor(ng.y / GRID_CELL)))
            cell = self._grid.get(c)
            if cell is None:
                self._grid[c] = [ng.id]
            else:
                cell.append(ng.id)
            return
        for c in self._cells(ng.x - ng.w / 2, ng.y - ng.h / 2, ng.x + ng.w / 2, ng.y + ng.h / 2):
            self._grid.setdefault(c, []).append(ng.id)

    def _edge_grid_insert(self, eg: EdgeGeom) -> None:
        s, d = self.nodes[eg.src], self.nodes[eg.dst]
        c = (int(s.x // GRID_CELL), int(s.y // GRID_CELL))
        if c == (int(d.x // GRID_CELL), int(d.y // GRID_CELL)):   # the common short edge
            cell = self._edge_grid.get(c)
            if cell is None:
                self._edge_grid[c] = [eg]
            else:
                cell.append(eg)
            return
        cx0, cx1 = int(math.floor(min(s.x, d.x) / GRID_CELL)), int(math.floor(max(s.x, d.x) / GRID_CELL))
        cy0, cy1 = int(math.floor(min(s.y, d.y) / GRID_CELL)), int(math.floor(max(s.y, d.y) / GRID_CELL))
        if (cx1 - cx0 + 1) * (cy1 - cy0 + 1) > EDGE_CELLS_MAX:
            self._long_edges.append(eg)
            return
        grid = self._edge_grid
        for cx in range(cx0, cx1 + 1):
            for cy in range(cy0, cy1 + 1):
                cell = grid.get((cx, cy))
                if cell is None:
                    grid[(cx, cy)] = [eg]
                else:
                    cell.append(eg)

    def edges_in(self, rect: QRectF, limit: float = NEVER, start: float = -math.inf) -> list:
        """Edges visible at ``limit`` (and not at ``start``) whose centre-to-centre box
        meets ``rect`` (NOTE [edge grid]), in insertion order."""
        if not self._edge_grid_ready:
            self.ensure_index()
        x0, y0, x1, y1 = rect.left(), rect.top(), rect.right(), rect.bottom()
        seen: set = set()
        out = []
        grid = self._edge_grid
        nodes = self.nodes
        cands = [eg for cx in range(int(math.floor(x0 / GRID_CELL)), int(math.floor(x1 / GRID_CELL)) + 1)
                 for cy in range(int(math.floor(y0 / GRID_CELL)), int(math.floor(y1 / GRID_CELL)) + 1)
                 for eg in grid.get((cx, cy), ())]
        for eg in itertools.chain(cands, self._long_edges):
            if eg.seq in seen or not (start < eg.step <= limit):
                continue
            seen.add(eg.seq)
            s, d = nodes[eg.src], nodes[eg.dst]
            if s.x < d.x:
                if d.x < x0 or s.x > x1:
                    continue
            elif s.x < x0 or d.x > x1:
                continue
            if s.y < d.y:
                if d.y < y0 or s.y > y1:
                    continue
            elif s.y < y0 or d.y > y1:
                continue
            out.append(eg)
        out.sort(key=lambda e: e.seq)
        return out

    def node_at(self, x: float, y: float, limit: float = NEVER, slack: float = 0.0):
        """Id of the topmost visible node whose box (grown by ``slack``) holds (x, y)."""
        if not self._grid_ready:
            self.ensure_index(edges=False)
        best, best_order = None, -1
        order = {}
        for c in self._cells(x - GRID_CELL, y - GRID_CELL, x + GRID_CELL, y + GRID_CELL):
            for nid in self._grid.get(c, ()):
                ng = self.nodes[nid]
                if ng.step > limit:
                    continue
                if abs(x - ng.x) <= ng.w / 2 + slack and abs(y - ng.y) <= ng.h / 2 + slack:
                    k = order.setdefault(nid, self._index(nid))
                    if k > best_order:     # later-added nodes are drawn on top
                        best, best_order = nid, k
        return best

    def _index(self, nid) -> int:
        idx = getattr(self, "_pos_index", None)
        if idx is None or len(idx) != len(self.nodes):
            idx = self._pos_index = {k: i for i, k in enumerate(self.nodes)}
        return idx.get(nid, -1)

    def nodes_in(self, rect: QRectF, limit: float = NEVER) -> list:
        """Visible nodes whose boxes meet ``rect`` (scene units), via the grid."""
        if not self._grid_ready:
            self.ensure_index(edges=False)
        seen, out = set(), []
        for c in self._cells(rect.left() - GRID_CELL, rect.top() - GRID_CELL,
                             rect.right() + GRID_CELL, rect.bottom() + GRID_CELL):
            for nid in self._grid.get(c, ()):
                if nid in seen:
                    continue
                seen.add(nid)
                ng = self.nodes[nid]
                if ng.step <= limit and abs(rect.center().x() - ng.x) <= (rect.width() + ng.w) / 2 \
                        and abs(rect.center().y() - ng.y) <= (rect.height() + ng.h) / 2:
                    out.append(ng)
        return out


# -- edge routing --------------------------------------------------------------------
# NOTE [edge lanes]: the layered layout leaves an empty gap between columns and between
# rows. An edge between neighbouring columns is a plain curve; an edge that would pass
# through other nodes (it skips columns on the same row, x -> add in ``x*w + x``) or
# runs backwards (a long chain wrapped into rows, a page jump) is routed through those
# gaps instead: out of its source into the column gap, along the half-row lane above
# (or below) the destination's row, down the gap before the destination, into it.
# Lanes never cross a node box, so no edge is drawn behind a node it doesn't touch.
LANE_INSET = 12.0
PORT_GAP = 12.0   # scene units between the inputs entering one node (NOTE [input ports])
LANE_STEP = 7.0   # scene units between the tracks of lanes leaving one column gap
REGION_PAD = 18.0  # a grad-mode region's box around its nodes (canvas_regions.py)
LANE_CLEAR = 12.0  # a lane kept out of a region's box runs this far from its border
                   # (at 6 it read as a second dashed border: second visual review)
# lanes keep out of region boxes in graphs up to this many nodes: in bigger ones the
# free-strip checks along lanes across the whole graph cost seconds (60,000 nodes:
# 1.9 s of the first paint), for boxes drawn a few pixels high
REGION_LANES_MAX = 5000


def _columns(geom) -> dict:
    cols, ver = geom._columns
    if ver != geom.version or cols is None:
        cols = {}
        for ng in geom.nodes.values():
            h = ng.w / 2
            if h > cols.get(ng.x, 0.0):
                cols[ng.x] = h
        geom._columns = (cols, geom.version)
    return cols


def edge_route(geom, s: NodeGeom, d: NodeGeom, check: bool = True):
    """Lane points of an edge (NOTE [edge lanes]), or None for a plain curve. With
    ``check`` False only backward edges are routed (no grid look-ups: the cheapest
    levels of detail)."""
    forward = d.x - d.w / 2 >= s.x + s.w / 2
    if forward and not check:
        return None
    if geom._routes_version != geom.version:
        geom._routes, geom._routes_version = {}, geom.version
    key = (s.id, d.id)
    if key in geom._routes:
        return geom._routes[key]
    route = None
    if not forward:
        # backwards (a wrapped chain), or down its own column (a weight used again
        # in the next band): a straight curve would run through the column's nodes
        route = _lane(geom, s, d)
    elif forward and _blocked(geom, s, d):
        route = _lane(geom, s, d)
    geom._routes[key] = route
    return route


def _blocked(geom, s, d) -> bool:
    """Does another node's box lie across the curve drawn from s to d?"""
    x0, x1 = s.x + s.w / 2, d.x - d.w / 2
    if x1 - x0 < 1:
        return False
    y0, y1 = min(s.y, d.y), max(s.y, d.y)
    probe = QRectF(x0 + 1, y0 - 6, x1 - x0 - 2, y1 - y0 + 12)
    others = [ng for ng in geom.nodes_in(probe) if ng.id not in (s.id, d.id)]
    if not others:
        return False
    if abs(d.y - s.y) < 0.5:
        return True    # a straight run along the row, and a box on it
    # points along the curve as canvas_primitives._curve draws it (a cubic from the right
    # side of s to the left side of d, control points half way across, at each
    # end's height); an estimate from the centres missed boxes a long curve
    # down to the next band crosses
    k = (x1 - x0) * 0.5
    pts = []
    for i in range(1, _CURVE_SAMPLES):
        t = i / _CURVE_SAMPLES
        u = 1.0 - t
        b1, b2, b3 = 3 * u * u * t, 3 * u * t * t, t * t * t
        pts.append((u * u * u * x0 + b1 * (x0 + k) + b2 * (x1 - k) + b3 * x1,
                    (u * u * u + b1) * s.y + (b2 + b3) * d.y))
    for ng in others:
        left, right = ng.x - ng.w / 2 - 2, ng.x + ng.w / 2 + 2
        top, bottom = ng.y - ng.h / 2 - 4, ng.y + ng.h / 2 + 4
        for x, y in pts:
            if left <= x <= right and top <= y <= bottom:
                return True
    return False


_CURVE_SAMPLES = 48


def _lane(geom, s, d) -> list:
    cols = _columns(geom)
    half = geom.row_pitch / 2
    xa = s.x + cols.get(s.x, s.w / 2) + LANE_INSET
    xb = d.x - cols.get(d.x, d.w / 2) - LANE_INSET
    above = s.y <= d.y
    lane = d.y - half if above else d.y + half
    end = _left_port(geom, s, d)
    # Two inputs of one node routed alike (both from the column above, into the
    # same lane) ran on one line the whole way, and only their arrowheads told
    # them apart (GUI review: s under no_grad and y into y + s). Each keeps to its
    # own track, offset by its port (NOTE [input ports]), nested so they do not
    # cross: the input whose port is further from the lane turns down further
    # left, on the lane nearer the row when the lanes run right and further
    # from it when they run left (a wrapped chain); the source whose port is
    # further from the lane leaves through the further left of the column gap.
    # (only for a node of two or three inputs: the many inputs of an RNN cell were
    # tracks 2 px apart, one thick bar across the canvas, visual review)
    srcs = geom._ins.get(d.id)
    spread = PORT_GAP if srcs is not None and 2 <= len(srcs) <= 3 else 0.0
    lane = _clear_of_regions(geom, lane, min(xa, xb), max(xa, xb), spread)
    above = lane < d.y
    dy = end.y() - d.y if srcs is not None and len(srcs) <= 3 else 0.0
    if dy:
        far = dy if above else -dy
        toward_row = 1.0 if above else -1.0
        lane += far * toward_row if xb > xa else -far * toward_row
        xa -= far
        xb -= far
    # Lanes that leave one column gap for lanes of different rows (two sums
    # feeding the next band: which feeds which?) shared the gap's vertical track
    # and met in a T (visual review): each lane row leaves through its own track,
    # so they cross, clearly two edges, instead of merging. (Three tracks, by the
    # lane's row: rows three apart share one again.)
    xa += LANE_STEP * (math.floor(lane / geom.row_pitch) % 3 - 1)
    return [QPointF(s.x + s.w / 2, s.y), QPointF(xa, s.y), QPointF(xa, lane),
            QPointF(xb, lane), QPointF(xb, end.y()), end]


# NOTE [lanes over a region]: a grad-mode region's box reaches above its nodes
# by its padding and its label ("torch.no_grad(), lines 9-10"), and below them
# by its "no grad" tags: a good part of the half rows where lanes run. In the
# welcome scenario the lane from ``sum`` back to ``loss`` (a wrapped chain) ran
# inside the no_grad box, under its label and along its top edge: it read as if
# that edge were in the region. A lane that would pass through such a band goes
# above or below the box instead, whichever is nearer and free of nodes and of
# other boxes (a band gap of a wrapped chain, the empty row the layout leaves
# above a region's row: layout._renumber); where neither is (a graph drawn
# before its tidy, or of more than REGION_LANES_MAX nodes) it stays, and the
# label is painted on its own background over it.
def _clear_of_regions(geom, lane: float, x0: float, x1: float, spread: float) -> float:
    """``lane``, or the nearest lane above or below the region boxes whose head or
    foot it would run in between ``x0`` and ``x1``; ``spread``: how far the lane's
    tracks reach either side."""
    if len(geom.nodes) > REGION_LANES_MAX:
        return lane
    boxes = list(_region_boxes_met(geom, lane, x0, x1, spread))
    if not boxes:
        return lane
    best = None
    # just above and just below the boxes the lane would run in
    for y in (min(t for t, _ in boxes) - LANE_CLEAR - spread,
              max(b for _, b in boxes) + LANE_CLEAR + spread):
        if geom.nodes_in(QRectF(x0, y - spread - 4, x1 - x0, 2 * spread + 8)) \
                or _in_region_band(geom, y, x0, x1, spread):
            continue
        if best is None or abs(y - lane) < abs(best - lane):
            best = y
    return lane if best is None else best   # no room either side: see the NOTE


def _region_cells(geom) -> dict:
    """The nodes of grad-mode regions by grid cell of their centre, once per
    geometry version: the lane checks look only at them (a query of every node
    along a lane across a 60,000-node graph made its first paint 5 s)."""
    cells, ver = geom._region_index
    if ver != geom.version or cells is None:
        cells = {}
        for ng in geom.nodes.values():
            if ng.node is not None and getattr(ng.node, "region", None) is not None:
                cells.setdefault((int(math.floor(ng.x / GRID_CELL)),
                                  int(math.floor(ng.y / GRID_CELL))), []).append(ng)
        geom._region_index = (cells, geom.version)
    return cells


def _region_boxes_met(geom, y: float, x0: float, x1: float, spread: float):
    """(top, bottom) of the boxes of the region nodes between ``x0`` and ``x1`` whose
    head or foot band tracks at ``y`` +- ``spread`` would run in."""
    cells = _region_cells(geom)
    if not cells:
        return
    head, foot, pad = geom.region_head, geom.region_foot, REGION_PAD
    lo_x, hi_x = x0 - pad, x1 + pad
    lo_y, hi_y = y - spread - foot - 2, y + spread + head + 2
    cy0, cy1 = (int(math.floor((v) / GRID_CELL)) for v in (lo_y - GRID_CELL, hi_y + GRID_CELL))
    cx0, cx1 = (int(math.floor((v) / GRID_CELL)) for v in (lo_x - GRID_CELL, hi_x + GRID_CELL))
    if (cx1 - cx0 + 1) * (cy1 - cy0 + 1) > len(cells):
        found = (ng for (cx, cy), ngs in cells.items() if cx0 <= cx <= cx1 and cy0 <= cy <= cy1
                 for ng in ngs)
    else:
        found = (ng for cx in range(cx0, cx1 + 1) for cy in range(cy0, cy1 + 1)
                 for ng in cells.get((cx, cy), ()))
    for ng in found:
        if ng.x + ng.w / 2 < lo_x or ng.x - ng.w / 2 > hi_x \
                or ng.y + ng.h / 2 < lo_y or ng.y - ng.h / 2 > hi_y:
            continue
        t, b = ng.y - ng.h / 2, ng.y + ng.h / 2
        if any(y - spread < hi and y + spread > lo for lo, hi in ((t - head, t), (b, b + foot))):
            yield t - head, b + foot


def _in_region_band(geom, y, x0, x1, spread) -> bool:
    return next(_region_boxes_met(geom, y, x0, x1, spread), None) is not None


def _left_port(geom, s, d) -> QPointF:
    """Where the edge from ``s`` meets ``d``'s left side (NOTE [input ports]): on
    the outline, which is round at an op's ends."""
    dy = geom.in_port(s, d) if geom is not None else 0.0
    x = d.x - d.w / 2
    if dy and d.node is not None and getattr(d.node, "kind", None) == "op":
        r = d.h / 2
        x += r - math.sqrt(max(0.0, r * r - dy * dy))
    return QPointF(x, d.y + dy)


def _size(node, size_of) -> tuple:
    if size_of is not None:
        try:
            w, h = size_of(node)
            return float(w), float(h)
        except Exception:  # a layout that cannot size this node: fall back, never fail to draw
            pass
    return DEFAULT_TENSOR_SIZE if node.kind == "tensor" else DEFAULT_OP_SIZE


def edge_ends(s: NodeGeom, d: NodeGeom, geom=None) -> tuple:
    """Start and end points of an edge: right side of the source to the left side of the
    destination when the destination lies to the right (the layered layout's flow),
    at the destination's port for this input when ``geom`` is given (NOTE [input ports])."""
    if d.x - d.w / 2 >= s.x + s.w / 2:
        return QPointF(s.x + s.w / 2, s.y), _left_port(geom, s, d)
    if d.y >= s.y:
        return QPointF(s.x, s.y + s.h / 2), QPointF(d.x, d.y - d.h / 2)
    return QPointF(s.x, s.y - s.h / 2), QPointF(d.x, d.y + d.h / 2)


def edge_line(s: NodeGeom, d: NodeGeom) -> QLineF:
    a, b = edge_ends(s, d)
    return QLineF(a, b)
