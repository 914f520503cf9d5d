"""The legend beside the graph: one row per mark the canvas draws, each with a
swatch painted in the theme's own colours and shapes (a badge is round, the
missing-requires_grad mark a triangle, a region dashed), so it looks like the
nodes it explains."""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen, QPixmap, QPolygonF

from graphscope.ui.canvas_primitives import FADED


def legend_rows(t) -> list:
    """``[((shape, fill, border, mark), text)]`` for theme ``t`` (a ui.theme.Theme)."""
    # every mark the canvas draws, in the shape it draws it (a review found the
    # badges drawn as squares here and half the marks missing)
    return [
        (("box", t.tracked_fill, t.tracked_border, ""), "tensor tracked by autograd"),
        (("box", t.untracked_fill, t.untracked_border, ""), "tensor outside the graph (no grad_fn)"),
        (("faded", t.tracked_fill, t.tracked_border, ""),
         "an earlier pass's graph; what the current pass still uses stays bright "
         "(View \u203a Fade earlier passes)"),
        (("badge", t.badge_bg, t.badge_text, "\u2207"), "leaf with requires_grad=True"),
        (("badge", t.param_badge_bg, t.badge_text, "\u03b8"), "a module's parameter"),
        (("triangle", t.warning, t.warning_text, "?"), "needed requires_grad but lacks it"),
        (("badge", t.error, t.error_text, "!"), "where the error happened"),
        (("hexagon", t.op_fill, t.branch, ""), "a value decided an if / while"),
        (("dot", t.branch, t.branch, ""), "the code that decision chose to run"),
        (("dash", t.edge_nograd, t.edge_nograd, ""), "data flow autograd does not track"),
        (("dash", t.edge_detach, t.edge_detach, "\u2702"), "detach(): the graph is cut here"),
        (("dashdot", t.grad_label_border, t.grad_label_border, ""),
         "the gradient backward starts from: backward(gradient=v)"),
        (("arrow", t.edge, t.canvas_bg, "\u00d72"), "an input the op reads twice (x\u00a0*\u00a0x)"),
        (("region", _over(t.region_fill, t.panel_bg), t.region_border, ""),
         "no_grad region"),
        (("region", _over(t.inference_fill, t.panel_bg), t.region_border, ""),
         "inference_mode region"),
        (("glow", t.panel_bg, t.current, ""), "the current step"),
        # (the window selects the node an error is about: its dashed ring, in no
        # row, was asked about: visual review)
        (("selected", t.panel_bg, t.selection, ""), "selected: the Inspector shows it"),
        (("label", t.grad_label_bg, t.grad_label_border, "\u2202 1.0"),
         "gradient flowing back at this step"),
        (("freed", t.canvas_bg, t.node_detail, "freed"),
         "an op whose saved tensors backward has used and freed"),
        (("freed", t.canvas_bg, t.tracked_border, "shared"),
         "the same tensor, drawn again where it is used again"),
        (("freed", t.canvas_bg, t.tracked_border, "view"),
         "a view: shares memory with the tensor it came from"),
        (("freed", t.canvas_bg, t.tracked_border, "in-place"), "changed in place"),
        (("freed", t.canvas_bg, t.tracked_border, "hook"),
         "a hook of the snippet may change its gradient"),
    ]


