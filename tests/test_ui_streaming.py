"""A long run streaming into the window: the controller's slices and the timeline strip."""
import pytest

pytestmark = pytest.mark.qt_log_ignore("does not support propagateSizeHints")


def test_the_timeline_strip_takes_a_streaming_run_in_pieces(qtbot):
    """A long run streams in hundreds of batches: the strip adds the new steps'
    segments only, and ends up as if it had been given them all at once."""
    from graphscope.ui.timeline_bar import TimelineBar
    kinds = (["op"] * 5 + ["backward_call"] + ["backward"] * 3) * 4 + ["op"] * 2
    whole, pieces = TimelineBar(), TimelineBar()
    qtbot.addWidget(whole)
    qtbot.addWidget(pieces)
    whole.set_steps(kinds)
    for i in range(0, len(kinds), 7):
        pieces.add_steps(kinds[i:i + 7])
    assert pieces.step_count() == whole.step_count() == len(kinds)
    assert pieces.strip._segments == whole.strip._segments
    assert [k for _, _, k in whole.strip._segments] == ["op", "backward"] * 4 + ["op"]


def test_a_backlog_reaches_the_window_in_bigger_slices(qtbot):
    """Far behind (after a Stop, or a run faster than drawing), the controller
    hands over bigger slices: each costs the window a fixed amount as well."""
    from graphscope import protocol as P
    from graphscope.ui.run_controller import BACKLOG_BATCH, MAX_BATCH, RunController
    c = RunController(runner=object())          # no run is started: messages fed in
    sizes = []
    c.batch.connect(lambda msgs: sizes.append(len(msgs)))
    c._receive(c._generation, [P.Output(i, "stdout", ".") for i in range(10 * MAX_BATCH + 100)])
    qtbot.waitUntil(lambda: sum(sizes) == 10 * MAX_BATCH + 100, timeout=5000)
    assert sizes[0] == BACKLOG_BATCH and max(sizes) <= BACKLOG_BATCH
    assert sizes[-1] <= MAX_BATCH                # the tail, once caught up: live slices


def test_a_node_s_box_follows_its_label_as_the_run_streams(qtbot):
    """``w = torch.tensor(1.0, requires_grad=True)``: the first message labels the
    tensor with its expression, the next one names it ``w``. A window that drew
    between the two kept the expression's box for ``w``, and one that did not drew
    a narrower box: two screenshots of one scenario differed. A short first label
    then a long name (``loss + 1``, then ``hidden_state_of_the_cell``) left the
    name elided in a box too small. Every box now has its label's size, however
    the messages were cut into batches."""
    from graphscope.model.layout import node_size
    from graphscope.runner import Runner, run_to_trace
    from graphscope.ui.graph_canvas import GraphCanvas
    from graphscope.ui.live_run import LiveRun
    src = ("import torch\nw = torch.tensor(1.0, requires_grad=True)\nloss = 2 * w\n"
           "hidden_state_of_the_cell = loss + 1\n")
    msgs = []
    with Runner(warm=False) as r:
        run_to_trace(src, "s.py", runner=r, also=msgs.extend)
    live = LiveRun(src, "s.py")
    c = GraphCanvas()
    qtbot.addWidget(c)
    c.resize(900, 500)
    c.set_graph(live.graph, live.layout)
    labels = {}
    for m in msgs:        # one message a batch, and a paint after each
        d = live.apply([m], follow=True)
        if d.nodes:
            c.add_nodes([n.id for n in d.nodes])
        if d.changed:
            c.update_nodes([n.id for n in d.changed])
        for n in list(d.nodes) + list(d.changed):
            labels.setdefault(n.id, []).append(n.label)
        c.grab()
    renamed = {labels[k][0]: labels[k][-1] for k in labels if labels[k][0] != labels[k][-1]}
    assert renamed.get("loss + 1") == "hidden_state_of_the_cell"
    assert any(v == "w" and len(k) > 10 for k, v in renamed.items())   # the expression, elided
    geom = c.geometry_model()
    for ng in geom.nodes.values():
        assert (ng.w, ng.h) == node_size(ng.node, live.layout.text_scale), ng.node.label


