"""Drawing the graph: the static layer (regions, edges, nodes) and, through its mixins,
the region boxes (canvas_regions.py) and the overlays of one frame (canvas_overlay.py:
current node glow, gradient labels, ``.grad`` before -> after, selection, spotlight);
colours, fonts and edge shapes come from canvas_primitives.py. Used by the interactive canvas, by PNG/SVG export and by the benchmark, so
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
from PySide6.QtGui import (QBrush, QFontMetricsF, QPainter, QPainterPath, QPen, QPixmap,
                           QPolygonF, QTransform)

from graphscope.ui.canvas_density import DENSITY_MIN, density_image
from graphscope.ui.canvas_overlay import OverlayPainter
from graphscope.ui.canvas_primitives import (FADED, DETAIL_PX, LABEL_PX, MIN_TEXT_PX, _arrow, _curve,
                                             _lane_path, _rect, _segment_meets, _unit, font,
                                             lod_for, qcolor)
from graphscope.ui.canvas_regions import RegionPainter
from graphscope.model.timeline import QUIZ_ANSWERS, shown_flags
from graphscope.model.label_cut import expr_label
from graphscope.model.layout import BRANCH_TIPS, TEXT_MARGIN
from graphscope.ui.canvas_scene import (NEVER, NodeGeom, SceneGeometry, edge_ends, edge_route,
                                        node_style)

_BADGE_RISE = 0.72   # of a badge's size, how far it stands above its node's box


_NO_STEPS: dict = {}     # never written to


def _draw_split(p, draw, items, lo: int, hi: int, steps, focus) -> None:
    """``draw(items[lo:hi])``, the part before ``focus.start`` (an earlier pass:
    NOTE [pass focus] in model/timeline.py) faded; ``steps`` are the items'
    steps, in order."""
    mid = lo if focus is None else min(hi, max(lo, bisect_right(steps, focus.start - 1)))
    if mid > lo:
        p.setOpacity(FADED)
        draw(items[lo:mid])
        p.setOpacity(1.0)
    if hi > mid:
        draw(items[mid:hi] if (mid, hi) != (0, len(items)) else items)


def shrunk_font(label: str, px: float, wide: float, width: float, bold: bool):
    """(font, metrics) for a name ``wide`` at ``px``, too wide for ``width``:
    smaller, down to 70%, until it fits (the canvas cuts what still does not).
    Fonts come in whole pixels, so one step to the computed size left a name 1%
    too wide as it was, and it lost its middle ("model.…s.grad" beside a whole
    "model.weight.grad")."""
    least = px * 0.7
    for _ in range(3):
        px = max(least, min(px - 0.5, px * width / wide))
        f = font(px, bold)
        fm = QFontMetricsF(f)
        wide = fm.horizontalAdvance(label)
        if wide <= width or px <= least:
            break
    return f, fm


def _mark_place(route, a, b) -> tuple:
    """(tip, the point before it, centre or None) of a "×N" mark on a lane ``route``
    or on the curve from ``a`` to ``b`` (ScenePainter.times_mark_ends)."""
    if route is None:
        return b, a, None
    tip, before = route[-1], route[-2]
    if len(route) >= 3 and abs(tip.x() - before.x()) < 40:
        p, q = route[-3], route[-2]
        return tip, before, QPointF((p.x() + q.x()) / 2, (p.y() + q.y()) / 2)
    return tip, before, None


def _route_cut(route) -> tuple | None:
    """(middle, direction) of the longest leg of a lane ``route``, where a detach
    edge's cut goes (NOTE [one cut per detach]); None for a route of no length."""
    best, at = 0.0, None
    for a, b in zip(route, route[1:]):
        n = math.hypot(b.x() - a.x(), b.y() - a.y())
        if n > best:
            best, at = n, (a, b)
    if at is None or best < 30.0:
        return None
    a, b = at
    return (a + b) / 2, _unit(a, b)


