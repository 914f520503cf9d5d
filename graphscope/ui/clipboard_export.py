"""Export the current graph or the whole window as PNG and SVG, or copy it to the
clipboard, for a teacher's slides.

The graph is drawn with the canvas's own export functions
(``render.render_image`` / ``render_svg``: the whole graph at the cursor,
in the current theme, not just the part scrolled into view) when the window has
a run; otherwise, and for the window, the widget is painted as it is on screen.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, QPoint, QRect, QSize
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

GRAPH_EXPORT_SIZE = QSize(1920, 1080)


def widget_image(widget: QWidget, scale: float = 1.0) -> QImage:
    """The widget painted into an image (works offscreen, unlike a screen grab)."""
    size = widget.size() * scale
    img = QImage(size, QImage.Format.Format_ARGB32)
    img.setDevicePixelRatio(1.0)
    img.fill(0xFFFFFFFF)
    p = QPainter(img)
    try:
        p.scale(scale, scale)
        widget.render(p, QPoint(0, 0))
    finally:
        p.end()
    return img


def widget_svg(widget: QWidget, title: str = "GraphScope") -> bytes:
    """The widget painted as SVG (vector where Qt draws vectors; text stays text)."""
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setSize(widget.size())
    gen.setViewBox(QRect(0, 0, widget.width(), widget.height()))
    gen.setTitle(title)
    p = QPainter(gen)
    try:
        widget.render(p, QPoint(0, 0))
    finally:
        p.end()
    return bytes(buf.data())


def _canvas_render(window, kind: str, size: QSize):
    """The canvas's export drawing (``ui/render.py``) of the window's run, or None."""
    live = getattr(window, "live", None)
    if live is None:
        return None
    try:
        from graphscope.ui import render
    except ImportError:
        return None
    fn = getattr(render, "render_image" if kind == "png" else "render_svg", None)
    if fn is None:
        return None
    timeline = getattr(live, "timeline", None)
    # as the canvas shows it: a quiz's hidden gradients stay hidden in the picture
    shown = getattr(window, "shown_frame", None)
    frame = shown() if shown is not None else (timeline.state() if timeline is not None else None)
    kw = dict(theme=getattr(window, "theme", None), size=(size.width(), size.height()),
              text_scale=getattr(window, "text_scale", 1.0))
    return fn(live.graph, live.layout, frame, **kw)


def graph_image(window, size: QSize = GRAPH_EXPORT_SIZE) -> QImage:
    img = _canvas_render(window, "png", size)
    if isinstance(img, QImage) and not img.isNull():
        return img
    return widget_image(window.canvas)


def graph_svg(window, size: QSize = GRAPH_EXPORT_SIZE) -> bytes:
    svg = _canvas_render(window, "svg", size)
    if isinstance(svg, str):
        return svg.encode("utf-8")
    if isinstance(svg, (bytes, bytearray, QByteArray)):
        return bytes(svg)
    return widget_svg(window.canvas, "GraphScope graph")


def save(image_or_svg, path) -> Path:
    """Write a QImage (PNG, or whatever the suffix says) or SVG bytes to ``path``."""
    path = Path(path)
    if isinstance(image_or_svg, QImage):
        if not image_or_svg.save(str(path)):
            raise OSError(f"could not write {path}")
    else:
        path.write_bytes(image_or_svg)
    return path


def export(window, what: str, path) -> Path:
    """``what``: ``graph`` or ``window``; the format follows the suffix (.png / .svg)."""
    path = Path(path)
    svg = path.suffix.lower() == ".svg"
    if what == "graph":
        return save(graph_svg(window) if svg else graph_image(window), path)
    return save(widget_svg(window) if svg else widget_image(window), path)


def copy_to_clipboard(image: QImage, svg: Optional[bytes] = None) -> QMimeData:
    """Put the picture on the clipboard: as an image, and as SVG for apps that take it."""
    data = QMimeData()
    data.setImageData(image)
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    data.setData("image/png", buf.data())
    if svg:
        data.setData("image/svg+xml", QByteArray(svg))
    QGuiApplication.clipboard().setMimeData(data)
    return data


def copy(window, what: str) -> QMimeData:
    if what == "graph":
        return copy_to_clipboard(graph_image(window), graph_svg(window))
    return copy_to_clipboard(widget_image(window), widget_svg(window))
