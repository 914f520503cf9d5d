"""The grad-mode region boxes (``no_grad``, ``inference_mode`` ...) and their labels:
the part of ``ScenePainter`` (canvas_paint.py) that draws them, and the box
geometry that fitting the view needs too."""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF, QPainterPath, QPen

from graphscope.ui.canvas_primitives import FADED, _clusters, _rect, _union, font, qcolor
from graphscope.ui.canvas_scene import REGION_PAD


# how far a region's box and label reach past its nodes, at most (its padding,
# a label above or below it, and a label wider than the box)
REGION_REACH = 400.0

class RegionPainter:
    """Mixin of ``ScenePainter``: uses its ``geom``, ``theme``, ``text_scale``,
    ``regions`` and ``TAG_GAP``."""

    def paint_regions(self, p, scale, limit, lod, view: QRectF | None = None,
                      part: str = "box") -> None:
        """The grad-off boxes (``part`` "box"), or their labels ("label"), or both.
        A box around an earlier pass's nodes only fades with them (NOTE [pass
        focus] in model/timeline.py: bright boxes framed washed-out nodes)."""
        faded = self._faded_test()
        for reg, cluster, box, continued in self._region_clusters():
            if view is not None and not view.intersects(box.adjusted(-40, -80, 400, 40)):
                continue
            members = [ng for ng in cluster if ng.step <= limit]
            if members:
                fade = faded is not None and all(faded(ng.node) for ng in members)
                if fade:
                    p.setOpacity(FADED)
                self._paint_region_box(p, reg, members, lod, limit, part, continued)
                if fade:
                    p.setOpacity(1.0)

    def _region_clusters(self) -> list:
        """[(region, cluster of its nodes, box of the cluster, continued)], once per
        geometry version: a no_grad block in a 20,000-op loop has thousands of
        clusters, and grouping them on every paint cost more than drawing them.
        Clusters are made from all of a region's nodes; a paint boxes only the
        members already visible. ``continued``: the cluster goes on from the one
        before it in one run of the block, which the layout split (a wrapped row
        put ``mul`` at the end of one row and ``report`` at the start of the next,
        and a laptop showed two "torch.no_grad(), lines 9-10" boxes, as if the
        block had run twice: GUI review); a block run again in a loop has other
        steps between its clusters."""
        key = (self.geom.version, len(self.regions), tuple(id(r) for r in self.regions))
        cached = getattr(self, "_clusters_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        nodes = self.geom.nodes
        out = []
        steps = None
        for reg in self.regions:
            members = [nodes[i] for i in getattr(reg, "node_ids", ()) if i in nodes]
            if not members:
                continue
            clusters = _clusters(members)
            for cluster in clusters:
                cluster.sort(key=lambda ng: ng.step)
            clusters.sort(key=lambda c: c[0].step)
            last = prev = None  # the node of the latest step so far, and its cluster
            for cluster in clusters:
                continued = False
                if last is not None:
                    if steps is None:
                        steps = sorted(ng.step for ng in nodes.values())
                    head = cluster[0]
                    # one run of the block: no step of another node between the two,
                    # and this one does not start the block again (a loop whose body
                    # is only the block has no step between its runs either, code
                    # review): it shares the other's last step (mul's output) or
                    # goes on further down the block's lines
                    between = bisect_left(steps, head.step) > bisect_right(steps, last.step)
                    continued = not between and (head.step <= last.step
                                                 or _goes_on(head, last, prev))
                out.append((reg, cluster, _union(cluster), continued))
                if last is None or cluster[-1].step > last.step:
                    last, prev = cluster[-1], cluster
        self._clusters_cache = (key, out)
        return out

    def _paint_region_box(self, p, reg, members: list, lod, limit=math.inf,
                          part: str = "all", continued: bool = False) -> None:
        t = self.theme
        text = _region_text(reg, continued)
        f = self._region_font()
        fm = QFontMetricsF(f)
        label_w = fm.horizontalAdvance(text) + 4
        box, label_h = self._region_box(members, lod, label_w if lod == "full" else 0.0)
        kind = getattr(reg, "kind", "no_grad")
        fill = t.inference_fill if kind == "inference_mode" else t.region_fill
        if part != "label":
            p.setBrush(qcolor(fill))
            pen = QPen(qcolor(t.region_border), 2.0)
            pen.setStyle(Qt.DashLine)
            p.setPen(pen if lod != "tiny" else Qt.NoPen)
            outsiders = self._outsiders(box, members, limit) if lod == "full" else ()
            if outsiders:
                p.drawPath(_box_with_holes(box, [self.ink_rect(ng) for ng in outsiders]))
            else:
                p.drawRoundedRect(box, 14, 14)
        if lod == "full" and part != "box":
            p.setPen(qcolor(t.region_text))
            p.setFont(f)
            tr = self._region_label_rect(box, label_w, label_h, limit)
            # on the box's own colour: an edge running along the box's top passes
            # under the words, not through them
            back = QRectF(tr.left() - 3, tr.center().y() - fm.height() / 2 - 1,
                          tr.width() + 4, fm.height() + 2)
            p.fillRect(back, qcolor(t.canvas_bg))
            if box.contains(back):
                p.fillRect(back, qcolor(fill))   # translucent: as the box looks there
            p.drawText(tr, Qt.AlignLeft | Qt.AlignVCenter, text)

    def _outsiders(self, box: QRectF, members: list, limit) -> list:
        """Nodes shown at ``limit`` that lie inside the box but are not in the region:
        the box goes around them (``_box_with_holes``). The layout puts nodes where
        there is room, region or not: in grad-modes a copy of x (requires grad,
        drawn next to its use on line 14) sat inside the set_grad_enabled(False)
        box, and read as made with grad off (GUI review)."""
        inside = {ng.id for ng in members}
        return [ng for ng in self.geom.nodes_in(box.adjusted(4, 4, -4, -4), limit)
                if ng.id not in inside]

    def regions_extent(self, limit) -> QRectF:
        """Scene box of the region boxes and their labels drawn at ``limit`` (a
        label wider than its box reaches past the nodes: fitting must show it).
        Once per geometry version and text scale for the whole graph (``limit``
        NEVER), which the fit asks for several times a step (NOTE [a steady view])."""
        key = (self.geom.version, self.text_scale, len(self.regions),
               tuple(id(r) for r in self.regions)) if limit == math.inf else None
        cached = self.__dict__.get("_extent_cache")
        if key is not None and cached is not None and cached[0] == key:
            return QRectF(cached[1])
        out = QRectF()
        for box, label in self._region_boxes(limit):
            out = out.united(box).united(label)
        if key is not None:
            self._extent_cache = (key, QRectF(out))
        return out

    def _region_boxes(self, limit, near: QRectF | None = None) -> list:
        """(box, label rect) in scene coordinates of every region drawn at ``limit``
        (of those whose nodes lie within ``near`` and a label's reach of it, when
        given: a training loop has a no_grad box per iteration, and the overlay
        placed its pills and chips against all thousand of them every frame, a
        step in follow mode took 170 ms and up to 8 s: code review)."""
        out = []
        fm = QFontMetricsF(self._region_font())
        reach = near.adjusted(-REGION_REACH, -REGION_REACH, REGION_REACH, REGION_REACH) \
            if near is not None else None
        for reg, cluster, union, continued in self._region_clusters():
            if reach is not None and not reach.intersects(union):
                continue
            members = [ng for ng in cluster if ng.step <= limit]
            if not members:
                continue
            label_w = fm.horizontalAdvance(_region_text(reg, continued)) + 4
            box, label_h = self._region_box(members, "full", label_w)
            out.append((box, self._region_label_rect(box, label_w, label_h, limit)))
        return out

    def _region_box(self, members: list, lod, label_w: float = 0.0) -> tuple:
        """(the box drawn around the ``members``' boxes, the height kept for its label).

        A box narrower than its label (``label_w``) reaches right to hold it, as
        far as the next node allows: "torch.no_grad(), lines 3-4" ran 145 px past
        the box around one op (visual review).

        The box is padded (room for the label above, the "no grad" tags below),
        then trimmed where the padding would reach over a node that is not in
        the region: the layout does not keep other rows clear of a region, and a
        box edge through the row above read as if that row were inside. A node
        among the members' own boxes cannot be trimmed away; it stays inside.
        Trimmed against every node, visible yet or not, so a box never jumps
        while stepping; once per geometry version and member count."""
        full = lod == "full"
        key = (self.geom.version, id(members[0]), len(members), full, self.text_scale,
               round(label_w))
        cache = self.__dict__.setdefault("_region_box_cache", {})
        hit = cache.get(key)
        if hit is not None:
            return hit
        r = _union(members)
        pad = REGION_PAD
        label_h = self._region_label_h()
        bottom = self.region_foot() if full else pad
        box = r.adjusted(-pad, -pad - (label_h if full else 0), pad, bottom)
        if full and box.width() < label_w + 20:
            box.setRight(box.left() + label_w + 20)
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

    def _region_label_h(self) -> float:
        return 26.0 * min(self.text_scale, 2.0)

    def region_head(self) -> float:
        """How far a region's box reaches above its nodes (NOTE [lanes over a region]
        in canvas_scene.py: the lanes keep out of it)."""
        return REGION_PAD + self._region_label_h()

    def region_foot(self) -> float:
        """How far a region's box reaches below its nodes: the tensors made in a
        region nearly all carry a "no grad" tag below them, and the box's bottom
        edge passes under that row, not through it."""
        tag_h = QFontMetricsF(font(10.5 * min(self.text_scale, 1.5), True)).height() + 2
        return max(REGION_PAD, self.TAG_GAP + tag_h + 8)

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


def _region_text(reg, continued: bool) -> str:
    text = getattr(reg, "label", "") or getattr(reg, "kind", "") or "no_grad"
    return f"{text} (continued)" if continued else text


def _box_with_holes(box: QRectF, rects) -> QPainterPath:
    """The region's rounded box with a rounded hole around each of ``rects`` (the
    nodes not in it, their badges and tags): its dashed border goes round them,
    and its colour stays off them."""
    path = QPainterPath()
    path.addRoundedRect(box, 14, 14)
    holes = QPainterPath()
    for r in rects:
        holes.addRoundedRect(r.adjusted(-6, -6, 6, 6), 12, 12)
    return path.subtracted(holes.simplified())


def _line(ng) -> int:
    return getattr(ng.node, "line", None) or 0


def _goes_on(head, last, prev) -> bool:
    """Whether cluster ``head`` starts further on in the block than where the one
    before (``prev``, ending at ``last``) stopped: on a later line, or on the same
    line at another op than the line's first (``r = w * 100 + 1`` split between
    its mul and its add, code review; a loop running a one-line block again starts
    that line's first op again)."""
    if _line(head) != _line(last):
        return _line(head) > _line(last)
    ops = [ng for ng in prev if ng.node.kind == "op" and _line(ng) == _line(head)]
    head_op = head if head.node.kind == "op" else None
    return bool(ops) and head_op is not None and head_op.node.label != ops[0].node.label