def test_a_run_ends_in_the_same_layout_however_its_messages_were_batched():
    """NOTE [one layout per graph]: where a source was placed depended on whether
    its consumer came in the same batch, so two runs of one scenario ended in
    different layouts (visual review). At the end of a streamed run the layout is
    settled: every batching gives the picture the exported trace gives."""
    import random
    from graphscope.model.graph import build_graph
    from graphscope.model.layout import LayeredLayout
    from graphscope.runner import Runner, run_to_trace
    from graphscope.ui.live_run import LiveRun
    src = ("import torch\nw = torch.tensor(0.5, requires_grad=True)\nb = torch.tensor(0.1, "
           "requires_grad=True)\nh = torch.zeros(1)\nfor x in (1.0, 2.0, 3.0):\n"
           "    h = torch.tanh(w * h + x + b)\nh.sum().backward()\n")
    msgs = []
    with Runner(warm=False) as r:
        tr = run_to_trace(src, "s.py", runner=r, also=msgs.extend)
    body = [m for m in msgs if m.T != "end"]

    def final(batch_sizes):
        live = LiveRun(src, "s.py")
        i = 0
        while i < len(body):
            n = next(batch_sizes)
            live.apply(body[i:i + n], follow=True)
            i += n
        live.finish(tr.end)
        return {k: (round(x), round(y)) for k, (x, y) in live.layout.tidy(aspect=1.6).items()}
    rng = random.Random(3)
    layouts = [final(iter(lambda: len(body), None))]
    layouts += [final(iter(lambda: rng.randint(1, 12), None)) for _ in range(4)]
    exported = {k: (round(x), round(y))
                for k, (x, y) in LayeredLayout(build_graph(tr)).tidy(aspect=1.6).items()}
    assert all(lay == exported for lay in layouts)


def test_pass_bands_do_not_overlap_when_the_inputs_are_made_first():
    """practice-1 builds its three inputs before the loop that uses them: the second
    pass's band began at its input's step, inside the first's, and the two were
    drawn over each other (visual review)."""
    from graphscope import scenarios
    from graphscope.ui.live_run import LiveRun
    from test_model_traces import run_messages
    src, msgs, end = run_messages(scenarios.find("practice-1-main-advantage").snippet)
    live = LiveRun(src, "s.py")
    live.apply(msgs)
    live.finish(end)
    bands = live.pass_bands()
    assert len(bands) >= 2
    for (a0, a1, _), (b0, b1, _) in zip(bands, bands[1:]):
        assert a0 <= a1 < b0 <= b1


def test_pass_bands_of_interleaved_computations_keep_their_steps():
    """Three computations written interleaved, without backward: the clamp for
    inputs made early moved the second band past the first and left the third over
    both (a second code review). Only steps that make inputs are moved."""
    from graphscope.ui.live_run import LiveRun
    from test_model_traces import run_messages
    src, msgs, end = run_messages("""
        import torch
        x1 = torch.ones(2, requires_grad=True)
        x2 = torch.ones(2, requires_grad=True)
        x3 = torch.ones(2, requires_grad=True)
        a = x1 * 2
        a1 = a + 1
        b = x2 * 3
        c = x3 * 4
        a2 = a1.sum()
        c1 = c + 1
        c2 = c1.sum()
        b1 = b + 1
        b2 = b1 + 1
        b3 = b2.sum()
    """)
    live = LiveRun(src, "s.py")
    live.apply(msgs)
    live.finish(end)
    from graphscope.model.passes import passes_of
    plain = [s for s in live.timeline.pass_steps(passes_of(live.trace)) if s is not None]
    assert [b[:2] for b in live.pass_bands()] == plain


def test_the_window_and_the_exported_picture_lay_out_each_pass_as_a_block():
    """NOTE [a pass is a block] in model/layout.py: a run that ends lays out its
    passes (the timeline's bands) one after another, in the window as in export."""
    from graphscope import scenarios
    from graphscope.model.trace import Trace
    from graphscope.ui.live_run import LiveRun
    from graphscope.ui.render import scene_for_trace
    from test_model_traces import run_messages
    src, msgs, end = run_messages(scenarios.find("input-dependent-depth").snippet)
    live = LiveRun(src, "s.py")
    live.apply(msgs)
    live.finish(end)
    assert sorted(set(live.layout.passes.values())) == [0, 1]
    mine = live.layout.tidy(aspect=16 / 9)
    tr = Trace(source=src, filename="s.py")
    tr.extend(msgs)
    tr.apply(end)
    _, exported, _ = scene_for_trace(tr)
    assert exported.passes == live.layout.passes
    assert {k: (round(x), round(y)) for k, (x, y) in mine.items()} == \
        {k: (round(x), round(y)) for k, (x, y) in exported.positions.items()}
    rows = {k: [live.layout.row[n] for n, p in live.layout.passes.items() if p == k]
            for k in (0, 1)}
    assert max(rows[0]) < min(rows[1])
