"""The pieces every canvas painter draws with: colours, fonts, node boxes, the
curves, lanes and arrowheads of edges, and the grouping of a region's nodes
into nearby clusters. Qt only; no state but a colour cache."""
from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFont, QPainterPath, QPolygonF

from graphscope.ui.canvas_scene import NodeGeom, SceneGeometry

FONT_FAMILY = "DejaVu Sans"
LABEL_PX = 17.0        # node label font, scene units (before text scale)
DETAIL_PX = 12.0
TINY_NODE_PX = 6.0     # below this node height on screen: plain rects
MIN_TEXT_PX = 6.0      # below this label size on screen: no text
OVERLAY_PX = 15.0      # gradient labels, device pixels (before text scale)
FADED = 0.4          # opacity of an earlier pass's nodes and edges (NOTE [pass focus] in model/timeline.py)

_colour_cache: dict = {}


def qcolor(hex_colour: str) -> QColor:
    """``#rrggbb`` / ``#rrggbbaa`` -> QColor (Qt itself reads 8 digits as #aarrggbb)."""
    c = _colour_cache.get(hex_colour)
    if c is None:
        h = hex_colour.lstrip("#")
        if len(h) == 8:
            c = QColor(int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), int(h[6:8], 16))
        else:
            c = QColor("#" + h)
        _colour_cache[hex_colour] = c
    return QColor(c)


def font(px: float, bold: bool = False) -> QFont:
    f = QFont(FONT_FAMILY)
    f.setPixelSize(max(1, int(round(px))))
    f.setBold(bold)
    return f


def lod_for(scale: float, geom: SceneGeometry, text_scale: float = 1.0) -> str:
    if geom.typical_height() * scale < TINY_NODE_PX:
        return "tiny"
    if LABEL_PX * min(text_scale, 1.6) * scale < MIN_TEXT_PX:
        return "simple"
    return "full"



def _rect(ng: NodeGeom) -> QRectF:
    return QRectF(ng.x - ng.w / 2, ng.y - ng.h / 2, ng.w, ng.h)


def _clusters(members, gap_x: float = 260.0, gap_y: float = 110.0) -> list:
    """Members of one region split into groups of nearby nodes: a no_grad block inside a
    loop makes nodes all over the graph, and one box around all of them would cover
    everything in between (a box per group says the truth)."""
    if len(members) == 1:
        return [members]
    cells: dict = {}
    for ng in members:
        cells.setdefault((int(ng.x // gap_x), int(ng.y // gap_y)), []).append(ng)
    parent = {c: c for c in cells}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c
    for (cx, cy) in cells:
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                n = (cx + dx, cy + dy)
                if n in cells:
                    parent[find(n)] = find((cx, cy))
    groups: dict = {}
    for c, ngs in cells.items():
        groups.setdefault(find(c), []).extend(ngs)
    return list(groups.values())


def _union(members) -> QRectF:
    x0 = min(ng.x - ng.w / 2 for ng in members)
    x1 = max(ng.x + ng.w / 2 for ng in members)
    y0 = min(ng.y - ng.h / 2 for ng in members)
    y1 = max(ng.y + ng.h / 2 for ng in members)
    return QRectF(x0, y0, x1 - x0, y1 - y0)


def _segment_meets(r: QRectF, s: NodeGeom, d: NodeGeom) -> bool:
    return not (max(s.x, d.x) < r.left() or min(s.x, d.x) > r.right()
                or max(s.y, d.y) < r.top() or min(s.y, d.y) > r.bottom())


def _unit(a: QPointF, b: QPointF) -> QPointF:
    dx, dy = b.x() - a.x(), b.y() - a.y()
    n = math.hypot(dx, dy) or 1.0
    return QPointF(dx / n, dy / n)


def _curve(path: QPainterPath, a: QPointF, b: QPointF) -> None:
    path.moveTo(a)
    if abs(b.y() - a.y()) < 0.5:
        path.lineTo(b)
        return
    if b.x() > a.x():
        k = (b.x() - a.x()) * 0.5
        path.cubicTo(QPointF(a.x() + k, a.y()), QPointF(b.x() - k, b.y()), b)
    else:
        k = (b.y() - a.y()) * 0.5
        path.cubicTo(QPointF(a.x(), a.y() + k), QPointF(b.x(), b.y() - k), b)


def _lane_path(path: QPainterPath, pts, radius: float = 14.0) -> None:
    """A routed edge (NOTE [edge lanes]): straight runs with rounded corners."""
    path.moveTo(pts[0])
    for i in range(1, len(pts) - 1):
        p0, p1, p2 = pts[i - 1], pts[i], pts[i + 1]
        l1 = math.hypot(p1.x() - p0.x(), p1.y() - p0.y())
        l2 = math.hypot(p2.x() - p1.x(), p2.y() - p1.y())
        r = min(radius, l1 / 2, l2 / 2)
        if r < 0.5:
            path.lineTo(p1)
            continue
        u1 = _unit(p0, p1)
        u2 = _unit(p1, p2)
        path.lineTo(p1 - u1 * r)
        path.quadTo(p1, p1 + u2 * r)
    path.lineTo(pts[-1])


def _arrow(path: QPainterPath, a: QPointF, b: QPointF, size: float) -> None:
    # the curves leave and enter horizontally (or vertically when going back), so the
    # head points along the axis the curve ends on
    if b.x() > a.x() or abs(b.y() - a.y()) < 0.5:
        u = QPointF(1.0, 0.0) if b.x() >= a.x() else QPointF(-1.0, 0.0)
    else:
        u = QPointF(0.0, 1.0 if b.y() > a.y() else -1.0)
    n = QPointF(-u.y(), u.x())
    base = b - u * size
    path.addPolygon(QPolygonF([b, base + n * (size * 0.5), base - n * (size * 0.5), b]))
    path.closeSubpath()
