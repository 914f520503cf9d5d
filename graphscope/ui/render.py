"""Graph pictures without a window: PNG (QImage) and SVG, with the canvas's own drawing code.

``graphscope export --format svg|png`` and the window's "Export image" both come here, so
a slide shows exactly what the canvas showed. Works headless (``QT_QPA_PLATFORM=offscreen``):
a QGuiApplication is created when none exists.
"""
from __future__ import annotations


import math
import os

from PySide6.QtCore import QByteArray, QBuffer, QIODevice, QRectF, QSize
from PySide6.QtGui import QGuiApplication, QImage, QPainter, QTransform

from graphscope.ui.canvas_paint import ScenePainter
from graphscope.ui.canvas_primitives import qcolor
from graphscope.ui.canvas_scene import NEVER, SceneGeometry
from graphscope.ui.theme import Theme, get_theme

MARGIN = 40.0
MAX_SIDE = 8000          # pixels: a 20,000-node graph still makes a sane file
# A PNG is capped lower: a 2-layer transformer at one pixel per scene unit was a
# 5494x2826 image taking ~0.5 s to encode and more to paste into a slide; at 4096 px
# its labels are still ~13 px. Huge graphs fall to the canvas's level of detail
# (boxes without text, then a density picture). SVG stays vector: MAX_SIDE only.
PNG_MAX_SIDE = 4096
# Qt's PNG "quality" picks zlib's effort: 80 encodes ~30% faster than the default
# for about the same file size (90 and up stop compressing at all)
PNG_QUALITY = 80
# A small graph at one pixel per scene unit (the problem set's no_grad example: 536x306)
# is unreadable on a slide, so a PNG is scaled up until its longer side reaches
# PNG_MIN_SIDE; at most PNG_MAX_UPSCALE times, past which a 3-node graph is just huge.
PNG_MIN_SIDE = 1600
PNG_MAX_UPSCALE = 3.0


def ensure_app():
    """The running Qt application, or a new headless-capable QGuiApplication."""
    app = QGuiApplication.instance()
    if app is None:
        # a QApplication, not a bare QGuiApplication: widgets made later in the same
        # process (the window after an export, a test session) need one
        from PySide6.QtWidgets import QApplication
        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # no screen: draw anyway
        app = QApplication([])
    return app


def _theme(theme) -> Theme:
    return get_theme(theme) if (theme is None or isinstance(theme, str)) else theme


def _geometry(graph, layout) -> SceneGeometry:
    from graphscope.ui.graph_canvas import _size_fn
    positions = layout.positions if hasattr(layout, "positions") else layout
    return SceneGeometry.build(graph, positions, _size_fn(layout))


def _limit(frame) -> float:
    vs = getattr(frame, "visible_steps", None) if frame is not None else None
    return NEVER if vs is None else float(vs)


def _plan(geom: SceneGeometry, limit: float, size, scale: float, text_scale: float,
          max_side: float = MAX_SIDE, min_side: float = 0.0):
    """(width, height, scene->device transform) for a picture of the visible graph."""
    r = geom.bounds(limit)
    if r.isNull() or r.isEmpty():
        r = QRectF(0, 0, 400, 200)
    r = r.adjusted(-MARGIN, -MARGIN - 40 * min(text_scale, 2.0), MARGIN, MARGIN)
    if size is not None:
        w, h = (size.width(), size.height()) if isinstance(size, QSize) else size
        s = min(w / r.width(), h / r.height())
    else:
        s = scale
        longest = max(r.width(), r.height())
        if 0 < longest * s < min_side:
            s = min(min_side / longest, scale * PNG_MAX_UPSCALE)
        if longest * s > max_side:
            s = max_side / max(r.width(), r.height())
        w, h = int(math.ceil(r.width() * s)), int(math.ceil(r.height() * s))
    tx = w / 2 - r.center().x() * s
    ty = h / 2 - r.center().y() * s
    return int(w), int(h), QTransform(s, 0, 0, s, tx, ty), s


def paint_graph(p: QPainter, geom: SceneGeometry, painter: ScenePainter, frame, to_device: QTransform,
                scale: float, w: int, h: int, selected=None, spotlight=False) -> None:
    limit = _limit(frame)
    painter.take_frame(frame)
    p.fillRect(QRectF(0, 0, w, h), qcolor(painter.theme.canvas_bg))
    p.setRenderHint(QPainter.Antialiasing, True)
    p.setRenderHint(QPainter.TextAntialiasing, True)
    inv, _ = to_device.inverted()
    view = inv.mapRect(QRectF(0, 0, w, h))
    p.setTransform(to_device)
    painter.paint_static(p, scale, view, limit)
    p.resetTransform()
    painter.paint_overlay(p, to_device, frame, limit, selected, spotlight, QRectF(0, 0, w, h), scale)


