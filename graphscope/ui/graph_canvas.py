"""GraphCanvas: the custom-painted widget that shows the autograd graph.

Not one QGraphicsItem per node (20,000 items repaint in ~350 ms): the canvas paints a
``SceneGeometry`` with a ``ScenePainter`` (canvas_paint.py), keeps the static layer as
a pixmap, and draws only what changes on top. Where it looks (fitting, following
the current step, zoom, pan) is its ``CanvasView`` mixin (canvas_view.py).

NOTE [canvas cache]: the pixmap holds everything visible at a *base* step for the
current view (size, zoom, pan, theme, text scale, geometry version). A paint at
cursor ``c >= base`` blits it and draws the few nodes and edges of steps
``(base, c]`` plus the frame overlays (glow, gradient labels, selection, spotlight).
Going back before the base, or too far past it, rebuilds the pixmap at a base a few
dozen nodes *before* the cursor, so stepping back and forth stays cheap
(NOTE [step order] in canvas_scene.py). Nodes in their entrance animation are left
out of the pixmap and drawn on top until they settle.
"""
from __future__ import annotations


import math

from PySide6.QtCore import (QElapsedTimer, QEasingCurve, QEvent, QPointF, QRectF, Qt, QTimer,
                            QVariantAnimation, Signal)
from PySide6.QtGui import QColor, QLinearGradient, QPainter, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QToolTip, QWidget

from graphscope.model.label_cut import expr_label
from graphscope.model.node_text import made_by_expr
from graphscope.ui.canvas_paint import ScenePainter
from graphscope.ui.canvas_primitives import lod_for, qcolor
from graphscope.ui.canvas_scene import NEVER, SceneGeometry
from graphscope.ui.canvas_tooltip import tooltip_text
from graphscope.ui.canvas_view import PAN_MS, CanvasView
from graphscope.ui.theme import Theme, get_theme

ENTER_MS = 200          # entrance of a new node
TIDY_MS = 450           # the one smooth tidy pass
ANIMATE_MAX = 3000      # above this many nodes, place without animation
OVERLAY_MAX = 150       # nodes drawn over the cached layer before it is rebuilt
KEEP_BACK = 40          # nodes before the cursor the rebuilt cache leaves out
EDGE_HINT_PX = 26.0      # the fade along a side the graph goes on past (NOTE [more beyond])
EDGE_HINT_MARGIN = 12.0  # ... when it goes on more than this many pixels


