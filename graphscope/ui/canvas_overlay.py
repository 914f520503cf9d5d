"""The overlays of one frame, drawn in device pixels over the static layer: the
current node's glow, gradient labels, ``.grad`` before -> after, freed values,
the selection and the spotlight veil. The part of ``ScenePainter``
(canvas_paint.py) that changes with every step."""
from __future__ import annotations

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPainterPath, QPen, QTransform

from graphscope.model.summary import format_summary
from graphscope.ui.canvas_primitives import (FADED, OVERLAY_PX, _curve, _lane_path, _rect, font,
                                             lod_for, qcolor)
from graphscope.ui.canvas_scene import edge_ends, edge_route


STRANGER_MARGIN = 8.0    # px around a chip in which another edge's node counts as touched
ORDER_COST = 400.0       # two chips of one node's edges the other way round
LEADER_COST = 1.0        # per pixel of a label's leader: a spot on another edge costs 60
GLOW_NEIGHBOURS_MAX = 8   # ringed nodes whose glow and ring keep off their neighbours


class OverlayPainter:
    """Mixin of ``ScenePainter``: uses its ``geom``, ``theme``, ``text_scale`` and
    the node marks it knows (``shown_flags``, ``marks_rect``)."""

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
            # (not the current op's: its Node freed what it saved as it ran, and
            # washed out, the node being explained was the faintest name on the
            # canvas: visual review. Its pill says it.)
            self._paint_freed(p, to_device, freed, frame.cursor, limit, device_rect, lod,
                              pills=False, keep={ng.id for ng in highlight})
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
        lit_order: list = []        # the edge of each label
        near = QRectF()
        for (src, dst), text in edge_grads.items():
            s, d = nodes.get(src), nodes.get(dst)
            if s is None or d is None:
                continue
            path = self.edge_path(s, d, to_device)
            p.setPen(QPen(qcolor(t.current), max(3.0, 4.0 * min(scale, 1.5)), Qt.SolidLine,
                          Qt.RoundCap))
            p.setBrush(Qt.NoBrush)
            p.drawPath(path)
            labels.append((path, "∂ " + str(text)))
            # (with a margin: a level edge's box has no height, and Qt's
            # intersected() of it is a null rect, which left its chips no
            # obstacles at all: they sat on the current node)
            near = near.united(path.boundingRect().adjusted(-1, -1, 1, 1))
            lit_order.append((src, dst))
        # an input read twice keeps its "×2" on the lit edge (NOTE [an input read
        # twice] in canvas_scene.py): the lit line was drawn through it, on the
        # very step it explains (visual review); chips keep off it
        times_boxes = []
        if lod != "tiny":
            for src, dst in lit_order:
                e = self.geom.edge_geom(src, dst)
                if e is not None and e.mult > 1:
                    tip, before, centre = self.times_mark_ends(nodes[src], nodes[dst])
                    times_boxes.append(self.paint_times_mark(
                        p, to_device.map(tip), to_device.map(before),
                        None if centre is None else to_device.map(centre), e.mult,
                        t.current, scale=max(0.6, min(scale, 2.0))))
        ringed = list(highlight)
        sel = nodes[selected] if selected and selected in nodes and \
            nodes[selected].step <= limit else None
        if sel is not None:
            ringed.append(sel)
        if ringed:
            # the glow and the selection ring keep off a neighbour's box and tags
            # (x1's "no grad" tag, between x1 and the shared weight w, sat inside w's
            # glow and read as w's: visual review); over the ringed node's own
            # badges and tags they are drawn again below
            p.save()
            clip = self._ring_clip(ringed, to_device, limit, device_rect)
            if clip is not None:
                p.setClipPath(clip)
            for ng in highlight:
                self._glow(p, to_device.mapRect(self.marks_rect(ng)), t.current,
                           ng.node.kind == "op")
            if sel is not None:
                dr = to_device.mapRect(self.marks_rect(sel))
                p.setPen(QPen(qcolor(t.selection), 3.0, Qt.DashLine))
                p.setBrush(Qt.NoBrush)
                p.drawRoundedRect(dr.adjusted(-6, -6, 6, 6), 10, 10)
            p.restore()
        if ringed and lod != "tiny":
            # the glow and the ring cover the ringed node's own badges and tags (the
            # warning triangle, "no grad"): drawn again on top
            p.save()
            p.setTransform(to_device)
            for ng in {ng.node.id: ng for ng in ringed}.values():
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
        # candidates (greedy), .grad boxes first (they belong to one node). A gradient
        # chip keeps off a node's words but may touch its rim (``_words_of``): the
        # edges between a shared weight and its two muls are as short as a chip is
        # wide, and kept off whole boxes, its chips went rows away, beside the other
        # path (visual review); a spot far off costs by its leader's length too.
        leaf_grads = (getattr(frame, "leaf_grads", None) or {}) if frame is not None else {}
        for tid in leaf_grads:
            ng = nodes.get(tid if isinstance(tid, str) else f"t{tid}")
            if ng is not None:
                dr = to_device.mapRect(_rect(ng))
                # only leaves in view get a box (below): one far off screen made
                # the obstacles thousands of nodes a label never reaches
                if bounds is None or bounds.intersects(dr):
                    near = near.united(dr)
        if bounds is not None and not near.isNull():
            # labels are kept on screen: nodes far outside the view are no obstacles.
            # (A lit edge from the first node of a long run to its last reached
            # across the whole graph, and 33,000 nodes were tested for each spot of
            # each chip: 2.7 s a step, GUI review)
            near = near.intersected(bounds.adjusted(-40, -40, 40, 40))
        obstacles = []
        if not near.isNull() and lod != "tiny":
            # (at the tiniest level nodes are dots a label may cover; and a margin of
            # 120 px would take in thousands of them)
            inv, _ok = to_device.inverted()
            # as far as a label can reach (a long .grad box is ~350 px wide)
            scene_near = inv.mapRect(near.adjusted(-360, -100, 360, 100))
            near_nodes = list(self.geom.nodes_in(scene_near, limit))
            obstacles = [to_device.mapRect(self.ink_rect(ng)) for ng in near_nodes]
            # a chip may touch a node's rim, not its words (NOTE [label placement])
            chip_obstacles = [_words_of(r) for r in obstacles]
            rims = [(ng.id, r) for ng, r in zip(near_nodes, obstacles)]
            # and off a node's badges (∇, θ, !), which its rim holds, where it can:
            # a chip kept from touching another edge's node sat on b's ∇ (code
            # review); a third of the cost of words, as a badge half covered still
            # reads
            badge_boxes = [to_device.mapRect(b) for b in map(self.badge_rect, near_nodes)
                           if b is not None]
            if lod == "full" and self.regions:
                # a region's label too: a gradient chip sat on "torch.no_grad(),
                # lines 9-10" in the welcome scenario
                region_labels = [to_device.mapRect(label) for box, label
                                 in self._region_boxes(limit, scene_near)
                                 if box.intersects(scene_near)]
                obstacles += region_labels
                chip_obstacles += region_labels
        else:
            chip_obstacles, rims, badge_boxes = [], [], []
        obstacles += times_boxes
        chip_obstacles += times_boxes
        placed: list = []
        self.placed_labels = placed   # (device boxes of this paint's labels: tests, hit tests)
        self.chip_boxes = {}          # (src, dst) -> its gradient chip's box (tests)
        # .grad of leaves: the one accumulated at this step first (before -> after), then
        # the others where a box fits, else a quiet line under their node when there
        # is room to read it
        current = getattr(frame, "accumulated", None) if frame is not None else None
        changed = getattr(frame, "grad_changed", None) or frozenset()
        quiet = []
        boxed = 0
        for tid, pair in sorted(leaf_grads.items(), key=lambda kv: kv[0] != current):
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
            boxed += 1
            if boxed > LEAF_BOXES_MAX:
                # thousands of leaves in view (torch.stack of 3,000): each box was
                # placed against every other, 84 million tests and 24 s for one
                # picture (fuzz review); past a readable number the inspector has them
                break
            # every leaf in view gets its box: at a step that accumulated into one
            # leaf, the others had only grey captions (or nothing), and the last
            # backward step read as if their gradients were erased (visual review).
            # "before -> after" at the step that changed it; at any other the
            # value it has (an old change read as if made at this step)
            text = (f".grad: {_short(before)} → {_short(after)}" if tid in changed
                    else f".grad: {_short(after)}")
            b, a, r, l = (QPointF(dr.center().x(), dr.bottom() + 8),
                          QPointF(dr.center().x(), dr.top() - 8),
                          QPointF(dr.right() + 8, dr.center().y()),
                          QPointF(dr.left() - 8, dr.center().y()))
            inside = QPointF(dr.center().x(), dr.top() + dr.height() * 0.62 - 4)
            # beside the node first; then rows further out, with a leader; then
            # over its own lower half (the shape line, "scalar float32", not its
            # name), which reads as its own. A leaf between two others had only
            # covered spots beside it, and its box sat on the next op's name (GUI
            # review); over its own lower half before the rows further out, the box
            # at the step that fills it hid the leaf's shape line, across the leaf
            # and its edges (welcome, tensor-hooks: visual review)
            cands = [b, a, r, l, b, a, b, a, inside]
            sides = ("below", "above", "right", "left", "below2", "above2",
                     "below4", "above4", "below")
            own = to_device.mapRect(self.ink_rect(ng))
            # its own node is no obstacle but for its name (the upper part: a
            # box kept on screen was pushed back over it; the glyphs reach
            # below the middle), its badges above and its tags below
            others = [o for o in obstacles if o != own]
            others.append(QRectF(dr.left(), dr.top(), dr.width(), dr.height() * 0.62))
            badges = self.badge_rect(ng)
            if badges is not None:
                others.append(to_device.mapRect(badges))
            if own.bottom() > dr.bottom() + 4:
                others.append(QRectF(own.left(), dr.bottom(), own.width(),
                                     own.bottom() - dr.bottom()))
            # after the run every leaf has its .grad: where their boxes would
            # cover nodes (leaves stacked in a column), the quiet line instead
            crowded = tid != current and len(leaf_grads) > 1
            box = self._place_label(p, cands, sides, text, others, placed, bounds,
                                    scale, optional=crowded)
            if box is None and lod == "full":
                quiet.append((ng, dr, f".grad {_short(after)}"))
        # the other edges near the chips: a chip on one read as its gradient (welcome,
        # backward: w's "∂ [1., -8., 36.]" sat on the x -> mul edge, the very edge
        # that carries none, GUI review)
        lines = self._edge_points(labels, to_device, limit) if labels else []
        siblings: dict = {}     # a node -> (edge's middle y, chip's y) of its chips so far
        # (top to bottom: the first of two edges from one node takes its spot freely,
        # and the second keeps to its side of it)
        chips = sorted(((path.pointAtPercent(0.5).y(), path, text, own)
                        for (path, text), own in zip(labels, lit_order)), key=lambda c: c[0])
        for mid_y, path, text, own in chips:
            cands, sides = [], []
            for tpos in (0.5, 0.3, 0.7):
                pt = path.pointAtPercent(tpos)
                cands += [pt] * 5
                sides += ["centre", "above", "below", "above2", "below2"]
            for tpos in (0.5, 0.3, 0.7):
                pt = path.pointAtPercent(tpos)
                cands += [pt] * 2
                sides += ["above3", "below3"]
            # a chip touching a node that is not one of its edge's ends reads as
            # that node's gradient (welcome at a projector: w's chip beside x); and
            # the chips of two edges from one node keep the edges' order (the
            # shared weight's two paths: visual review)
            box = self._place_label(p, cands, sides, text, chip_obstacles, placed, bounds,
                                    scale,
                                    lines=[(b, segs) for key, b, segs in lines if key != own],
                                    leader_cost=LEADER_COST,
                                    strangers=[r for nid, r in rims if nid not in own],
                                    order=(mid_y, siblings.get(own[0], ())), soft=badge_boxes)
            if box is not None:
                siblings.setdefault(own[0], []).append((mid_y, box.center().y()))
                self.chip_boxes[own] = box
        if quiet:
            f = font(11 * self.text_scale)
            fm = QFontMetricsF(f)
            p.setFont(f)
            p.setPen(qcolor(t.node_detail))
            for ng, dr, text in quiet:
                text = fm.elidedText(text, Qt.ElideRight, max(dr.width() * 1.6, 60))
                w = fm.horizontalAdvance(text)
                # under its node's tags too ("in-place", "no grad"): it was written
                # over them (visual check of a training loop)
                own = to_device.mapRect(self.ink_rect(ng))
                top = max(dr.bottom(), own.bottom()) + 2
                box = QRectF(dr.center().x() - w / 2, top, w, fm.height())
                # a line under its own node only; over another node (or its badges,
                # or a label) it is left out: the inspector has the value
                if any(r != own and r.intersects(box) for r in obstacles) or \
                        any(r.intersects(box) for r in placed):
                    continue
                p.drawText(box, Qt.AlignHCenter | Qt.AlignTop, text)

    def edge_path(self, s, d, to_device) -> QPainterPath:
        """The edge from ``s`` to ``d`` as drawn (its lane, else its curve), in device pixels."""
        path = QPainterPath()
        route = edge_route(self.geom, s, d)
        if route is not None:
            _lane_path(path, route)
        else:
            _curve(path, *edge_ends(s, d, self.geom))
        return to_device.map(path)

    def _edge_points(self, labels, to_device, limit) -> list:
        """The visible edges near the labelled ones as line segments in device
        pixels, curves flattened: [((src, dst), bounding box, [QLineF])], one per
        piece of path. (A chip keeps off all but its own: one sat on the next lit
        edge, two chips on one line: second visual review.)"""
        if not self.geom._edge_grid_ready and len(self.geom.edges) > EDGE_POINTS_MAX * 25:
            # the edge grid of a big graph is built when the window is idle (0.46 s
            # at 60,000 edges): not in the paint that follows a run
            return []
        near = QRectF()
        for path, _ in labels:
            near = near.united(path.boundingRect())
        inv, _ok = to_device.inverted()
        edges = self.geom.edges_in(inv.mapRect(near.adjusted(-200, -80, 200, 80)), limit)
        if len(edges) > EDGE_POINTS_MAX:
            return []
        nodes, out, count = self.geom.nodes, [], 0
        for eg in edges:
            path = self.edge_path(nodes[eg.src], nodes[eg.dst], to_device)
            for poly in path.toSubpathPolygons():
                # in pieces of a few segments, each with its own bounds: a long lane
                # flattened into hundreds of segments under one bound had every
                # candidate spot of every chip test all of them (694,000 tests, 4 s
                # for a step of a stopped training loop: GUI review)
                n = len(poly)
                for j in range(0, n - 1, PIECE_SEGMENTS):
                    pts = [poly[i] for i in range(j, min(n, j + PIECE_SEGMENTS + 1))]
                    segs = [QLineF(pts[i], pts[i + 1]) for i in range(len(pts) - 1)]
                    if segs:
                        xs, ys = [q.x() for q in pts], [q.y() for q in pts]
                        bound = QRectF(min(xs) - 1, min(ys) - 1, max(xs) - min(xs) + 2,
                                       max(ys) - min(ys) + 2)
                        out.append(((eg.src, eg.dst), bound, segs))
                        count += len(segs)
        if count > LINE_SEGMENTS_MAX:
            return []   # a thicket of edges: every spot is on some, and testing is slow
        return out

    def _marked(self) -> list:
        """The nodes whose error / missing-requires_grad mark is shown, once per
        geometry version and state of the marks (take_frame; a walk over every node at every step
        made a spotlit step of a 60,000-node graph 6x slower)."""
        key = (self.geom.version, self.marks_version)
        cached = self.__dict__.get("_marked_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        out = [ng for ng in self.geom.nodes.values() if ng.node.flags
               and not self._SPOTLIT.isdisjoint(self.shown_flags(ng.node))]
        self._marked_cache = (key, out)
        return out

    def _paint_freed(self, p, to_device, freed: dict, cursor: int, limit, device_rect,
                     lod, wash: bool = True, pills: bool = True, keep=()) -> None:
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
        labels = ([to_device.mapRect(r) for _, r in self._region_boxes(
                      limit, inv.mapRect(device_rect))]
                  if self.regions and lod == "full" else [])
        faded = self._faded_test()
        for ng in self.geom.nodes_in(inv.mapRect(device_rect), limit):
            at = freed.get(ng.id)
            if at is None or at > cursor or ng.node.kind != "op":
                continue
            dr = to_device.mapRect(_rect(ng))
            # an earlier pass's op is faded already, its pill with it (NOTE [pass focus])
            fade = faded is not None and faded(ng.node)
            if wash and not fade and ng.id not in keep:
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
                if fade:
                    p.setOpacity(FADED)
                p.setBrush(qcolor(t.canvas_bg))
                p.setPen(QPen(qcolor(t.node_detail), 1.2, Qt.DashLine))
                p.drawRoundedRect(pill, h / 2, h / 2)
                p.setPen(qcolor(t.node_detail))
                p.drawText(pill, Qt.AlignCenter, text)
                if fade:
                    p.setOpacity(1.0)

    def _ring_clip(self, ringed, to_device, limit, device_rect) -> QPainterPath | None:
        """Where the glow and the selection ring may paint: not over a neighbour's
        box and tags (a tag hangs outside its box: boxes a row's gap away are
        asked). None: no neighbour that near, or more rings than
        GLOW_NEIGHBOURS_MAX (a backward() of 400 roots lit 400 nodes, and asking
        each one's neighbours made a paint 60% slower: code review)."""
        if len(ringed) > GLOW_NEIGHBOURS_MAX or device_rect is None:
            return None
        inv, _ok = to_device.inverted()
        lit = {ng.node.id for ng in ringed}
        keep_out = QPainterPath()
        for ng in ringed:
            reach = to_device.mapRect(self.marks_rect(ng)).adjusted(-18, -18, 18, 18)
            if not reach.intersects(device_rect):
                continue
            near = inv.mapRect(reach)
            gap = near.height()
            for other in self.geom.nodes_in(near.adjusted(0, -gap, 0, gap), limit):
                if other.node.id in lit:
                    continue
                r = to_device.mapRect(self.marks_rect(other))
                if r.intersects(reach):
                    keep_out.addRoundedRect(r.adjusted(-3, -3, 3, 3), 6, 6)
        if keep_out.isEmpty():
            return None
        whole = QPainterPath()
        whole.addRect(device_rect.adjusted(-40, -40, 40, 40))
        return whole.subtracted(keep_out)

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
                     optional: bool = False, lines=(), leader_cost: float = 0.0,
                     strangers=(), order=None, soft=()):
        """Draw ``text`` in a box at the first candidate spot that covers no node and
        no label placed before (NOTE [label placement]); the least covered one when
        none is free, unless ``optional``: then nothing is drawn and None returned.
        Long texts are elided, and the font shrinks a little when the view is
        zoomed out, so a label never dwarfs the nodes it explains. ``lines``: other
        edges (``_edge_points``); a spot on one of them costs more than a later
        candidate (NOTE [label placement]). ``leader_cost``: per pixel of a spot's
        leader (the chips'); a free spot with a leader then no longer ends the
        search, and the least costly one is taken. Free is free for ``optional``.
        ``strangers``: boxes of nodes the label is not about; a spot that touches
        one (its rim too, with a margin) costs by the area touched. ``order``:
        (the y of what this label is about, [(the y of what another label was
        about, that label's y)]): a spot that puts them the other way round
        costs ORDER_COST. ``soft``: boxes a spot may cover at a third of an
        obstacle's cost (badges)."""
        t = self.theme
        px = OVERLAY_PX * self.text_scale * max(0.8, min(1.0, scale / 0.7))
        f = font(px, True)
        fm = QFontMetricsF(f)
        text = _fit_terms(fm, text, max(160.0, 400.0 * self.text_scale))
        w = fm.horizontalAdvance(text) + 16
        h = fm.height() + 8
        best, best_cost, best_free = None, None, False
        best_i = None
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
            leader = _leader(pt, box)
            if leader is not None:
                # a spot whose leader crosses a node is worse than a free one nearer
                reach = _reach(leader)
                under = 0
                for r in obstacles:
                    if r.intersects(reach) and _crosses(leader, r):
                        under += 1
                        if under >= LINES_COUNTED:
                            break      # (in a thicket of nodes: as bad as it gets)
                cost += 200.0 * under
            if strangers:
                near = box.adjusted(-STRANGER_MARGIN, -STRANGER_MARGIN,
                                    STRANGER_MARGIN, STRANGER_MARGIN)
                for r in strangers:
                    if r.intersects(near):
                        ov = r.intersected(near)
                        cost += ov.width() * ov.height()
            for r in soft:
                if r.intersects(box):
                    ov = r.intersected(box)
                    cost += ov.width() * ov.height()
            if order is not None:
                y = box.center().y()
                for other_y, other_box_y in order[1]:
                    if other_y != order[0] and (order[0] < other_y) != (y < other_box_y):
                        cost += ORDER_COST
            for r in placed:
                if r.intersects(box):
                    ov = r.intersected(box)
                    cost += 5.0 * ov.width() * ov.height()
            if lines:
                inner = box.adjusted(2, 2, -2, -2)
                crossed = 0
                for bound, segs in lines:
                    if bound.intersects(inner) and any(_crosses(seg, inner) for seg in segs):
                        crossed += 1
                        if crossed >= LINES_COUNTED:
                            break      # (a spot on three edges is as bad as on thirty)
                cost += 60.0 * crossed
            free = cost <= i * 0.5
            if leader is not None and leader_cost:
                # a spot far off costs by the way: a chip three rows up, to keep off
                # another edge, sat beside the wrong path of the shared weight, its
                # value read as the other path's (visual review)
                cost += leader_cost * leader.length()
            if best_cost is None or cost < best_cost:
                best, best_cost, best_i, best_free = box, cost, i, free
            if free and (leader is None or not leader_cost):
                break              # a free spot: take it
        box = best
        if optional and not best_free:
            return None            # it would cover a node or a label: left out
        placed.append(box.adjusted(-3, -3, 3, 3))
        anchor = cands[0] if best_i is None else cands[best_i]
        leader = _leader(anchor, box)
        if leader is not None:
            # moved away from what it labels: a thin leader says which edge or leaf,
            # passing behind the nodes it crosses (clipped out), not over their names
            p.save()
            if bounds is not None and obstacles:
                keep = QPainterPath()
                keep.addRect(bounds)
                crossed = QPainterPath()
                for r in obstacles:
                    if _crosses(leader, r):
                        crossed.addRect(r)
                if not crossed.isEmpty():
                    p.setClipPath(keep.subtracted(crossed))
            p.setPen(QPen(qcolor(t.grad_label_border), 1.6, Qt.DotLine))
            p.drawLine(leader)
            p.restore()
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


