"""Layout invariants: no overlaps, placed nodes never move, edges go forward,
sources next to consumers, long chains wrap into a screen-shaped block."""
import sys
from pathlib import Path

from graphscope.model.graph import GraphBuilder, build_graph
from graphscope.model.layout import COL, ROW, LayeredLayout, node_size
from test_model_traces import run_messages, trace_of

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench_layout  # noqa: E402  (synthetic traces shared with the benchmark)

RNN = """
import torch
W = torch.randn(4, 4, requires_grad=True)
U = torch.randn(4, 3, requires_grad=True)
xs = torch.randn(30, 3)
h = torch.zeros(4)
for t in range(30):
    h = torch.tanh(W @ h + U @ xs[t])
loss = h.sum()
loss.backward()
"""


def _check_invariants(g, lay):
    assert set(lay.positions) == set(g.nodes)
    cells = {}
    for nid, pos in lay.positions.items():
        assert pos not in cells, f"{nid} and {cells[pos]} overlap at {pos}"
        cells[pos] = nid
    for e in g.edges:
        assert lay.layer[e.src] < lay.layer[e.dst], e


def _stream(msgs, layout, one_by_one=False):
    b = GraphBuilder()
    layout.graph = b.graph
    history = []
    for m in msgs:
        d = b.apply(m)
        if not d.nodes:
            continue
        before = dict(layout.positions)
        if one_by_one:
            for n in d.nodes:
                layout.add([n])
        else:
            layout.add(d.nodes)
        for nid, pos in before.items():
            assert layout.positions[nid] == pos, f"{nid} moved"
        history.append(len(layout.positions))
    return b.graph


def test_streamed_layout_never_moves_placed_nodes_and_keeps_invariants():
    _, msgs, end = run_messages(RNN)
    lay = LayeredLayout()
    g = _stream(msgs + [end], lay)
    _check_invariants(g, lay)
    # ghosts of the shared weights sit just before their consumer, in the same band
    ghosts = [n for n in g.nodes.values() if n.ghost_of]
    assert ghosts
    for gh in ghosts:
        (consumer,) = g.succs[gh.id]
        assert lay.layer[consumer] - lay.layer[gh.id] == 1
        assert abs(lay.row[consumer] - lay.row[gh.id]) <= 3


def test_nodes_added_one_at_a_time_also_keep_invariants():
    _, msgs, end = run_messages(RNN)
    lay = LayeredLayout()
    g = _stream(msgs + [end], lay, one_by_one=True)
    _check_invariants(g, lay)


def test_tidy_keeps_layers_and_invariants():
    g = build_graph(trace_of(RNN))
    lay = LayeredLayout(g)
    layers = dict(lay.layer)
    final = lay.tidy()
    assert lay.layer == layers and final == lay.positions
    _check_invariants(g, lay)


