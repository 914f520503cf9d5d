"""GraphCanvas and export rendering: drawn to images and checked pixel by pixel, clicked,
fitted, zoomed; on graphs of real snippets (captured in a worker) and on a large
synthetic graph built from protocol records."""
import math
import re

import pytest
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor

from graphscope import protocol as P
from graphscope.model.graph import build_graph
from graphscope.model.layout import LayeredLayout
from graphscope.model.timeline import Timeline
from graphscope.model.trace import Trace
from graphscope.ui import render
from graphscope.ui.canvas_primitives import qcolor
from graphscope.ui.graph_canvas import GraphCanvas
from graphscope.ui.theme import THEMES, get_theme

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")

NO_GRAD = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
z = y.sum()
z.backward()
"""

MUL = """import torch
x = torch.tensor(2.0, requires_grad=True)
w = torch.tensor(3.0, requires_grad=True)
y = x * w
z = y + x
z.backward()
"""


@pytest.fixture(scope="module")
def traces(qapp):
    import graphscope
    return {"no_grad": graphscope.trace(NO_GRAD), "mul": graphscope.trace(MUL)}


def scene(trace):
    graph = build_graph(trace)
    layout = LayeredLayout(graph)
    return graph, layout, Timeline(trace, graph)


def shown(canvas, trace, size=(820, 640)):
    """``scene(trace)`` on ``canvas`` at ``size`` (820x640: the canvas of a 1600x1000
    window), the layout tidied for it as the window does."""
    graph, layout, tl = scene(trace)
    canvas.resize(*size)
    layout.tidy(aspect=canvas.view_aspect())
    canvas.set_graph(graph, layout, trace)
    return graph, layout, tl


def backward_frames(canvas, tl):
    """(cursor, frame) of each step with gradients on edges, shown on ``canvas``."""
    for i in range(len(tl)):
        frame = tl.state(i)
        if frame.edge_grads:
            canvas.set_frame(frame)
            canvas.grab()
            yield i, frame


def synthetic_trace(n_ops: int) -> Trace:
    """A chain y = y * w + ... of ``n_ops`` ops built straight from protocol records."""
    tr = Trace(source="", filename="<synthetic>")
    tr.apply(P.TensorInfo(id=0, shape=[4], dtype="float32", requires_grad=True, name="x"))
    tr.apply(P.TensorInfo(id=1, shape=[4], dtype="float32", requires_grad=True, name="w"))
    tr.apply(P.Op(id=0, seq=0, name="tensor", qualname="torch.tensor", line=1, grad_enabled=True,
                  inputs=[], outputs=[0], kind="factory"))
    prev, tid = 0, 2
    for i in range(1, n_ops):
        tr.apply(P.TensorInfo(id=tid, shape=[4], dtype="float32", requires_grad=True,
                              is_leaf=False, grad_fn="MulBackward0", created_by=i, seq=i))
        tr.apply(P.Op(id=i, seq=i, name="mul", qualname="torch.mul", line=2, grad_enabled=True,
                      inputs=[prev, 1], outputs=[tid], grad_fn="MulBackward0"))
        prev, tid = tid, tid + 1
    tr.apply(P.End(status="ok"))
    return tr


def image_point(graph, layout, frame, scene_xy, scale=1.0, theme="light"):
    """Where scene point ``scene_xy`` lands in render_image's picture."""
    geom = render._geometry(graph, layout)
    _, _, tf, _ = render._plan(geom, render._limit(frame), None, scale, 1.0)
    p = tf.map(QPointF(*scene_xy))
    return int(p.x()), int(p.y())


def close(c1: QColor, c2: QColor, tol=24):
    return all(abs(a - b) <= tol for a, b in zip(c1.getRgb()[:3], c2.getRgb()[:3]))


def blend(fg_hex, bg_hex):
    fg, bg = qcolor(fg_hex), qcolor(bg_hex)
    a = fg.alphaF()
    return QColor(*(round(f * a + b * (1 - a)) for f, b in
                    zip(fg.getRgb()[:3], bg.getRgb()[:3])))


# -- export pictures -------------------------------------------------------------------
def test_render_nonblank_with_region_box_where_the_region_is(traces):
    graph, layout, tl = scene(traces["no_grad"])
    theme = get_theme("light")
    img = render.render_image(graph, layout, tl.state(), theme)
    assert img.width() > 300 and img.height() > 80
    bg = qcolor(theme.canvas_bg)
    colours = {img.pixelColor(x, y).rgb() for x in range(0, img.width(), 7)
               for y in range(0, img.height(), 7)}
    assert len(colours) > 20, "picture is (nearly) blank"
    # inside the region's padding, left of its first node: the shaded box colour
    region = graph.regions[0]
    assert region.label.startswith("torch.no_grad()")
    members = [layout.positions[i] for i in region.node_ids]
    cy = sum(y for _, y in members) / len(members)
    left_node = min(region.node_ids, key=lambda i: layout.positions[i][0])
    from graphscope.model.layout import node_size
    w = node_size(graph.nodes[left_node])[0]
    x, y = image_point(graph, layout, tl.state(), (layout.positions[left_node][0] - w / 2 - 9,
                                                   cy + 20))
    assert close(img.pixelColor(x, y), blend(theme.region_fill, theme.canvas_bg), tol=10)
    # and not outside it (far left of x, between nodes)
    x0, y0 = image_point(graph, layout, tl.state(), (layout.positions["t0"][0], cy + 33))
    assert close(img.pixelColor(x0, y0), bg, tol=3)


def test_a_region_box_does_not_reach_over_nodes_outside_it(qapp):
    """The no_grad box around ``z = model(x)`` is padded (its label above, the "no
    grad" tags below); the padding ran through the row above, ``y = model(x)``,
    which read as if it were inside the region. Trimmed, it meets no node that
    is not in the region."""
    import graphscope
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_scene import SceneGeometry
    tr = graphscope.trace(EVAL_THEN_NO_GRAD)
    graph, layout, tl = scene(tr)
    layout.tidy()
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    painter = ScenePainter(geom, get_theme("light"), 1.0, graph.regions)
    boxes = painter._region_boxes(math.inf)
    assert len(boxes) == 1
    box = boxes[0][0]
    members = set(graph.regions[0].node_ids)
    near = [ng for ng in geom.nodes.values() if ng.id not in members
            and abs(ng.y - min(geom.nodes[i].y for i in members if i in geom.nodes)) < 100]
    assert near                                          # the row above is close
    for ng in near:
        assert not box.intersects(ng.rect), ng.node.label
    for i in members:
        assert box.contains(geom.nodes[i].rect)


def test_nodes_hidden_before_their_step(traces):
    graph, layout, tl = scene(traces["no_grad"])
    theme = get_theme("light")
    z = next(n for n in graph.nodes.values() if n.label == "z")
    x = next(n for n in graph.nodes.values() if n.label == "x")
    early = tl.state(x.step)
    assert z.step > early.visible_steps
    full = tl.state()
    # same picture geometry for both: render each at the size of the full one
    img_full = render.render_image(graph, layout, full, theme)
    size = (img_full.width(), img_full.height())
    img_early = render.render_image(graph, layout, early, theme, size=size)
    geom = render._geometry(graph, layout)
    _, _, tf_early, _ = render._plan(geom, render._limit(early), size, 1.0, 1.0)
    _, _, tf_full, _ = render._plan(geom, render._limit(full), None, 1.0, 1.0)
    zx, zy = layout.positions[z.id]
    pe = tf_early.map(QPointF(zx, zy + 12))
    pf = tf_full.map(QPointF(zx, zy + 12))
    inside_early = 0 <= pe.x() < size[0] and 0 <= pe.y() < size[1]
    if inside_early:
        assert close(img_early.pixelColor(int(pe.x()), int(pe.y())), qcolor(theme.canvas_bg), 3)
    assert not close(img_full.pixelColor(int(pf.x()), int(pf.y())), qcolor(theme.canvas_bg), 3)


def test_current_backward_node_glows_in_highlight_colour(traces):
    graph, layout, tl = scene(traces["mul"])
    theme = get_theme("light")
    step = next(s for s in tl.steps if s.kind == "backward" and s.op is not None
                and graph.nodes.get(f"o{s.op}") is not None
                and graph.nodes[f"o{s.op}"].label == "mul")
    frame = tl.state(step.index)
    assert f"o{step.op}" in frame.highlight and frame.edge_grads
    img = render.render_image(graph, layout, frame, theme, scale=2.0)
    from graphscope.model.layout import node_size
    nid = f"o{step.op}"
    cx, cy = layout.positions[nid]
    h = node_size(graph.nodes[nid])[1]
    # just above the node: the inner, opaque ring of the glow (5 px out at 2x, width 4)
    x, y = image_point(graph, layout, frame, (cx, cy - h / 2), scale=2.0)
    hits = [img.pixelColor(x, y - d) for d in range(6, 14)]
    assert any(close(c, qcolor(theme.current), 30) for c in hits), [c.name() for c in hits]
    # the same spot with no frame: no glow
    plain = render.render_image(graph, layout, tl.state(0), theme, scale=2.0,
                                size=(img.width(), img.height()))
    assert plain.width() == img.width()


def test_svg_and_files(traces, tmp_path):
    graph, layout, tl = scene(traces["no_grad"])
    svg = render.render_svg(graph, layout, tl.state(), "dark")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "torch.no_grad()" in svg and ">x<" in svg.replace(" ", "")
    png = render.render_file(traces["no_grad"], tmp_path / "g.png", "png", theme="high-contrast")
    render.render_file(traces["no_grad"], tmp_path / "g.svg", "svg")
    from PySide6.QtGui import QImage
    assert QImage(png).width() > 100
    assert "<svg" in (tmp_path / "g.svg").read_text()
    with pytest.raises(ValueError):
        render.render_file(traces["no_grad"], tmp_path / "g.gif", "gif")


# -- the widget ------------------------------------------------------------------------
@pytest.fixture
def canvas(qtbot):
    c = GraphCanvas()
    qtbot.addWidget(c)
    c.resize(900, 500)
    c.show()
    qtbot.waitExposed(c)
    return c


def test_click_on_node_emits_its_id_and_fit_shows_all(canvas, qtbot, traces):
    graph, layout, tl = scene(traces["mul"])
    canvas.set_graph(graph, layout, traces["mul"])
    canvas.fit()
    view = QRectF(canvas.rect())
    for nid in graph.nodes:
        assert view.contains(canvas.node_view_rect(nid)), nid
    target = next(n.id for n in graph.nodes.values() if n.label == "w")
    centre = canvas.node_view_rect(target).center().toPoint()
    with qtbot.waitSignal(canvas.node_clicked, timeout=2000) as sig:
        qtbot.mouseClick(canvas, Qt.LeftButton, pos=centre)
    assert sig.args == [target]
    assert canvas.selected() == target
    # a click on empty canvas clears the selection and says so with ""
    with qtbot.waitSignal(canvas.node_clicked, timeout=2000) as sig:
        qtbot.mouseClick(canvas, Qt.LeftButton, pos=canvas.rect().bottomLeft() + QPointF(3, -3).toPoint())
    assert sig.args == [""] and canvas.selected() is None


def test_stepping_hides_and_shows_nodes_in_the_widget(canvas, qtbot, traces):
    graph, layout, tl = scene(traces["no_grad"])
    canvas.set_graph(graph, layout)
    canvas.set_frame(tl.state())
    z = next(n for n in graph.nodes.values() if n.label == "z")
    zr = canvas.node_view_rect(z.id)
    bg = qcolor(canvas.theme().canvas_bg)
    probe = QPointF(zr.center().x(), zr.center().y() + zr.height() * 0.3).toPoint()
    assert not close(canvas.grab().toImage().pixelColor(probe), bg, 3)
    canvas.set_frame(tl.state(0))                       # back to the first step
    assert close(canvas.grab().toImage().pixelColor(probe), bg, 3)
    assert canvas.node_at(QPointF(zr.center())) is None  # hidden nodes are not clickable
    canvas.set_frame(tl.state())                        # and forward again
    assert not close(canvas.grab().toImage().pixelColor(probe), bg, 3)


def test_level_of_detail_follows_zoom(canvas, qtbot):
    tr = synthetic_trace(3000)
    graph = build_graph(tr)
    layout = LayeredLayout(graph)
    canvas.set_graph(graph, layout)
    canvas.fit()
    canvas.grab()
    assert canvas.lod == "tiny"
    canvas.zoom_by(1 / canvas.view_scale())               # 1:1
    canvas.grab()
    assert canvas.lod == "full"
    canvas.zoom_by(0.25)
    canvas.grab()
    assert canvas.lod == "simple"
    # keys: 0 fits again
    canvas.setFocus()
    qtbot.keyClick(canvas, Qt.Key_0)
    canvas.grab()
    assert canvas.lod == "tiny"
    qtbot.keyClick(canvas, Qt.Key_Plus)
    assert canvas.view_scale() > 0