def swatch(spec, w: float, h: float, font: QFont, dpr: float) -> QPixmap:
    """A legend swatch: ``(shape, fill, border, mark)`` painted as the canvas would."""
    shape, fill, border, mark = spec
    pm = QPixmap(max(1, int(w * dpr)), max(1, int(h * dpr)))
    pm.setDevicePixelRatio(dpr)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    fc, bc = _qc(fill), _qc(border)
    r = QRectF(1.5, 1.5, w - 3, h - 3)
    if shape == "faded":          # a box as an earlier pass's node is drawn
        p.setOpacity(FADED)
        shape = "box"
    if shape == "arrow":          # an edge with its "×2" (NOTE [an input read twice])
        y = h / 2
        p.setPen(QPen(fc, 2.4))
        p.drawLine(QPointF(2, y), QPointF(w - 9, y))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(fc)
        p.drawPolygon(QPolygonF([QPointF(w - 2, y), QPointF(w - 10, y - 4.5),
                                 QPointF(w - 10, y + 4.5)]))
        f = QFont(font)
        f.setBold(True)
        p.setFont(f)
        box = QRectF(w * 0.2, 0, w * 0.5, h)
        p.setBrush(bc)
        p.drawRoundedRect(box, h / 2, h / 2)
        p.setPen(fc)
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, mark)
    elif shape in ("dash", "dot", "dashdot"):
        style = Qt.PenStyle.DotLine if shape == "dot" else Qt.PenStyle.DashDotLine \
            if shape == "dashdot" else (
            Qt.PenStyle.DashLine if not mark else Qt.PenStyle.SolidLine)
        pen = QPen(fc, 2.4, style)
        p.setPen(pen)
        y = h / 2
        if mark:   # a cut edge: two pieces, the scissors between them
            p.drawLine(QPointF(2, y), QPointF(w * 0.3, y))
            p.drawLine(QPointF(w * 0.7, y), QPointF(w - 9, y))
            f = QFont(font)
            f.setBold(True)
            p.setFont(f)
            p.drawText(QRectF(w * 0.3, 0, w * 0.4, h), Qt.AlignmentFlag.AlignCenter, mark)
        else:
            p.drawLine(QPointF(2, y), QPointF(w - 9, y))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(fc)
        p.drawPolygon(QPolygonF([QPointF(w - 2, y), QPointF(w - 10, y - 4.5),
                                 QPointF(w - 10, y + 4.5)]))
    elif shape in ("badge", "triangle"):
        d = r.height()
        c = QRectF(r.center().x() - d / 2, r.top(), d, d)
        p.setBrush(fc)
        p.setPen(Qt.PenStyle.NoPen)
        if shape == "badge":
            p.drawEllipse(c)
        else:
            p.drawPolygon(QPolygonF([QPointF(c.center().x(), c.top()), c.bottomRight(),
                                     c.bottomLeft()]))
            c = c.adjusted(0, d * 0.2, 0, 0)
        f = QFont(font)
        f.setBold(True)
        f.setPointSizeF(f.pointSizeF() * 0.85)
        p.setFont(f)
        p.setPen(bc)
        p.drawText(c, Qt.AlignmentFlag.AlignCenter, mark)
    elif shape == "glow":
        c = QColor(bc)
        for grow, alpha, width in ((0, 70, 5), (2, 255, 2.5)):
            c.setAlpha(alpha)
            p.setPen(QPen(c, width))
            p.setBrush(Qt.BrushStyle.NoBrush)
            g = r.adjusted(3 + grow, 3 + grow, -3 - grow, -3 - grow)
            p.drawRoundedRect(g, g.height() / 2, g.height() / 2)
    elif shape == "selected":
        p.setPen(QPen(bc, 2.0, Qt.PenStyle.DashLine))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRoundedRect(r.adjusted(2, 2, -2, -2), 5, 5)
    elif shape == "hexagon":
        p.setBrush(fc)
        p.setPen(QPen(bc, 2.5))
        k = r.height() / 2
        p.drawPolygon(QPolygonF([QPointF(r.left(), r.center().y()), QPointF(r.left() + k, r.top()),
                                 QPointF(r.right() - k, r.top()), QPointF(r.right(), r.center().y()),
                                 QPointF(r.right() - k, r.bottom()), QPointF(r.left() + k, r.bottom())]))
    else:
        p.setBrush(fc)
        pen = QPen(bc, 2.0 if shape != "freed" else 1.2)
        if shape in ("region", "freed"):
            pen.setStyle(Qt.PenStyle.DashLine)
        p.setPen(pen)
        radius = r.height() / 2 if shape == "freed" else 4
        if shape == "freed" and mark != "freed":
            pen.setStyle(Qt.PenStyle.SolidLine)   # a tag: solid, as the canvas draws it
            p.setPen(pen)
        p.drawRoundedRect(r, radius, radius)
        if mark:
            f = QFont(font)
            f.setBold(True)
            if shape in ("freed", "label"):   # the canvas's small pills and labels
                f.setPointSizeF(f.pointSizeF() * 0.72)
                while QFontMetricsF(f).horizontalAdvance(mark) > r.width() - 6 and \
                        f.pointSizeF() > 5:
                    f.setPointSizeF(f.pointSizeF() * 0.9)   # "in-place" fits its pill
            p.setFont(f)
            p.setPen(bc)
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, mark)
    p.end()
    return pm


def _qc(hex_colour: str) -> QColor:
    h = hex_colour.lstrip("#")
    if len(h) == 8:     # #rrggbbaa (Qt reads 8 digits as #aarrggbb)
        return QColor(int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), int(h[6:8], 16))
    return QColor("#" + h[:6])


def _over(fill: str, background: str) -> str:
    """``#rrggbbaa`` painted over an opaque background, as ``#rrggbb`` (rich text has no alpha)."""
    h = fill.lstrip("#")
    if len(h) != 8:
        return "#" + h[:6]
    a = int(h[6:8], 16) / 255
    b = background.lstrip("#")[:6]
    mix = [round(int(h[i:i + 2], 16) * a + int(b[i:i + 2], 16) * (1 - a)) for i in (0, 2, 4)]
    return "#" + "".join(f"{c:02x}" for c in mix)
