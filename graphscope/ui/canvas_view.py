"""The canvas's view: fitting the graph, following the current step when the
fitted graph would be unreadable (NOTE [auto view]), keeping the view on the
graph, zoom and pan. A mixin of ``GraphCanvas``: it uses the widget's size,
its geometry, frame and painter, and the view it keeps (``_scale``, ``_tx``,
``_ty``)."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QTransform

from graphscope.model.layout import FIT_LABEL_ROOM, FIT_MARGIN
from graphscope.ui.canvas_primitives import LABEL_PX
from graphscope.ui.canvas_scene import LANE_CLEAR, NEVER, PORT_GAP

MAX_FIT_SCALE = 2.8      # a small graph is drawn big (a 3-node graph fills the view)
MAX_FIT_LABEL_PX = 52.0  # ... but its labels no bigger than this on screen
READABLE_PX = 12.5       # a label this big on screen reads at a desk
PRESENT_PX = 18.0        # ... and from the back of a lecture hall
# a graph that fits at this share of the readable size is fitted, not followed:
# labels 15 px high in presentation rather than 18 beat a lesson's 9-node graph
# cut at the view's edges and panned at every other step (shared-weights at
# 1280x720 in presentation: 0.88-0.93; visual review)
FIT_ENOUGH = 0.85
FOLLOW_MARGIN = 0.18     # follow recentres once the current node is this close to an edge
PAN_MS = 260
MIN_SCALE, MAX_SCALE = 0.002, 8.0


class CanvasView:
    # NOTE [room kept for the banner]: a run that ended in an error shows its
    # explanation above the canvas at the last step only. The canvas grew and
    # shrank by the banner's height as the cursor left and reached that step, and
    # the fit zoomed and the tidy re-wrapped the graph each time (a second
    # visual review: grad-modes' nodes wrapped into two rows and back between
    # steps 11 and 12). While the banner is hidden its room is kept at the top of
    # the canvas (``top_inset``, given by the window): the graph is fitted below
    # it, so it stays where it is, at one zoom, whether the banner shows or not.
    top_inset = None            # () -> pixels at the top to keep empty; None: none

    def _area(self) -> tuple:
        """(top, width, height) of the part of the canvas the view fits into."""
        w, h = max(self.width(), 1), max(self.height(), 1)
        top = self.top_inset() if self.top_inset is not None else 0
        top = max(0, min(int(top), h - 40))
        return top, w, h - top

    def fit(self, keep_auto: bool = False) -> None:
        """Zoom and pan so every node (and region label) is in view, also those the
        cursor does not show yet (NOTE [a steady view]); a small
        graph is zoomed in up to MAX_FIT_SCALE. ``fit()`` is the user's Fit (key 0): it
        always shows everything and hands the view back to the canvas (NOTE [auto
        view]). ``fit(keep_auto=True)`` is the automatic refit while a run streams in:
        it follows the current node instead when the fitted graph would be unreadable."""
        if keep_auto and self._auto_fit and self._follow and self._auto_view(animate=False):
            return
        self._fit_all()
        if not keep_auto:
            self._auto_fit = True

    def fit_scale(self) -> float:
        """The zoom at which the visible graph fits the view."""
        return self._fit_rect()[1]

    def readable_scale(self) -> float:
        """The least zoom at which node labels are readable (larger in presentation)."""
        px = (PRESENT_PX if self.presentation else READABLE_PX) * self._reading_scale
        # never above the fit's own cap: at 300% a 2-op graph was never fitted
        return min(px, MAX_FIT_LABEL_PX) / (LABEL_PX * self._text_scale)

    def readable_zoom(self) -> float:
        """``readable_scale`` in view heights per scene unit, as the layout's tidy
        measures the zoom of a wrap (NOTE [a wrap that reads] in model/layout.py)."""
        return self.readable_scale() / max(1, self._area()[2])

    def readable_columns(self, col_pitch: float) -> int:
        """How many layout columns of ``col_pitch`` the view shows side by side at a
        readable zoom (NOTE [streamed wrap] in model/layout.py)."""
        return max(3, int(self._area()[1] * 0.9 / max(1.0, col_pitch * self.readable_scale())))

    def _fit_rect(self):
        # NOTE [a steady view]: the whole graph recorded so far, not the part the
        # cursor shows. Fitted to the shown part, a playback of the welcome
        # scenario zoomed 2.8 -> 2.1 -> 1.5 -> 1.4 -> 1.0 over its first five
        # steps while every node was already placed; now the view is the final
        # one from the first step and nodes appear where they will stay. (A run
        # still streaming in grows the graph, and the view with it.)
        r = self._geom.bounds()
        if r.isNull():
            return r, 1.0
        # room for a region's label, which sits above its box or, when other nodes
        # cover that, below it (ScenePainter._region_label_rect)
        label = FIT_LABEL_ROOM * min(self._text_scale, 2.0)
        if self._painter.regions:
            # and for a lane above a region's box on the top row, 24 units below
            # the view's edge (NOTE [lanes over a region] in canvas_scene.py)
            label = max(label, self._geom.region_head + LANE_CLEAR + PORT_GAP + 24)
        m = FIT_MARGIN
        r = r.adjusted(-m, -label, m, label if self._painter.regions else m)
        if self._painter.regions:
            ext = self._painter.regions_extent(NEVER)
            if not ext.isNull():
                r = r.united(ext.adjusted(-20, 0, 20, 0))
        _top, w, h = self._area()
        cap = min(MAX_FIT_SCALE, MAX_FIT_LABEL_PX / (LABEL_PX * self._text_scale))
        return r, min(w / r.width(), h / r.height(), cap)

    def _fit_all(self) -> None:
        self._pan_anim.stop()
        self._following_now = False
        r, s = self._fit_rect()
        if r.isNull():
            self._scale, self._tx, self._ty = 1.0, self.width() / 2, self.height() / 2
            self._invalidate()
            self.update()
            return
        top, w, h = self._area()
        self._set_view(s, w / 2 - r.center().x() * s, top + h / 2 - r.center().y() * s)

    def _current_rect(self) -> QRectF | None:
        """Scene box of the current step's nodes (the frame's highlight), else of the
        newest visible node."""
        nodes = self._geom.nodes
        hl = getattr(self._frame, "highlight", None) if self._frame is not None else None
        ids = [i if isinstance(i, str) else f"t{i}" for i in (hl or ())]
        ngs = [nodes[i] for i in ids if i in nodes and nodes[i].step <= self._limit]
        if not ngs:
            newest = self._geom.last_upto(self._limit)
            ngs = [newest] if newest is not None else []
        if not ngs:
            return None
        r = QRectF(ngs[0].rect)
        for ng in ngs[1:]:
            r = r.united(ng.rect)
        s = self.readable_scale()
        _top, w, h = self._area()
        if r.width() * s > w * 0.9 or r.height() * s > h * 0.9:
            # an op at the end of a row and its output at the start of the next:
            # centred on both, the view showed neither; the output is what is new
            tensors = [ng for ng in ngs if ng.node.kind == "tensor"] or ngs
            r = QRectF(tensors[-1].rect)
        return r

    def _auto_view(self, animate: bool) -> bool:
        """NOTE [auto view]: follow the current node when the fitted graph would be
        unreadable. Returns False when fitting everything is the better view."""
        want = self.readable_scale()
        # (in presentation: at a desk the readable size is small already: code review)
        if self.fit_scale() >= want * (FIT_ENOUGH if self.presentation else 0.98):
            if self._following_now:
                self._fit_all()
            return False
        target = self._current_rect()
        if target is None:
            return False
        top, w, h = self._area()
        s = self._scale if (self._following_now and self._scale >= want * 0.98) else want
        # keep the node where it is while it stays well inside the view: a recentre
        # every step would make a lecture hall seasick (and rebuild the cache each time)
        if self._following_now and abs(s - self._scale) < 1e-9:
            dr = self.transform().mapRect(target)
            mx, my = w * FOLLOW_MARGIN, h * FOLLOW_MARGIN
            if dr.left() >= mx and dr.right() <= w - mx and dr.top() >= top + my \
                    and dr.bottom() <= top + h - my:
                return True
        c = target.center()
        tx, ty = self._within_graph(s, w / 2 - c.x() * s, top + h / 2 - c.y() * s)
        self._following_now = True
        if animate and self._animated and self.isVisible() and abs(s - self._scale) < 1e-9:
            self._pan_from, self._pan_to = (self._tx, self._ty), (tx, ty)
            self._pan_anim.stop()
            self._pan_anim.start()
        else:
            self._pan_anim.stop()
            self._set_view(s, tx, ty)
        return True

    def _within_graph(self, s: float, tx: float, ty: float) -> tuple[float, float]:
        """The pan ``(tx, ty)`` at zoom ``s`` moved so the view shows no empty canvas
        beyond the graph's edge where the graph is wider (or taller) than the
        view: centred on a node near the graph's left edge, the left half of the
        view was empty while the graph ran off its right. The current node stays
        in view: it is inside the graph."""
        r = self._fit_rect()[0]
        if r.isNull():
            return tx, ty
        top, w, h = self._area()

        def clamp(t, lo_edge, hi_edge, origin, size):
            span = (hi_edge - lo_edge) * s
            if span <= size:
                return origin + size / 2 - (lo_edge + hi_edge) / 2 * s   # narrower: centred
            return min(origin - lo_edge * s, max(origin + size - hi_edge * s, t))

        return clamp(tx, r.left(), r.right(), 0, w), clamp(ty, r.top(), r.bottom(), top, h)

    def _on_pan_step(self, value) -> None:
        if self._pan_from is None:
            return
        a = float(value)
        (x0, y0), (x1, y1) = self._pan_from, self._pan_to
        self._set_view(self._scale, x0 + (x1 - x0) * a, y0 + (y1 - y0) * a)

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        anchor = anchor if anchor is not None else QPointF(self.width() / 2, self.height() / 2)
        self._pan_anim.stop()
        s = min(MAX_SCALE, max(MIN_SCALE, self._scale * factor))
        f = s / self._scale
        self._set_view(s, anchor.x() - (anchor.x() - self._tx) * f,
                       anchor.y() - (anchor.y() - self._ty) * f)
        self._auto_fit = False

    def pan_by(self, dx: float, dy: float) -> None:
        self._pan_anim.stop()
        self._set_view(self._scale, self._tx + dx, self._ty + dy)
        self._auto_fit = False

    def center_on(self, node_id: str) -> None:
        ng = self._geom.nodes.get(node_id)
        if ng is None:
            return
        self._set_view(self._scale, self.width() / 2 - ng.x * self._scale,
                       self.height() / 2 - ng.y * self._scale)

    def view_scale(self) -> float:
        return self._scale

    def transform(self) -> QTransform:
        """Scene -> widget coordinates."""
        return QTransform(self._scale, 0, 0, self._scale, self._tx, self._ty)

    def node_view_rect(self, node_id: str) -> QRectF | None:
        ng = self._geom.nodes.get(node_id)
        return None if ng is None else self.transform().mapRect(ng.rect)

    def node_at(self, pos: QPointF) -> str | None:
        """Id of the visible node under widget point ``pos``."""
        x = (pos.x() - self._tx) / self._scale
        y = (pos.y() - self._ty) / self._scale
        return self._geom.node_at(x, y, self._limit, slack=3.0 / self._scale)

    def _set_view(self, s, tx, ty) -> None:
        if (s, tx, ty) != (self._scale, self._tx, self._ty):
            self._scale, self._tx, self._ty = s, tx, ty
            self.update()