class ScenePainter(RegionPainter, OverlayPainter):
    """Paints one SceneGeometry in one theme. Holds no Qt widget state. The region
    boxes (canvas_regions.py) and the overlays of a frame (canvas_overlay.py) are
    its mixins."""

    def __init__(self, geom: SceneGeometry, theme, text_scale: float = 1.0, regions=()):
        self.geom = geom
        self.theme = theme
        self.text_scale = float(text_scale)
        self.regions = list(regions or ())

    @property
    def text_scale(self) -> float:
        return self._text_scale

    @text_scale.setter
    def text_scale(self, f: float) -> None:
        self._text_scale = float(f)
        geom = self.geom
        if geom is None:
            return
        head, foot = self.region_head(), self.region_foot()
        if (head, foot) != (geom.region_head, geom.region_foot):
            # the lanes keep out of the region boxes (NOTE [lanes over a region])
            geom.region_head, geom.region_foot = head, foot
            geom._routes_version = -1

    # -- static layer -------------------------------------------------------------
    def paint_static(self, p: QPainter, scale: float, view: QRectF, limit: float = NEVER,
                     start: float = -math.inf, exclude=frozenset(), regions: bool = True) -> str:
        """Draw what is visible at cursor ``limit`` (and was not at ``start``), skipping
        ``exclude`` (nodes drawn by an animation). ``view`` is the visible scene rect,
        for culling. Returns the level of detail used."""
        lod = lod_for(scale, self.geom, self.text_scale)
        self._scale_now = scale
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
        faded = self._faded_test()
        for ng in visible:
            if ng.id not in exclude:
                self.paint_node(p, ng, lod, FADED if faded and faded(ng.node) else 1.0)
        if regions and start == -math.inf and lod == "full":
            # the labels last: an edge passing the box's top must not strike one out
            # (they keep off nodes by themselves: _region_label_rect)
            self.paint_regions(p, scale, limit, lod, view.adjusted(-200, -200, 200, 200),
                               part="label")
        return lod

    def _paint_tiny(self, p, limit, start, exclude, scale=None, view=None) -> None:
        self._paint_tiny_groups(p, limit, start, exclude, scale, view)
        # nodes whose marks are not shown yet (NOTE [late flags]) or before Reveal
        # are drawn in the fill of the marks shown: at the lowest detail w had the
        # error's colour from step 1 (code review)
        p.setPen(Qt.NoPen)
        for ng, style in self._restyled():
            if start < ng.step <= limit and ng.id not in exclude:
                p.setBrush(qcolor(self._tiny_colour(style)))
                p.drawRect(_rect(ng))

    def _restyled(self) -> list:
        """[(node geometry, fill group)] of the nodes whose shown flags give another
        fill group than their own; once per geometry version and state of the marks."""
        key = (self.geom.version, self.marks_version)
        cached = self.__dict__.get("_restyled_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        nodes = self.geom.nodes
        ids = set(self.flag_steps)
        if self.values_hidden:
            ids.update(ng.id for ng in nodes.values()
                       if ng.node.flags and not self._QUIZ_ANSWERS.isdisjoint(ng.node.flags))
        out = []
        for nid in ids:
            ng = nodes.get(nid)
            if ng is not None and ng.node is not None:
                style = node_style(ng.node, self.shown_flags(ng.node))
                if style != ng.style:
                    out.append((ng, style))
        self._restyled_cache = (key, out)
        return out

    def _paint_tiny_groups(self, p, limit, start, exclude, scale, view) -> None:
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
        # NOTE [pass focus] in timeline.py: the items are in step order, and an
        # earlier pass's are those before its first step; what the pass keeps of
        # them (nodes, and the edges between two of them) is drawn again, plain,
        # below, grouped (an edge from one of them into the pass starts at or
        # after the pass, so never fades)
        focus = self.focus if self.fade_passes else None
        kept = self._kept_items(focus) if focus is not None and focus.keep else None
        for kind, (steps, lines) in edge_groups.items():
            lo = 0 if start == -math.inf else bisect_right(steps, start)
            hi = bisect_right(steps, limit)
            if hi > lo:
                pen = QPen(qcolor(self._edge_colour(kind)), 1.0)
                pen.setCosmetic(True)
                p.setPen(pen)
                _draw_split(p, p.drawLines, lines, lo, hi, steps, focus)
        p.setPen(Qt.NoPen)
        for style, (steps, rects) in node_groups.items():
            lo = 0 if start == -math.inf else bisect_right(steps, start)
            hi = bisect_right(steps, limit)
            if hi > lo:
                p.setBrush(qcolor(self._tiny_colour(style)))
                _draw_split(p, p.drawRects, rects, lo, hi, steps, focus)
        if kept is not None:
            lines_by_kind, rects_by_style = kept
            for kind, items in lines_by_kind.items():
                pen = QPen(qcolor(self._edge_colour(kind)), 1.0)
                pen.setCosmetic(True)
                p.setPen(pen)
                p.drawLines([ln for step, ln in items if start < step <= limit])
            p.setPen(Qt.NoPen)
            for style, items in rects_by_style.items():
                p.setBrush(qcolor(self._tiny_colour(style)))
                p.drawRects([r for step, r in items if start < step <= limit])

    def _kept_items(self, focus) -> tuple:
        """({edge kind: [(step, line)]}, {fill group: [(step, rect)]}) of what pass
        ``focus`` keeps of the earlier ones, drawn plain at the lowest detail;
        once per focus and geometry (a pass that walks back through every earlier
        one keeps thousands of nodes: one call per node cost 5x the paint, code
        review)."""
        key = (id(focus), self.geom.version)
        cached = self.__dict__.get("_kept_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        keep, nodes = focus.keep, self.geom.nodes
        rects: dict = {}
        for nid in keep:
            ng = nodes.get(nid)
            if ng is not None:
                rects.setdefault(ng.style, []).append((ng.step, _rect(ng)))
        lines: dict = {}
        for e in self.geom.edges:
            if e.src in keep and e.dst in keep:
                s, d = nodes[e.src], nodes[e.dst]
                out = lines.setdefault(e.kind, [])
                # as tiny_items draws it: a jump back to the next row along its lane
                route = edge_route(self.geom, s, d, check=False) if d.x < s.x else None
                if route is None:
                    out.append((e.step, QLineF(s.x, s.y, d.x, d.y)))
                else:
                    out.extend((e.step, QLineF(a, b)) for a, b in zip(route, route[1:]))
        out = (lines, rects)
        self._kept_cache = (key, out)
        return out

    def _paint_tiny_slow(self, p, limit, start, exclude) -> None:
        nodes = self.geom
        by_kind: dict = {}
        faded = self._faded_test()
        for e in nodes.edges_upto(limit, start):
            if e.src in exclude or e.dst in exclude:
                continue
            s, d = nodes.nodes[e.src], nodes.nodes[e.dst]
            key = (e.kind, bool(faded and (faded(s.node) or faded(d.node))))
            by_kind.setdefault(key, []).append(QLineF(s.x, s.y, d.x, d.y))
        for (kind, fade), lines in by_kind.items():
            pen = QPen(qcolor(self._edge_colour(kind)), 1.0)
            pen.setCosmetic(True)
            p.setPen(pen)
            p.setOpacity(FADED if fade else 1.0)
            p.drawLines(lines)
        groups: dict = {}
        for ng in nodes.nodes_upto(limit, start):
            if ng.id not in exclude:
                key = (ng.style, bool(faded and faded(ng.node)))
                groups.setdefault(key, []).append(_rect(ng))
        p.setPen(Qt.NoPen)
        for (style, fade), rects in groups.items():
            p.setBrush(qcolor(self._tiny_colour(style)))
            p.setOpacity(FADED if fade else 1.0)
            p.drawRects(rects)
        p.setOpacity(1.0)

    def _tiny_colour(self, style: str) -> str:
        t = self.theme
        return {"tracked": t.tracked_border, "untracked": t.untracked_border,
                "error": t.error, "missing": t.warning, "op": t.op_border,
                "op_nograd": t.edge_nograd}.get(style, t.op_border)

    def _edge_colour(self, kind: str) -> str:
        t = self.theme
        return {"nograd": t.edge_nograd, "detach": t.edge_detach,
                "control": t.branch, "seed": t.grad_label_border}.get(kind, t.edge)

    def _faded_test(self):
        """NOTE [pass focus] in timeline.py: a test of whether a node is drawn faded
        (None when nothing is). The marks a spotlight keeps lit (the error, a
        missing requires_grad) never fade: the banner points at them."""
        focus = self.focus
        if focus is None or not self.fade_passes:
            return None
        spotlit, shown = self._SPOTLIT, self.shown_flags

        def faded(node) -> bool:
            return focus.faded(node) and (not node.flags or spotlit.isdisjoint(shown(node)))
        return faded

    def _paint_edges(self, p, edges, cull, lod, exclude) -> None:
        paths: dict = {}
        heads: dict = {}
        cuts = []
        twice = []      # (arrow's tip, direction in, times, colour): NOTE [an input read twice]
        nodes = self.geom.nodes
        faded = self._faded_test()
        for e in edges:
            if e.src in exclude or e.dst in exclude:
                continue
            s, d = nodes[e.src], nodes[e.dst]
            if not _segment_meets(cull, s, d):
                continue
            # an edge of an earlier pass fades with either end (NOTE [pass focus])
            key = (e.kind, bool(faded and (faded(s.node) or faded(d.node))))
            path = paths.get(key)
            if path is None:
                path = paths[key] = QPainterPath()
                heads[key] = QPainterPath()
                # two heads on one spot (two inputs entering an op together) must
                # not cancel out into a hollow one, as the default odd-even fill does
                heads[key].setFillRule(Qt.WindingFill)
            route = edge_route(self.geom, s, d)
            if route is not None:
                _lane_path(path, route)
                _arrow(heads[key], route[-2], route[-1], 11.0)
                if e.kind == "detach" and s.node.kind == "op":
                    cut = _route_cut(route)
                    if cut is not None:
                        cuts.append((*cut, True))
                if e.mult > 1:
                    twice.append((*_mark_place(route, None, None), e.mult, key))
                continue
            a, b = edge_ends(s, d, self.geom)
            if e.mult > 1:
                twice.append((*_mark_place(None, a, b), e.mult, key))
            if e.kind == "detach" and s.node.kind == "op":
                # NOTE [one cut per detach]: the cut is on the edge from detach()
                # to the tensor it makes, whichever way it is drawn; the edge into
                # the op is whole. It was broken on whichever of the two edges ran
                # straight (before the op in one scenario, after it in another, and
                # on both where both were straight: visual review)
                m = (a + b) / 2
                gap = _unit(a, b) * 9.0
                path.moveTo(a)
                path.lineTo(m - gap)
                path.moveTo(m + gap)
                path.lineTo(b)
                cuts.append((m, _unit(a, b), False))
            else:
                _curve(path, a, b)
            _arrow(heads[key], a, b, 11.0)
        for key, path in paths.items():
            kind, fade = key
            c = qcolor(self._edge_colour(kind))
            pen = QPen(c, 2.6 if kind == "data" else 2.4)
            if kind == "nograd":
                pen.setStyle(Qt.DashLine)
            elif kind == "control":
                # NOTE [where a decision sent the program]: control flow, no data;
                # dotted, so it reads apart from the dashes of untracked data
                pen.setStyle(Qt.DotLine)
                pen.setCapStyle(Qt.RoundCap)
            elif kind == "seed":
                # NOTE [seed gradients] in graph.py: the gradient backward starts from
                pen.setStyle(Qt.DashDotLine)
            if fade:
                p.setOpacity(FADED)
            p.setPen(pen)
            p.setBrush(Qt.NoBrush)
            if kind in ("nograd", "control", "seed") and self._scale_now < 0.75:
                # zoomed out, the dashes are a few pixels each: drawn without
                # antialiasing (a picture of a 60-step training loop, 1.3 million
                # units of dashed lanes, spent 4.5 s stroking them: fuzz review)
                was = p.testRenderHint(QPainter.Antialiasing)
                p.setRenderHint(QPainter.Antialiasing, False)
                p.drawPath(path)
                p.setRenderHint(QPainter.Antialiasing, was)
            else:
                p.drawPath(path)
            p.setPen(Qt.NoPen)
            p.setBrush(c)
            p.drawPath(heads[key])
            if fade:
                p.setOpacity(1.0)
        if cuts:
            self._paint_cuts(p, cuts, lod)
        if twice and lod != "tiny":
            self._paint_times(p, twice)

    def _paint_times(self, p, marks) -> None:
        """NOTE [an input read twice] in canvas_scene.py: "×2" on the line, before
        its arrowhead, in the edge's colour on the canvas's background."""
        for tip, before, centre, times, (kind, fade) in marks:
            if fade:
                p.setOpacity(FADED)
            self.paint_times_mark(p, tip, before, centre, times, self._edge_colour(kind))
            if fade:
                p.setOpacity(1.0)

    def times_mark_ends(self, s, d):
        """(arrow's tip, the point before it, the centre or None) of the edge ``s`` ->
        ``d`` as drawn, in scene units: where its "×2" goes (NOTE [an input read
        twice]). A lane ends in a short stub: its mark sits on the lane's last
        upright run, where it went beside the line, past the lane (visual review)."""
        route = edge_route(self.geom, s, d)
        if route is not None:
            return _mark_place(route, None, None)
        return _mark_place(None, *edge_ends(s, d, self.geom))

    def paint_times_mark(self, p, tip: QPointF, before: QPointF, centre, times: int,
                         colour: str, scale: float = 1.0) -> QRectF:
        """One "×N" mark before the arrowhead at ``tip``, or at ``centre`` (``scale``:
        device pixels per scene unit when ``p`` draws in device pixels, as the
        overlay does); its box."""
        f = font(11 * min(self.text_scale, 2.0) * scale, True)
        p.setFont(f)
        fm = QFontMetricsF(f)
        text = f"\u00d7{times}"
        u = QPointF(1.0, 0.0) if abs(tip.y() - before.y()) < 0.5 or tip.x() > before.x() \
            else _unit(before, tip)
        w, h = fm.horizontalAdvance(text) + 6 * scale, fm.height()
        c = centre if centre is not None else tip - u * (14 * scale + w / 2)   # clear of the head
        box = QRectF(c.x() - w / 2, c.y() - h / 2, w, h)
        p.setPen(Qt.NoPen)
        p.setBrush(qcolor(self.theme.canvas_bg))
        p.drawRoundedRect(box, h / 2, h / 2)
        p.setPen(qcolor(colour))
        p.drawText(box, Qt.AlignCenter, text)
        return box

    def _paint_cuts(self, p, cuts, lod) -> None:
        """detach(): the edge is broken in the middle, with a scissors mark."""
        t = self.theme
        pen = QPen(qcolor(t.edge_detach), 2.6)
        gap = QPen(qcolor(t.canvas_bg), 4.0)
        for m, u, on_line in cuts:
            n = QPointF(-u.y(), u.x())
            if on_line:    # a lane drawn whole: its break is painted over it
                p.setPen(gap)
                p.drawLine(m - u * 9.0, m + u * 9.0)
            p.setPen(pen)
            for off in (-5.0, 5.0):
                c = m + u * off
                p.drawLine(c - n * 9 + u * 3, c + n * 9 - u * 3)
            if lod == "full":
                p.setFont(font(15 * min(self.text_scale, 1.5), True))
                p.drawText(QRectF(m.x() - 14, m.y() - 32, 28, 20), Qt.AlignCenter, "✂")

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
    _QUIZ_ANSWERS = QUIZ_ANSWERS
    # marks the spotlight leaves undimmed (paint_overlay)
    _SPOTLIT = _QUIZ_ANSWERS

    # tensors whose hooks are not on at the current step (FrameState.hooks_off)
    hooks_off: frozenset = frozenset()

    # NOTE [late flags] in graph.py: node id -> {flag: step} (FrameState.flag_steps),
    # and the cursor, past which a flag is not drawn yet
    flag_steps: dict = _NO_STEPS
    marks_cursor = math.inf
    # NOTE [pass focus] in timeline.py: the pass the cursor is in (FrameState.focus),
    # and whether the nodes of earlier passes outside its graph fade (View menu)
    focus = None
    fade_passes = True
    _marks_key = None
    marks_version = 0          # bumped when what shown_flags gives may have changed
    _frame_for_text = None     # the frame whose decision texts are drawn (detail_at)

    def take_frame(self, frame) -> bool:
        """Take what the nodes' own drawing depends on from timeline ``frame``
        (None: everything): the quiz's hidden values (a branch node prints the
        value it read), the hooks that are off and the marks of events still to
        come. True if any changed."""
        hidden = bool(getattr(frame, "values_hidden", False))
        off = getattr(frame, "hooks_off", None) or frozenset()
        # (one shared empty dict: a new one per frame made every step "changed" and
        # rebuilt the cached layer, 5.5 -> 18.6 ms a step at 20,000 ops: code review)
        steps = getattr(frame, "flag_steps", None) or _NO_STEPS
        details = getattr(frame, "detail_steps", None) or _NO_STEPS
        key = getattr(frame, "marks_key", None) if (steps or details) else None
        self._frame_for_text = frame if details else None
        focus = getattr(frame, "focus", None)
        changed = hidden != self.values_hidden or off != self.hooks_off \
            or key != self._marks_key or steps is not self.flag_steps or focus is not self.focus
        self.focus = focus
        self.values_hidden, self.hooks_off = hidden, off
        self.flag_steps, self._marks_key = steps, key
        vs = getattr(frame, "visible_steps", None) if frame is not None else None
        self.marks_cursor = math.inf if vs is None else vs
        if changed:
            self.marks_version += 1
        return changed

    def shown_flags(self, node):
        """The node's flags as drawn: before a quiz's Reveal, the error and
        missing-requires_grad marks are left off, since they give the answer away;
        the hook tag only while a hook is on the tensor; no mark before the step
        of the event it shows (NOTE [late flags] in graph.py)."""
        return shown_flags(node, self.marks_cursor, self.flag_steps, self.values_hidden,
                           self.hooks_off)

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
        tracked = "requires_grad" in flags or "grad_fn" in flags   # (the flags shown)
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
        tracked = "requires_grad" in flags or "grad_fn" in flags   # (the flags shown)
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
        fr = self._frame_for_text
        detail = (fr.detail_at(node) if fr is not None else node.detail) or ""
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
        side = TEXT_MARGIN
        if "branch" in (node.flags or ()):
            # inside the hexagon, not over its pointed ends (UX review: "2.0 ->
            # if-branch (line 5)" ran across them)
            side = max(side, BRANCH_TIPS * r.height())
        inner = r.adjusted(side, 2, -side, -2)
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
            f, fm = shrunk_font(label, label_px, wide, inner.width(), bold)
        p.setFont(f)
        p.setPen(qcolor(t.node_text))
        if wide > inner.width() and not _PATH.match(label):
            # cut again from the whole expression, not from the model's cut of it
            # ("(predic……) ** 2": code review); a cut label with no whole text
            # to go back to is left to Qt's cut below
            full = self.full_text(node) if "\u2026" in label and self.full_text else None
            if full or "\u2026" not in label:
                label = _recut(full or label, fm, inner.width())
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

    def ink_rect(self, ng) -> QRectF:
        """Scene box of what node ``ng`` draws: its box, its tags, its badges if it
        has any (reserving badge room above a node that has none kept a label
        out of the free gap between two rows)."""
        r = self.marks_rect(ng)
        if self._badge_list(ng, self.shown_flags(ng.node)):
            return self._footprint(r)
        return r.adjusted(-3, -3, 3, 3)

    def badge_rect(self, ng) -> QRectF | None:
        """Scene box of the badges ``_badges`` draws on ``ng`` (right-aligned,
        mostly above its box), or None when it has none."""
        n = len(self._badge_list(ng, self.shown_flags(ng.node)))
        if not n:
            return None
        r = _rect(ng)
        d = self._badge_size(r)
        right = r.right() - d * 0.55 + d / 2
        return QRectF(right - d - (n - 1) * d * 1.1, r.top() - d * _BADGE_RISE - d * 0.1,
                      d + (n - 1) * d * 1.1, d * 1.1)

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
    # node -> the whole text its label was cut from, or None (GraphCanvas gives it:
    # the painter has no trace)
    full_text = None
    _scale_now = 1.0     # the zoom of the picture being drawn (set by paint)

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


_PATH = re.compile(r"[\w.\[\]]+\Z")   # a dotted module path: model.0.weight, layers[1].bias


_RECUT: dict = {}   # (label, letters that fit) -> the label cut to them


def _recut(label: str, fm, width: float) -> str:
    """An expression label too wide for its box even in the smallest font (big
    text), cut again as the model cuts one (NOTE [labels cut whole] in
    model/label_cut.py) to the letters that fit, between tokens where that
    reads true (NOTE [a cut that reads true]), not by Qt wherever the last
    letter falls (visual review at 150%)."""
    n = int(len(label) * width / max(fm.horizontalAdvance(label), 1.0))
    for _ in range(4):
        if n < 5:
            break
        key = (label, n)
        cut = _RECUT.get(key)
        if cut is None:
            if len(_RECUT) > 4096:
                _RECUT.clear()
            cut = _RECUT[key] = expr_label(label, n)
        if fm.horizontalAdvance(cut) <= width:
            return cut
        n -= 1 + n // 8
    return label