def _ids(highlight) -> list:
    if not highlight:
        return []
    return [h if isinstance(h, str) else f"t{h}" for h in highlight]


def _short(summary) -> str:
    """A gradient summary as short text (strings pass through)."""
    if isinstance(summary, str):
        return summary
    return format_summary(summary, 40)


EDGE_POINTS_MAX = 200   # edges near the chips sampled; past it (a zoomed-out big graph) none
PIECE_SEGMENTS = 8      # segments of a flattened edge under one bounding box
LEAF_BOXES_MAX = 120    # leaves in view whose .grad gets a box (the current one first)
LINE_SEGMENTS_MAX = 3000   # segments near the chips tested at most (past it, none)
LINES_COUNTED = 3       # edges under a spot (nodes under a leader) counted at most


def _fit_terms(fm, text: str, width: float) -> str:
    """``text`` cut to ``width`` between its terms, not inside them: "before → after"
    keeps its arrow and both sides, each cut at its end; "a + b + c" keeps its first
    and last gradients ("a + … + c"). Cut in the middle, ".grad: mean 0.25 ± 0….ean
    0.33" lost the arrow and read as one garbled number (visual review)."""
    if fm.horizontalAdvance(text) <= width:
        return text
    if " \u2192 " in text:
        before, after = text.split(" \u2192 ", 1)
        head = ".grad: " if before.startswith(".grad: ") else ""
        before = before[len(head):]
        half = (width - fm.horizontalAdvance(head + " \u2192 ")) / 2
        return (head + fm.elidedText(before, Qt.ElideRight, half) + " \u2192 "
                + fm.elidedText(after, Qt.ElideRight, half))
    if " + " in text:
        terms = text.split(" + ")
        short = f"{terms[0]} + \u2026 + {terms[-1]}" if len(terms) > 2 else text
        if fm.horizontalAdvance(short) <= width:
            return short
        half = (width - fm.horizontalAdvance(" + \u2026 + ")) / 2
        return (fm.elidedText(terms[0], Qt.ElideRight, half) + " + \u2026 + "
                + fm.elidedText(terms[-1], Qt.ElideRight, half))
    return fm.elidedText(text, Qt.ElideMiddle, width)


