"""Layered left-to-right layout of the graph, computed as nodes arrive.

Data flows left to right (x grows with depth, which is also time), so a chain
of ops reads like a sentence on a 16:9 projector. Long chains wrap into bands
stacked downwards ("snake"): a 20,000-op chain is a block of rows that fits a
screen, not a line two million pixels long.

Incremental rule (``add``): a node goes to layer ``1 + max(layer of its
predecessors)``, in the free row nearest the barycentre of its predecessors'
rows; placed nodes never move. A node with no predecessors (a tensor from a
factory, a ghost copy of a shared weight) sits just before its consumer when
that consumer arrives in the same ``add`` call, else at the current frontier
(the layer of the last node placed) so late inputs appear where the action is
rather than at the far left. ``tidy`` reorders rows by barycentre sweeps,
picks the band width for a 16:9 aspect and returns the final positions.

Pure Python with dicts and lists; every step is O(1) amortised per node or
edge (no O(n^2) scans), see benchmarks/bench_layout.py.
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

# scene units (the canvas draws one unit as one pixel at zoom 1)
COL = 190          # distance between layers (x)
ROW = 70           # distance between rows (y)
BAND_GAP = 1       # empty rows between two bands of a wrapped chain
WRAP = 64          # layers per band while building (tidy picks its own)
_SEARCH = 24       # rows tried around the target before going to the column's end
ASPECT = 16 / 9


def node_size(node) -> tuple:
    """(width, height) of a node's box in scene units; fits within COL x ROW."""
    text = max(len(node.label or ""), len(node.detail or ""))
    w = min(COL - 30, max(64, 7 * text + 24))
    h = 46 if node.kind == "tensor" else 38
    return (w, h)


