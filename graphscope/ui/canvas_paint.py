"""Drawing the graph: the static layer (regions, edges, nodes) and the overlays of one
frame (current node glow, gradient labels, ``.grad`` before -> after, selection,
spotlight). Used by the interactive canvas, by PNG/SVG export and by the benchmark, so
what a lecture slide shows is exactly what the window showed.

The static layer is drawn with the painter's world transform set to scene -> device;
overlay text is drawn in device pixels so it stays readable at any zoom.

Level of detail (pyqtgraph's habit): ``tiny`` when a node would be under ~6 px high
(plain rects, straight lines, all rects of one colour in one ``drawRects`` call),
``simple`` when its text would be under ~6 px (shapes, curves, arrows, no text),
``full`` otherwise.
"""
from __future__ import annotations


import math
import re
from bisect import bisect_right

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import (QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen,
                           QPixmap, QPolygonF, QTransform)

from graphscope.ui.canvas_density import DENSITY_MIN, density_image
from graphscope.ui.canvas_scene import NEVER, NodeGeom, SceneGeometry, edge_ends, edge_route

FONT_FAMILY = "DejaVu Sans"
LABEL_PX = 17.0        # node label font, scene units (before text scale)
DETAIL_PX = 12.0
TINY_NODE_PX = 6.0     # below this node height on screen: plain rects
MIN_TEXT_PX = 6.0      # below this label size on screen: no text
OVERLAY_PX = 15.0      # gradient labels, device pixels (before text scale)

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