def _words_of(r: QRectF) -> QRectF:
    """A node's box without its rim: the part a gradient chip must keep off. (A
    fifth of the width a side was tried: on a pill whose words fill it, a chip
    then sat on "SumBackward0": code review.)"""
    dx = min(14.0, r.width() * 0.15)
    dy = min(4.0, r.height() * 0.1)
    return r.adjusted(dx, dy, -dx, -dy)


def _leader(anchor: QPointF, box: QRectF) -> QLineF | None:
    """The line from ``anchor`` to the nearest point of ``box``'s edge facing it,
    or None when the box is beside its anchor (no leader needed)."""
    gap_y = max(box.top() - anchor.y(), anchor.y() - box.bottom(), 0.0)
    gap_x = max(box.left() - anchor.x(), anchor.x() - box.right(), 0.0)
    if gap_y <= 6 and gap_x <= 6:
        return None
    end = QPointF(min(max(anchor.x(), box.left() + 6), box.right() - 6),
                  box.bottom() if anchor.y() > box.bottom() else
                  box.top() if anchor.y() < box.top() else box.center().y())
    return QLineF(anchor, end)


def _reach(line: QLineF) -> QRectF:
    """The box around a leader: obstacles outside it cannot cross it."""
    return QRectF(line.p1(), line.p2()).normalized().adjusted(-1, -1, 1, 1)


def _crosses(line: QLineF, r: QRectF) -> bool:
    """Whether segment ``line`` passes through rectangle ``r`` (Liang-Barsky: the
    part of the segment inside the rectangle is not empty)."""
    x0, y0, dx, dy = line.x1(), line.y1(), line.dx(), line.dy()
    lo, hi = 0.0, 1.0
    for p_, q_ in ((-dx, x0 - r.left()), (dx, r.right() - x0),
                   (-dy, y0 - r.top()), (dy, r.bottom() - y0)):
        if p_ == 0:
            if q_ < 0:
                return False      # parallel to this edge and outside it
        else:
            t = q_ / p_
            if p_ < 0:
                lo = max(lo, t)
            else:
                hi = min(hi, t)
            if lo > hi:
                return False
    return True