class LayeredLayout:
    """Positions for a Graph, grown as nodes are added.

    ``positions[node_id] = (x, y)`` are node centres. ``layer`` and ``row`` hold
    the grid cell of each node (``row`` counts from the top of the scene).
    """

    def __init__(self, graph=None, wrap: int = WRAP):
        self.graph = graph
        self.wrap = max(2, int(wrap))
        self.positions: dict[str, tuple] = {}
        self.layer: dict[str, int] = {}
        self.row: dict[str, int] = {}
        self._occ: dict[int, set] = {}       # column in band -> occupied rows
        self._col_end: dict[int, int] = {}   # column -> one past its lowest occupied row
        self._band_start: list[int] = [0]    # first row of each band
        self._max_row = -1
        self._frontier = 0
        self._last_row = 0
        if graph is not None and len(graph.nodes):
            self.add(graph)

    # -- incremental ----------------------------------------------------------
    def add(self, graph_or_new_nodes) -> dict:
        """Place nodes not placed yet; returns ``{node_id: (x, y)}`` of the new ones.

        Pass the Graph (every unplaced node is placed, in insertion order) or a
        list of its new nodes / node ids (pass a builder delta's nodes together,
        so a ghost or input lands next to its consumer).
        """
        if hasattr(graph_or_new_nodes, "nodes") and hasattr(graph_or_new_nodes, "preds"):
            self.graph = graph_or_new_nodes
            new = [n for n in self.graph.nodes if n not in self.layer]
        else:
            new = [n if isinstance(n, str) else n.id for n in graph_or_new_nodes]
            new = [n for n in new if n not in self.layer]
        if self.graph is None:
            raise ValueError("LayeredLayout.add needs the Graph first")
        preds_of = self.graph.preds
        succs_of = self.graph.succs
        batch = set(new)
        deferred: set = set()
        placed = {}
        for nid in new:
            preds = preds_of.get(nid, ())
            if not preds:
                # a source: wait for its consumer if it is in this batch
                if any(s in batch for s in succs_of.get(nid, ())):
                    deferred.add(nid)
                    continue
                placed[nid] = self._place(nid, self._frontier, self._last_row)
                continue
            known = [p for p in preds if p in self.layer]
            if known:
                lay = 1 + max(self.layer[p] for p in known)
                target = self._barycentre(known, lay)
            else:
                lay = max(1, self._frontier)
                target = self._last_row
            placed[nid] = self._place(nid, lay, target)
            for p in preds:
                if p in deferred:
                    deferred.discard(p)
                    placed[p] = self._place(p, lay - 1, self.row[nid])
        for nid in new:           # sources whose consumer never came (shouldn't happen)
            if nid in deferred:
                placed[nid] = self._place(nid, self._frontier, self._last_row)
        return placed

    def _barycentre(self, preds, lay: int) -> int:
        band = lay // self.wrap
        self._ensure_band(band)
        s = 0
        for p in preds:
            s += self.row[p] - self._band_start[self.layer[p] // self.wrap]
        return self._band_start[band] + int(round(s / len(preds)))

    def _ensure_band(self, band: int) -> None:
        while len(self._band_start) <= band:
            self._band_start.append(self._max_row + 1 + BAND_GAP)

    def _place(self, nid: str, lay: int, target: int) -> tuple:
        lay = max(0, lay)
        band = lay // self.wrap
        self._ensure_band(band)
        lo = self._band_start[band]
        # a source dropped at the frontier may come from an older band's row
        if target < lo:
            target = lo
        col = lay  # occupancy per layer: one layer is one column of one band
        occ = self._occ.setdefault(col, set())
        row = None
        if target not in occ:
            row = target
        else:
            for k in range(1, _SEARCH):
                if target + k not in occ:
                    row = target + k
                    break
                if target - k >= lo and target - k not in occ:
                    row = target - k
                    break
            if row is None:
                row = max(self._col_end.get(col, lo), lo)
                while row in occ:
                    row += 1
        occ.add(row)
        if row + 1 > self._col_end.get(col, 0):
            self._col_end[col] = row + 1
        if row > self._max_row:
            self._max_row = row
        self.layer[nid] = lay
        self.row[nid] = row
        if lay > self._frontier:
            self._frontier = lay
        self._last_row = row
        pos = ((lay % self.wrap) * COL, row * ROW)
        self.positions[nid] = pos
        return pos

    # -- the final pass ----------------------------------------------------------
    def tidy(self) -> dict:
        """Reorder rows by barycentre sweeps and re-wrap for a 16:9 view.

        Layers are kept (edges still go to higher layers); rows and the band width
        may change. Returns the new ``positions`` (also stored), so the view can
        animate every node once to its final place.
        """
        g = self.graph
        if g is None or not self.layer:
            return dict(self.positions)
        layer = self.layer
        nlayers = max(layer.values()) + 1
        by_layer: list[list[str]] = [[] for _ in range(nlayers)]
        for nid in g.nodes:
            if nid in layer:
                by_layer[layer[nid]].append(nid)
        wrap = self._choose_wrap(by_layer)
        band_of = [L // wrap for L in range(nlayers)]
        # current relative rows as the starting order
        rel = {}
        for nid, r in self.row.items():
            rel[nid] = r - self._band_start[layer[nid] // self.wrap]
        preds, succs = g.preds, g.succs

        def sweep(order_layers, neigh):
            for L in order_layers:
                nodes = by_layer[L]
                if not nodes:
                    continue
                keyed = []
                for i, nid in enumerate(nodes):
                    ns = [q for q in neigh.get(nid, ()) if q in rel
                          and band_of[layer[q]] == band_of[L]]
                    want = sum(rel[q] for q in ns) / len(ns) if ns else rel[nid]
                    keyed.append((want, rel[nid], i, nid))
                keyed.sort()
                prev = -1
                for want, _, _, nid in keyed:
                    r = max(int(round(want)), prev + 1, 0)
                    rel[nid] = r
                    prev = r
                by_layer[L] = [k[3] for k in keyed]

        fwd = range(nlayers)
        bwd = range(nlayers - 1, -1, -1)
        sweep(fwd, preds)
        sweep(bwd, succs)
        sweep(fwd, preds)
        # pack bands downwards
        nbands = band_of[-1] + 1
        heights = [0] * nbands
        for L in range(nlayers):
            for nid in by_layer[L]:
                h = rel[nid] + 1
                if h > heights[band_of[L]]:
                    heights[band_of[L]] = h
        starts, y = [], 0
        for b in range(nbands):
            starts.append(y)
            y += heights[b] + BAND_GAP
        # adopt the tidied grid so later adds continue from it
        self.wrap = wrap
        self._band_start = starts
        self._occ, self._col_end = {}, {}
        self._max_row = -1
        positions = {}
        for L in range(nlayers):
            start = starts[band_of[L]]
            occ = self._occ.setdefault(L, set())
            for nid in by_layer[L]:
                r = start + rel[nid]
                self.row[nid] = r
                occ.add(r)
                if r + 1 > self._col_end.get(L, 0):
                    self._col_end[L] = r + 1
                if r > self._max_row:
                    self._max_row = r
                positions[nid] = ((L % wrap) * COL, r * ROW)
        self.positions = positions
        last = next(reversed(g.nodes)) if g.nodes else None
        if last in self.row:
            self._last_row = self.row[last]
        return dict(positions)

    def _choose_wrap(self, by_layer) -> int:
        """Layers per band giving the aspect closest to 16:9 (1 band if it already fits)."""
        n = len(by_layer)
        sizes = [len(x) for x in by_layer]
        best, best_score = n, None
        w = n
        cands = []
        while w >= 8:
            cands.append(w)
            w = int(w / 1.5)
        for w in cands or [n]:
            height = 0
            for start in range(0, n, w):
                height += max(sizes[start:start + w]) + BAND_GAP
            width = min(w, n) * COL
            score = abs(math.log((width / max(1, height * ROW)) / ASPECT))
            if best_score is None or score < best_score - 1e-9:
                best, best_score = w, score
        return max(2, best)

    # -- helpers for views ------------------------------------------------------------
    def bounds(self, ids: Optional[Iterable[str]] = None) -> tuple:
        """(xmin, ymin, xmax, ymax) of node centres (all, or ``ids``)."""
        pts = self.positions.values() if ids is None else (self.positions[i] for i in ids if i in self.positions)
        xs, ys = [], []
        for x, y in pts:
            xs.append(x)
            ys.append(y)
        if not xs:
            return (0, 0, 0, 0)
        return (min(xs), min(ys), max(xs), max(ys))