def test_live_nodes_enter_with_animation_unless_instant(canvas, qtbot, traces):
    tr = traces["mul"]
    graph = build_graph(tr)
    layout = LayeredLayout(graph)
    ids = list(graph.nodes)
    # start from the first two nodes, then add the rest as a stream would
    from graphscope.model.graph import Graph
    canvas.set_graph(graph, layout)
    canvas.clear()
    partial = Graph()
    for nid in ids[:2]:
        partial._add_node(graph.nodes[nid])
    canvas.set_graph(partial, layout)
    for nid in ids[2:]:
        partial._add_node(graph.nodes[nid])
    for e in graph.edges:
        partial._add_edge(e)
    added = canvas.add_nodes(ids[2:])
    assert added == ids[2:]
    assert canvas.animating()
    qtbot.waitUntil(lambda: not canvas.animating(), timeout=3000)
    canvas.set_speed("instant")
    canvas.set_graph(partial, layout)
    assert not canvas.animating()


def test_tooltip_explains_missing_requires_grad(canvas, traces):
    graph, layout, tl = scene(traces["no_grad"])
    canvas.set_graph(graph, layout, traces["no_grad"])
    flagged = [n for n in graph.nodes.values() if "missing_requires_grad" in n.flags]
    assert flagged
    text = canvas.tooltip_for(flagged[0].id)
    assert "backward" in text and "requires_grad" in text
    x = next(n for n in graph.nodes.values() if n.label == "x")
    tip = canvas.tooltip_for(x.id)
    assert "float32" in tip and "is_leaf" in tip and "True" in tip


def test_theme_text_scale_and_spotlight_repaint(canvas, traces):
    graph, layout, tl = scene(traces["mul"])
    canvas.set_graph(graph, layout)
    canvas.set_frame(tl.state())
    for name in THEMES:
        canvas.set_theme(name)
        img = canvas.grab().toImage()
        assert close(img.pixelColor(2, 2), qcolor(THEMES[name].canvas_bg), 3)
    canvas.set_text_scale(2.0)
    canvas.set_spotlight(True)
    img = canvas.grab().toImage()
    # the spotlight dims the corner (far from the current node)
    dim = blend(canvas.theme().spotlight_dim, canvas.theme().canvas_bg)
    assert close(img.pixelColor(2, 2), dim, 6)


def test_the_spotlight_leaves_the_selected_node_and_the_marks_undimmed(canvas, traces):
    """Presentation's spotlight dims all but the current step, except what the
    banner and the teacher point at: the node marked '?' (the culprit of the
    error) was the faintest thing on screen."""
    tr = traces["no_grad"]
    graph, layout, tl = scene(tr)
    canvas.set_graph(graph, layout, tr)
    frame = tl.state(len(tl) - 1)
    canvas.set_frame(frame)
    canvas.fit()
    flagged = next(n for n in graph.nodes.values() if "missing_requires_grad" in n.flags)
    others = [n for n in graph.nodes.values() if n.id != flagged.id and not n.flags
              and n.id not in frame.highlight]
    assert others
    # (a tensor: a light veil changes an op's near-white fill by 2 levels, too
    # little for a pixel to tell)
    from graphscope.ui.canvas_paint import ScenePainter
    chosen = next((n for n in graph.nodes.values() if n.kind == "tensor"
                   and n.id != flagged.id and n.id not in frame.highlight
                   and not (n.flags & ScenePainter._SPOTLIT)), others[0])

    def pixel(node_id):
        img = canvas.grab().toImage()
        r = canvas.node_view_rect(node_id)
        return img.pixelColor(int(r.left() + 6), int(r.center().y()))

    before = {n: pixel(n) for n in (flagged.id, chosen.id)}
    canvas.set_spotlight(True)
    assert close(pixel(flagged.id), before[flagged.id], 3)        # the mark: as it was
    assert not close(pixel(chosen.id), before[chosen.id], 3)      # the rest: dimmed
    canvas.select(chosen.id)
    assert close(pixel(chosen.id), before[chosen.id], 3)          # selected: lit again


def test_each_input_of_an_op_enters_it_at_its_own_place(traces):
    """``x * w``: the two inputs used to end at one point under one arrowhead, so
    an op's inputs could not be counted. Each now has its own port on the op's
    left side, on its outline, in the order of their sources (no crossing); an
    op with one input is entered at its middle."""
    from graphscope.ui.canvas_scene import SceneGeometry, edge_ends, edge_route
    graph, layout, tl = scene(traces["mul"])
    layout.tidy()
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    nodes = geom.nodes

    def end(e):
        s, d = nodes[e.src], nodes[e.dst]
        route = edge_route(geom, s, d)
        return route[-1] if route is not None else edge_ends(s, d, geom)[1]

    into = {}
    for e in geom.edges:
        into.setdefault(e.dst, []).append(e)
    mul = next(i for i, n in graph.nodes.items() if n.kind == "op" and n.label == "mul")
    ins = into[mul]
    assert len(ins) == 2
    ends = sorted((nodes[e.src].y, end(e).y()) for e in ins)
    d = nodes[mul]
    assert abs(ends[0][1] - ends[1][1]) >= 8            # two places, not one
    assert ends[0][1] < ends[1][1]                     # the upper source, the upper port
    for e in ins:                                       # on the pill's round end
        p = end(e)
        r = d.h / 2
        assert p.x() > d.x - d.w / 2
        assert math.hypot(p.x() - (d.x - d.w / 2 + r), p.y() - d.y) == pytest.approx(r, abs=0.5)
    single = [i for i, es in into.items() if len(es) == 1 and nodes[i].x > nodes[es[0].src].x]
    assert single
    e = into[single[0]][0]
    assert end(e).y() == pytest.approx(nodes[single[0]].y)


def test_a_grad_box_is_drawn_only_beside_a_node_in_view(traces, monkeypatch):
    """A leaf out of view had its ``.grad`` box pulled on screen, beside some other
    node, where it read as that node's."""
    from PySide6.QtGui import QImage, QPainter, QTransform
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, tl = scene(traces["mul"])
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    painter = ScenePainter(geom, get_theme("light"))
    frame = tl.state(len(tl) - 1)
    assert frame.leaf_grads
    drawn = []
    real = ScenePainter._place_label
    monkeypatch.setattr(ScenePainter, "_place_label",
                        lambda self, p, c, s, text, *a, **k: drawn.append(text) or
                        real(self, p, c, s, text, *a, **k))
    img = QImage(400, 300, QImage.Format_ARGB32)
    for shift, expect in ((0.0, True), (5000.0, False)):
        drawn.clear()
        r = geom.bounds()
        to_device = QTransform.fromTranslate(-r.left() + 20 + shift, -r.top() + 40)
        p = QPainter(img)
        painter.paint_overlay(p, to_device, frame, math.inf, None, False,
                              QRectF(0, 0, r.width() + 60, r.height() + 80), 1.0)
        p.end()
        assert any(t.startswith(".grad") for t in drawn) is expect, (shift, drawn)


# -- view, sizes and edges for a lecture hall --------------------------------------------
def test_small_graph_is_fitted_larger_than_one_to_one(canvas, traces):
    graph, layout, tl = scene(traces["mul"])
    layout.tidy()                                  # columns as wide as their names
    canvas.resize(1800, 900)
    canvas.set_graph(graph, layout)
    canvas.fit()
    assert canvas.view_scale() > 1.6               # zoomed in well beyond 1:1
    assert not canvas.following()
    view = QRectF(canvas.rect())
    for nid in graph.nodes:
        assert view.contains(canvas.node_view_rect(nid)), nid