class ScenePainter:
    """Paints one SceneGeometry in one theme. Holds no Qt widget state."""

    def __init__(self, geom: SceneGeometry, theme, text_scale: float = 1.0, regions=()):
        self.geom = geom
        self.theme = theme
        self.text_scale = float(text_scale)
        self.regions = list(regions or ())

    # -- static layer -------------------------------------------------------------
    def paint_static(self, p: QPainter, scale: float, view: QRectF, limit: float = NEVER,
                     start: float = -math.inf, exclude=frozenset(), regions: bool = True) -> str:
        """Draw what is visible at cursor ``limit`` (and was not at ``start``), skipping
        ``exclude`` (nodes drawn by an animation). ``view`` is the visible scene rect,
        for culling. Returns the level of detail used."""
        lod = lod_for(scale, self.geom, self.text_scale)
        if regions and start == -math.inf:
            self.paint_regions(p, scale, limit, lod, view.adjusted(-200, -200, 200, 200))
        if lod == "tiny":
            self._paint_tiny(p, limit, start, exclude, scale, view)
            return lod
        margin = 200.0
        cull = view.adjusted(-margin, -margin, margin, margin)
        if start == -math.inf and self.geom.nodes and len(self.geom.nodes) > 400:
            visible = self.geom.nodes_in(cull, limit)
            visible.sort(key=lambda ng: ng.step)
        else:
            visible = [ng for ng in self.geom.nodes_upto(limit, start)
                       if cull.intersects(_rect(ng))]
        if start == -math.inf and len(self.geom.edges) > 400:
            # cull before building paths (NOTE [edge grid] in canvas_scene.py)
            edges = self.geom.edges_in(cull, limit)
        else:
            edges = self.geom.edges_upto(limit, start)
        self._paint_edges(p, edges, cull, lod, exclude)
        for ng in visible:
            if ng.id not in exclude:
                self.paint_node(p, ng, lod)
        if regions and start == -math.inf and lod == "full":
            # the labels last: an edge passing the box's top must not strike one out
            # (they keep off nodes by themselves: _region_label_rect)
            self.paint_regions(p, scale, limit, lod, view.adjusted(-200, -200, 200, 200),
                               part="label")
        return lod

    def _paint_tiny(self, p, limit, start, exclude, scale=None, view=None) -> None:
        geom = self.geom
        count = geom.count_between(start, limit)
        if exclude or count < 2000:
            # a few items (the newest steps over the cached layer): no need for the arrays
            self._paint_tiny_slow(p, limit, start, exclude)
            return
        if view is not None and scale and count >= DENSITY_MIN:
            # tens of thousands of pixel-sized nodes: rasterise with numpy (canvas_density.py)
            w = math.ceil(view.width() * scale)
            h = math.ceil(view.height() * scale)
            img = density_image(geom, self, scale, view.left(), view.top(), w, h, limit, start)
            tf = p.transform()
            p.resetTransform()
            origin = tf.map(view.topLeft())
            p.drawImage(QRectF(origin.x(), origin.y(), w * tf.m11() / scale,
                               h * tf.m22() / scale), img)
            p.setTransform(tf)
            return
        node_groups, edge_groups = geom.tiny_items()
        for kind, (steps, lines) in edge_groups.items():
            lo = 0 if start == -math.inf else bisect_right(steps, start)
            hi = bisect_right(steps, limit)
            if hi > lo:
                pen = QPen(qcolor(self._edge_colour(kind)), 1.0)
                pen.setCosmetic(True)
                p.setPen(pen)
                p.drawLines(lines[lo:hi] if (lo, hi) != (0, len(lines)) else lines)
        p.setPen(Qt.NoPen)
        for style, (steps, rects) in node_groups.items():
            lo = 0 if start == -math.inf else bisect_right(steps, start)
            hi = bisect_right(steps, limit)
            if hi > lo:
                p.setBrush(qcolor(self._tiny_colour(style)))
                p.drawRects(rects[lo:hi] if (lo, hi) != (0, len(rects)) else rects)

    def _paint_tiny_slow(self, p, limit, start, exclude) -> None:
        nodes = self.geom
        by_kind: dict = {}
        for e in nodes.edges_upto(limit, start):
            if e.src in exclude or e.dst in exclude:
                continue
            s, d = nodes.nodes[e.src], nodes.nodes[e.dst]
            by_kind.setdefault(e.kind, []).append(QLineF(s.x, s.y, d.x, d.y))
        for kind, lines in by_kind.items():
            pen = QPen(qcolor(self._edge_colour(kind)), 1.0)
            pen.setCosmetic(True)
            p.setPen(pen)
            p.drawLines(lines)
        groups: dict = {}
        for ng in nodes.nodes_upto(limit, start):
            if ng.id not in exclude:
                groups.setdefault(ng.style, []).append(_rect(ng))
        p.setPen(Qt.NoPen)
        for style, rects in groups.items():
            p.setBrush(qcolor(self._tiny_colour(style)))
            p.drawRects(rects)

    def _tiny_colour(self, style: str) -> str:
        t = self.theme
        return {"tracked": t.tracked_border, "untracked": t.untracked_border,
                "error": t.error, "missing": t.warning, "op": t.op_border,
                "op_nograd": t.edge_nograd}.get(style, t.op_border)

    def _edge_colour(self, kind: str) -> str:
        t = self.theme
        return {"nograd": t.edge_nograd, "detach": t.edge_detach}.get(kind, t.edge)

    def _paint_edges(self, p, edges, cull, lod, exclude) -> None:
        paths: dict = {}
        heads: dict = {}
        cuts = []
        nodes = self.geom.nodes
        for e in edges:
            if e.src in exclude or e.dst in exclude:
                continue
            s, d = nodes[e.src], nodes[e.dst]
            if not _segment_meets(cull, s, d):
                continue
            path = paths.get(e.kind)
            if path is None:
                path = paths[e.kind] = QPainterPath()
                heads[e.kind] = QPainterPath()
                # two heads on one spot (two inputs entering an op together) must
                # not cancel out into a hollow one, as the default odd-even fill does
                heads[e.kind].setFillRule(Qt.WindingFill)
            route = edge_route(self.geom, s, d)
            if route is not None:
                _lane_path(path, route)
                _arrow(heads[e.kind], route[-2], route[-1], 11.0)
                continue
            a, b = edge_ends(s, d, self.geom)
            if e.kind == "detach":
                m = (a + b) / 2
                gap = _unit(a, b) * 9.0
                path.moveTo(a)
                path.lineTo(m - gap)
                path.moveTo(m + gap)
                path.lineTo(b)
                cuts.append((m, _unit(a, b)))
            else:
                _curve(path, a, b)
            _arrow(heads[e.kind], a, b, 11.0)
        for kind, path in paths.items():
            c = qcolor(self._edge_colour(kind))
            pen = QPen(c, 2.6 if kind == "data" else 2.4)
            if kind == "nograd":
                pen.setStyle(Qt.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.NoBrush)
            p.drawPath(path)
            p.setPen(Qt.NoPen)
            p.setBrush(c)
            p.drawPath(heads[kind])
        if cuts:
            self._paint_cuts(p, cuts, lod)

    def _paint_cuts(self, p, cuts, lod) -> None:
        """detach(): the edge is broken in the middle, with a scissors mark."""
        t = self.theme
        pen = QPen(qcolor(t.edge_detach), 2.6)
        for m, u in cuts:
            n = QPointF(-u.y(), u.x())
            p.setPen(pen)
            for off in (-5.0, 5.0):
                c = m + u * off
                p.drawLine(c - n * 9 + u * 3, c + n * 9 - u * 3)
            if lod == "full":
                p.setFont(font(15 * min(self.text_scale, 1.5), True))
                p.drawText(QRectF(m.x() - 14, m.y() - 32, 28, 20), Qt.AlignCenter, "✂")

    def paint_regions(self, p, scale, limit, lod, view: QRectF | None = None,
                      part: str = "box") -> None:
        """The grad-off boxes (``part`` "box"), or their labels ("label"), or both."""
        for reg, cluster, box in self._region_clusters():
            if view is not None and not view.intersects(box.adjusted(-40, -80, 400, 40)):
                continue
            members = [ng for ng in cluster if ng.step <= limit]
            if members:
                self._paint_region_box(p, reg, members, lod, limit, part)

    def _region_clusters(self) -> list:
        """[(region, cluster of its nodes, box of the cluster)], once per geometry
        version: a no_grad block in a 20,000-op loop has thousands of clusters, and
        grouping them on every paint cost more than drawing them. Clusters are made
        from all of a region's nodes; a paint boxes only the members already visible."""
        key = (self.geom.version, len(self.regions), tuple(id(r) for r in self.regions))
        cached = getattr(self, "_clusters_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        nodes = self.geom.nodes
        out = []
        for reg in self.regions:
            members = [nodes[i] for i in getattr(reg, "node_ids", ()) if i in nodes]
            if members:
                for cluster in _clusters(members):
                    cluster.sort(key=lambda ng: ng.step)
                    out.append((reg, cluster, _union(cluster)))
        self._clusters_cache = (key, out)
        return out

    def _paint_region_box(self, p, reg, members: list, lod, limit=math.inf,
                          part: str = "all") -> None:
        t = self.theme
        box, label_h = self._region_box(members, lod)
        kind = getattr(reg, "kind", "no_grad")
        fill = t.inference_fill if kind == "inference_mode" else t.region_fill
        if part != "label":
            p.setBrush(qcolor(fill))
            pen = QPen(qcolor(t.region_border), 2.0)
            pen.setStyle(Qt.DashLine)
            p.setPen(pen if lod != "tiny" else Qt.NoPen)
            p.drawRoundedRect(box, 14, 14)
        if lod == "full" and part != "box":
            p.setPen(qcolor(t.region_text))
            f = self._region_font()
            p.setFont(f)
            text = getattr(reg, "label", "") or kind
            fm = QFontMetricsF(f)
            tr = self._region_label_rect(box, fm.horizontalAdvance(text) + 4, label_h, limit)
            # on the box's own colour: an edge running along the box's top passes
            # under the words, not through them
            back = QRectF(tr.left() - 3, tr.center().y() - fm.height() / 2 - 1,
                          tr.width() + 4, fm.height() + 2)
            p.fillRect(back, qcolor(t.canvas_bg))
            if box.contains(back):
                p.fillRect(back, qcolor(fill))   # translucent: as the box looks there
            p.drawText(tr, Qt.AlignLeft | Qt.AlignVCenter, text)

    def regions_extent(self, limit) -> QRectF:
        """Scene box of the region boxes and their labels drawn at ``limit`` (a
        label wider than its box reaches past the nodes: fitting must show it)."""
        out = QRectF()
        for box, label in self._region_boxes(limit):
            out = out.united(box).united(label)
        return out

    def _region_boxes(self, limit) -> list:
        """(box, label rect) in scene coordinates of every region drawn at ``limit``."""
        out = []
        fm = QFontMetricsF(self._region_font())
        for reg, cluster, _ in self._region_clusters():
            members = [ng for ng in cluster if ng.step <= limit]
            if not members:
                continue
            box, label_h = self._region_box(members, "full")
            text = getattr(reg, "label", "") or getattr(reg, "kind", "")
            out.append((box, self._region_label_rect(
                box, fm.horizontalAdvance(text) + 4, label_h, limit)))
        return out

    def _region_box(self, members: list, lod) -> tuple:
        """(the box drawn around the ``members``' boxes, the height kept for its label).

        The box is padded (room for the label above, the "no grad" tags below),
        then trimmed where the padding would reach over a node that is not in
        the region: the layout does not keep other rows clear of a region, and a
        box edge through the row above read as if that row were inside. A node
        among the members' own boxes cannot be trimmed away; it stays inside.
        Trimmed against every node, visible yet or not, so a box never jumps
        while stepping; once per geometry version and member count."""
        full = lod == "full"
        key = (self.geom.version, id(members[0]), len(members), full, self.text_scale)
        cache = self.__dict__.setdefault("_region_box_cache", {})
        hit = cache.get(key)
        if hit is not None:
            return hit
        r = _union(members)
        pad = 18.0
        label_h = 26.0 * min(self.text_scale, 2.0)
        # the tensors made in a region nearly all carry a "no grad" tag below them:
        # the box's bottom edge passes under that row, not through it
        tag_h = QFontMetricsF(font(10.5 * min(self.text_scale, 1.5), True)).height() + 2
        bottom = max(pad, self.TAG_GAP + tag_h + 8) if full else pad
        box = r.adjusted(-pad, -pad - (label_h if full else 0), pad, bottom)
        inside = {ng.id for ng in members}
        top, bot, left, right = box.top(), box.bottom(), box.left(), box.right()
        for ng in self.geom.nodes_in(box):
            if ng.id in inside:
                continue
            o = _rect(ng)
            if o.bottom() <= r.top():
                top = max(top, min(o.bottom() + 4, r.top() - 4))
            elif o.top() >= r.bottom():
                bot = min(bot, max(o.top() - 4, r.bottom() + 4))
            elif o.right() <= r.left():
                left = max(left, min(o.right() + 4, r.left() - 4))
            elif o.left() >= r.right():
                right = min(right, max(o.left() - 4, r.right() + 4))
        out = (QRectF(QPointF(left, top), QPointF(right, bot)), label_h)
        if len(cache) > 4096:
            cache.clear()
        cache[key] = out
        return out

    def _region_font(self):
        return font(14 * min(self.text_scale, 2.0), True)

    def _region_label_rect(self, box: QRectF, w: float, h: float, limit) -> QRectF:
        """Where a region's label goes: the top-left corner of its box, unless a node
        outside the region sits there (the box is drawn around its members only,
        and the layout does not leave other nodes out of it); then the first free
        place of: top right, just above the box, just below it. The label may
        overhang the box: never clip it."""
        places = (QRectF(box.left() + 10, box.top() + 4, w, h),
                  QRectF(box.right() - 10 - w, box.top() + 4, w, h),
                  QRectF(box.left() + 10, box.top() - h - 2, w, h),
                  QRectF(box.left() + 10, box.bottom() + 2, w, h))
        for place in places:
            if place.left() >= box.left() - 1 and not self.geom.nodes_in(
                    place.adjusted(-4, -2, 4, 2), limit):
                return place
        return places[0]

    # -- one node -------------------------------------------------------------------
    def paint_node(self, p: QPainter, ng: NodeGeom, lod: str, opacity: float = 1.0,
                   grow: float = 1.0) -> None:
        node = ng.node
        flags = self.shown_flags(node)
        r = _rect(ng)
        if grow != 1.0:
            c = r.center()
            r = QRectF(c.x() - r.width() * grow / 2, c.y() - r.height() * grow / 2,
                       r.width() * grow, r.height() * grow)
        if opacity < 1.0:
            p.setOpacity(opacity)
        draw = self._paint_op if node.kind == "op" else self._paint_tensor
        if self.sprites and grow == 1.0 and lod != "tiny" and self._blit(p, ng, r, flags, lod, "box"):
            # NOTE [node sprites]: box and marks come from a pixmap cache, the text is
            # drawn live (labels are nearly all different, boxes nearly all alike)
            if lod == "full":
                self._node_text(p, ng, r, bold=node.kind != "op")
            self._blit(p, ng, r, flags, lod, "decor")
        else:
            draw(p, ng, r, flags, lod)
        if opacity < 1.0:
            p.setOpacity(1.0)

    # NOTE [node sprites]: on the interactive canvas (``sprites`` True) a node's box
    # (fill, hatching, border) and its marks (badges, tags) are rendered once per look
    # (kind, style, flags, size, zoom, theme) into a pixmap and blitted: an antialiased
    # rounded rect with a thick pen costs ~0.15 ms, a blit a few microseconds, and the
    # cache rebuilds while following the current node paint ~100 nodes at a time.
    # Exports (PNG/SVG) leave ``sprites`` off and stay vector.
    sprites = False
    SPRITES_MAX = 3000
    # a quiz before Reveal: a branch node's value (and so its direction) is not shown
    values_hidden = False
    # short: a branch node's box is sized for its value ("True"), not for this
    HIDDEN_DETAIL = "hidden (R)"
    # marks that answer a quiz ("where did it fail?", "what lacks requires_grad?")
    _QUIZ_ANSWERS = frozenset({"error", "missing_requires_grad"})
    # marks the spotlight leaves undimmed (paint_overlay)
    _SPOTLIT = _QUIZ_ANSWERS

    # tensors whose hooks are not on at the current step (FrameState.hooks_off)
    hooks_off: frozenset = frozenset()

    def take_frame(self, frame) -> bool:
        """Take what the nodes' own drawing depends on from timeline ``frame``
        (None: everything): the quiz's hidden values (a branch node prints the
        value it read) and the hooks that are off. True if either changed."""
        hidden = bool(getattr(frame, "values_hidden", False))
        off = getattr(frame, "hooks_off", None) or frozenset()
        changed = hidden != self.values_hidden or off != self.hooks_off
        self.values_hidden, self.hooks_off = hidden, off
        return changed

    def shown_flags(self, node):
        """The node's flags as drawn: before a quiz's Reveal, the error and
        missing-requires_grad marks are left off, since they give the answer away;
        the hook tag only while a hook is on the tensor."""
        flags = node.flags or frozenset()
        if self.values_hidden and not self._QUIZ_ANSWERS.isdisjoint(flags):
            flags = frozenset(flags) - self._QUIZ_ANSWERS
        if self.hooks_off and "hook" in flags and node.tensor in self.hooks_off:
            flags = frozenset(flags) - {"hook"}
        return flags

    def _blit(self, p, ng, r, flags, lod, part) -> bool:
        tf = p.transform()
        if tf.m12() or tf.m21() or tf.m11() <= 0:
            return False
        sc = tf.m11()
        node = ng.node
        dev = p.device()
        dpr = dev.devicePixelRatioF() if dev is not None else 1.0
        flags = flags if isinstance(flags, frozenset) else frozenset(flags)
        key = (part, node.kind, ng.style, flags, bool(getattr(node, "ghost_of", None)),
               round(r.width(), 2), round(r.height(), 2), lod, round(sc, 5), self.text_scale,
               id(self.theme), dpr)
        cache = self.__dict__.setdefault("_sprite_cache", {})
        hit = cache.get(key)
        if hit is None:
            if len(cache) > self.SPRITES_MAX:
                cache.clear()
            hit = cache[key] = self._render_sprite(ng, r, flags, lod, part, sc, dpr)
        pm, ox, oy = hit
        if pm is None:
            return True             # nothing to draw (a node without marks)
        o = tf.map(QPointF(r.left(), r.top()))
        p.setTransform(QTransform())
        p.drawPixmap(QPointF(round(o.x() + ox), round(o.y() + oy)), pm)
        p.setTransform(tf)
        return True

    def _render_sprite(self, ng, r, flags, lod, part, sc, dpr):
        """(pixmap, dx, dy): the part drawn for a node at ``r``, and where its top-left
        sits relative to the node's top-left in device pixels."""
        ts = self.text_scale
        if part == "box":
            ext = r.adjusted(-2, -2, 2, 2)
        else:
            tags = self._tag_list(ng, flags) if lod == "full" else []
            if not tags and not self._badge_list(ng, flags):
                return (None, 0, 0)
            f = font(10.5 * min(ts, 1.5), True)
            fm = QFontMetricsF(f)
            tags_w = sum(fm.horizontalAdvance(tg) + 14 for tg in tags)
            d = 26.0 * min(ts, 1.4)
            ext = QRectF(r.left() - 4, r.top() - d * 1.2, max(r.width() + d, 10 + tags_w) + 8,
                         r.height() + d * 1.2 + fm.height() + 8 + self.TAG_GAP)
        w = max(1, int(math.ceil(ext.width() * sc * dpr)) + 2)
        h = max(1, int(math.ceil(ext.height() * sc * dpr)) + 2)
        pm = QPixmap(w, h)
        pm.setDevicePixelRatio(dpr)
        pm.fill(Qt.transparent)
        q = QPainter(pm)
        q.setRenderHint(QPainter.Antialiasing, True)
        q.setRenderHint(QPainter.TextAntialiasing, True)
        # keep the node at the same sub-pixel phase as its top-left corner is rounded to
        q.setTransform(QTransform(sc, 0, 0, sc, (r.left() - ext.left()) * sc, (r.top() - ext.top()) * sc))
        rr = QRectF(0, 0, r.width(), r.height())
        shifted = NodeGeom(ng.id, ng.node, r.width() / 2, r.height() / 2, r.width(), r.height(),
                           ng.step, ng.style)
        draw = self._paint_op if ng.node.kind == "op" else self._paint_tensor
        draw(q, shifted, rr, flags, lod, part)
        q.end()
        return (pm, -(r.left() - ext.left()) * sc, -(r.top() - ext.top()) * sc)

    def _paint_tensor(self, p, ng, r, flags, lod, part: str = "all") -> None:
        t = self.theme
        tracked = ng.style == "tracked" or ("requires_grad" in flags or "grad_fn" in flags)
        error = "error" in flags
        missing = "missing_requires_grad" in flags
        leaf_rg = "leaf" in flags and "requires_grad" in flags
        if part == "decor":
            self._badges(p, r, self._badge_list(ng, flags), lod)
            if lod == "full":
                self._tags(p, r, self._tag_list(ng, flags),
                           t.untracked_border if not tracked else t.tracked_border)
            return
        fill = qcolor(t.tracked_fill if tracked else t.untracked_fill)
        if error:
            fill = qcolor(t.error_fill)
        radius = min(12.0, r.height() / 3)
        p.setPen(Qt.NoPen)
        p.setBrush(fill)
        p.drawRoundedRect(r, radius, radius)
        if not tracked and not error and lod != "tiny":
            # hatching says "outside the graph" without relying on colour
            p.setBrush(QBrush(qcolor(t.hatch), Qt.BDiagPattern))
            p.drawRoundedRect(r, radius, radius)
        if error:
            border, width = t.error, 5.0
        elif missing:
            border, width = t.warning, 4.0
        elif leaf_rg:
            border, width = t.leaf_border, 5.0
        else:
            border, width = (t.tracked_border if tracked else t.untracked_border), 2.2
        pen = QPen(qcolor(border), width)
        if missing:
            pen.setStyle(Qt.DashLine)
        p.setPen(pen)
        p.setBrush(Qt.NoBrush)
        p.drawRoundedRect(r.adjusted(width / 2, width / 2, -width / 2, -width / 2), radius, radius)
        if part == "box":
            return
        if lod == "full":
            self._node_text(p, ng, r, bold=True)
        # badges: top-right corner, drawn in every non-tiny level so the marks survive zooming out
        self._badges(p, r, self._badge_list(ng, flags), lod)
        if lod == "full":
            self._tags(p, r, self._tag_list(ng, flags),
                       t.untracked_border if not tracked else t.tracked_border)

    def _badge_list(self, ng, flags) -> list:
        t = self.theme
        badges = []
        if ng.node.kind == "op":
            if "error" in flags:
                badges.append(("!", t.error, t.error_text))
            if "detached" in flags:
                badges.append(("✂", t.edge_detach, t.error_text))
            return badges
        if "error" in flags:
            badges.append(("!", t.error, t.error_text))
        elif "missing_requires_grad" in flags:
            badges.append(("?", t.warning, t.warning_text, "triangle"))
        if "leaf" in flags and "requires_grad" in flags:
            badges.append(("∇", t.badge_bg, t.badge_text))
        if "param" in flags:
            badges.append(("θ", t.param_badge_bg, t.badge_text))
        return badges

    @staticmethod
    def _tag_list(ng, flags) -> list:
        if ng.node.kind == "op":
            return []
        tracked = ng.style == "tracked" or ("requires_grad" in flags or "grad_fn" in flags)
        tags = []
        if getattr(ng.node, "ghost_of", None):
            # a copy drawn beside one more consumer: the same tensor, not a new one
            tags.append("shared")
        if not tracked:
            tags.append("no grad")
        if "retains_grad" in flags:
            tags.append("retain_grad")
        if "hook" in flags:
            tags.append("hook")
        if "inplace" in flags:
            tags.append("in-place")
        if "view" in flags:
            tags.append("view")
        return tags

    def _paint_op(self, p, ng, r, flags, lod, part: str = "all") -> None:
        t = self.theme
        if part == "decor":
            self._badges(p, r, self._badge_list(ng, flags), lod)
            return
        error = "error" in flags
        nograd = ng.style == "op_nograd"
        fill = qcolor(t.op_nograd_fill if nograd else t.op_fill)
        radius = r.height() / 2
        branch = "branch" in flags
        p.setBrush(fill)
        if error:
            pen = QPen(qcolor(t.error), 5.0)
        elif branch:
            pen = QPen(qcolor(t.branch), 3.5)
        else:
            pen = QPen(qcolor(t.edge_nograd if nograd else t.op_border), 2.0)
            if nograd:
                pen.setStyle(Qt.DashLine)
        p.setPen(pen)
        if branch:
            # a branch point is a diamond-ended hexagon: the usual flowchart "decision"
            poly = QPolygonF([QPointF(r.left(), r.center().y()),
                              QPointF(r.left() + radius, r.top()),
                              QPointF(r.right() - radius, r.top()),
                              QPointF(r.right(), r.center().y()),
                              QPointF(r.right() - radius, r.bottom()),
                              QPointF(r.left() + radius, r.bottom())])
            p.drawPolygon(poly)
        else:
            p.drawRoundedRect(r, radius, radius)
        if part == "box":
            return
        if lod == "full":
            self._node_text(p, ng, r, bold=False)
        self._badges(p, r, self._badge_list(ng, flags), lod)

    def _node_text(self, p, ng, r, bold) -> None:
        t = self.theme
        node = ng.node
        label = str(node.label or ng.id)
        detail = node.detail or ""
        if self.values_hidden and node.kind == "op":
            flags = node.flags or ()
            if "branch" in flags:
                detail = self.HIDDEN_DETAIL
            elif "error" in flags:
                detail = ""   # "raised RuntimeError" answers "which line fails?"
        if isinstance(detail, (list, tuple)):
            detail_lines = [str(x) for x in detail if x]
        else:
            detail_lines = [x for x in str(detail).split("\n") if x]
        ts = self.text_scale
        inner = r.adjusted(8, 2, -8, -2)
        lines = 1 + min(len(detail_lines), 2)
        # the label takes what the box allows: scaled text never spills out of its node
        label_px = min((LABEL_PX if node.kind == "tensor" else LABEL_PX - 2) * ts,
                       inner.height() * (0.62 if lines > 1 else 0.8))
        detail_px = min(DETAIL_PX * ts, inner.height() * 0.36 / max(1, lines - 1))
        show_detail = detail_lines and detail_px * p.transform().m22() >= MIN_TEXT_PX * 0.9
        f = font(label_px, bold)
        fm = QFontMetricsF(f)
        wide = fm.horizontalAdvance(label)
        if wide > inner.width() and label_px > 9:
            # shrink a long name (down to 70%) before eliding it
            label_px = max(label_px * 0.7, label_px * inner.width() / wide)
            f = font(label_px, bold)
            fm = QFontMetricsF(f)
        p.setFont(f)
        p.setPen(qcolor(t.node_text))
        # a parameter's path differs at its end ("enc.cell.weight_ih" and "..._hh"):
        # cut in the middle, where the shared part is
        label = fm.elidedText(label, Qt.ElideMiddle if "." in label and _PATH.match(label)
                              else Qt.ElideRight, inner.width())
        if not show_detail:
            p.drawText(inner, Qt.AlignCenter, label)
            return
        fd = font(detail_px)
        fmd = QFontMetricsF(fd)
        shown = detail_lines[:lines - 1]
        total = fm.height() + fmd.height() * len(shown)
        y = inner.center().y() - total / 2
        p.drawText(QRectF(inner.left(), y, inner.width(), fm.height()), Qt.AlignCenter, label)
        y += fm.height()
        p.setFont(fd)
        p.setPen(qcolor(t.node_detail))
        for line in shown:
            p.drawText(QRectF(inner.left(), y, inner.width(), fmd.height()), Qt.AlignCenter,
                       fmd.elidedText(line, Qt.ElideRight, inner.width()))
            y += fmd.height()

    def _footprint(self, r: QRectF) -> QRectF:
        """Where a node drawn in ``r`` (scene units: its box and tags, ``marks_rect``)
        puts ink: also the badges above it (``_badges``), which a label must not
        cover either (a ∇ under a .grad box)."""
        return r.adjusted(-3, -3 - self._badge_size(r) * _BADGE_RISE, 3, 3)

    def _badge_size(self, r: QRectF) -> float:
        return min(26.0, r.height() * 0.62) * min(self.text_scale, 1.4)

    def _badges(self, p, r, badges, lod) -> None:
        if not badges or lod == "tiny":
            return
        d = self._badge_size(r)
        x = r.right() - d * 0.55
        # mostly above the box: a short name ("t2") in a narrow box stays readable
        y = r.top() - d * _BADGE_RISE
        for text, bg, fg, *shape in badges:
            box = QRectF(x - d / 2, y, d, d)
            p.setPen(QPen(qcolor(self.theme.canvas_bg), 2.0))
            p.setBrush(qcolor(bg))
            if shape:
                # a warning is a triangle, an error a circle: the shape tells them apart
                tb = box.adjusted(-d * 0.12, -d * 0.1, d * 0.12, d * 0.05)
                p.drawPolygon(QPolygonF([QPointF(tb.center().x(), tb.top()), tb.bottomRight(),
                                         tb.bottomLeft()]))
                box = box.adjusted(0, d * 0.18, 0, 0)
            else:
                p.drawEllipse(box)
            if lod == "full":
                p.setPen(qcolor(fg))
                p.setFont(font(d * (0.6 if shape else 0.68), True))
                p.drawText(box, Qt.AlignCenter, text)
            x -= d * 1.1

    # scene units between a node's box and the tags hung below it: clear of its border
    # (5 px when it marks an error)
    TAG_GAP = 4.0

    def _tag_boxes(self, r, tags) -> list:
        """(tag, box) for each tag: a row hung just below the box, so it covers neither
        the detail text nor the border. The glow and the selection ring go around the
        node and this row together (``marks_rect``), so they never cross a tag either."""
        f = font(10.5 * min(self.text_scale, 1.5), True)
        fm = QFontMetricsF(f)
        x = r.left() + 6
        h = fm.height() + 2
        out = []
        for tag in tags:
            w = fm.horizontalAdvance(tag) + 10
            out.append((tag, QRectF(x, r.bottom() + self.TAG_GAP, w, h)))
            x += w + 4
        return out

    def marks_rect(self, ng) -> QRectF:
        """The node's box with the tags hung below it (scene units): what a ring goes around."""
        r = _rect(ng)
        if ng.node.kind == "op":
            return r
        for _tag, box in self._tag_boxes(r, self._tag_list(ng, self.shown_flags(ng.node))):
            r = r.united(box)
        return r

    def _tags(self, p, r, tags, colour) -> None:
        if not tags:
            return
        p.setFont(font(10.5 * min(self.text_scale, 1.5), True))
        for tag, box in self._tag_boxes(r, tags):
            h = box.height()
            p.setPen(QPen(qcolor(colour), 1.5))
            p.setBrush(qcolor(self.theme.canvas_bg))
            p.drawRoundedRect(box, h / 2, h / 2)
            p.setPen(qcolor(colour))
            p.drawText(box, Qt.AlignCenter, tag)

    # -- overlays ---------------------------------------------------------------------
    def paint_overlay(self, p: QPainter, to_device: QTransform, frame, limit: float,
                      selected=None, spotlight: bool = False, device_rect: QRectF | None = None,
                      scale: float = 1.0) -> None:
        """Frame overlays drawn in device pixels on top of the static layer."""
        t = self.theme
        nodes = self.geom.nodes
        highlight = [nodes[i] for i in _ids(getattr(frame, "highlight", None)) if i in nodes
                     and nodes[i].step <= limit] if frame is not None else []
        lod = lod_for(scale, self.geom, self.text_scale)
        freed = getattr(frame, "freed_at", None) if frame is not None else None
        if freed and device_rect is not None and lod != "tiny":
            self._paint_freed(p, to_device, freed, frame.cursor, limit, device_rect, lod,
                              pills=False)
        if spotlight and highlight and device_rect is not None:
            dim = QPainterPath()
            dim.addRect(device_rect)
            holes = QPainterPath()
            # the spotlight never dims what the teacher is talking about: the
            # selected node and the error / missing-requires_grad marks as shown
            # (the banner's culprit was the faintest thing on screen)
            lit = list(highlight)
            if selected in nodes and nodes[selected].step <= limit:
                lit.append(nodes[selected])
            lit.extend(ng for ng in self._marked() if ng.step <= limit)
            for ng in lit:
                # a rounded box just around the node: an ellipse around a wide node
                # reaches into its neighbours and leaves them half dimmed
                dr = to_device.mapRect(self.marks_rect(ng))
                m = max(10.0, to_device.mapRect(_rect(ng)).height() * 0.3)
                holes.addRoundedRect(dr.adjusted(-m, -m, m, m), 2 * m, 2 * m)
            p.setPen(Qt.NoPen)
            p.setBrush(qcolor(t.spotlight_dim))
            p.drawPath(dim.subtracted(holes))
        # edges carrying gradient at this backward step: thick, in the current colour
        edge_grads = dict(getattr(frame, "edge_grads", None) or {}) if frame is not None else {}
        labels = []
        near = QRectF()
        for (src, dst), text in edge_grads.items():
            s, d = nodes.get(src), nodes.get(dst)
            if s is None or d is None:
                continue
            path = QPainterPath()
            route = edge_route(self.geom, s, d)
            if route is not None:
                _lane_path(path, route)
            else:
                _curve(path, *edge_ends(s, d, self.geom))
            path = to_device.map(path)
            p.setPen(QPen(qcolor(t.current), max(3.0, 4.0 * min(scale, 1.5)), Qt.SolidLine,
                          Qt.RoundCap))
            p.setBrush(Qt.NoBrush)
            p.drawPath(path)
            labels.append((path, "∂ " + str(text)))
            near = near.united(path.boundingRect())
        for ng in highlight:
            self._glow(p, to_device.mapRect(self.marks_rect(ng)), t.current, ng.node.kind == "op")
        ringed = list(highlight)
        if selected and selected in nodes and nodes[selected].step <= limit:
            dr = to_device.mapRect(self.marks_rect(nodes[selected]))
            p.setPen(QPen(qcolor(t.selection), 3.0, Qt.DashLine))
            p.setBrush(Qt.NoBrush)
            p.drawRoundedRect(dr.adjusted(-6, -6, 6, 6), 10, 10)
            ringed.append(nodes[selected])
        if ringed and lod != "tiny":
            # the glow and the selection ring cover the node's badges and tags (the
            # warning triangle, "no grad"): draw them again on top
            p.save()
            p.setTransform(to_device)
            for ng in ringed:
                draw = self._paint_op if ng.node.kind == "op" else self._paint_tensor
                draw(p, ng, _rect(ng), self.shown_flags(ng.node), lod, "decor")
            p.restore()
        if freed and device_rect is not None and lod == "full":
            # the "freed" pills above the glow, which covered half of one
            self._paint_freed(p, to_device, freed, frame.cursor, limit, device_rect, lod,
                              wash=False)
        bounds = device_rect
        # NOTE [label placement]: labels never sit on a node when they can help it.
        # Obstacles are the visible node boxes near the labelled edges and leaves and
        # every label already placed; each label takes the first free spot among a few
        # candidates (greedy), .grad boxes first (they belong to one node).
        leaf_grads = (getattr(frame, "leaf_grads", None) or {}) if frame is not None else {}
        for tid in leaf_grads:
            ng = nodes.get(tid if isinstance(tid, str) else f"t{tid}")
            if ng is not None:
                near = near.united(to_device.mapRect(_rect(ng)))
        obstacles = []
        if not near.isNull() and lod != "tiny":
            # (at the tiniest level nodes are dots a label may cover; and a margin of
            # 120 px would take in thousands of them)
            inv, _ok = to_device.inverted()
            # as far as a label can reach (a long .grad box is ~350 px wide)
            scene_near = inv.mapRect(near.adjusted(-360, -100, 360, 100))
            obstacles = [to_device.mapRect(self._footprint(self.marks_rect(ng)))
                         for ng in self.geom.nodes_in(scene_near, limit)]
        placed: list = []
        # .grad of leaves: the one accumulated at this step gets the big before -> after box;
        # the others a quiet line under their node, only when there is room to read it
        current = getattr(frame, "accumulated", None) if frame is not None else None
        changed = getattr(frame, "grad_changed", None) or frozenset()
        quiet = []
        for tid, pair in leaf_grads.items():
            nid = tid if isinstance(tid, str) else f"t{tid}"
            ng = nodes.get(nid)
            if ng is None or ng.step > limit:
                continue
            before, after = (pair if isinstance(pair, (tuple, list)) and len(pair) == 2
                             else (None, pair))
            dr = to_device.mapRect(_rect(ng))
            if bounds is not None and not bounds.contains(dr.center()):
                # its node is out of view: kept on screen, the box sat beside some
                # other node and read as that node's .grad (review finding)
                continue
            if current is None or tid == current or len(leaf_grads) == 1:
                # "before -> after" at the step that changed it; at any other the
                # value it has (an old change read as if made at this step)
                text = (f".grad: {_short(before)} → {_short(after)}" if tid in changed
                        else f".grad: {_short(after)}")
                cands = [QPointF(dr.center().x(), dr.bottom() + 8),
                         QPointF(dr.center().x(), dr.top() - 8),
                         QPointF(dr.right() + 8, dr.center().y()),
                         QPointF(dr.left() - 8, dr.center().y())]
                # after the run every leaf has its .grad: where their boxes would
                # cover nodes (leaves stacked in a column), the quiet line instead
                crowded = tid != current and len(leaf_grads) > 1
                box = self._place_label(p, cands * 2, ("below", "above", "right", "left",
                                                       "below2", "above2", "below3", "above3"),
                                        text, obstacles, placed, bounds, scale,
                                        optional=crowded)
                if box is None and lod == "full":
                    quiet.append((ng, dr, f".grad {_short(after)}"))
            elif lod == "full":
                quiet.append((ng, dr, f".grad {_short(after)}"))
        for path, text in labels:
            cands, sides = [], []
            for tpos in (0.5, 0.3, 0.7):
                pt = path.pointAtPercent(tpos)
                cands += [pt] * 5
                sides += ["centre", "above", "below", "above2", "below2"]
            for tpos in (0.5, 0.3, 0.7):
                pt = path.pointAtPercent(tpos)
                cands += [pt] * 2
                sides += ["above3", "below3"]
            self._place_label(p, cands, sides, text, obstacles, placed, bounds, scale)
        if quiet:
            f = font(11 * self.text_scale)
            fm = QFontMetricsF(f)
            p.setFont(f)
            p.setPen(qcolor(t.node_detail))
            for ng, dr, text in quiet:
                text = fm.elidedText(text, Qt.ElideRight, max(dr.width() * 1.6, 60))
                w = fm.horizontalAdvance(text)
                box = QRectF(dr.center().x() - w / 2, dr.bottom() + 2, w, fm.height())
                # a line under its own node only; over another node (or its badges,
                # or a label) it is left out: the inspector has the value
                own = to_device.mapRect(self._footprint(self.marks_rect(ng)))
                if any(r != own and r.intersects(box) for r in obstacles) or \
                        any(r.intersects(box) for r in placed):
                    continue
                p.drawText(box, Qt.AlignHCenter | Qt.AlignTop, text)

    def _marked(self) -> list:
        """The nodes whose error / missing-requires_grad mark is shown, once per
        geometry version and quiz state (a walk over every node at every step
        made a spotlit step of a 60,000-node graph 6x slower)."""
        key = (self.geom.version, self.values_hidden)
        cached = self.__dict__.get("_marked_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        out = [ng for ng in self.geom.nodes.values() if ng.node.flags
               and not self._SPOTLIT.isdisjoint(self.shown_flags(ng.node))]
        self._marked_cache = (key, out)
        return out

    def _paint_freed(self, p, to_device, freed: dict, cursor: int, limit, device_rect,
                     lod, wash: bool = True, pills: bool = True) -> None:
        """Ops whose saved values a backward pass has freed by this step (NOTE
        [released] in capture/backward.py): washed out (``wash``), with a "freed"
        pill under them (``pills``; drawn after the current step's glow). A second
        backward through them raises; retain_graph=True keeps them."""
        t = self.theme
        inv, ok = to_device.inverted()
        if not ok:
            return
        veil = qcolor(t.canvas_bg)
        # washed, still readable on a projector: at 95 the op's name keeps about
        # 4.5:1 against its fill and its node line 3:1 (140 left 2.9 and 2.1)
        veil.setAlpha(95)
        # as big as a node's detail line at this zoom, within reason
        sc = abs(to_device.m11())
        f = font(max(9.0, min(18.0, 11.0 * sc * min(self.text_scale, 1.5))), True)
        fm = QFontMetricsF(f)
        p.setFont(f)
        # a pill never covers a region's label ("tor[freed]grad()"): the washed
        # node and the legend still say it
        labels = ([to_device.mapRect(r) for _, r in self._region_boxes(limit)]
                  if self.regions and lod == "full" else [])
        for ng in self.geom.nodes_in(inv.mapRect(device_rect), limit):
            at = freed.get(ng.id)
            if at is None or at > cursor or ng.node.kind != "op":
                continue
            dr = to_device.mapRect(_rect(ng))
            if wash:
                p.setPen(Qt.NoPen)
                p.setBrush(veil)
                p.drawRoundedRect(dr, dr.height() / 2, dr.height() / 2)
            if pills and lod == "full":
                text = "freed"
                w, h = fm.horizontalAdvance(text) + 10, fm.height() + 2
                if w > dr.width() or h > dr.height() * 0.6:
                    continue   # zoomed out: a pill bigger than its op covered the row
                pill = QRectF(dr.center().x() - w / 2, dr.bottom() + 3, w, h)
                if any(pill.intersects(r) for r in labels):
                    continue
                p.setBrush(qcolor(t.canvas_bg))
                p.setPen(QPen(qcolor(t.node_detail), 1.2, Qt.DashLine))
                p.drawRoundedRect(pill, h / 2, h / 2)
                p.setPen(qcolor(t.node_detail))
                p.drawText(pill, Qt.AlignCenter, text)

    def _glow(self, p, dr: QRectF, colour: str, pill: bool) -> None:
        c = qcolor(colour)
        for i, (grow, alpha, width) in enumerate(((16, 50, 12), (10, 90, 8), (5, 255, 4))):
            c.setAlpha(alpha)
            p.setPen(QPen(c, width))
            p.setBrush(Qt.NoBrush)
            r = dr.adjusted(-grow, -grow, grow, grow)
            rad = r.height() / 2 if pill else 14
            p.drawRoundedRect(r, rad, rad)

    def _place_label(self, p, cands, sides, text, obstacles, placed, bounds, scale,
                     optional: bool = False):
        """Draw ``text`` in a box at the first candidate spot that covers no node and
        no label placed before (NOTE [label placement]); the least covered one when
        none is free, unless ``optional``: then nothing is drawn and None returned.
        Long texts are elided, and the font shrinks a little when the view is
        zoomed out, so a label never dwarfs the nodes it explains."""
        t = self.theme
        px = OVERLAY_PX * self.text_scale * max(0.8, min(1.0, scale / 0.7))
        f = font(px, True)
        fm = QFontMetricsF(f)
        text = fm.elidedText(text, Qt.ElideMiddle, max(160.0, 400.0 * self.text_scale))
        w = fm.horizontalAdvance(text) + 16
        h = fm.height() + 8
        best, best_cost, best_i = None, None, None
        for i, (pt, side) in enumerate(zip(cands, sides)):
            if side.startswith("below"):
                k = int(side[5:] or 1) - 1
                box = QRectF(pt.x() - w / 2, pt.y() + 4 + k * (h + 8), w, h)
            elif side.startswith("above"):
                k = int(side[5:] or 1) - 1
                box = QRectF(pt.x() - w / 2, pt.y() - h - 4 - k * (h + 8), w, h)
            elif side == "right":
                box = QRectF(pt.x(), pt.y() - h / 2, w, h)
            elif side == "left":
                box = QRectF(pt.x() - w, pt.y() - h / 2, w, h)
            else:
                box = QRectF(pt.x() - w / 2, pt.y() - h / 2, w, h)
            if bounds is not None:
                # keep the whole label on screen: a cut-off number is worse than a shift
                dx = max(0.0, bounds.left() + 4 - box.left()) - max(0.0, box.right() - bounds.right() + 4)
                dy = max(0.0, bounds.top() + 4 - box.top()) - max(0.0, box.bottom() - bounds.bottom() + 4)
                box.translate(dx, dy)
            cost = i * 0.5          # earlier candidates (the middle of the edge) first
            for r in obstacles:
                if r.intersects(box):
                    ov = r.intersected(box)
                    cost += 3.0 * ov.width() * ov.height()
            for r in placed:
                if r.intersects(box):
                    ov = r.intersected(box)
                    cost += 5.0 * ov.width() * ov.height()
            if best_cost is None or cost < best_cost:
                best, best_cost, best_i = box, cost, i
            if cost <= i * 0.5:
                break              # a free spot: take it
        box = best
        if optional and best_cost > best_i * 0.5:
            return None            # it would cover a node or a label: left out
        placed.append(box.adjusted(-3, -3, 3, 3))
        anchor = cands[0] if best_i is None else cands[best_i]
        gap_y = max(box.top() - anchor.y(), anchor.y() - box.bottom(), 0.0)
        gap_x = max(box.left() - anchor.x(), anchor.x() - box.right(), 0.0)
        if gap_y > 6 or gap_x > 6:
            # moved away from what it labels: a thin leader says which edge or leaf
            end = QPointF(min(max(anchor.x(), box.left() + 6), box.right() - 6),
                          box.bottom() if anchor.y() > box.bottom() else
                          box.top() if anchor.y() < box.top() else box.center().y())
            p.setPen(QPen(qcolor(t.grad_label_border), 1.6, Qt.DotLine))
            p.drawLine(anchor, end)
        p.setPen(QPen(qcolor(t.grad_label_border), 2.0))
        p.setBrush(qcolor(t.grad_label_bg))
        p.drawRoundedRect(box, 6, 6)
        p.setFont(f)
        p.setPen(qcolor(t.grad_label_text))
        p.drawText(box, Qt.AlignCenter, text)
        return box

    def _label_box(self, p, pt: QPointF, text: str, border: str, anchor_top=False,
                   bounds: QRectF | None = None) -> None:
        t = self.theme
        f = font(OVERLAY_PX * self.text_scale, True)
        fm = QFontMetricsF(f)
        w = fm.horizontalAdvance(text) + 16
        h = fm.height() + 8
        box = QRectF(pt.x() - w / 2, pt.y() if anchor_top else pt.y() - h / 2, w, h)
        if bounds is not None:
            # keep the whole label on screen: a cut-off number is worse than a shifted box
            dx = max(0.0, bounds.left() + 4 - box.left()) - max(0.0, box.right() - bounds.right() + 4)
            dy = max(0.0, bounds.top() + 4 - box.top()) - max(0.0, box.bottom() - bounds.bottom() + 4)
            box.translate(dx, dy)
        p.setPen(QPen(qcolor(border), 2.0))
        p.setBrush(qcolor(t.grad_label_bg))
        p.drawRoundedRect(box, 6, 6)
        p.setFont(f)
        p.setPen(qcolor(t.grad_label_text))
        p.drawText(box, Qt.AlignCenter, text)


# -- geometry helpers -----------------------------------------------------------------
_BADGE_RISE = 0.72   # of a badge's size, how far it stands above its node's box


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


_PATH = re.compile(r"[\w.\[\]]+\Z")   # a dotted module path: model.0.weight, layers[1].bias


def _ids(highlight) -> list:
    if not highlight:
        return []
    return [h if isinstance(h, str) else f"t{h}" for h in highlight]


def _short(summary) -> str:
    """A gradient summary as short text (strings pass through)."""
    if summary is None:
        return "None"
    if isinstance(summary, str):
        return summary
    try:
        from graphscope.model.summary import format_summary  # the shared formatter, once landed
        return format_summary(summary, 40)
    except Exception:
        pass
    if isinstance(summary, dict):
        v = summary.get("value")
        if v is not None:
            return _fmt_value(v)
        st = summary.get("stats") or {}
        if "mean" in st:
            return f"mean {st['mean']:.3g}"
    return _fmt_value(summary)


def _fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        inner = ", ".join(_fmt_value(x) for x in v[:6])
        return f"[{inner}{', …' if len(v) > 6 else ''}]"
    return str(v)
