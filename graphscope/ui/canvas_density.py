"""The lowest level of detail for very large graphs: nodes and edges rasterised with numpy.

When 20,000 ops (60,000 nodes) are fitted into a window, a node is a couple of pixels
and Qt's raster engine spends ~100 ms on 60,000 rects and lines, most of them on
pixels already drawn. Here the whole picture is a few vectorised numpy passes over
arrays cached per geometry version, handed to Qt as one image (what pyqtgraph does
for its large scatter plots). Used only above DENSITY_MIN visible nodes.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtGui import QImage

from graphscope.ui.canvas_scene import edge_route

DENSITY_MIN = 6000
EDGE_SAMPLES = 6
_KINDS = ("data", "nograd", "detach", "control", "seed")
_STYLES = ("tracked", "untracked", "error", "missing", "op", "op_nograd")


def _arrays(geom):
    cached = getattr(geom, "_density", None)
    if cached is not None and cached[0] == geom.version:
        return cached[1]
    # one flat list per array, filled in a single pass (no tuple per node): this runs
    # in the first paint of a 60,000-node graph
    nodes = geom.nodes
    style_ix = {s: i for i, s in enumerate(_STYLES)}
    flat: list = []
    add = flat.extend
    for ng in nodes.values():
        add((ng.x, ng.y, ng.w, ng.h, ng.step, style_ix.get(ng.style, 4)))
    n = np.array(flat, dtype=np.float64).reshape(-1, 6)
    kind_ix = {k: i for i, k in enumerate(_KINDS)}
    flat = []
    add = flat.extend
    for eg in geom.edges:
        s, d = nodes[eg.src], nodes[eg.dst]
        k = kind_ix.get(eg.kind, 0)
        if d.x >= s.x:
            add((s.x, s.y, d.x, d.y, eg.step, k))
            continue
        route = edge_route(geom, s, d, check=False)
        if route is None:
            add((s.x, s.y, d.x, d.y, eg.step, k))
        else:   # NOTE [edge lanes]: a wrapped chain's jump back follows its lane
            for a, b in zip(route, route[1:]):
                add((a.x(), a.y(), b.x(), b.y(), eg.step, k))
    e = np.array(flat, dtype=np.float64).reshape(-1, 6)
    geom._density = (geom.version, (n, e))
    return n, e


def _argb(hex_colour: str) -> int:
    h = hex_colour.lstrip("#")
    r, g, b = int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    return (0xFF << 24) | (r << 16) | (g << 8) | b


def density_image(geom, painter, scale: float, origin_x: float, origin_y: float,
                  width: int, height: int, limit: float, start: float) -> QImage:
    """An ARGB image (transparent background) of the nodes and edges visible at ``limit``
    and not at ``start``; device pixel (0, 0) is scene point (origin_x, origin_y). The
    image is valid until the next call for the same geometry: draw it, don't keep it."""
    width, height = max(1, int(width)), max(1, int(height))
    buf = np.zeros((height, width), dtype=np.uint32)
    nodes, edges = _arrays(geom)
    if len(edges):
        m = (edges[:, 4] <= limit) & (edges[:, 4] > start)
        ed = edges[m]
        if len(ed):
            colours = np.array([_argb(painter._edge_colour(k)) for k in _KINDS], dtype=np.uint32)
            col = colours[ed[:, 5].astype(np.int64)]
            x0 = (ed[:, 0] - origin_x) * scale
            y0 = (ed[:, 1] - origin_y) * scale
            dx = (ed[:, 2] - origin_x) * scale - x0
            dy = (ed[:, 3] - origin_y) * scale - y0
            length = float(np.median(np.hypot(dx, dy))) if len(ed) else 1.0
            samples = int(min(24, max(EDGE_SAMPLES, math.ceil(length * 1.2))))
            for t in np.linspace(0.0, 1.0, samples):
                px = (x0 + dx * t).astype(np.int64)
                py = (y0 + dy * t).astype(np.int64)
                ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
                buf[py[ok], px[ok]] = col[ok]
    if len(nodes):
        m = (nodes[:, 4] <= limit) & (nodes[:, 4] > start)
        nd = nodes[m]
        if len(nd):
            colours = np.array([_argb(painter._tiny_colour(s)) for s in _STYLES], dtype=np.uint32)
            col = colours[nd[:, 5].astype(np.int64)]
            left = np.floor((nd[:, 0] - nd[:, 2] / 2 - origin_x) * scale).astype(np.int64)
            top = np.floor((nd[:, 1] - nd[:, 3] / 2 - origin_y) * scale).astype(np.int64)
            pw = np.maximum(1, np.round(nd[:, 2] * scale)).astype(np.int64)
            ph = np.maximum(1, np.round(nd[:, 3] * scale)).astype(np.int64)
            for ddx in range(int(min(pw.max(), 12))):
                for ddy in range(int(min(ph.max(), 8))):
                    sel = (ddx < pw) & (ddy < ph)
                    px, py = left[sel] + ddx, top[sel] + ddy
                    ok = (px >= 0) & (px < width) & (py >= 0) & (py < height)
                    buf[py[ok], px[ok]] = col[sel][ok]
    img = QImage(buf.data, width, height, width * 4, QImage.Format_ARGB32)
    # the image borrows buf's pixels (no 10 ms copy of a full-window image): the
    # geometry keeps buf alive until the next picture, and callers draw it at once
    geom._density_buf = buf
    return img