def test_following_a_node_near_the_graph_s_edge_leaves_no_empty_half(canvas):
    """Centred on a node at the left end of a row, the view showed empty canvas on
    its left while the graph ran off its right: the pan keeps to the graph."""
    tr = synthetic_trace(3000)
    graph = build_graph(tr)
    canvas.set_animated(False)          # each pan lands at once
    canvas.set_graph(graph, LayeredLayout(graph))
    tl = Timeline(tr, graph)
    view = QRectF(canvas.rect())
    checked = 0
    # (from the middle on until six are checked: 400 steps held six such nodes,
    # and once in a full run of the suite only two, for a reason not found)
    for i in range(len(tl) // 2, len(tl)):
        if checked >= 6:
            break
        frame = tl.state(i)
        canvas.set_frame(frame)
        current = [n for n in frame.highlight if n in graph.nodes]
        if not canvas.following() or not current:
            continue
        shown = [canvas.node_view_rect(n) for n, node in graph.nodes.items() if node.step <= i]
        left = min(r.left() for r in shown)
        if canvas.node_view_rect(current[0]).left() > left + 1:
            continue          # not the leftmost node: centring leaves nothing empty
        # the graph reaches the view's left edge (a margin for region labels)...
        assert left <= view.left() + 60
        # ... and the step is in view
        assert any(view.intersects(canvas.node_view_rect(n)) for n in current)
        checked += 1
    assert checked >= 3


def test_a_followed_view_shows_where_the_graph_goes_on(canvas):
    """NOTE [more beyond]: following a step in a big graph cut nodes at the view's
    edge with no sign that the graph went on; each such side now fades out with
    a chevron. A fitted graph has none."""
    tr = synthetic_trace(3000)
    graph = build_graph(tr)
    canvas.set_animated(False)
    canvas.set_graph(graph, LayeredLayout(graph))
    tl = Timeline(tr, graph)
    canvas.set_frame(tl.state(len(tl) // 2))
    assert canvas.following()
    sides = canvas.more_beyond()
    assert sides and sides <= {"left", "right", "top", "bottom"}
    bg = qcolor(canvas.theme().canvas_bg)
    w, h = canvas.width(), canvas.height()

    def ink(img, side):
        """How far the outermost strip of pixels along ``side`` is from the background."""
        pts = ([(1, y) for y in range(0, h, 3)] if side == "left" else
               [(w - 2, y) for y in range(0, h, 3)] if side == "right" else
               [(x, 1) for x in range(0, w, 3)] if side == "top" else
               [(x, h - 2) for x in range(0, w, 3)])
        return sum(abs(img.pixelColor(x, y).red() - bg.red()) +
                   abs(img.pixelColor(x, y).green() - bg.green()) for x, y in pts)

    faded = canvas.grab().toImage()
    canvas._paint_more_beyond = lambda *a: None
    canvas.update()
    plain = canvas.grab().toImage()
    side = max(sides, key=lambda sd: ink(plain, sd))
    assert ink(plain, side) > 0                          # the graph is cut there ...
    assert ink(faded, side) < ink(plain, side) * 0.5     # ... and fades out to the edge
    del canvas._paint_more_beyond
    canvas.fit()
    assert canvas.more_beyond() == set()


def test_long_chain_is_followed_at_a_readable_zoom_and_fit_shows_all(canvas, qtbot):
    tr = synthetic_trace(3000)
    graph = build_graph(tr)
    layout = LayeredLayout(graph)
    tl = Timeline(tr, graph)
    canvas.set_graph(graph, layout)
    assert canvas.auto_fit and canvas.fit_scale() < canvas.readable_scale()
    frame = tl.state(len(tl) // 2)
    canvas.set_frame(frame)
    assert canvas.following()
    assert canvas.view_scale() >= canvas.readable_scale() * 0.98
    current = [i for i in frame.highlight if i in graph.nodes]
    assert current
    assert QRectF(canvas.rect()).intersects(canvas.node_view_rect(current[0]))
    canvas.setFocus()
    qtbot.keyClick(canvas, Qt.Key_0)              # fit all on demand
    assert not canvas.following() and canvas.view_scale() < canvas.readable_scale()
    canvas.set_follow(False)
    canvas.set_frame(tl.state(len(tl) // 3))      # no follow: the fitted view stays
    assert not canvas.following()
    canvas.set_follow(True)
    canvas.zoom_by(1.1)                            # the user's own view is never taken over
    scale = canvas.view_scale()
    canvas.set_frame(tl.state(len(tl) // 4))
    assert not canvas.auto_fit and canvas.view_scale() == scale


def test_presentation_needs_bigger_labels_than_the_desk(canvas, traces):
    graph, layout, tl = scene(traces["mul"])
    canvas.set_graph(graph, layout)
    desk = canvas.readable_scale()
    canvas.set_presentation(True)
    assert canvas.presentation and canvas.readable_scale() > desk


def test_bigger_text_in_presentation_makes_the_graph_s_labels_bigger_on_screen(canvas):
    """GUI review: in presentation mode four presses of Bigger text (100% to 140%)
    took a projected label from 17.8 to 18.7 px: boxes grew with the text and the
    auto view zoomed out to keep the graph fitted. The auto view now keeps labels
    as much bigger on screen as the size the user chose."""
    from graphscope.ui.canvas_primitives import LABEL_PX
    graph, layout, tl = scene(synthetic_trace(60))
    canvas.set_graph(graph, layout)
    canvas.set_presentation(True)

    def label_px():
        return LABEL_PX * canvas.text_scale() * canvas.view_scale()
    canvas.set_text_scale(1.6, reading=1.0)     # the presentation boost, user at 100%
    one = label_px()
    assert one >= 17.5
    canvas.set_text_scale(1.6 * 1.4, reading=1.4)
    assert label_px() >= one * 1.35
    # at 300% the hall size is still no bigger than the fit's cap: a small graph
    # is fitted, not followed (review: past 290% it never fitted)
    from graphscope.ui.canvas_view import MAX_FIT_LABEL_PX
    small, slayout, _ = scene(synthetic_trace(1))
    canvas.resize(1600, 1000)
    canvas.set_graph(small, slayout)
    canvas.set_text_scale(1.6 * 3.0, reading=3.0)
    assert canvas.readable_scale() * LABEL_PX * canvas.text_scale() <= MAX_FIT_LABEL_PX + 1e-6
    assert abs(canvas.view_scale() - canvas.fit_scale()) < 1e-6
    canvas.resize(900, 500)
    canvas.set_graph(graph, layout)
    # and outside presentation, bigger text is bigger on screen in proportion
    canvas.set_presentation(False)
    canvas.set_text_scale(1.0)
    desk = label_px()
    canvas.set_text_scale(1.15)
    assert desk * 1.1 <= label_px() <= desk * 1.25


def test_boxes_grow_with_text_scale_and_long_names_fit(canvas, traces):
    from graphscope.model.graph import Node
    from graphscope.model.layout import OP_CHAR, node_size
    op = Node(id="o1", kind="op", label="kaiming_uniform_", detail="")
    assert node_size(op)[0] >= len("kaiming_uniform_") * OP_CHAR + 16
    graph, layout, tl = scene(traces["mul"])
    canvas.set_graph(graph, layout)
    tid = next(n.id for n in graph.nodes.values() if n.label == "w")
    h1 = canvas.geometry_model().nodes[tid].h
    canvas.set_text_scale(1.6)
    assert canvas.geometry_model().nodes[tid].h > h1 * 1.3
    assert layout.text_scale == 1.6
    # still no overlapping boxes on the grown grid
    boxes = [ng.rect for ng in canvas.geometry_model().nodes.values()]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.intersects(b)


def test_edge_skipping_a_node_on_its_row_is_routed_around_it(traces):
    from graphscope.ui.canvas_scene import edge_route
    graph, layout, tl = scene(traces["mul"])
    geom = render._geometry(graph, layout)
    x = next(n.id for n in graph.nodes.values() if n.label == "x")
    add = next(n.id for n in graph.nodes.values() if n.label == "add")
    s, d = geom.nodes[x], geom.nodes[add]
    route = edge_route(geom, s, d)
    assert route is not None and route[0].x() < route[-1].x()
    for a, b in zip(route, route[1:]):
        seg = QRectF(a, b).normalized().adjusted(-0.5, -0.5, 0.5, 0.5)
        for ng in geom.nodes.values():
            if ng.id not in (x, add):
                assert not seg.intersects(ng.rect), (ng.node.label, a, b)


def test_edge_down_its_own_column_goes_round_the_nodes_in_it(qapp):
    # a weight in column 0 used again by an op in column 0 of the next band (the
    # practice-5 scenario): a straight curve ran through every node in between
    from graphscope.model.graph import Edge, Graph, Node
    from graphscope.ui.canvas_scene import SceneGeometry, edge_route
    g = Graph()
    pos = {}
    for i, (nid, kind) in enumerate((("t0", "tensor"), ("t1", "tensor"), ("t2", "tensor"),
                                     ("o0", "op"))):
        g._add_node(Node(id=nid, kind=kind, label=nid, detail="", step=i))
        pos[nid] = (0.0, 84.0 * i * (2 if nid == "o0" else 1))
    g._add_edge(Edge("t0", "o0", "data", 3))
    geom = SceneGeometry.build(g, pos)
    s, d = geom.nodes["t0"], geom.nodes["o0"]
    route = edge_route(geom, s, d)
    assert route is not None
    for a, b in zip(route, route[1:]):
        seg = QRectF(a, b).normalized().adjusted(-0.5, -0.5, 0.5, 0.5)
        for nid in ("t1", "t2"):
            assert not seg.intersects(geom.nodes[nid].rect), (nid, a, b)


DEPTH_BY_DATA = """import torch
torch.manual_seed(0)
layer = torch.nn.Linear(2, 2)
def forward(x):
    depth = int(x.abs().sum().item())
    for _ in range(depth):
        x = torch.tanh(layer(x))
    return x.sum(), depth
for x in (torch.tensor([0.5, 0.75]), torch.tensor([2.0, 1.5]), torch.tensor([0.25, 0.5])):
    out, depth = forward(x)
"""


@pytest.mark.parametrize("aspect", [1.0, 1.25, 1.5, 16 / 9])
def test_no_edge_is_drawn_through_a_node_it_does_not_touch(qapp, aspect):
    # the weights reach linears in later bands: long curves (practice-1 drew
    # layer.bias's through "abs" and "t17"); every path is sampled as painted
    import graphscope
    from PySide6.QtGui import QPainterPath
    from graphscope.ui.canvas_primitives import _curve, _lane_path
    from graphscope.ui.canvas_scene import SceneGeometry, edge_ends, edge_route
    graph, layout, _ = scene(graphscope.trace(DEPTH_BY_DATA))
    geom = SceneGeometry.build(graph, layout.tidy(aspect=aspect))
    for e in graph.edges:
        s, d = geom.nodes[e.src], geom.nodes[e.dst]
        path = QPainterPath()
        route = edge_route(geom, s, d)
        if route is not None:
            _lane_path(path, route)
        else:
            _curve(path, *edge_ends(s, d))
        for i in range(1, 100):
            pt = path.pointAtPercent(i / 100)
            for ng in geom.nodes.values():
                if ng.id not in (s.id, d.id):
                    assert not ng.rect.adjusted(2, 2, -2, -2).contains(pt), (
                        graph.nodes[e.src].label, graph.nodes[e.dst].label, ng.node.label)


def test_empty_canvas_invites_a_run_then_says_nothing_was_made(canvas, traces):
    from graphscope.model.graph import Graph
    assert "F5" in canvas.empty_text()
    tr = Trace(source="x = (", filename="<t>")
    canvas.set_graph(Graph(), LayeredLayout(Graph()), tr)
    assert canvas.empty_text() == ""               # still running: nothing to say yet
    tr.apply(P.End(status="error"))
    assert canvas.empty_text() == "No tensors were created"
    canvas.grab()


# -- the canvas at scale (NOTE [edge grid], NOTE [node sprites]) ----------------------------
def test_edge_grid_and_step_bounds_agree_with_a_full_scan(qapp):
    from graphscope.ui.canvas_primitives import _segment_meets
    from graphscope.ui.canvas_scene import NEVER, SceneGeometry
    from graphscope.ui.graph_canvas import _size_fn
    tr = synthetic_trace(1500)
    graph = build_graph(tr)
    layout = LayeredLayout(graph)
    layout.positions = dict(layout.tidy())
    geom = SceneGeometry.build(graph, layout.positions, _size_fn(layout))
    assert len(geom.edges) > 2000
    everything = geom.bounds()
    found = 0
    for limit in (3.0, 400.0, 1200.0):
        for rect in (QRectF(everything.center(), everything.center() + QPointF(900, 500)),
                     QRectF(everything.left() - 50, everything.top() - 50, 700, 400)):
            want = {(e.src, e.dst) for e in geom.edges_upto(limit)
                    if _segment_meets(rect, geom.nodes[e.src], geom.nodes[e.dst])}
            got = {(e.src, e.dst) for e in geom.edges_in(rect, limit)}
            assert got == want, (limit, len(got), len(want))
            found += len(want)
        shown = geom.nodes_upto(limit)
        x0 = min(ng.x - ng.w / 2 for ng in shown)
        y1 = max(ng.y + ng.h / 2 for ng in shown)
        b = geom.bounds(limit)
        assert b.left() == pytest.approx(x0) and b.bottom() == pytest.approx(y1)
        assert geom.last_upto(limit) is shown[-1]
    assert found > 50
    # grown in batches as a run streams in (bounds asked for between batches): the same
    live = SceneGeometry()
    ids = list(graph.nodes)
    for k in range(0, len(ids), 700):
        live.add(graph, ids[k:k + 700], layout.positions, _size_fn(layout))
        assert live.bounds(float(k)).isValid() or k == 0
        live.edges_in(everything, NEVER)
    assert len(live.edges) == len(geom.edges)
    for limit in (3.0, 400.0, 1200.0, NEVER):
        assert live.bounds(limit) == geom.bounds(limit)
        assert {(e.src, e.dst) for e in live.edges_in(everything, limit)} == \
            {(e.src, e.dst) for e in geom.edges_upto(limit)}
    # a tidy pass moves nodes: the grids follow
    moved = {nid: (x + 5000.0, y) for nid, (x, y) in layout.positions.items()}
    geom.move(moved)
    r = geom.bounds()
    assert r.left() == pytest.approx(everything.left() + 5000.0)
    assert len(geom.edges_in(r)) == len(geom.edges)


def test_zoomed_in_paint_builds_paths_only_for_edges_in_view(canvas, qtbot, monkeypatch):
    from graphscope.ui.canvas_paint import ScenePainter
    tr = synthetic_trace(3000)
    graph = build_graph(tr)
    layout = LayeredLayout(graph)
    tl = Timeline(tr, graph)
    canvas.set_animated(False)
    canvas.set_graph(graph, layout)
    seen = []
    real = ScenePainter._paint_edges

    def spy(self, p, edges, cull, lod, exclude):
        seen.append(len(edges))
        return real(self, p, edges, cull, lod, exclude)
    monkeypatch.setattr(ScenePainter, "_paint_edges", spy)
    canvas.set_frame(tl.state(len(tl) - 1))
    assert canvas.following()
    canvas._invalidate()
    canvas.repaint()
    assert canvas.lod == "full" and seen
    assert 0 < max(seen) < len(canvas.geometry_model().edges) / 20


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_sprite_painted_nodes_look_like_the_vector_export(canvas, qtbot, traces, theme):
    """The canvas blits node boxes from a pixmap cache; exports draw them as vectors.
    Both pictures of the same view must agree nearly pixel for pixel."""
    from PySide6.QtGui import QImage, QPainter
    graph, layout, tl = scene(traces["no_grad"])
    canvas.set_animated(False)
    canvas.set_theme(theme)
    canvas.set_graph(graph, layout)
    canvas.set_frame(None)
    img = canvas.grab().toImage().convertToFormat(QImage.Format_RGB32)
    vec = QImage(img.size(), QImage.Format_RGB32)
    p = QPainter(vec)
    painter = canvas._painter
    painter.sprites = False
    canvas._invalidate()                           # not the cached (sprite) layer
    try:
        canvas.paint_to(p, canvas.rect())
    finally:
        painter.sprites = True
        p.end()
    assert canvas._painter._sprite_cache          # the canvas really used sprites
    differ = total = 0
    geom = canvas.geometry_model()
    for nid in graph.nodes:
        if geom.nodes[nid].style == "untracked":
            continue    # hatching: its phase follows the pixmap it is drawn into
        r = canvas.node_view_rect(nid).adjusted(-4, -14, 4, 4).toRect()
        for y in range(max(1, r.top()), min(img.height() - 1, r.bottom())):
            for x in range(max(1, r.left()), min(img.width() - 1, r.right()), 2):
                total += 1
                c = img.pixelColor(x, y)
                # sprites sit on whole pixels: allow a sub-pixel shift, nothing more
                if not any(close(c, vec.pixelColor(x + dx, y + dy), tol=72)
                           for dx in (0, -1, 1) for dy in (0, -1, 1)):
                    differ += 1
    assert total > 1000 and differ / total < 0.018, differ / total


def test_png_export_is_capped_and_svg_stays_vector(qapp):
    tr = synthetic_trace(400)
    graph, layout, tl = scene(tr)
    layout.positions = dict(layout.tidy())
    geom = render._geometry(graph, layout)
    side = max(geom.bounds(render.NEVER).width(), geom.bounds(render.NEVER).height())
    assert side > render.PNG_MAX_SIDE           # one pixel per scene unit would be bigger
    img = render.render_image(graph, layout)
    assert max(img.width(), img.height()) == render.PNG_MAX_SIDE
    svg = render.render_svg(graph, layout)
    vb = [float(v) for v in re.search(r'viewBox="([^"]+)"', svg).group(1).split()]
    assert max(vb[2], vb[3]) > render.PNG_MAX_SIDE    # the cap is the PNG's alone
    assert "<path" in svg and "<image" not in svg     # vector, not a picture
    # the picture still shows the graph: far more than the background
    bg = img.pixelColor(0, 0)
    small = img.scaled(200, 200 * img.height() // img.width())
    painted = sum(small.pixelColor(x, y) != bg for x in range(small.width())
                  for y in range(small.height()))
    assert painted > 100


def test_quiz_before_reveal_hides_the_marks_that_answer_it(qapp):
    """Before Reveal, the error and missing-requires_grad marks would answer
    "what error does this raise?": the painter leaves them off, and only them."""
    import types
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.theme import get_theme
    painter = ScenePainter(None, get_theme("light"))
    node = types.SimpleNamespace(flags=frozenset({"error", "missing_requires_grad", "leaf"}))
    assert painter.shown_flags(node) == node.flags
    painter.values_hidden = True
    assert painter.shown_flags(node) == frozenset({"leaf"})
    # and the words that say it: a failed op's "raised RuntimeError" is left off too
    from PySide6.QtGui import QImage, QPainter
    seen = []

    class Recording(QPainter):
        def drawText(self, *a):
            seen.append(str(a[-1]))
            return super().drawText(*a)
    op = types.SimpleNamespace(id="o1", kind="op", label="mul", detail="raised RuntimeError",
                               flags=frozenset({"error"}), ghost_of=None)
    ng = types.SimpleNamespace(node=op, id="o1", w=150.0, h=40.0, x=80.0, y=30.0)
    img = QImage(200, 80, QImage.Format_ARGB32)
    p = Recording(img)
    painter._node_text(p, ng, QRectF(5, 10, 150, 40), bold=False)
    p.end()
    assert not any("RuntimeError" in t for t in seen) and any("mul" in t for t in seen)


def test_no_grad_tag_hangs_clear_of_the_box_and_inside_the_glow(traces):
    """The "no grad" tag under z (the node the error highlights) sits below z's thick
    error border, and the glow goes around box and tag together instead of through it."""
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_primitives import _rect
    graph, layout, tl = scene(traces["no_grad"])
    theme = get_theme("light")
    frame = tl.state(len(tl) - 1)
    z = next(i for i, n in graph.nodes.items() if n.label == "z")
    assert z in frame.highlight and "error" in graph.nodes[z].flags
    geom = render._geometry(graph, layout)
    painter = ScenePainter(geom, theme)
    ng = geom.nodes[z]
    tags = painter._tag_boxes(_rect(ng), painter._tag_list(ng, ng.node.flags))
    assert [t for t, _ in tags] == ["no grad"]
    box = tags[0][1]
    assert box.top() >= _rect(ng).bottom() + 2           # clear of the 5 px border
    ring = painter.marks_rect(ng)
    assert ring.contains(box) and ring.contains(_rect(ng))
    # drawn: at 2x, the glow's opaque ring runs 5-9 px below the tag, not across it
    img = render.render_image(graph, layout, frame, theme, scale=2.0)
    x, y = image_point(graph, layout, frame, (box.center().x(), box.bottom()), scale=2.0)
    below = [img.pixelColor(x, y + d) for d in range(4, 12)]
    assert any(close(c, qcolor(theme.current), 30) for c in below), [c.name() for c in below]
    across = [img.pixelColor(x, y - d) for d in range(3, int(box.height() * 2) - 3)]
    assert not any(close(c, qcolor(theme.current), 30) for c in across), [c.name() for c in across]


EVAL_THEN_NO_GRAD = """import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
x = torch.ones(1, 2)
model.eval()
y = model(x)
with torch.no_grad():
    z = model(x)
"""


def test_a_region_label_keeps_clear_of_nodes_outside_the_region(qapp):
    # the no_grad box is drawn around its members only; in this graph the linear op
    # of y (outside the region) sits where the label would go, and covered it
    import graphscope
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_primitives import _union
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, _ = scene(graphscope.trace(EVAL_THEN_NO_GRAD))
    geom = SceneGeometry.build(graph, layout.tidy())
    painter = ScenePainter(geom, get_theme("light"), 1.0, graph.regions)
    clusters = painter._region_clusters()
    assert clusters
    for reg, cluster, _, _continued in clusters:
        box = _union(cluster).adjusted(-18, -44, 18, 40)     # as _paint_region_box pads it
        first = QRectF(box.left() + 10, box.top() + 4, 220, 26)
        got = painter._region_label_rect(box, 220, 26, math.inf)
        if not geom.nodes_in(first.adjusted(-4, -2, 4, 2)):
            assert got == first                               # the usual place when free
        else:
            assert not geom.nodes_in(got.adjusted(-4, -2, 4, 2)), reg.label


RNN_SHARED_W = """import torch
w = torch.tensor(0.5, requires_grad=True)
with torch.no_grad():
    h1 = torch.tensor(1.0)
    h2 = torch.tensor(2.0)
a = w * h1
b = w * h2
(a + b).backward()
"""


def test_a_grad_box_boxed_in_by_its_neighbours_covers_none_of_them(qapp):
    """GUI review (rnn-shared-weight projected, graph only): w at the view's left
    edge between two h rows, a mul to its right; every spot beside it was covered,
    and the least covered one put ".grad: 2.0" on the mul's name. Now the box goes
    over w's own lower half (its shape line, not its name), or further out."""
    import graphscope
    from PySide6.QtGui import QImage, QPainter, QTransform
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_primitives import _rect
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, tl = scene(graphscope.trace(RNN_SHARED_W))
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    by = {n.label: i for i, n in graph.nodes.items()}
    w, h1, h2, mul = (geom.nodes[by[k]] for k in ("w", "h1", "h2", "mul"))
    pitch = w.h + 24
    moved = {ng.id: (ng.x + 5000, ng.y + 5000) for ng in geom.nodes.values()}
    moved.update({w.id: (100, 300), h1.id: (100, 300 - pitch), h2.id: (100, 300 + pitch),
                  mul.id: (100 + w.w / 2 + 50 + mul.w / 2, 300)})
    geom.move(moved)
    painter = ScenePainter(geom, get_theme("light"), 1.3)
    frame = tl.state(len(tl) - 1)
    assert int(by["w"][1:]) in frame.leaf_grads or by["w"] in frame.leaf_grads
    tf = QTransform().translate(-(100 - w.w / 2) * 1.3 + 4, 0).scale(1.3, 1.3)
    img = QImage(900, 700, QImage.Format_ARGB32)
    p = QPainter(img)
    painter.paint_overlay(p, tf, frame, float("inf"), device_rect=QRectF(0, 0, 900, 700),
                          scale=1.3)
    p.end()
    assert painter.placed_labels
    n_boxes = len(painter.placed_labels) - len(frame.edge_grads)
    from graphscope.ui.canvas_overlay import _words_of
    for ng in (h1, h2, mul):
        r = tf.mapRect(_rect(ng))
        for k, b in enumerate(painter.placed_labels):
            # (a gradient chip may touch a node's rim, not its words)
            keep_off = r if k < n_boxes else _words_of(r)
            assert not keep_off.intersects(b.adjusted(3, 3, -3, -3)), (ng.node.label, r, b)
    # nor w's own name, in the upper half of its box
    name = tf.mapRect(_rect(w))
    name.setHeight(name.height() / 2)
    assert not any((name if k < n_boxes else _words_of(name)).intersects(b.adjusted(3, 3, -3, -3))
                   for k, b in enumerate(painter.placed_labels))


Y_PLUS_S = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([0.5, -1.0], requires_grad=True)
with torch.no_grad():
    s = x * 10
y = x * w
z = (y + s).sum()
z.backward()
"""


def test_two_inputs_routed_alike_keep_to_their_own_tracks(qapp):
    """GUI review: s (made under no_grad) and y both come down from the row above
    into ``y + s``; their lanes were one line the whole way and only the two
    arrowheads told them apart. Each now has its own track, and they do not cross."""
    import graphscope
    from PySide6.QtCore import QLineF
    from graphscope.ui.canvas_scene import SceneGeometry, edge_route
    graph, layout, _ = scene(graphscope.trace(Y_PLUS_S))
    geom = SceneGeometry.build(graph, layout.tidy(aspect=1.2), layout.node_size)
    by = {n.label: i for i, n in graph.nodes.items()}
    add = geom.nodes[by["add"]]
    routes = [edge_route(geom, geom.nodes[by[k]], add) for k in ("s", "y")]
    assert all(r is not None for r in routes), "both inputs are routed through lanes"

    def segments(route):
        return [QLineF(a, b) for a, b in zip(route, route[1:])]
    for a in segments(routes[0]):
        for b in segments(routes[1]):
            kind = a.intersects(b)[0]
            assert kind != QLineF.IntersectionType.BoundedIntersection, (a, b)
            # and no stretch of one runs on the other
            same_row = abs(a.y1() - a.y2()) < 0.5 and abs(b.y1() - b.y2()) < 0.5 and \
                abs(a.y1() - b.y1()) < 2
            same_col = abs(a.x1() - a.x2()) < 0.5 and abs(b.x1() - b.x2()) < 0.5 and \
                abs(a.x1() - b.x1()) < 2
            if same_row:
                assert max(a.x1(), a.x2()) < min(b.x1(), b.x2()) or \
                    max(b.x1(), b.x2()) < min(a.x1(), a.x2()), (a, b)
            if same_col:
                assert max(a.y1(), a.y2()) < min(b.y1(), b.y2()) or \
                    max(b.y1(), b.y2()) < min(a.y1(), a.y2()), (a, b)


def test_two_inputs_from_the_same_column_never_cross_above_or_below(qapp):
    """Review of the lane offsets: for two sources below their node (or wrapped
    back to it), the lower one's run into the column gap crossed the higher
    one's. Every pair of rows, above and below, left and right: no crossing."""
    import itertools
    from PySide6.QtCore import QLineF
    from graphscope.ui.canvas_scene import NodeGeom, SceneGeometry, _lane

    class N:
        def __init__(self, kind):
            self.kind, self.flags, self.label, self.detail = kind, frozenset(), "n", None

    def crosses(r1, r2):
        for a, b in itertools.product(zip(r1, r1[1:]), zip(r2, r2[1:])):
            sa, sb = QLineF(*a), QLineF(*b)
            if sa.length() > 1e-6 and sb.length() > 1e-6 and \
                    sa.intersects(sb)[0] == QLineF.IntersectionType.BoundedIntersection:
                return True
        return False
    for col in (-2, -1, 1, 2):
        for r1, r2 in itertools.combinations((-3, -2, -1, 1, 2, 3), 2):
            g = SceneGeometry()
            g.row_pitch = 70.0
            d = NodeGeom("d", N("op"), 1000.0, 500.0, 104.0, 36.0, 10, "op")
            a = NodeGeom("a", N("tensor"), 1000.0 + col * 200, 500.0 + r1 * 70, 132.0, 52.0, 0, "t")
            b = NodeGeom("b", N("tensor"), 1000.0 + col * 200, 500.0 + r2 * 70, 132.0, 52.0, 1, "t")
            g.nodes.update(d=d, a=a, b=b)
            g._ins["d"] = {"a": None, "b": None}
            assert not crosses(_lane(g, a, d), _lane(g, b, d)), (col, r1, r2)


W_TIMES_H = """import torch
w = torch.tensor(0.5, requires_grad=True)
h = torch.tensor(2.0)
b = w * h
b.backward()
"""


def test_a_grad_box_never_covers_its_own_leaf_s_badge(qapp):
    """Review: the leaf's own marks were taken out of the obstacles so its box could
    sit over its shape line, and the "above" spot then landed on its ∇ badge."""
    import graphscope
    from PySide6.QtGui import QImage, QPainter, QTransform
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, tl = scene(graphscope.trace(W_TIMES_H))
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    by = {n.label: i for i, n in graph.nodes.items()}
    w, h, mul = (geom.nodes[by[k]] for k in ("w", "h", "mul"))
    moved = {ng.id: (ng.x + 5000, ng.y + 5000) for ng in geom.nodes.values()}
    moved.update({w.id: (400, 300), h.id: (400, 300 + w.h + 24), mul.id: (900, 300)})
    geom.move(moved)
    painter = ScenePainter(geom, get_theme("light"), 1.3)
    tf = QTransform().scale(1.3, 1.3)
    img = QImage(1400, 900, QImage.Format_ARGB32)
    p = QPainter(img)
    painter.paint_overlay(p, tf, tl.state(len(tl) - 1), float("inf"),
                          device_rect=QRectF(0, 0, 1400, 900), scale=1.3)
    p.end()
    assert painter._badge_list(w, painter.shown_flags(w.node)), "w has its ∇ badge"
    r = painter.marks_rect(w)
    badges = tf.mapRect(QRectF(r.left(), painter.ink_rect(w).top(), r.width(),
                               r.top() - painter.ink_rect(w).top()))
    assert painter.placed_labels
    for box in painter.placed_labels:
        assert not box.adjusted(2, 2, -2, -2).intersects(badges), (box, badges)


THREE_LEAVES = """import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
w = torch.tensor([0.5, -1.0], requires_grad=True)
b = torch.tensor(0.1, requires_grad=True)
y = (x * w).sum() + b
y.backward()
"""


def test_at_a_step_that_accumulates_into_one_leaf_every_leaf_keeps_its_box(qapp):
    """Visual review: at the last backward step (its gradient accumulated into one
    leaf) the other leaves' .grad boxes became grey captions or vanished, and the
    end of backward read as if their gradients had been erased."""
    import graphscope
    from PySide6.QtGui import QImage, QPainter, QTransform
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, tl = scene(graphscope.trace(THREE_LEAVES))
    geom = SceneGeometry.build(graph, layout.positions, layout.node_size)
    last = max(i for i in range(len(tl)) if tl.state(i).accumulated is not None)
    frame = tl.state(last)
    assert len(frame.leaf_grads) == 3 and frame.accumulated in frame.leaf_grads
    painter = ScenePainter(geom, get_theme("light"), 1.0)
    r = geom.bounds()
    tf = QTransform().translate(200 - r.left(), 200 - r.top())
    img = QImage(int(r.width()) + 400, int(r.height()) + 400, QImage.Format_ARGB32)
    p = QPainter(img)
    painter.paint_overlay(p, tf, frame, float("inf"),
                          device_rect=QRectF(0, 0, img.width(), img.height()), scale=1.0)
    p.end()
    # a box a leaf, and the gradient arriving on the accumulating leaf's edge
    assert frame.edge_grads
    assert len(painter.placed_labels) == 3 + len(frame.edge_grads)


def test_lanes_from_one_column_gap_to_different_rows_keep_their_own_tracks(qapp):
    """Visual review: two sums in one column feeding the next band left through the
    same vertical track and met in a T (which sum feeds which?); a tensor's lanes
    to its detach and to its numpy() merged the same way. Lanes to different rows
    leave the column gap on different tracks, whatever the row numbers."""
    from graphscope.ui.canvas_scene import NodeGeom, SceneGeometry, _lane

    class N:
        def __init__(self, kind):
            self.kind, self.flags, self.label, self.detail = kind, frozenset(), "n", None
    for base in (0.0, 35.0, 84.0, 500.0):
        for rows in ((1, 2), (2, 3), (3, 4), (1, 3)):
            g = SceneGeometry()
            g.row_pitch = 84.0
            s1 = NodeGeom("s1", N("op"), 900.0, base, 104.0, 36.0, 0, "op")
            s2 = NodeGeom("s2", N("op"), 900.0, base + 84.0, 104.0, 36.0, 1, "op")
            d1 = NodeGeom("d1", N("tensor"), 100.0, base + rows[0] * 84.0 + 84.0, 132.0, 52.0, 2, "t")
            d2 = NodeGeom("d2", N("tensor"), 100.0, base + rows[1] * 84.0 + 84.0, 132.0, 52.0, 3, "t")
            g.nodes.update(s1=s1, s2=s2, d1=d1, d2=d2)
            a, b = _lane(g, s1, d1), _lane(g, s2, d2)
            assert abs(a[1].x() - b[1].x()) >= 6, (base, rows)


WELCOME = """import torch
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
x = torch.tensor([1.0, 2.0, 3.0])
y = w * x
loss = (y ** 2).sum()
with torch.no_grad():
    report = loss * 100
loss.backward()
"""


def test_a_gradient_chip_keeps_off_a_region_s_label(canvas, qtbot):
    """The welcome scenario, backward: the "∂ 1.0" chip on sum -> loss sat on
    "torch.no_grad(), lines 6-7". Region labels are obstacles for the chips."""
    import graphscope
    tr = graphscope.trace(WELCOME)
    graph, layout, tl = shown(canvas, tr)
    checked = 0
    for i, frame in backward_frames(canvas, tl):
        painter, tf = canvas._painter, canvas.transform()
        labels = [tf.mapRect(lab) for _, lab in painter._region_boxes(canvas._limit)]
        assert labels
        for box in painter.placed_labels:
            for lab in labels:
                assert not box.adjusted(2, 2, -2, -2).intersects(lab), (i, box, lab)
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("sid, size", [("welcome", (820, 640)), ("welcome", (560, 420)),
                                       ("grad-modes", (820, 640)),
                                       ("optimizer-step-no-grad", (820, 640)),
                                       ("optimizer-step-no-grad", (560, 420)),
                                       ("challenge-5-debug-no-grad", (820, 640))])
def test_a_lane_keeps_out_of_a_region_box(canvas, qtbot, sid, size):
    """The welcome scenario (the first screen a user sees): the lane from sum back
    to loss, a wrapped chain, ran inside the no_grad box, under its label and along
    its top edge, as if that edge were in the region; on optimizer-step-no-grad
    the lane w -> sub_ ran under the label, between two full rows a pitch apart
    (the layout now leaves a row free above a region's row). NOTE [lanes over a
    region]."""
    import graphscope
    from graphscope import scenarios as S
    from graphscope.ui.canvas_scene import edge_route
    sc = S.find(sid)
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = shown(canvas, tr, size)
    canvas.set_frame(tl.state(len(tl) - 1))
    canvas.grab()
    painter, geom = canvas._painter, canvas._geom
    boxes = [box for box, _label in painter._region_boxes(float("inf"))]
    assert boxes
    for e in geom.edges:
        route = edge_route(geom, geom.nodes[e.src], geom.nodes[e.dst])
        if route is None:
            continue
        a, b = route[2], route[3]              # the lane's run along the row gap
        run = QRectF(min(a.x(), b.x()), a.y() - 1, abs(b.x() - a.x()), 2)
        for box in boxes:
            assert not run.intersects(box), (e.src, e.dst, run, box)


def test_playback_keeps_one_view_while_the_nodes_appear(canvas, qtbot):
    """A paced playback of the welcome scenario zoomed 2.8 -> 2.1 -> 1.5 -> 1.4 ->
    1.0 over its first steps, with every node already placed: the view fitted the
    part the cursor showed. It fits the graph recorded so far (NOTE [a steady view])."""
    import graphscope
    tr = graphscope.trace(WELCOME)
    graph, layout, tl = shown(canvas, tr)
    views = set()
    for i in range(len(tl)):
        canvas.set_frame(tl.state(i))
        canvas.fit(keep_auto=True)            # what the window does at each played step
        views.add((round(canvas._scale, 6), round(canvas._tx, 3), round(canvas._ty, 3)))
    assert len(tl) > 5 and len(views) == 1, views
    canvas.set_frame(None)
    canvas.fit()
    assert (round(canvas._scale, 6), round(canvas._tx, 3), round(canvas._ty, 3)) in views


def test_a_node_s_marks_wait_for_the_step_of_their_event(canvas, qtbot):
    """GUI review: at step 1 of optimizer-step-no-grad, w (just made) already had
    the error's fill and badge and the in-place tag of the change that raised at
    the last step. The marks, and the tooltip's note, come at their own step."""
    import graphscope
    from graphscope import scenarios as S
    sc = S.find("optimizer-step-no-grad")
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = scene(tr)
    canvas.set_graph(graph, layout, tr)
    steps = graph.flag_steps["t0"]
    w = graph.nodes["t0"]
    assert {"inplace", "error"} <= set(w.flags) and {"inplace", "error"} <= set(steps)
    painter = canvas._painter
    canvas.set_frame(tl.state(1))
    canvas.grab()
    assert not {"inplace", "error"} & painter.shown_flags(w)
    badges = painter._badge_list(canvas._geom.nodes["t0"], painter.shown_flags(w))
    assert not any(b[0] == "!" for b in badges)
    assert w not in [ng.node for ng in painter._marked()]
    canvas.set_frame(tl.state(steps["inplace"]))
    canvas.grab()
    assert "inplace" in painter.shown_flags(w) and "error" not in painter.shown_flags(w)
    canvas.set_frame(tl.state(len(tl) - 1))
    canvas.grab()
    assert {"inplace", "error"} <= painter.shown_flags(w)
    assert w in [ng.node for ng in painter._marked()]
    from graphscope.ui.canvas_tooltip import tooltip_text
    for trace in (tr, None):           # (without a trace: the node's own facts)
        early = tooltip_text(w, trace, flags=frozenset(w.flags) - {"error", "inplace"})
        late = tooltip_text(w, trace, flags=painter.shown_flags(w))
        assert early != late and "raised" not in early, trace


def test_a_lane_leaves_a_region_box_by_its_nearer_free_side(qapp):
    """NOTE [lanes over a region], on geometry made by hand: a lane in the head of
    a region's box goes above it, one in its foot (the "no grad" tags) below it,
    when that side is free of nodes; with no free side it stays."""
    from graphscope.ui.canvas_scene import NodeGeom, SceneGeometry, _lane

    class N:
        def __init__(self, kind, region=None):
            self.kind, self.flags, self.label, self.detail = kind, frozenset(), "n", None
            self.region = region

    def lane_of(src_row, extra_rows=()):
        g = SceneGeometry()
        g.row_pitch = 84.0
        g.region_head, g.region_foot = 44.0, 26.0
        d = NodeGeom("d", N("tensor"), 100.0, 84.0, 132.0, 46.0, 3, "t")
        s = NodeGeom("s", N("op"), 900.0, 84.0 + src_row * 84.0, 104.0, 38.0, 0, "op")
        m = NodeGeom("m", N("op", region=0), 500.0, 84.0, 104.0, 38.0, 1, "op")
        g.nodes.update(d=d, s=s, m=m)
        for i, y in enumerate(extra_rows):
            g.nodes[f"x{i}"] = NodeGeom(f"x{i}", N("op"), 500.0, y, 104.0, 38.0, 2, "op")
        return _lane(g, s, d)[2].y()

    m_top, m_bottom = 84.0 - 19.0, 84.0 + 19.0
    assert 84.0 - 42.0 > m_top - 44.0 and 84.0 + 42.0 < m_bottom + 26.0   # in head, in foot
    up = lane_of(-2)                   # a backward edge from above: the lane above d's row
    assert m_top - 44.0 - 30.0 < up <= m_top - 44.0 - 12.0
    down = lane_of(1)                  # from the row below: the lane below it, in the foot
    assert m_bottom + 26.0 + 12.0 <= down < m_bottom + 26.0 + 30.0
    # nodes just above the head and just below the foot: no free side, it stays
    assert lane_of(1, extra_rows=(0.0, 150.0)) == 84.0 + 42.0


LOOPED_NO_GRAD = """import torch
w = torch.tensor(2.0, requires_grad=True)
for i in range(2):
    y = w * 3
    with torch.no_grad():
        r = y * 100
    z = y + 1
"""


def test_a_block_split_by_the_layout_says_it_continues_and_a_block_run_twice_does_not(qapp):
    """GUI review: on a laptop the welcome scenario's one no_grad block was drawn as
    two boxes with the same label (the wrapped layout put mul at the end of a row
    and report at the start of the next), as if the block had run twice. The box
    that goes on from the one before says "(continued)"; a block a loop runs
    again keeps its plain label."""
    import graphscope
    from graphscope.ui.canvas_paint import ScenePainter
    from graphscope.ui.canvas_scene import SceneGeometry
    graph, layout, _ = scene(graphscope.trace(WELCOME))
    pos = layout.tidy()
    reg = graph.regions[0]
    mul, report = sorted(reg.node_ids, key=lambda i: graph.nodes[i].step)
    pos[report] = (pos[mul][0] - 2000.0, pos[mul][1] + 600.0)   # as a wrap puts it
    geom = SceneGeometry.build(graph, pos)
    painter = ScenePainter(geom, get_theme("light"), 1.0, graph.regions)
    got = [(len(c), cont) for _, c, _, cont in painter._region_clusters()]
    assert got == [(1, False), (1, True)]
    from graphscope.ui.canvas_regions import _region_text
    texts = [_region_text(r, cont) for r, _, _, cont in painter._region_clusters()]
    assert texts == [reg.label, reg.label + " (continued)"]
    graph2, layout2, _ = scene(graphscope.trace(LOOPED_NO_GRAD))
    pos2 = layout2.tidy()
    members = sorted(graph2.regions[0].node_ids, key=lambda i: graph2.nodes[i].step)
    assert len(members) == 4                               # mul and r, twice
    for nid in members[2:]:                                # the second run, elsewhere
        pos2[nid] = (pos2[nid][0] - 2000.0, pos2[nid][1] + 600.0)
    geom2 = SceneGeometry.build(graph2, pos2)
    painter2 = ScenePainter(geom2, get_theme("light"), 1.0, graph2.regions)
    runs = [(len(c), cont) for _, c, _, cont in painter2._region_clusters()]
    assert runs == [(2, False), (2, False)]
    # a loop whose body is only the block: no other step between its runs (code review)
    graph3, layout3, _ = scene(graphscope.trace(
        "import torch\nw = torch.tensor(2.0, requires_grad=True)\nfor i in range(2):\n"
        "    with torch.no_grad():\n        r = w * 100\n"))
    pos3 = layout3.tidy()
    members = sorted(graph3.regions[0].node_ids, key=lambda i: graph3.nodes[i].step)
    assert len(members) == 4
    for nid in members[2:]:
        pos3[nid] = (pos3[nid][0] - 2000.0, pos3[nid][1] + 600.0)
    geom3 = SceneGeometry.build(graph3, pos3)
    painter3 = ScenePainter(geom3, get_theme("light"), 1.0, graph3.regions)
    assert [(len(c), cont) for _, c, _, cont in painter3._region_clusters()] == [(2, False), (2, False)]
    # one run of a one-line block split between its two ops goes on (code review)
    graph4, layout4, _ = scene(graphscope.trace(
        "import torch\nw = torch.tensor(2.0, requires_grad=True)\nwith torch.no_grad():\n"
        "    r = w * 100 + 1\n"))
    pos4 = layout4.tidy()
    members = sorted(graph4.regions[0].node_ids, key=lambda i: graph4.nodes[i].step)
    for nid in members[2:]:
        pos4[nid] = (pos4[nid][0] - 2000.0, pos4[nid][1] + 600.0)
    painter4 = ScenePainter(SceneGeometry.build(graph4, pos4), get_theme("light"), 1.0,
                            graph4.regions)
    assert [(len(c), cont) for _, c, _, cont in painter4._region_clusters()] == [(2, False), (2, True)]


def test_chips_of_a_level_edge_keep_off_the_nodes(canvas):
    """A level edge's bounding box has no height, and Qt's intersected() of it is
    a null rect: the chips of x -> pow -> y, all on one row, were placed with no
    obstacles at all, over x, the current pow node and y (35 of 7,244 steps of
    the bundled scenarios had a label over the current node; 8 after)."""
    import graphscope
    tr = graphscope.trace("import torch\nx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\n"
                          "y = x ** 2\ny.backward(gradient=torch.tensor([1.0, 0.1, 0.0]))\n")
    graph, layout, tl = shown(canvas, tr)
    geom = canvas._geom
    checked = 0
    for i, frame in backward_frames(canvas, tl):
        tf = canvas.transform()
        chips = canvas._painter.placed_labels[-len(frame.edge_grads):]
        for ng in geom.nodes.values():
            if ng.step > frame.visible_steps:
                continue
            box = tf.mapRect(canvas._painter.marks_rect(ng))
            for chip in chips:
                assert not chip.adjusted(3, 3, -3, -3).intersects(box), (i, ng.node.id, chip)
        checked += 1
    assert checked


def test_a_gradient_chip_keeps_off_the_edges_it_does_not_label(canvas, qtbot):
    """GUI review, welcome after Reveal: at MulBackward0 w's "∂ [1., -8., 36.]" sat
    on the dashed x -> mul edge, the very edge that carries no gradient, and read as
    x's; a second review saw a chip on the next lit edge, two chips on one line.
    Other edges near a chip are to be kept clear when a spot allows."""
    import graphscope
    tr = graphscope.trace(WELCOME)
    graph, layout, tl = shown(canvas, tr)
    geom = canvas._geom
    checked = 0
    for i, frame in backward_frames(canvas, tl):
        tf = canvas.transform()
        boxes = canvas._painter.chip_boxes
        assert set(boxes) == set(frame.edge_grads)
        chips = [boxes[e] for e in frame.edge_grads]
        for eg in geom.edges:
            if geom.nodes[eg.dst].step > frame.visible_steps:
                continue
            path = canvas._painter.edge_path(geom.nodes[eg.src], geom.nodes[eg.dst], tf)
            pts = [path.pointAtPercent(k / 40) for k in range(41)]
            for chip, own in zip(chips, frame.edge_grads):
                if own == (eg.src, eg.dst):
                    continue       # (its own edge: where it belongs)
                inner = chip.adjusted(5, 5, -5, -5)
                assert not any(inner.contains(q) for q in pts), (i, eg.src, eg.dst, chip)
        checked += 1
    assert checked >= 3


def test_a_node_outside_a_region_inside_its_box_gets_a_hole(canvas, qtbot):
    """GUI review, grad-modes: the copy of x drawn next to its use on line 14 (it
    requires grad) sat inside the set_grad_enabled(False) box and read as made
    with grad off. The box goes round such a node: no region colour beside it."""
    import graphscope
    from PySide6.QtCore import QPointF
    from PySide6.QtGui import QColor
    from graphscope import scenarios as S
    sc = S.find("grad-modes")
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = shown(canvas, tr)
    canvas.set_frame(tl.state(len(tl) - 1))
    img = canvas.grab().toImage()
    painter = canvas._painter
    found = []
    for reg, cluster, _box, _cont in painter._region_clusters():
        box, _ = painter._region_box(cluster, "full")
        found += [(reg, ng) for ng in painter._outsiders(box, cluster, float("inf"))]
    assert found, "grad-modes draws a node inside a region's box that is not in it"
    tf = canvas.transform()
    bg = QColor(painter.theme.canvas_bg)
    for reg, ng in found:
        ink = painter.ink_rect(ng)
        beside = tf.map(QPointF(ink.left() - 3, ng.y))
        c = img.pixelColor(int(beside.x()), int(beside.y()))
        assert abs(c.red() - bg.red()) + abs(c.green() - bg.green()) + abs(c.blue() - bg.blue()) < 12, \
            (reg.label, ng.id, c.name(), bg.name())


def test_at_the_lowest_detail_a_node_has_the_fill_of_the_marks_shown(canvas, qtbot):
    """Code review: zoomed out to rectangles, w of optimizer-step-no-grad had the
    error's fill at step 1, and a quiz's answer showed before Reveal the same way:
    the low-detail fill comes from the node's final flags. It comes from the
    flags shown at the cursor (NOTE [late flags])."""
    import graphscope
    from PySide6.QtGui import QColor
    from graphscope import scenarios as S
    sc = S.find("optimizer-step-no-grad")
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = scene(tr)
    canvas.set_graph(graph, layout, tr)
    canvas.set_frame(tl.state(1))
    for _ in range(40):
        canvas.grab()
        if canvas.lod == "tiny":
            break
        canvas.zoom_by(0.7)
    assert canvas.lod == "tiny"
    ng = canvas._geom.nodes["t0"]
    assert ng.style == "error"

    def fill():
        img = canvas.grab().toImage()
        pt = canvas.transform().map(ng.rect.center())
        return img.pixelColor(int(pt.x()), int(pt.y()))

    def near(c, name):
        q = QColor(name)
        return abs(c.red() - q.red()) + abs(c.green() - q.green()) + abs(c.blue() - q.blue()) < 90
    theme = canvas._painter.theme
    assert not near(fill(), theme.error)
    canvas.set_frame(tl.state(len(tl) - 1))
    assert near(fill(), theme.error)


def test_requires_grad_set_later_shows_from_its_step(canvas, qtbot):
    """Second visual review, requires-grad-inplace: w, made without requires_grad
    on line 2, was drawn tracked with its ∇ (and its tooltip said requires_grad
    True) before line 4's requires_grad_(), which is what the scenario is about."""
    import graphscope
    from graphscope import scenarios as S
    from graphscope.model.graph import GraphBuilder
    from graphscope.ui.canvas_tooltip import tooltip_text
    sc = S.find("requires-grad-inplace")
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = scene(tr)
    step = graph.flag_steps["t0"]["requires_grad"]
    w = graph.nodes["t0"]
    assert w.step < step and tl.steps[step].line == 4
    from test_model_traces import run_messages
    source, msgs, end = run_messages(sc.snippet)     # the same when streamed
    b = GraphBuilder(source=source)
    for m in msgs + [end]:
        b.apply(m)
    assert b.graph.flag_steps.get("t0", {}).get("requires_grad") == step
    canvas.set_graph(graph, layout, tr)
    painter = canvas._painter
    canvas.set_frame(tl.state(w.step))
    canvas.grab()
    shown = painter.shown_flags(w)
    assert "requires_grad" not in shown
    assert not any(b[0] == "∇" for b in painter._badge_list(canvas._geom.nodes["t0"], shown))
    assert "requires_grad</b>&nbsp;</td><td>False" in tooltip_text(w, tr, flags=shown)
    canvas.set_frame(tl.state(step))
    assert "requires_grad" in painter.shown_flags(w)


def test_a_while_node_says_at_each_step_what_was_read_by_then(canvas, qtbot):
    """Second visual review, item-control-flow: at the first check of ``while
    y.item() < 5`` (y = 1.5) the decision node already read "3×, last 6.0 → loop
    ended"; it says what had been read by the step shown."""
    import graphscope
    from graphscope import scenarios as S
    from graphscope.ui.canvas_tooltip import tooltip_text
    sc = S.find("item-control-flow")
    tr = graphscope.trace(sc.snippet, sc.snippet_filename)
    graph, layout, tl = scene(tr)
    dec = next(n for n in graph.nodes.values() if n.kind == "op" and "branch" in n.flags)
    assert dec.detail.startswith("3×") and "loop ended" in dec.detail
    hist = graph.detail_steps[dec.id]
    assert len(hist) >= 3 and hist[0][0] == dec.step
    first = tl.state(dec.step)
    assert "1.5" in first.detail_at(dec) and "loop, line" in first.detail_at(dec)
    assert tl.state(len(tl) - 1).detail_at(dec) == dec.detail
    canvas.set_graph(graph, layout, tr)
    canvas.set_frame(first)
    canvas.grab()
    assert canvas._painter._frame_for_text is first
    assert "1.5" in tooltip_text(dec, tr, went=first.detail_at(dec))


def test_stepping_where_no_mark_changes_keeps_the_cached_layer(canvas, qtbot):
    """Review: a frame without late marks gave a new empty dict each step, so every
    step counted as a change of the marks and rebuilt the cached layer (step 5.5 ->
    18.6 ms at 20,000 ops). Where no mark comes, the marks do not change."""
    import graphscope
    tr = graphscope.trace(WELCOME)
    graph, layout, tl = shown(canvas, tr)
    assert not graph.flag_steps
    canvas.set_frame(tl.state(0))
    canvas.grab()
    before = canvas._painter.marks_version
    for i in range(1, len(tl)):
        canvas.set_frame(tl.state(i))
    assert canvas._painter.marks_version == before


TRAIN = """import torch
w = torch.tensor([1.0, -1.0], requires_grad=True)
for step in range(4):
    loss = (w * w).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
"""


def test_earlier_passes_fade_with_their_region_boxes_and_at_the_lowest_detail(canvas):
    """NOTE [pass focus]: in the last iteration of a training loop, the no_grad
    boxes of the earlier ones fade with their nodes (code review: bright boxes
    framed washed-out nodes), and zoomed out to the lowest detail the earlier
    passes still fade (they did not: the tiny drawing ignored the focus)."""
    import graphscope
    from test_model_timeline import _pass_bands
    tr = graphscope.trace(TRAIN)
    graph, layout, tl = shown(canvas, tr, size=(1200, 700))
    bands = _pass_bands(tl)
    assert len(bands) == 4         # four iterations, each with its update
    tl.set_passes(bands)
    frame = tl.state(bands[-1][1])      # the last update, in the last pass
    assert frame.focus is not None and frame.focus.index == len(bands) - 1
    canvas.set_frame(frame)
    canvas.fit()

    def pictures():
        canvas.set_fade_passes(True)
        on = canvas.grab().toImage()
        canvas.set_fade_passes(False)
        off = canvas.grab().toImage()
        return on, off
    on, off = pictures()
    assert canvas.lod == "full"
    boxes = canvas._painter._region_boxes(frame.visible_steps)
    assert boxes
    tf = canvas.transform()
    bg = qcolor(get_theme("light").canvas_bg)
    faded = []
    for _box, label in boxes:
        c = tf.mapRect(label).center()
        a, b = on.pixelColor(int(c.x()), int(c.y())), off.pixelColor(int(c.x()), int(c.y()))
        dist = lambda q: sum(abs(x - y) for x, y in zip(q.getRgb()[:3], bg.getRgb()[:3]))
        assert dist(a) <= dist(b)
        faded.append(dist(a) < dist(b))
    # the block of the last pass (the update of the last iteration) stays (the
    # layout may draw it in two boxes); the box of the blocks before it fades
    assert True in faded and False in faded
    frame = tl.state(bands[-1][0] + 2)   # early in the last pass: less of it drawn
    canvas.set_frame(frame)
    canvas.fit()
    canvas.zoom_by(0.1)
    on, off = pictures()
    assert canvas.lod == "tiny"
    # the losses of the earlier iterations (tracked tensors, outside the boxes)
    old = [n for n in graph.nodes.values() if n.kind == "tensor" and frame.focus.faded(n)
           and n.region is None and "grad_fn" in n.flags]
    assert len(old) >= 3
    dist = lambda q: sum(abs(x - y) for x, y in zip(q.getRgb()[:3], bg.getRgb()[:3]))
    tf = canvas.transform()
    lighter = 0
    for n in old:   # (one may lie under the .grad label, the same either way)
        ng = canvas._geom.nodes[n.id]
        c = tf.map(QPointF(ng.x, ng.y))
        a, b = (dist(img.pixelColor(int(c.x()), int(c.y()))) for img in (on, off))
        assert a <= b
        lighter += a < b
    assert lighter >= 3


def test_a_name_a_pixel_too_wide_shrinks_instead_of_losing_its_middle(qapp):
    """Fonts come in whole pixels: "model.bias.grad" 1% too wide for its box was
    shrunk to a size that rounded back to the same font, and drawn as
    "model.…s.grad" beside a whole "model.weight.grad" (visual check)."""
    from PySide6.QtGui import QFontMetricsF
    from graphscope.ui.canvas_paint import shrunk_font
    from graphscope.ui.canvas_primitives import font
    label, width = "model.bias.grad", 154.0
    px = 17.0
    wide = QFontMetricsF(font(px, True)).horizontalAdvance(label)
    assert wide > width
    f, fm = shrunk_font(label, px, wide, width, True)
    assert fm.horizontalAdvance(label) <= width
    assert fm.elidedText(label, Qt.ElideMiddle, width) == label


def test_a_region_box_holds_its_label(canvas):
    """"torch.no_grad(), lines 3-4" ran 145 px past the box around its one op
    (visual review): the box reaches right to hold it, with nothing beside it."""
    import graphscope
    tr = graphscope.trace("import torch\nw = torch.ones(3, requires_grad=True)\n"
                          "with torch.no_grad():\n    w += 1\nw.sum()\n")
    shown(canvas, tr)
    boxes = canvas._painter._region_boxes(math.inf)
    assert boxes
    for box, label in boxes:
        assert label.right() <= box.right() + 1, (box, label)


def test_an_input_an_op_reads_twice_is_marked_on_its_edge(canvas, qtbot, monkeypatch):
    """NOTE [an input read twice]: ``x * x`` has two edges x -> mul, drawn on one line;
    it looked like one input and x.grad = 2x had no cause on screen. The line
    carries "×2" (and a backward chip sums the two gradients on it)."""
    import graphscope
    from graphscope.ui import canvas_paint
    tr = graphscope.trace("import torch\n"
                          "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
                          "y = x * x\n"
                          "z = y + x\n"
                          "z.sum().backward()\n")
    graph, layout, tl = shown(canvas, tr)
    x, mul = graph.tensor_node[tr.tensor_by_name("x").id], f"o{tr.ops[1].id}"
    assert tr.ops[1].inputs == [tr.ops[1].inputs[0]] * 2          # the capture's view
    geom = canvas._geom
    mult = {(e.src, e.dst): e.mult for e in geom.edges}
    assert mult[(x, mul)] == 2
    assert sorted(mult.values()).count(2) == 1                    # y + x reads x once
    marks = []
    real = canvas_paint.ScenePainter._paint_times
    monkeypatch.setattr(canvas_paint.ScenePainter, "_paint_times",
                        lambda self, p, m: (marks.extend(m), real(self, p, m)))
    canvas.set_frame(tl.state(len(tl) - 1))
    canvas.grab()
    assert [m[3] for m in marks] == [2]
    tip = canvas.transform().map(marks[0][0])
    assert abs(tip.y() - canvas.node_view_rect(mul).center().y()) < 12   # at mul's side
    # where the edge is lit (its gradients at x's step) the mark is drawn again over
    # the lit line, in its colour: the line struck it through (visual review)
    colours = []
    real_mark = canvas_paint.ScenePainter.paint_times_mark
    monkeypatch.setattr(canvas_paint.ScenePainter, "paint_times_mark",
                        lambda self, p, *a, **k: (colours.append(a[4]), real_mark(self, p, *a, **k))[1])
    lit = next(i for i in range(len(tl)) if (x, mul) in tl.state(i).edge_grads)
    canvas.set_frame(tl.state(lit))
    canvas.grab()
    assert canvas._painter.theme.current in colours


def test_a_chip_on_a_long_edge_weighs_only_the_nodes_near_the_view(canvas, qtbot, monkeypatch):
    """GUI review: after a stopped training loop every step took 0.5-3 s. A lit edge
    from the run's first node to its last spanned the whole graph, and every node
    under that span was an obstacle for every spot of every chip. Labels stay on
    screen: only nodes near the view are."""
    import graphscope
    from graphscope.ui import canvas_overlay
    tr = graphscope.trace("import torch\n"
                          "x = torch.ones(3, requires_grad=True)\n"
                          "y = x\n"
                          "for i in range(600):\n"
                          "    y = y * 1.0001\n"
                          "(y * x).sum().backward()\n")
    graph, layout, tl = shown(canvas, tr)
    seen = []
    real = canvas_overlay.OverlayPainter._place_label
    monkeypatch.setattr(canvas_overlay.OverlayPainter, "_place_label",
                        lambda self, p, c, s, t, obstacles, *a, **k:
                        (seen.append(len(obstacles)), real(self, p, c, s, t, obstacles, *a, **k))[1])
    last_mul = f"o{[o for o in tr.ops if o.name == 'mul'][-1].id}"
    step = next(i for i, s in enumerate(tl.steps)
                if s.kind == "backward" and tl.state(i).edge_grads
                and any(last_mul in e for e in tl.state(i).edge_grads))
    canvas.set_frame(tl.state(step))
    canvas.zoom_by(8.0)
    canvas.center_on(last_mul)
    canvas.grab()
    view = QRectF(canvas.rect()).adjusted(-400, -150, 400, 150)
    in_view = sum(1 for n in canvas.geometry_model().nodes
                  if view.intersects(canvas.node_view_rect(n)))
    assert seen and max(seen) <= in_view + 4 < len(graph.nodes) / 4


def test_the_timeline_strip_draws_a_run_per_pixel_at_most(qtbot):
    """NOTE [a strip per pixel]: 50,000 steps of a stopped loop were 25,000 segments
    drawn twice and 17,000 ticks a paint (0.3-0.6 s: every arrow key froze the
    window). Past a segment per pixel the strip shows, per pixel column, the kind
    that covers most of it."""
    from graphscope.ui.timeline_bar import TICK_GAP, ScrubStrip
    strip = ScrubStrip()
    qtbot.addWidget(strip)
    strip.resize(700, 30)
    kinds = ["op", "op", "backward_call", "backward", "backward", "backward"] * 8000
    strip.set_kinds(kinds)
    r = strip._track_rect()
    runs, ticks = strip._strip(r)
    assert len(runs) <= r.width() + 2
    # ticks apart enough to leave the colours visible (all grey: a visual review)
    assert ticks and all(b - a >= TICK_GAP for a, b in zip(ticks, ticks[1:]))
    assert {k for _, _, k in runs} == {"backward"}     # 4 of each 6 steps, everywhere
    assert runs[0][0] == r.left() and abs(runs[-1][1] - r.right()) < 1.01
    strip.set_kinds(["op"] * 5 + ["backward_call"] + ["backward"] * 4)
    runs, ticks = strip._strip(r)                        # few steps: as they are
    assert [(round(a), round(b), k) for a, b, k in runs] == \
        [(round(r.left()), round(r.left() + r.width() / 2), "op"),
         (round(r.left() + r.width() / 2), round(r.right()), "backward")]
    assert ticks == [int(r.left() + r.width() / 2)]


def _strip_by_segments(segs, calls, n, left, width):
    """The strip as it was made before running counts: every segment's cover
    added to each pixel column it touches (the reference for the test below)."""
    import math
    from graphscope.ui.timeline_bar import TICK_GAP
    scale = width / n
    cols = int(math.ceil(width)) + 1
    cover = {"op": [0.0] * cols, "backward": [0.0] * cols}
    for a, b, k in segs:
        x0, x1 = a * scale, b * scale
        c0, c1 = int(x0), min(int(x1), cols - 1)
        if c0 == c1:
            cover[k][c0] += x1 - x0
        else:
            cover[k][c0] += c0 + 1 - x0
            for c in range(c0 + 1, c1):
                cover[k][c] += 1.0
            cover[k][c1] += x1 - c1
    kinds = []
    for c in range(cols):
        o, w = cover["op"][c], cover["backward"][c]
        if o > 1e-9 or w > 1e-9:
            kinds.append((c, "op" if o >= w - 1e-9 else "backward"))
    ticks = []
    for x in sorted({int(left + i * scale) for i in calls}):
        if not ticks or x - ticks[-1] >= TICK_GAP:
            ticks.append(x)
    return kinds, ticks


def test_a_streamed_strip_is_the_strip_of_all_its_steps(qtbot):
    """NOTE [a strip per pixel]: a column's share of each kind comes from running
    counts, so a streaming run's batches cost two bisections a column, not a
    walk over every segment (26 -> 2.5 ms a batch at 210,000 steps). Whatever
    the mix and however the steps arrive, the columns and ticks are those of
    covering each column segment by segment."""
    import random
    from graphscope.ui.timeline_bar import ScrubStrip
    rnd = random.Random(3)
    strip = ScrubStrip()
    qtbot.addWidget(strip)
    strip.resize(460, 30)
    r = strip._track_rect()
    for trial in range(12):
        kinds = []
        for _ in range(rnd.randint(400, 900)):
            kinds += ["op"] * rnd.randint(1, 30)
            if rnd.random() < 0.85:
                kinds += ["backward_call"] + ["backward"] * rnd.randint(0, 25)
        strip.set_kinds(kinds[:7])
        i = 7
        while i < len(kinds):
            step = rnd.randint(1, 3000)
            strip.add_kinds(kinds[i:i + step])
            i += step
        assert len(strip._segments) > r.width()     # (fewer: drawn as they are)
        runs, ticks = strip._strip(r)
        want, want_ticks = _strip_by_segments(strip._segments, strip._calls, len(kinds),
                                              r.left(), r.width())
        got = []
        for x0, x1, k in runs:
            got += [(c, k) for c in range(round(x0 - r.left()), math.ceil(x1 - r.left() - 1e-9))]
        assert got == want, trial
        assert ticks == want_ticks, trial


def test_thousands_of_leaves_in_view_box_a_readable_number_of_grads(canvas, qtbot, monkeypatch):
    """Fuzz review: torch.stack of 3,000 leaves placed each .grad box against every
    other (84 million tests, 24 s for one PNG). Past LEAF_BOXES_MAX leaves in view
    the rest are left to the inspector: no box is even tried for them."""
    import graphscope
    from graphscope.ui import canvas_overlay
    from graphscope.ui.canvas_overlay import LEAF_BOXES_MAX
    tried = []
    real = canvas_overlay.OverlayPainter._place_label
    monkeypatch.setattr(canvas_overlay.OverlayPainter, "_place_label",
                        lambda self, *a, **k: (tried.append("optional" in k),
                                               real(self, *a, **k))[1])
    tr = graphscope.trace("import torch\n"
                          f"t = [torch.ones(1, requires_grad=True) for _ in range({LEAF_BOXES_MAX + 60})]\n"
                          "torch.stack(t).sum().backward()\n")
    graph, layout, tl = shown(canvas, tr)
    frame = tl.state(len(tl) - 1)
    assert len(frame.leaf_grads) == LEAF_BOXES_MAX + 60
    canvas.set_frame(frame)
    canvas.fit()
    canvas.grab()
    assert sum(tried) == LEAF_BOXES_MAX        # the leaves' boxes tried (chips: no "optional")
    assert 0 < len(canvas._painter.placed_labels) <= LEAF_BOXES_MAX


def test_a_long_gradient_box_is_cut_between_its_terms(qapp):
    """Visual review: ".grad: mean 0.25 ± 0….ean 0.33 ± 0.59 (4x4)" lost its arrow,
    cut in the middle; a box keeps its arrow and its first and last gradients."""
    from PySide6.QtGui import QFontMetricsF
    from graphscope.ui.canvas_overlay import _fit_terms
    from graphscope.ui.canvas_primitives import font
    fm = QFontMetricsF(font(13, True))
    arrow = ".grad: mean 0.25 ± 0.61 (4x4) \u2192 mean 0.33 ± 0.59 (4x4)"
    cut = _fit_terms(fm, arrow, 300)
    assert " \u2192 " in cut and cut.startswith(".grad: mean") and fm.horizontalAdvance(cut) <= 300
    many = "\u2202 " + " + ".join(f"mean {i}.5 ± 1.2 (3x3)" for i in range(4))
    cut = _fit_terms(fm, many, 500)
    assert cut == "\u2202 mean 0.5 ± 1.2 (3x3) + \u2026 + mean 3.5 ± 1.2 (3x3)"
    cut = _fit_terms(fm, many, 250)          # narrower: each end cut, the sum kept
    assert cut.startswith("\u2202 mean 0.5") and " + \u2026 + mean 3" in cut
    assert fm.horizontalAdvance(cut) <= 250
    assert _fit_terms(fm, "\u2202 1.0", 300) == "\u2202 1.0"


def test_an_expression_label_too_wide_for_big_text_is_cut_between_names(qtbot):
    """At 150% text "predictions - targets" did not fit its box even in the
    smallest font; it is cut again as the model cuts a label (NOTE [labels cut
    whole]) to the letters that fit."""
    from PySide6.QtGui import QFontMetricsF
    from graphscope.ui.canvas_paint import _recut
    from graphscope.ui.canvas_primitives import font
    fm = QFontMetricsF(font(14, True))
    label = "predictions - targets"
    for letters in (19, 16, 12):
        width = fm.horizontalAdvance(label) * letters / len(label)
        cut = _recut(label, fm, width)
        assert fm.horizontalAdvance(cut) <= width and cut.count("\u2026") == 1, (letters, cut)
        # (NOTE [a cut that reads true]: never "predictions…targets", which hides
        # the operator; the start, as much of it as fits)
        assert cut.startswith("predicti") and cut.endswith("\u2026"), cut
    wide = fm.horizontalAdvance("predictions - targ\u2026") + 1
    assert _recut(label, fm, wide) == "predictions - targ\u2026"
    assert _recut(label, fm, fm.horizontalAdvance("pr")) == label   # nothing sensible fits


def test_the_current_nodes_glow_leaves_its_neighbours_tags_readable(canvas, qtbot, monkeypatch):
    """The current node's glow reaches 16 px out, over the "no grad" tag of the
    tensor just above it (x over w1 at 150% text: a visual review), where the
    tag read as the glowing node's (shared-weights: a second visual review). The
    glow keeps off its neighbours' boxes and tags; the current node's own tags
    and badges are drawn again on top of it."""
    import graphscope
    from graphscope.ui import canvas_overlay
    tr = graphscope.trace("import torch\n"
                          "x = torch.randn(4, 3)\n"
                          "w = torch.randn(3, 5, requires_grad=True)\n"
                          "(x @ w).sum().backward()\n")
    graph, layout, tl = shown(canvas, tr)
    canvas.set_text_scale(1.5)
    acc = next(c for c in range(len(tl)) if "w" in {
        graph.nodes[i].label for i in canvas_overlay._ids(tl.state(c).highlight)
        if i in graph.nodes})
    from graphscope.ui.canvas_paint import ScenePainter
    decor = []          # what is drawn again after a glow
    clips = []          # the clip each glow was drawn with

    def watch(real):
        def paint(self, p, ng, r, flags, lod, part="all"):
            if part == "decor" and clips:
                decor.append(ng.node.label)
            return real(self, p, ng, r, flags, lod, part)
        return paint
    for name in ("_paint_tensor", "_paint_op"):
        monkeypatch.setattr(ScenePainter, name, watch(getattr(ScenePainter, name)))
    real_glow = ScenePainter._glow
    monkeypatch.setattr(ScenePainter, "_glow", lambda self, p, *a: (
        clips.append(p.clipPath() if p.hasClipping() else None), real_glow(self, p, *a))[1])
    canvas.set_frame(tl.state(acc))
    canvas.fit()
    canvas.grab()
    geom, painter = canvas._painter.geom, canvas._painter
    w_node = next(ng for ng in geom.nodes.values() if ng.node.label == "w")
    x_node = next(ng for ng in geom.nodes.values() if ng.node.label == "x")
    assert abs(w_node.x - x_node.x) < 1 and abs(w_node.y - x_node.y) < 2.5 * w_node.h  # stacked
    assert decor and decor[-1] == "w" and "x" not in decor
    clip = clips[-1]
    assert clip is not None
    tf = canvas.transform()
    x_marks = tf.mapRect(painter.marks_rect(x_node))
    w_marks = tf.mapRect(painter.marks_rect(w_node))
    # x's tag row, under x's box, is out of the glow's reach; w's other side is in it
    assert not clip.contains(QPointF(x_marks.center().x(), x_marks.bottom() - 2))
    assert clip.contains(QPointF(w_marks.center().x(), w_marks.bottom() + 10))



def test_a_cut_label_is_cut_again_from_its_whole_text(canvas, monkeypatch):
    """The canvas cut the model's cut label again, and "(predictions - …) ** 2"
    became "(predic……) ** 2" (code review): it goes back to the snippet's whole
    text of the expression."""
    import graphscope
    from PySide6.QtGui import QFontMetricsF
    from graphscope.ui.canvas_paint import _recut
    from graphscope.ui.canvas_primitives import font
    tr = graphscope.trace("import torch\n"
                          "predictions = torch.ones(3, requires_grad=True)\n"
                          "targets = torch.zeros(3)\n"
                          "e = ((predictions - targets) ** 2).mean()\n")
    graph, layout, tl = shown(canvas, tr)
    node = next(n for n in graph.nodes.values() if n.label == "(predictions - \u2026) ** 2")
    assert canvas._full_text(node) == "(predictions - targets) ** 2"
    named = next(n for n in graph.nodes.values() if n.label == "predictions")
    assert canvas._full_text(named) is None
    fm = QFontMetricsF(font(14, True))
    for letters in (18, 16, 14):
        width = fm.horizontalAdvance("(predictions - targets) ** 2") * letters / 28
        cut = _recut(canvas._full_text(node), fm, width)
        assert cut.count("\u2026") == 1 and fm.horizontalAdvance(cut) <= width, cut
    # and the canvas does so when big text does not fit the box
    from graphscope.ui import canvas_paint
    asked = []
    real = canvas_paint._recut
    monkeypatch.setattr(canvas_paint, "_recut", lambda text, *a: (asked.append(text),
                                                                   real(text, *a))[1])
    canvas.set_text_scale(2.5)
    canvas.set_frame(tl.state(len(tl) - 1))
    canvas.fit()
    canvas.grab()
    assert "(predictions - targets) ** 2" in asked
    assert not any("\u2026" in a for a in asked)


def test_a_tick_exactly_the_gap_away_is_drawn(qtbot):
    """The bisection for the next tick rounded past a call exactly TICK_GAP px
    on: n=58, width 100, calls 26 and 29 drew one tick, not two (code review)."""
    from PySide6.QtCore import QRectF
    from graphscope.ui.timeline_bar import TICK_GAP, ScrubStrip
    strip = ScrubStrip()
    qtbot.addWidget(strip)
    for n in range(50, 66):
        for width, left in ((100.0, 10.0), (100.0, 10.5), (333.0, 10.0)):
            scale = width / n
            for c0 in range(n):
                x = int(left + c0 * scale)
                c = next((c for c in range(c0 + 1, n)
                          if int(left + c * scale) - x >= TICK_GAP), None)
                if c is None:
                    continue
                kinds = ["op"] * n
                kinds[c0] = kinds[c] = "backward_call"
                strip.set_kinds(kinds)
                _runs, ticks = strip._strip(QRectF(left, 0, width, 10))
                assert ticks == [x, int(left + c * scale)], (n, width, left, c0, c)


def test_a_crowded_leaf_s_box_takes_a_free_spot_further_out(qapp):
    """Code review: once a spot's leader cost by its length, a crowded leaf's
    optional .grad box counted a free spot further out (below2, with a leader)
    as covered and was left out. The leader's length is the chips' cost only."""
    from PySide6.QtGui import QImage, QPainter
    from graphscope.ui.canvas_overlay import OverlayPainter
    f = OverlayPainter.__new__(OverlayPainter)
    f.theme, f.text_scale = get_theme("light"), 1.0
    img = QImage(800, 600, QImage.Format_ARGB32)
    p = QPainter(img)
    dr = QRectF(340, 285, 120, 30)
    b, a = QPointF(400, dr.bottom() + 8), QPointF(400, dr.top() - 8)
    r, l = QPointF(dr.right() + 8, 300), QPointF(dr.left() - 8, 300)
    inside = QPointF(400, dr.top() + dr.height() * 0.62 - 4)
    cands = [b, a, r, l, inside, b, a, b, a]
    sides = ("below", "above", "right", "left", "below", "below2", "above2", "below4", "above4")
    # nodes all round it: only the rows further out are free
    obst = [QRectF(300, 325, 90, 25), QRectF(300, 250, 90, 25), QRectF(460, 270, 250, 60),
            QRectF(90, 270, 250, 60), QRectF(340, 285, 120, 18.6)]
    box = f._place_label(p, cands, sides, ".grad: 0.5", obst, [], QRectF(0, 0, 800, 600), 1.0,
                         optional=True)
    p.end()
    assert box is not None and not any(o.intersects(box) for o in obst)



@pytest.mark.parametrize("size, text, presenting", [((820, 640), 1.0, False),
                                                    ((590, 360), 1.5, True)])
def test_welcome_s_labels_touch_no_node_they_are_not_about(canvas, size, text, presenting):
    """Visual review, welcome: at w's AccumulateGrad the ".grad: None → [1., -8.,
    36.]" box sat over w's own shape line, across w and its edges, while the row
    above was free; and at a projector w's "∂ [1., -8., 36.]" sat against x, the
    tensor that gets no gradient, and read as x's. A chip touches no tensor but
    its edge's own (at a projector an edge can be shorter than its chip is wide:
    the chip may touch the next op); a .grad box keeps off its leaf's box when a
    row is free."""
    import graphscope
    canvas.set_presentation(presenting)
    canvas.set_text_scale(text)
    tr = graphscope.trace(WELCOME)
    graph, layout, tl = shown(canvas, tr, size)
    canvas.set_animated(False)       # each pan lands at once
    canvas.set_follow(True)          # the window's auto view: it follows the step
    canvas.auto_fit = True
    geom = canvas._geom
    painter = canvas._painter
    checked = boxes = 0
    for i in range(len(tl)):
        frame = tl.state(i)
        if not frame.edge_grads and not frame.leaf_grads:
            continue
        canvas.set_frame(frame)
        canvas.grab()
        tf = canvas.transform()
        placed = painter.placed_labels
        leaves = [t for t in frame.leaf_grads
                  if f"t{t}" in geom.nodes and geom.nodes[f"t{t}"].step <= frame.visible_steps]
        grad_boxes = placed[:len(placed) - len(frame.edge_grads)]
        chips = [painter.chip_boxes[e] for e in frame.edge_grads]
        for box, tid in zip(grad_boxes, leaves):
            own = tf.mapRect(painter.marks_rect(geom.nodes[f"t{tid}"]))
            assert not box.adjusted(3, 3, -3, -3).intersects(own), (i, tid, box, own)
            boxes += 1
        for chip, (src, dst) in zip(chips, frame.edge_grads):
            for nid, ng in geom.nodes.items():
                if nid in (src, dst) or ng.node.kind == "op" or ng.step > frame.visible_steps:
                    continue
                ink = tf.mapRect(painter.ink_rect(ng))
                assert not chip.intersects(ink), (i, (src, dst), nid, chip, ink)
            checked += 1
    assert checked >= 3 and boxes >= 1


DETACHES = {
    # y -> detach runs straight, detach -> c wraps to the next row (the detach scenario)
    "detach": ("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x ** 2\n"
               "c = y.detach()\nz = y + c * 10\nz.sum().backward()\n"),
    # y -> detach wraps, detach -> its output runs straight (numpy-requires-grad)
    "numpy": ("import torch\nx = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x * 2\n"
              "print(y.detach().numpy())\n"),
}


@pytest.mark.parametrize("case", sorted(DETACHES))
def test_a_detach_is_cut_once_on_the_edge_to_the_tensor_it_makes(canvas, monkeypatch, case):
    """NOTE [one cut per detach]: the scissors sat on the edge into detach in one
    scenario and on the edge out of it in another, whichever ran straight (visual
    review). Now once, on detach -> its output, straight or wrapped into a lane."""
    import graphscope
    from graphscope.ui.canvas_scene import edge_ends, edge_route
    tr = graphscope.trace(DETACHES[case])
    graph, layout, tl = shown(canvas, tr)
    canvas.set_frame(tl.state(len(tl) - 1))
    painter = canvas._painter
    seen = []
    real = type(painter)._paint_cuts
    monkeypatch.setattr(type(painter), "_paint_cuts",
                        lambda self, p, cuts, lod: (seen.extend(cuts), real(self, p, cuts, lod)))
    canvas.grab()
    ops = [n for n in graph.nodes.values() if n.kind == "op" and n.label == "detach"]
    assert len(ops) == 1
    outs = [e for e in graph.edges if e.src == ops[0].id]
    assert len(outs) == 1 and outs[0].kind == "detach"
    assert len({(round(m.x()), round(m.y())) for m, _u, _on in seen}) == 1   # one cut
    m = seen[0][0]
    geom = canvas._geom
    s, d = geom.nodes[outs[0].src], geom.nodes[outs[0].dst]
    route = edge_route(geom, s, d)
    legs = list(zip(route, route[1:])) if route is not None else [edge_ends(s, d, geom)]

    def on(a, b):   # m on segment a-b
        cross = (b.x() - a.x()) * (m.y() - a.y()) - (b.y() - a.y()) * (m.x() - a.x())
        return abs(cross) < 1e-3 * max(1.0, abs(b.x() - a.x()) + abs(b.y() - a.y())) and \
            min(a.x(), b.x()) - 1 <= m.x() <= max(a.x(), b.x()) + 1 and \
            min(a.y(), b.y()) - 1 <= m.y() <= max(a.y(), b.y()) + 1
    assert any(on(a, b) for a, b in legs)
    assert (route is not None) == (case == "detach")     # both ways of drawing it


def test_a_step_before_anything_is_drawn_says_so(canvas, monkeypatch):
    """A layer's initialisation (an RNNCell's empty and uniform_) is steps that draw
    nothing: the canvas stayed blank and Next seemed to do nothing (visual review).
    It says why; once a node shows, it says nothing."""
    import graphscope
    tr = graphscope.trace("import torch\ncell = torch.nn.RNNCell(2, 2)\n"
                          "h = cell(torch.randn(1, 2))\n")
    graph, layout, tl = shown(canvas, tr)
    painted = []
    real = type(canvas)._paint_empty
    monkeypatch.setattr(type(canvas), "_paint_empty",
                        lambda self, p: (painted.append(self.empty_text()), real(self, p)))
    canvas.set_frame(tl.state(0))
    assert canvas._geom.last_upto(canvas._limit) is None       # the init's first step
    canvas.grab()
    assert painted and painted[-1].startswith("Nothing to draw yet")
    painted.clear()
    canvas.set_frame(tl.state(len(tl) - 1))
    canvas.grab()
    assert painted == []