def render_image(graph, layout, frame=None, theme=None, size=None, scale: float = 1.0,
                 text_scale: float = 1.0, spotlight: bool = False, selected=None,
                 max_side: float = PNG_MAX_SIDE, min_side: float = 0.0) -> QImage:
    """The graph as drawn by the canvas at ``frame`` (None: everything). ``size`` (w, h)
    fits the graph into that many pixels; otherwise ``scale`` pixels per scene unit,
    shrunk so the longest side is at most ``max_side``, or grown (up to
    PNG_MAX_UPSCALE times) so it is at least ``min_side``."""
    ensure_app()
    th = _theme(theme)
    geom = _geometry(graph, layout)
    painter = ScenePainter(geom, th, text_scale, getattr(graph, "regions", ()))
    w, h, to_device, s = _plan(geom, _limit(frame), size, scale, text_scale, max_side, min_side)
    img = QImage(max(w, 1), max(h, 1), QImage.Format_ARGB32_Premultiplied)
    img.fill(qcolor(th.canvas_bg))
    p = QPainter(img)
    paint_graph(p, geom, painter, frame, to_device, s, w, h, selected, spotlight)
    p.end()
    return img


def render_svg(graph, layout, frame=None, theme=None, size=None, scale: float = 1.0,
               text_scale: float = 1.0, title: str = "GraphScope graph") -> str:
    """The same picture as SVG text (QtSvg's generator, part of PySide6-Essentials)."""
    from PySide6.QtSvg import QSvgGenerator
    ensure_app()
    th = _theme(theme)
    geom = _geometry(graph, layout)
    painter = ScenePainter(geom, th, text_scale, getattr(graph, "regions", ()))
    w, h, to_device, s = _plan(geom, _limit(frame), size, scale, text_scale)
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setSize(QSize(w, h))
    gen.setViewBox(QRectF(0, 0, w, h))
    gen.setTitle(title)
    gen.setDescription("Autograd graph drawn by GraphScope")
    p = QPainter(gen)
    paint_graph(p, geom, painter, frame, to_device, s, w, h)
    p.end()
    buf.close()
    return bytes(data).decode("utf-8")


def scene_for_trace(trace, step=None):
    """(graph, layout, frame) for a Trace at timeline ``step`` (None: the last step)."""
    from graphscope.model.graph import build_graph
    from graphscope.model.layout import LayeredLayout
    from graphscope.model.passes import node_passes, shown_passes
    graph = build_graph(trace)
    layout = LayeredLayout(graph)
    try:   # NOTE [a pass is a block] in model/layout.py, as the window lays it out
        layout.set_passes(node_passes(graph, shown_passes(trace)))
    except Exception:   # the blocks are a bonus: one block still reads
        pass
    positions = layout.tidy()
    if positions:
        layout.positions = dict(positions)
    frame = None
    try:
        from graphscope.model.timeline import Timeline
    except ImportError:   # the timeline is optional for a still picture
        Timeline = None
    if Timeline is not None:
        tl = Timeline(trace, graph)
        if len(tl):
            tl.set_cursor(len(tl) - 1 if step is None else step)
            frame = tl.state()
    return graph, layout, frame


def render_file(trace, path, fmt: str | None = None, theme=None, scale: float = 1.0,
                step=None, text_scale: float = 1.0) -> str:
    """Draw ``trace`` (state at its last step, or ``step``) into ``path`` as svg or png.
    Returns the path written."""
    path = os.fspath(path)
    fmt = (fmt or os.path.splitext(path)[1].lstrip(".") or "png").lower()
    if fmt not in ("svg", "png"):
        raise ValueError(f"unknown image format {fmt!r}: use svg or png")
    ensure_app()
    graph, layout, frame = scene_for_trace(trace, step)
    if fmt == "svg":
        text = render_svg(graph, layout, frame, theme, scale=scale, text_scale=text_scale)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        img = render_image(graph, layout, frame, theme, scale=scale, text_scale=text_scale,
                           min_side=PNG_MIN_SIDE)
        if not img.save(path, "PNG", PNG_QUALITY):
            raise OSError(f"could not write {path}")
    return path