class GraphCanvas(CanvasView, QWidget):
    """The graph view. Reads a model ``Graph`` and layout; never changes them."""

    node_clicked = Signal(str)
    node_hovered = Signal(str)      # "" when the pointer leaves a node
    resized = Signal()              # the window re-tidies for the new aspect (debounced)
    typed = Signal()                # text typed here, which goes nowhere

    def __init__(self, parent=None, theme: Theme | None = None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setAttribute(Qt.WA_OpaquePaintEvent)
        self.grabGesture(Qt.PinchGesture)
        self.setMinimumSize(200, 150)
        self._theme = theme or get_theme("light")
        self._text_scale = 1.0
        self._reading_scale = 1.0   # the text size the user asked for (set_text_scale)
        self._graph = None
        self._layout = None
        self._trace = None
        self._full_texts: dict = {}   # (node id, label) -> its whole text (_full_text)
        self._geom = SceneGeometry()
        self._painter = ScenePainter(self._geom, self._theme)
        self._scale, self._tx, self._ty = 1.0, 0.0, 0.0
        self._frame = None
        self._limit = NEVER
        self._selected: str | None = None
        self._hover: str | None = None
        self._spotlight = False
        self._fade_passes = True        # NOTE [pass focus] (View > Fade earlier passes)
        self._animated = True
        # NOTE [auto view]: while _auto_fit is on (until the user pans or zooms; Fit or
        # key 0 turn it back on) the canvas picks the view itself: the whole graph when
        # its labels are readable fitted, else the current node at a readable zoom
        # (follow), so a long chain is watched where the work happens.
        self._auto_fit = True
        self._follow = True             # allow following the current node (key F toggles)
        self._presentation = False
        self._following_now = False     # the auto view is following, not fitted
        self._pan_from = self._pan_to = None
        self._pan_anim = QVariantAnimation(self)
        self._pan_anim.setStartValue(0.0)
        self._pan_anim.setEndValue(1.0)
        self._pan_anim.setDuration(PAN_MS)
        self._pan_anim.setEasingCurve(QEasingCurve.OutCubic)
        self._pan_anim.valueChanged.connect(self._on_pan_step)
        self._index_timer = QTimer(self)
        self._index_timer.setSingleShot(True)
        self._index_timer.setInterval(0)
        self._index_timer.timeout.connect(self._on_index_idle)
        self._cache: QPixmap | None = None
        self._cache_key = None
        self._cache_base = -math.inf
        self._entering: dict[str, int] = {}
        self._clock = QElapsedTimer()
        self._clock.start()
        self._enter_timer = QTimer(self)
        self._enter_timer.setInterval(16)
        self._enter_timer.timeout.connect(self._on_enter_tick)
        self._move_from: dict = {}
        self._move_to: dict = {}
        self._move_anim = QVariantAnimation(self)
        self._move_anim.setStartValue(0.0)
        self._move_anim.setEndValue(1.0)
        self._move_anim.setDuration(TIDY_MS)
        self._move_anim.setEasingCurve(QEasingCurve.InOutCubic)
        self._move_anim.valueChanged.connect(self._on_move_step)
        self._move_anim.finished.connect(self._on_move_finished)
        self._press: QPointF | None = None
        self._press_view = None
        self._dragged = False
        self.lod = "full"               # level of detail of the last paint (tests, benchmark)
        self.cache_rebuilds = 0

    # -- data -------------------------------------------------------------------------
    def set_graph(self, graph, layout, trace=None) -> None:
        """Show ``graph`` placed by ``layout`` (``positions``, ``node_size``). ``trace``
        (optional) gives tooltips the tensors' full facts."""
        self._stop_animations()
        self._graph, self._layout, self._trace = graph, layout, trace
        self._full_texts.clear()
        _scale_layout(layout, self._text_scale)
        self._rebuild_geometry()
        self._auto_fit = True
        self.fit()

    def _rebuild_geometry(self) -> None:
        graph, layout = self._graph, self._layout
        self._geom = SceneGeometry.build(graph, layout.positions, _size_fn(layout))
        self._geom.row_pitch = float(getattr(layout, "row_pitch", self._geom.row_pitch))
        self._painter = ScenePainter(self._geom, self._theme, self._text_scale, graph.regions)
        self._painter.sprites = True
        self._painter.full_text = self._full_text
        self._painter.fade_passes = self._fade_passes   # (a new painter per geometry)
        self._painter.take_frame(self._frame)
        self._selected = self._selected if self._selected in self._geom.nodes else None
        self._invalidate()
        # the hit and edge grids are not needed for the first (fitted) paint of a big
        # graph: build them once the event loop is idle (NOTE [edge grid])
        self._index_timer.start()

    def _on_index_idle(self) -> None:
        self._geom.ensure_index()

    def set_trace(self, trace) -> None:
        self._trace = trace
        self._full_texts.clear()

    def clear(self) -> None:
        self._stop_animations()
        self._graph = self._layout = self._trace = None
        self._full_texts.clear()
        self._geom = SceneGeometry()
        self._painter = ScenePainter(self._geom, self._theme, self._text_scale)
        self._painter.fade_passes = self._fade_passes
        self._frame, self._limit, self._selected = None, NEVER, None
        self._invalidate()
        self._auto_fit = True
        self.update()

    def add_nodes(self, node_ids) -> list:
        """Nodes the graph and layout have just gained (live building). They enter with a
        short fade and grow, unless animation is off or the graph is large."""
        if self._graph is None:
            return []
        added = self._geom.add(self._graph, node_ids, self._layout.positions,
                               _size_fn(self._layout))
        self._painter.regions = list(self._graph.regions)
        if added and self._animated and len(self._geom.nodes) <= ANIMATE_MAX:
            now = self._clock.elapsed()
            for nid in added:
                self._entering[nid] = now
            if not self._enter_timer.isActive():
                self._enter_timer.start()
        if self._auto_fit and added:
            self.fit(keep_auto=True)
        self.update()
        return added

    def update_nodes(self, node_ids=()) -> None:
        """Nodes whose label, detail or flags changed (a name became known, a flag was
        raised): restyle them and redraw."""
        from graphscope.ui.canvas_scene import node_style
        ids = []
        for nid in node_ids or self._geom.nodes:
            ng = self._geom.nodes.get(nid if isinstance(nid, str) else getattr(nid, "id", None))
            if ng is not None:
                ng.style = node_style(ng.node)
                ids.append(ng.id)
        self._geom.resize(ids)   # a name that became known changes the box too
        if self._graph is not None:
            self._painter.regions = list(self._graph.regions)
        self._geom.version += 1
        self.update()

    def set_frame(self, frame) -> None:
        """Show the state at a timeline cursor (``FrameState``), or everything (None)."""
        self._frame = frame
        if self._painter.take_frame(frame):
            self._invalidate()   # (the cached static layer draws them too)
        vs = getattr(frame, "visible_steps", None) if frame is not None else None
        self._limit = NEVER if vs is None else float(vs)
        if self._auto_fit and self._follow and self._geom.nodes:
            self._auto_view(animate=True)
        self.update()

    def animate_to(self, positions: dict) -> None:
        """Move nodes to ``positions`` (the one tidy pass at the end of a run), smoothly."""
        positions = {k: v for k, v in positions.items() if k in self._geom.nodes}
        if not positions:
            return
        if not self._animated or len(self._geom.nodes) > ANIMATE_MAX or not self.isVisible():
            self._geom.move(positions)
            if self._auto_fit:
                self.fit(keep_auto=True)
            self.update()
            return
        self._move_anim.stop()
        self._move_from = {k: (self._geom.nodes[k].x, self._geom.nodes[k].y) for k in positions}
        self._move_to = positions
        self._move_anim.start()

    # -- presentation -------------------------------------------------------------------
    def set_theme(self, theme: Theme | str) -> None:
        self._theme = get_theme(theme) if isinstance(theme, str) else theme
        self._painter.theme = self._theme
        self._invalidate()
        self.update()

    def theme(self) -> Theme:
        return self._theme

    def set_text_scale(self, factor: float, reading: float | None = None) -> None:
        """Scale every text on the canvas. Node boxes grow with the text (the layout
        re-sizes them and spreads its grid), so nothing is clipped at 1.6x or 2x.

        ``reading``: the size the user asked for (``factor`` itself unless a mode
        adds to it: presentation's boost is already in PRESENT_PX). The auto view
        keeps labels that much bigger on screen: fitted, bigger text meant bigger
        boxes and a smaller zoom, and four presses of Bigger text took a
        projected label from 17.8 to 18.7 px (GUI review)."""
        self._text_scale = max(0.5, float(factor))
        self._reading_scale = max(0.5, float(factor if reading is None else reading))
        self._painter.text_scale = self._text_scale
        if self._graph is not None and _scale_layout(self._layout, self._text_scale):
            self._stop_animations()
            self._rebuild_geometry()
        self._invalidate()
        if self._auto_fit:
            self.fit(keep_auto=True)
        self.update()

    def _full_text(self, node):
        """The snippet's whole text of the expression a tensor node's label was
        cut from (``ScenePainter.full_text``), or None. Kept per node and label:
        asked at every redraw of the static layer, it cut each label again (0.16 ms
        a label: 12 ms for a 40-term sum's 78 cut labels)."""
        key = (node.id, node.label)
        if key in self._full_texts:
            return self._full_texts[key]
        text = self._full_texts[key] = self._whole_text(node)
        return text

    def _whole_text(self, node):
        tr = self._trace
        if tr is None or node.kind != "tensor" or node.tensor is None:
            return None
        op_id = node.op
        if op_id is None:
            info = tr.tensors.get(node.tensor)
            op_id = info.created_by if info is not None else None
        expr = made_by_expr(tr.op_by_id(op_id) if op_id is not None else None, node.tensor)
        return expr if expr and expr_label(expr) == node.label else None

    def text_scale(self) -> float:
        return self._text_scale

    def set_presentation(self, on: bool) -> None:
        """Presentation mode: the auto view keeps labels at least PRESENT_PX high
        (following the current node when the whole graph would be smaller)."""
        self._presentation = bool(on)
        if self._auto_fit:
            self.fit(keep_auto=True)

    @property
    def presentation(self) -> bool:
        # (it was also "any text above 1.05x": a step from desk to hall size at the
        # first Bigger text; the user's size is the reading scale now)
        return self._presentation

    @property
    def auto_fit(self) -> bool:
        """True while the canvas chooses the view itself (NOTE [auto view])."""
        return self._auto_fit

    @auto_fit.setter
    def auto_fit(self, on: bool) -> None:
        self._auto_fit = bool(on)
        if on:
            self.fit(keep_auto=True)

    @property
    def follow(self) -> bool:
        """Whether the auto view may follow the current node of a graph too large
        to read fitted."""
        return self._follow

    def set_follow(self, on: bool) -> None:
        self._follow = bool(on)
        if self._auto_fit:
            self.fit(keep_auto=True)

    def following(self) -> bool:
        """True when the auto view is showing the current node rather than everything."""
        return self._auto_fit and self._following_now

    def set_spotlight(self, on: bool) -> None:
        self._spotlight = bool(on)
        self.update()

    def set_fade_passes(self, on: bool) -> None:
        """Earlier passes' graphs faded or not (NOTE [pass focus] in model/timeline.py);
        kept here, for the painter of the next run or text size too."""
        self._fade_passes = bool(on)
        if self._painter.fade_passes != bool(on):
            self._painter.fade_passes = bool(on)
            self._painter.marks_version += 1
            self._invalidate()
            self.update()

    def set_animated(self, on: bool) -> None:
        """Entrance and tidy animations on or off (off when the speed is 'instant')."""
        self._animated = bool(on)
        if not on:
            self._stop_animations()
            self.update()

    def set_speed(self, speed: str) -> None:
        self.set_animated(str(speed).lower() != "instant")

    def select(self, node_id: str | None, center: bool = False) -> None:
        self._selected = node_id if node_id in self._geom.nodes else None
        if center and self._selected:
            ng = self._geom.nodes[self._selected]
            if not self.rect().contains(self.transform().map(QPointF(ng.x, ng.y)).toPoint()):
                self.center_on(self._selected)
        self.update()

    def selected(self) -> str | None:
        return self._selected

    def geometry_model(self) -> SceneGeometry:
        return self._geom

    # -- painting ---------------------------------------------------------------------
    def _invalidate(self) -> None:
        self._cache = None
        self._cache_key = None

    def _view_rect(self) -> QRectF:
        return QRectF(-self._tx / self._scale, -self._ty / self._scale,
                      self.width() / self._scale, self.height() / self._scale)

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        self.paint_to(p, self.rect())
        p.end()

    def paint_to(self, p: QPainter, device_rect) -> None:
        """Everything the widget shows, painted with ``p`` (also used by grab())."""
        dpr = self.devicePixelRatioF()
        limit = self._limit
        entering = frozenset(self._entering)
        view = self._view_rect()
        moving = self._move_anim.state() == QVariantAnimation.Running
        key = (self.width(), self.height(), dpr, self._scale, self._tx, self._ty,
               self._theme.name, self._text_scale, self._geom.version, entering)
        to_device = self.transform()
        self.lod = lod_for(self._scale, self._geom, self._text_scale)
        if moving:
            p.fillRect(QRectF(device_rect), qcolor(self._theme.canvas_bg))
            p.setRenderHint(QPainter.Antialiasing, self.lod != "tiny")
            p.setTransform(to_device)
            self._painter.paint_static(p, self._scale, view, limit)
            p.resetTransform()
        else:
            base = self._cache_base
            stale = (self._cache is None or self._cache_key != key or base > limit
                     or self._geom.count_between(base, limit) > OVERLAY_MAX
                     or self._region_between(base, limit))
            if stale:
                going_back = self._cache is not None and self._cache_key == key and base > limit
                base = self._geom.base_for(limit, KEEP_BACK) if going_back else limit
                if self._region_between(base, limit):
                    base = limit
                self._rebuild_cache(key, base, view, entering, dpr)
            p.drawPixmap(0, 0, self._cache)
            p.setRenderHint(QPainter.Antialiasing, self.lod != "tiny")
            if self._cache_base < limit:
                p.setTransform(to_device)
                self._painter.paint_static(p, self._scale, view, limit, start=self._cache_base,
                                           exclude=entering, regions=False)
                p.resetTransform()
        if self._entering:
            self._paint_entering(p, to_device, view, limit)
        p.setRenderHint(QPainter.Antialiasing, True)
        self._painter.paint_overlay(p, to_device, self._frame, limit, self._selected,
                                    self._spotlight, QRectF(device_rect), self._scale)
        self._paint_more_beyond(p, to_device, limit)
        if not self._geom.nodes or self._geom.last_upto(limit) is None:
            self._paint_empty(p)

    def more_beyond(self, limit: float | None = None) -> set:
        """The sides of the view ("left", "right", "top", "bottom") past which the
        graph shown at ``limit`` goes on (more than a margin's worth)."""
        r = self._geom.bounds(self._limit if limit is None else limit)
        if r.isNull():
            return set()
        d = self.transform().mapRect(r)
        w, h, m = self.width(), self.height(), EDGE_HINT_MARGIN
        return {side for side, beyond in (("left", d.left() < -m), ("right", d.right() > w + m),
                                          ("top", d.top() < -m), ("bottom", d.bottom() > h + m))
                if beyond}

    def _paint_more_beyond(self, p: QPainter, to_device, limit) -> None:
        """NOTE [more beyond]: following a step shows part of a big graph, and a node
        cut by the view's edge ("r.weight", a half hexagon) gave no sign that the
        graph goes on. Each side it goes on past fades out, with a chevron in the
        middle of that side pointing the way."""
        sides = self.more_beyond(limit)
        if not sides:
            return
        w, h = self.width(), self.height()
        bg = qcolor(self._theme.canvas_bg)
        clear = QColor(bg)
        clear.setAlpha(0)
        size = EDGE_HINT_PX
        ink = qcolor(self._theme.text_muted)
        p.save()
        p.resetTransform()
        for side in sides:
            if side == "left":
                band, a, b = QRectF(0, 0, size, h), QPointF(0, 0), QPointF(size, 0)
            elif side == "right":
                band, a, b = QRectF(w - size, 0, size, h), QPointF(w, 0), QPointF(w - size, 0)
            elif side == "top":
                band, a, b = QRectF(0, 0, w, size), QPointF(0, 0), QPointF(0, size)
            else:
                band, a, b = QRectF(0, h - size, w, size), QPointF(0, h), QPointF(0, h - size)
            grad = QLinearGradient(a, b)
            grad.setColorAt(0.0, bg)
            grad.setColorAt(1.0, clear)
            p.fillRect(band, grad)
            c = band.center()
            k = 9.0
            if side in ("left", "right"):
                x0 = c.x() + (k / 2 if side == "left" else -k / 2)
                x1 = x0 - k if side == "left" else x0 + k
                pts = [QPointF(x0, c.y() - k), QPointF(x1, c.y()), QPointF(x0, c.y() + k)]
            else:
                y0 = c.y() + (k / 2 if side == "top" else -k / 2)
                y1 = y0 - k if side == "top" else y0 + k
                pts = [QPointF(c.x() - k, y0), QPointF(c.x(), y1), QPointF(c.x() + k, y0)]
            p.setPen(QPen(ink, 3.0, Qt.SolidLine, Qt.RoundCap, Qt.RoundJoin))
            p.drawPolyline(QPolygonF(pts))
        p.restore()

    def _rebuild_cache(self, key, base, view, entering, dpr) -> None:
        pm = QPixmap(max(1, int(self.width() * dpr)), max(1, int(self.height() * dpr)))
        pm.setDevicePixelRatio(dpr)
        pm.fill(qcolor(self._theme.canvas_bg))
        cp = QPainter(pm)
        cp.setRenderHint(QPainter.Antialiasing, self.lod != "tiny")
        cp.setRenderHint(QPainter.TextAntialiasing, True)
        cp.setTransform(self.transform())
        self._painter.paint_static(cp, self._scale, view, base, exclude=entering)
        cp.end()
        self._cache, self._cache_key, self._cache_base = pm, key, base
        self.cache_rebuilds += 1

    def _region_between(self, start, limit) -> bool:
        if not self._painter.regions or start >= limit:
            return False
        return any(ng.node.region is not None for ng in self._geom.nodes_upto(limit, start))

    def _paint_entering(self, p, to_device, view, limit) -> None:
        now = self._clock.elapsed()
        p.setRenderHint(QPainter.Antialiasing, True)
        p.setTransform(to_device)
        lod = self.lod
        ids = set(self._entering)
        edges = [e for e in self._geom.edges_upto(limit) if e.src in ids or e.dst in ids]
        if edges:
            p.setOpacity(0.85)
            self._painter._paint_edges(p, edges, view.adjusted(-200, -200, 200, 200), lod, ())
            p.setOpacity(1.0)
        for nid, t0 in self._entering.items():
            ng = self._geom.nodes.get(nid)
            if ng is None or ng.step > limit:
                continue
            a = min(1.0, max(0.0, (now - t0) / ENTER_MS))
            ease = 1 - (1 - a) ** 3
            self._painter.paint_node(p, ng, lod, opacity=max(0.05, ease), grow=0.7 + 0.3 * ease)
        p.resetTransform()

    def empty_text(self) -> str:
        """What an empty canvas says: an invitation before any run, a short note after
        a run that made no tensor (a syntax error, plain Python), nothing while one runs."""
        if self._graph is None:
            return "Run the snippet (F5) to watch its graph being built"
        if self._geom.nodes:
            # steps before anything is drawn: a layer's initialisation (RNNCell's
            # empty and uniform_, six steps at one line) left the canvas blank, and
            # Next seemed to do nothing (visual review)
            return ("Nothing to draw yet\nthe tensors made so far join the picture "
                    "where an op uses them")
        end = getattr(self._trace, "end", None) if self._trace is not None else None
        if end is None:
            return ""
        hint = getattr(self, "empty_hint", "")
        return f"No tensors were created\n{hint}" if hint else "No tensors were created"

    def _paint_empty(self, p) -> None:
        text = self.empty_text()
        if not text:
            return
        p.setPen(qcolor(self._theme.text_muted))
        from graphscope.ui.canvas_primitives import font
        p.setFont(font(16 * self._text_scale))
        # wrapped: a narrow canvas cut the sentence at both ends
        p.drawText(self.rect().adjusted(16, 16, -16, -16),
                   Qt.AlignCenter | Qt.TextFlag.TextWordWrap, text)

    def _on_enter_tick(self) -> None:
        now = self._clock.elapsed()
        done = [k for k, t0 in self._entering.items() if now - t0 >= ENTER_MS]
        for k in done:
            del self._entering[k]
        if not self._entering:
            self._enter_timer.stop()
        self.update()

    def _on_move_step(self, value) -> None:
        a = float(value)
        pos = {k: (x0 + (self._move_to[k][0] - x0) * a, y0 + (self._move_to[k][1] - y0) * a)
               for k, (x0, y0) in self._move_from.items()}
        self._geom.move(pos)
        self.update()

    def _on_move_finished(self) -> None:
        if self._move_to:
            self._geom.move(self._move_to)
        self._move_from, self._move_to = {}, {}
        if self._auto_fit:
            self.fit(keep_auto=True)
        self.update()

    def _stop_animations(self) -> None:
        self._pan_anim.stop()
        self._entering.clear()
        self._enter_timer.stop()
        if self._move_anim.state() == QVariantAnimation.Running:
            self._move_anim.stop()
            self._on_move_finished()

    def animating(self) -> bool:
        return bool(self._entering) or self._move_anim.state() == QVariantAnimation.Running

    # -- input ---------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        if self._auto_fit:
            self.fit(keep_auto=True)
        super().resizeEvent(event)
        self.resized.emit()

    def view_aspect(self) -> float:
        """Width / height of the drawing area: the layout wraps a chain for it."""
        _top, w, h = self._area()    # (without the room kept for the banner)
        return w / h

    def wheelEvent(self, event) -> None:
        dy = event.angleDelta().y() or event.pixelDelta().y()
        if dy:
            self.zoom_by(1.0015 ** dy, event.position())
        event.accept()

    def event(self, e) -> bool:
        if e.type() == QEvent.Gesture:
            pinch = e.gesture(Qt.PinchGesture)
            if pinch is not None:
                f = pinch.scaleFactor()
                if f > 0:
                    self.zoom_by(f, self.mapFromGlobal(pinch.centerPoint().toPoint()).toPointF())
                e.accept()
                return True
        return super().event(e)

    def keyPressEvent(self, event) -> None:
        k, mods = event.key(), event.modifiers()
        step = 60.0
        if k in (Qt.Key_Plus, Qt.Key_Equal):
            self.zoom_by(1.25)
        elif k == Qt.Key_Minus:
            self.zoom_by(0.8)
        elif k == Qt.Key_0:
            self.fit()
        elif k == Qt.Key_F and not mods:
            self.set_follow(not self._follow)
        elif mods & (Qt.ControlModifier | Qt.AltModifier) and k in (
                Qt.Key_Left, Qt.Key_Right, Qt.Key_Up, Qt.Key_Down):
            # plain arrows step the timeline (the window's keys); with a modifier they pan
            dx = {Qt.Key_Left: step, Qt.Key_Right: -step}.get(k, 0.0)
            dy = {Qt.Key_Up: step, Qt.Key_Down: -step}.get(k, 0.0)
            self.pan_by(dx, dy)
        else:
            text = event.text()
            if text and text.isprintable() and text != " " and not mods & (
                    Qt.ControlModifier | Qt.AltModifier | Qt.MetaModifier):
                # a student who ran with F5 and typed on: the graph has the keyboard
                # (the stepping keys), the letters went nowhere (student review)
                self.typed.emit()
            event.ignore()
            return
        event.accept()

    def mousePressEvent(self, event) -> None:
        if event.button() == Qt.LeftButton:
            self._press = event.position()
            self._press_view = (self._tx, self._ty)
            self._dragged = False
            self.setFocus(Qt.MouseFocusReason)
        event.accept()

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        if self._press is not None and event.buttons() & Qt.LeftButton:
            d = pos - self._press
            if self._dragged or abs(d.x()) + abs(d.y()) > 4:
                self._dragged = True
                self.setCursor(Qt.ClosedHandCursor)
                self._set_view(self._scale, self._press_view[0] + d.x(), self._press_view[1] + d.y())
                self._auto_fit = False
            return
        nid = self.node_at(pos)
        if nid != self._hover:
            self._hover = nid
            self.node_hovered.emit(nid or "")
            if nid is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPosition().toPoint(), self.tooltip_for(nid), self)

    def mouseReleaseEvent(self, event) -> None:
        if event.button() == Qt.LeftButton and self._press is not None:
            if not self._dragged:
                nid = self.node_at(event.position())
                self.select(nid)
                # "" on the background: the window clears its selection
                self.node_clicked.emit(nid or "")
            self.unsetCursor()
            self._press = None
        event.accept()

    def mouseDoubleClickEvent(self, event) -> None:
        if self.node_at(event.position()) is None:
            self.fit()

    def leaveEvent(self, event) -> None:
        if self._hover is not None:
            self._hover = None
            self.node_hovered.emit("")
        super().leaveEvent(event)

    def tooltip_for(self, node_id: str) -> str:
        ng = self._geom.nodes.get(node_id)
        if ng is None:
            return ""
        grad = None
        grads = getattr(self._frame, "grad_of", None) if self._frame is not None else None
        if grads and ng.node.tensor is not None and ng.node.tensor in grads:
            from graphscope.ui.canvas_overlay import _short
            grad = _short(grads[ng.node.tensor])
        at = getattr(self._frame, "detail_at", None)
        faded = self._painter._faded_test()
        return tooltip_text(ng.node, self._trace, grad, hidden=self._painter.values_hidden,
                            flags=self._painter.shown_flags(ng.node),
                            went=at(ng.node) if at is not None else None,
                            cursor_pass=self._painter.focus.index + 1
                            if faded is not None and faded(ng.node) else None)


def _scale_layout(layout, text_scale: float) -> bool:
    """Ask the layout to size boxes for ``text_scale`` (True when positions changed)."""
    fn = getattr(layout, "set_text_scale", None)
    if not callable(fn):
        return False
    try:
        return bool(fn(text_scale))
    except Exception:   # a layout that cannot re-size: keep its boxes, never fail to draw
        return False


def _size_fn(layout):
    """The layout's node_size (method or its module's function), so boxes match its spacing."""
    fn = getattr(layout, "node_size", None)
    if callable(fn):
        return fn
    try:
        from graphscope.model.layout import node_size
        return node_size
    except ImportError:
        return None