def test_first_graph_reads_left_to_right():
    g = build_graph(trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor(3.0, requires_grad=True)
        y = x * w
        loss = y.sum()
    """))
    lay = LayeredLayout(g)
    xs = {g.nodes[n].label: lay.positions[n][0] for n in g.nodes}
    assert xs["x"] < xs["mul"] < xs["y"] < xs["sum"] < xs["loss"]
    # a short chain stays on one row
    assert lay.positions["o2"][1] == lay.positions["t2"][1] == lay.positions["t3"][1]


def test_long_chain_wraps_into_a_screen_shaped_block():
    msgs = bench_layout.chain(3000)
    b = GraphBuilder()
    b.extend(msgs)
    lay = LayeredLayout(b.graph)
    _check_invariants(b.graph, lay)
    x0, y0, x1, y1 = lay.bounds()
    assert x1 - x0 < 200 * COL                    # not 6,000 layers in a line
    lay.tidy()
    _check_invariants(b.graph, lay)
    x0, y0, x1, y1 = lay.bounds()
    aspect = (x1 - x0 + COL) / (y1 - y0 + ROW)
    assert 0.8 < aspect < 3.2, aspect


def test_training_loop_passes_stack_then_flow_into_pages():
    msgs = bench_layout.mlp(1500)
    b = GraphBuilder()
    b.extend(msgs)
    lay = LayeredLayout(b.graph)
    before = lay.bounds()
    assert before[2] - before[0] < 40 * COL       # passes stack as rows, they don't march right
    lay.tidy()
    _check_invariants(b.graph, lay)
    x0, y0, x1, y1 = lay.bounds()
    aspect = (x1 - x0 + COL) / (y1 - y0 + ROW)
    assert 0.8 < aspect < 3.2, aspect


def test_adding_after_tidy_continues_without_overlap():
    _, msgs, end = run_messages(RNN)
    half = len(msgs) // 2
    b = GraphBuilder()
    lay = LayeredLayout()
    lay.graph = b.graph
    lay.add(b.extend(msgs[:half]).nodes)
    lay.tidy()
    lay.add(b.extend(msgs[half:] + [end]).nodes)
    _check_invariants(b.graph, lay)


def test_node_size_fits_the_grid():
    g = build_graph(trace_of("""
        import torch
        a_really_long_variable_name_for_a_tensor = torch.ones(2, 3)
    """))
    for n in g.nodes.values():
        w, h = node_size(n)
        assert 0 < w < COL and 0 < h < ROW


def _crossings(g, lay):
    """Crossings between edges joining the same pair of adjacent layers (same band)."""
    by_pair = {}
    for e in g.edges:
        a, b = e.src, e.dst
        if lay.layer[b] - lay.layer[a] == 1 and lay.layer[a] // lay.wrap == lay.layer[b] // lay.wrap:
            by_pair.setdefault(lay.layer[a], []).append((lay.row[a], lay.row[b]))
    n = 0
    for edges in by_pair.values():
        for i in range(len(edges)):
            for j in range(i + 1, len(edges)):
                (a1, b1), (a2, b2) = edges[i], edges[j]
                n += (a1 - a2) * (b1 - b2) < 0
    return n


def test_tidy_removes_crossings_from_a_tangled_start():
    g = build_graph(trace_of("""
        import torch
        a = torch.ones(2, requires_grad=True)
        b = torch.ones(2, requires_grad=True)
        c = torch.ones(2, requires_grad=True)
        p = c * 3
        q = b * 2
        r = a * 4
        s = p + q
        t = s + r
        t.sum().backward()
    """))
    lay = LayeredLayout(g)
    assert _crossings(g, lay) == 0                 # placed near their inputs already
    # tangle it: swap the rows of the first two ops (as late arrivals can leave them)
    o1, o2 = [n for n in g.nodes if n.startswith("o")][:2]
    lay.row[o1], lay.row[o2] = lay.row[o2], lay.row[o1]
    before = _crossings(g, lay)
    lay.tidy()
    _check_invariants(g, lay)
    assert before > 0 and _crossings(g, lay) < before


def test_text_scale_grows_boxes_and_grid_and_keeps_invariants():
    from graphscope.model.layout import pitches
    g = build_graph(trace_of(RNN))
    lay = LayeredLayout(g)
    lay.tidy()
    layers, rows = dict(lay.layer), dict(lay.row)
    assert lay.set_text_scale(1.6) and not lay.set_text_scale(1.6)
    assert lay.layer == layers and lay.row == rows
    _check_invariants(g, lay)
    col, row = pitches(1.6)
    assert col > COL and row > ROW
    for n in g.nodes.values():
        w, h = lay.node_size(n)
        assert h < row and w < col
        assert (w, h) >= node_size(n)


def test_short_chain_wraps_for_a_squarish_view_and_stays_one_row_for_a_wide_one():
    g = build_graph(trace_of("""
        import torch
        w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        x = torch.tensor([1.0, 2.0, 3.0])
        y = w * x
        loss = (y ** 2).sum()
        out = loss * 2
    """))
    wide = LayeredLayout(g)
    pos_wide = wide.tidy(aspect=8.0)
    assert len({round(y) for _, y in pos_wide.values()}) <= 2      # one band (w over x)
    square = LayeredLayout(g)
    pos_sq = square.tidy(aspect=700 / 570)
    assert square.wrap < len(set(wide.layer.values()))               # wrapped into bands
    # the wrapped picture fitted into a 700x570 view is substantially larger
    def fit(pos):
        px = [x for x, _ in pos.values()]
        py = [y for _, y in pos.values()]
        return min(700 / (max(px) - min(px) + COL), 570 / (max(py) - min(py) + ROW))
    assert fit(pos_sq) > 1.3 * fit(pos_wide)
    assert len(set(pos_sq)) == len(g.nodes)
    _check_invariants(g, square)


def test_two_grad_off_regions_on_neighbouring_rows_get_a_row_between():
    # no_grad, inference_mode and set_grad_enabled(False) on consecutive lines: each
    # box with its label above needs the room (they overlapped, labels on nodes)
    tr = trace_of("""
        import torch
        x = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            a = x * 2
        with torch.inference_mode():
            b = x * 2
        with torch.no_grad():
            c = x * 3
    """)
    g = build_graph(tr)
    lay = LayeredLayout(g)
    pos = lay.tidy()
    rows = {}
    for nid, node in g.nodes.items():
        if node.region is not None:
            rows.setdefault(node.region, set()).add(round(pos[nid][1] / lay.row_pitch))
    spans = sorted((min(r), max(r)) for r in rows.values())
    assert len(spans) == 3
    for (_, bottom), (top, _) in zip(spans, spans[1:]):
        assert top - bottom >= 2          # an empty row between two boxes


def test_a_region_s_row_gets_an_empty_row_above_it():
    """GUI review, optimizer-step-no-grad: a no_grad row right under a full row left
    the box's label no room, and the lane between the rows ran through the label.
    A row with a grad-off region gets an empty row above it unless the row above is
    in the same region."""
    from graphscope.model.layout import _renumber
    assert _renumber([0, 1, 2, 3], {1: {0}, 2: {0}}) == {0: 0, 1: 2, 2: 3, 3: 4}
    assert _renumber([0, 1], {0: {0}}) == {0: 0, 1: 1}          # nothing above the first
    assert _renumber([0, 1], {0: {0}, 1: {1}}) == {0: 0, 1: 2}  # two regions: as before
    tr = trace_of("""
        import torch
        w = torch.tensor([1.0, -2.0], requires_grad=True)
        (w ** 2).sum().backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
        (w ** 2).sum().backward()
    """)
    g = build_graph(tr)
    lay = LayeredLayout(g)
    pos = lay.tidy()
    row_of = {nid: round(y / lay.row_pitch) for nid, (_x, y) in pos.items()}
    region_rows = {row_of[n] for n, node in g.nodes.items() if node.region is not None}
    assert region_rows
    for r in region_rows:
        if r > 0 and any(row_of[n] < r for n in row_of):
            assert not any(row_of[n] == r - 1 and g.nodes[n].region is None for n in row_of), r
    _check_invariants(g, lay)


def test_a_streamed_wrap_shapes_the_stream_and_settle_keeps_the_batch_layout():
    """NOTE [streamed wrap]: while a run streams in, the window wraps rows as wide
    as the view (a chain in one long row made the view follow it sideways, 300 px a
    step); the end of the run is laid out as a stored trace is."""
    tr = trace_of("""
        import torch
        x = torch.ones(3, requires_grad=True)
        h = x
        for i in range(12):
            h = torch.tanh(h * 1.5)
        h.sum().backward()
    """)
    g = build_graph(tr)
    batch = LayeredLayout(g)
    lay = LayeredLayout()
    lay.set_stream_wrap(4)
    lay.graph = g
    lay.add(g)
    assert lay.wrap == 4
    assert max(lay.layer[n] % lay.wrap for n in lay.positions) <= 3
    assert max(x for x, _ in lay.positions.values()) < 4 * lay.col_pitch
    lay.set_stream_wrap(10)                     # too late: nodes are placed
    assert lay.wrap == 4
    _check_invariants(g, lay)
    lay.settle()
    assert lay.positions == batch.positions


def test_a_branch_points_text_fits_between_its_pointed_ends():
    """The hexagon's ends took the text's room: "2.0 -> if-branch (line 5)" ran
    across them and, bigger, lost "(line 5)" to the ellipsis (UX review). The
    box is wider by its ends, and the direction text is short enough to fit."""
    from graphscope.model.graph_types import Node
    from graphscope.model.layout import BRANCH_TIPS, DETAIL_CHAR, PAD_X, TEXT_MARGIN
    detail = "2.0 \u2192 if, line 15"
    plain = Node("o1", "op", "if x.item() > 1", detail)
    branch = Node("o2", "op", "if x.item() > 1", detail, flags=frozenset({"branch"}))
    (w0, h), (w1, _) = node_size(plain), node_size(branch)
    assert w1 > w0
    assert w1 - (PAD_X - 2 * TEXT_MARGIN) - 2 * BRANCH_TIPS * h >= len(detail) * DETAIL_CHAR


def test_a_band_too_wide_to_read_wraps_even_for_a_small_gain():
    # NOTE [a wrap that reads]: challenge-1 in the quiz's 828x643 canvas; one band
    # fitted there is below the readable zoom (12.5 px labels), so the view followed
    # the last step and the leaves were off the left edge; wrapping gained 1.29x,
    # under WRAP_GAIN, and was not done
    from graphscope import scenarios
    g = build_graph(trace_of(scenarios.find("challenge-1-why-dynamic").snippet))
    # the graph as it was drawn then, its decisions not yet joined to the branch
    # they chose (NOTE [where a decision sent the program]), which made the
    # picture longer and wrapping it a gain in its own right: the shape is the case
    for e in [e for e in g.edges if e.kind == "control"]:
        g.edges.remove(e)
        g.succs[e.src].remove(e.dst)
        g.preds[e.dst].remove(e.src)
    aspect, readable = 828 / 643, (12.5 / 17) / 643
    n = len(set(LayeredLayout(g).layer.values()))
    plain = LayeredLayout(g)
    plain.tidy(aspect=aspect)
    assert plain.wrap >= n                       # one band: the gain alone is too small
    reads = LayeredLayout(g)
    pos = reads.tidy(aspect=aspect, readable=readable)
    assert reads.wrap < n
    px = [x for x, _ in pos.values()]
    py = [y for _, y in pos.values()]
    zoom = min(aspect / (max(px) - min(px) + COL), 1 / (max(py) - min(py) + ROW))
    assert zoom >= readable                      # and the wrapped picture reads
    _check_invariants(g, reads)
    # a view where one band reads keeps it
    roomy = LayeredLayout(g)
    roomy.tidy(aspect=aspect, readable=readable / 2)
    assert roomy.wrap >= n


def test_a_short_chain_goes_into_bands_of_two_where_nothing_wider_reads():
    # a 3-node chain in a 1280x720 projector's canvas (647x359 px) at 130% text (boxes
    # at 1.755 in presentation mode), where labels read at 0.784 px a unit: one band
    # was cut at the canvas's edge (teacher review)
    g = build_graph(trace_of("""
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        (x ** 2).backward()
    """))
    aspect, readable = 647 / 359, 0.784 / 359
    n = len(set(LayeredLayout(g).layer.values()))
    assert n == 3
    plain = LayeredLayout(g, text_scale=1.755)
    plain.tidy(aspect=aspect)
    assert plain.wrap >= n                        # the exported picture: one band
    small = LayeredLayout(g, text_scale=1.755)
    small.tidy(aspect=aspect, readable=readable)
    assert small.wrap == 2
    _check_invariants(g, small)


# -- NOTE [a pass is a block] ---------------------------------------------------

RNN_TWO_SEQUENCES = """
import torch
w = torch.tensor(0.5, requires_grad=True)

def run(sequence):
    h = torch.tensor(0.0)
    for x in sequence:
        h = w * h + x
    return h

for seq in ([1.0, 1.0], [1.0, 1.0, 1.0]):
    w.grad = None
    run(seq).backward()
"""

ACCUMULATE = """
import torch
w = torch.tensor(1.0, requires_grad=True)
for k in range(4):
    loss = w * (k + 1)
    loss.backward()
"""


def _blocks_layout(source):
    from graphscope.model.passes import node_passes, shown_passes
    tr = trace_of(source)
    g = build_graph(tr)
    passes = node_passes(g, shown_passes(tr))
    return g, passes


def test_each_pass_of_an_rnn_run_twice_is_a_block_of_its_own_rows():
    g, passes = _blocks_layout(RNN_TWO_SEQUENCES)
    assert sorted(set(passes.values())) == [0, 1]
    plain = LayeredLayout(g)
    plain.tidy()
    rows = lambda lay, k: [lay.row[n] for n, p in passes.items() if p == k]  # noqa: E731
    # laid out by layer alone, the second pass's rows lie between the first's
    assert min(rows(plain, 1)) < max(rows(plain, 0))
    lay = LayeredLayout(g)
    lay.set_passes(passes)
    placed = dict(lay.layer)
    lay.tidy()
    _check_invariants(g, lay)
    assert max(rows(lay, 0)) < min(rows(lay, 1))
    # every node keeps its screen column: the weight stays before each pass's mul
    assert all(lay.layer[n] % lay.wrap == placed[n] % lay.wrap for n in g.nodes)
    # a second tidy (the window resized and back) gives the same picture
    first = dict(lay.positions)
    lay.tidy(aspect=0.5)
    assert lay.tidy(aspect=16 / 9) == first


def test_passes_of_one_band_each_stack_as_rows_as_before():
    g, passes = _blocks_layout(ACCUMULATE)
    assert len(set(passes.values())) == 4
    plain = LayeredLayout(g)
    lay = LayeredLayout(g)
    lay.set_passes(passes)
    assert lay.tidy() == plain.tidy()


def test_blocks_give_way_where_they_alone_would_make_a_picture_unreadable():
    g, passes = _blocks_layout(RNN_TWO_SEQUENCES)
    plain = LayeredLayout(g)
    lay = LayeredLayout(g)
    lay.set_passes(passes)
    # in the window's canvas (its aspect and the zoom its labels read at) blocks
    # would shrink the fitted picture by more than BLOCK_COST, below readable
    view = dict(aspect=1.29, readable=0.00114)
    assert lay.tidy(**view) == plain.tidy(**view)
    _check_invariants(g, lay)
    # where the labels read whatever the zoom, the passes are blocks
    assert lay.tidy(aspect=1.29, readable=0) != plain.tidy(aspect=1.29, readable=0)


SECOND_DERIVATIVE = """
import torch
x = torch.tensor(2.0, requires_grad=True)
y = x ** 3
dy, = torch.autograd.grad(y, x, create_graph=True)
dy.backward()
"""


def test_a_pass_computed_from_the_pass_before_keeps_the_gap_its_edge_runs_in():
    g, passes = _blocks_layout(SECOND_DERIVATIVE)
    assert len(set(passes.values())) == 2
    lay = LayeredLayout(g)
    lay.set_passes(passes)
    lay.tidy()
    _check_invariants(g, lay)
    first = max(lay.row[n] for n, p in passes.items() if p == 0)
    second = min(lay.row[n] for n, p in passes.items() if p == 1)
    assert second - first == 2       # an empty row between: the lane of y -> grad
