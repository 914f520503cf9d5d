"""The value a tensor node shows at a step (NOTE [values after in-place] in
model/values.py), on traces of real snippets."""
from __future__ import annotations

import textwrap

from graphscope.model.graph import build_graph
from graphscope.model.values import value_at
from capture_helpers import capture


def _node(graph, tid, version=0):
    return graph.nodes[f"t{tid}" if not version else f"t{tid}~{version}"]


def test_recorded_values_after_each_in_place_change():
    tr = capture("""
        import torch
        x = torch.zeros(3)
        x.add_(1)
        x[0] = 5
        y = torch.empty(3)
        torch.mul(x, 2, out=y)
        """)
    x, y = tr.tensor_by_name("x"), tr.tensor_by_name("y")
    ops = {o.name: o for o in tr.ops}
    assert ops["add_"].after == {str(x.id): [[1.0, 1.0, 1.0], None]}
    assert ops["setitem"].after == {str(x.id): [[5.0, 1.0, 1.0], None]}
    assert ops["mul"].after == {str(y.id): [[10.0, 2.0, 2.0], None]}
    assert [o.name for o in tr.changes_of(x.id)] == ["add_", "setitem"]


def test_untracked_changes_show_on_the_node_tracked_ones_on_a_new_node():
    tr = capture("""
        import torch
        w = torch.ones(3, requires_grad=True)
        with torch.no_grad():
            w -= 0.5                   # an update: w keeps its node
        h = w * 2
        h.add_(1)                      # autograd records it: h~1
        with torch.no_grad():
            h.mul_(10)                 # shown on h~1
        """)
    g = build_graph(tr)
    w, h = tr.tensor_by_name("w"), tr.tensor_by_name("h")
    sub = next(o for o in tr.ops if o.name == "sub_")
    # w's node before and after the update
    assert value_at(tr, w.id, None, sub.seq - 1).value == [1.0, 1.0, 1.0]
    at = value_at(tr, w.id, None, sub.seq)
    assert at.value == [0.5, 0.5, 0.5] and at.changed_by is sub and not at.own
    # h: created [1, 1, 1]; its node keeps that; h~1 is after add_, then mul_
    h0, h1 = _node(g, h.id), _node(g, h.id, 1)
    assert value_at(tr, h.id, h0.op).value == [1.0, 1.0, 1.0]
    add = tr.op_by_id(h1.op)
    first = value_at(tr, h.id, h1.op, add.seq)
    assert add.name == "add_" and first.own and first.value == [2.0, 2.0, 2.0]
    assert value_at(tr, h.id, h1.op).value == [20.0, 20.0, 20.0]


def test_big_tensors_carry_statistics_after_the_change():
    tr = capture("""
        import torch
        w = torch.zeros(100)
        w.fill_(3.0)
        """)
    w = tr.tensor_by_name("w")
    at = value_at(tr, w.id)
    assert at.value is None and at.stats["mean"] == 3.0 and at.stats["numel"] == 100
    assert tr.tensors[w.id].stats["mean"] == 0.0          # as created


def test_the_timeline_follows_a_grad_zeroed_in_place_or_set_to_none():
    from graphscope.model.timeline import Timeline
    tr = capture("""
        import torch
        w = torch.ones(3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        (w * 2).sum().backward()
        w.grad.zero_()
        (w * 3).sum().backward()
        opt.zero_grad()
        """)
    tl = Timeline(tr)
    w = tr.tensor_by_name("w").id

    def grad_after(op_name):
        i = next(s.index for s in tl.steps if s.kind == "op"
                 and tr.op_by_id(s.op).name == op_name)
        return tl.state(i).leaf_grads.get(w)

    before, after = grad_after("zero_")
    assert before["value"] == [2.0, 2.0, 2.0] and after["value"] == [0.0, 0.0, 0.0]
    last = tl.state(len(tl.steps) - 1).leaf_grads[w]
    assert last[0]["value"] == [3.0, 3.0, 3.0] and last[1] is None   # zero_grad: None
    # stepping back undoes it
    assert grad_after("zero_")[1]["value"] == [0.0, 0.0, 0.0]


def test_the_value_follows_the_graph_that_is_drawn_as_it_was_built_live():
    """out[0] = 7 changes a tensor autograd does not track yet; out[1] = x[1] * 2
    makes it tracked. A live graph (built message by message) draws the first
    change on out's own node: that node shows [7, 0, 0]."""
    from graphscope.model.graph import GraphBuilder
    tr = capture("""
        import torch
        x = torch.ones(3, requires_grad=True)
        out = torch.zeros(3)
        out[0] = 7.0
        out[1] = x[1] * 2
        """)
    live = GraphBuilder()
    live.extend(tr.messages)
    out = tr.tensor_by_name("out")
    first, second = tr.changes_of(out.id)
    assert (first.id, out.id) not in live.graph.out_node       # drawn on out's node
    assert (second.id, out.id) in live.graph.out_node          # a new node, out~1
    at = value_at(tr, out.id, tr.tensors[out.id].created_by, None, live.graph)
    assert at.value == [7.0, 0.0, 0.0] and at.changed_by is first


def test_values_after_in_place_changes_are_kept_up_to_a_size():
    from graphscope.capture.recorder import AFTER_NUMEL
    tr = capture(f"""
        import torch
        big = torch.zeros({AFTER_NUMEL + 1})
        big.add_(1)
        """)
    op = next(o for o in tr.ops if o.name == "add_")
    assert op.versions and op.after is None
    assert value_at(tr, tr.tensor_by_name("big").id).changed_by is None


def _state_after_line(tl, line):
    """The timeline's state just before the first op of a later line."""
    later = [s.index for s in tl.steps if s.kind == "op" and s.line > line]
    return tl.state(min(later) - 1 if later else len(tl.steps) - 1)


def test_the_timeline_follows_grads_changed_through_aliases_optimizers_and_writes():
    """Against plain PyTorch: what w.grad is after each line (review findings)."""
    from graphscope.model.timeline import Timeline
    tr = capture("""
        import torch
        w = torch.tensor([3.0, 4.0], requires_grad=True)
        (w * w).sum().backward()                       # 4: grad [6, 8]
        torch.nn.utils.clip_grad_norm_([w], 1.0)       # 5: [0.6, 0.8]
        w.grad.data.zero_()                            # 6: [0, 0]
        (w * 2).sum().backward()                       # 7: [2, 2]
        w.grad[0:1].zero_()                            # 8: [0, 2]
        g = w.grad
        w.grad = torch.ones(2)                         # 10: [1, 1]
        g.add_(5)                                      # 11: g is not w.grad any more
        opt = torch.optim.SGD([w], lr=0.1, foreach=True)
        opt.zero_grad(set_to_none=False)               # 13: [0, 0]
        """)
    tl = Timeline(tr)
    w = tr.tensor_by_name("w").id

    def after(line):
        got = _state_after_line(tl, line).leaf_grads[w][1]
        return [round(v, 4) for v in got["value"]]

    # (the snippet's line 1 is empty)
    assert after(4) == [6.0, 8.0]
    assert after(5) == [0.6, 0.8]
    assert after(6) == [0.0, 0.0]
    assert after(7) == [2.0, 2.0]
    assert after(8) == [0.0, 2.0]
    assert after(10) == [1.0, 1.0]
    assert after(11) == [1.0, 1.0]
    assert after(13) == [0.0, 0.0]


def test_an_in_place_change_through_a_view_reaches_its_base():
    tr = capture("""
        import torch
        x = torch.arange(4.0)
        v = x[0:2]
        v.mul_(2)
        """)
    x = tr.tensor_by_name("x")
    at = value_at(tr, x.id)
    assert at.value == [0.0, 2.0, 2.0, 3.0] and at.changed_by.name == "mul_"


def test_a_big_gradient_zeroed_in_place_is_known_to_be_zero():
    from graphscope.capture.recorder import AFTER_NUMEL
    tr = capture(f"""
        import torch
        w = torch.ones({AFTER_NUMEL + 10}, requires_grad=True)
        (w * 2).sum().backward()
        w.grad.zero_()
        """)
    op = next(o for o in tr.ops if o.name == "zero_")
    (value, stats), = op.after.values()
    assert value is None and stats["max"] == 0.0 and stats["numel"] == AFTER_NUMEL + 10


def test_a_change_too_big_to_keep_is_reported_from_its_step_on():
    from graphscope.capture.recorder import AFTER_NUMEL
    tr = capture(f"""
        import torch
        big = torch.zeros({AFTER_NUMEL + 1})
        big.add_(1)
        """)
    big = tr.tensor_by_name("big").id
    add = next(o for o in tr.ops if o.name == "add_")
    before, now = value_at(tr, big, None, add.seq - 1), value_at(tr, big, None, add.seq)
    assert before.stale is None and before.changed_by is None
    assert now.stale is add and now.changed_by is None and now.stats["mean"] == 0.0


def test_a_view_whose_base_changed_in_place_shows_the_new_elements():
    """NOTE [aliases]: y = x.view(2, 2) changes with x; only x's value after was
    recorded, y's elements are worked out from where each lies in the memory."""
    tr = capture("""
        import torch
        x = torch.arange(4.0)
        y = x.view(2, 2)
        x.add_(1)
        """)
    x, y = tr.tensor_by_name("x").id, tr.tensor_by_name("y").id
    add = next(o for o in tr.ops if o.name == "add_")
    before = value_at(tr, y, None, add.seq - 1)
    assert before.value == [[0.0, 1.0], [2.0, 3.0]] and before.changed_by is None
    at = value_at(tr, y, None, add.seq)
    assert at.value == [[1.0, 2.0], [3.0, 4.0]] and at.stale is None
    assert at.changed_by is add and at.through == x and not at.own


SHARED = """
    import torch
    x = torch.arange(6.0)
    a = x[1:4]
    b = x.view(2, 3)
    c = b.t()
    d = x.detach()
    f = c.reshape(6)             # c is not contiguous: a copy, not a view
    p, q = x.split(3)
    a.mul_(10)
    print(b, c, d, f, q)
    d.zero_()
    print(x, q)
    """


def test_every_tensor_sharing_memory_shows_what_python_prints():
    """Views of views, a transpose, a split, a detach (both ways), a copying
    reshape: at each print, every tensor's value as plain PyTorch prints it."""
    import torch
    tr = capture(SHARED)
    ns = {}
    exec(compile(textwrap.dedent(SHARED).replace("print(", "_ = ("), "s", "exec"), ns)
    ids = {n: tr.tensor_by_name(n).id for n in "x a b c d f p q".split()}
    mul = next(o for o in tr.ops if o.name == "mul_")
    zero = next(o for o in tr.ops if o.name == "zero_")
    x = torch.arange(6.0)
    expect_at_mul = {"b": x.view(2, 3) * 1, "q": torch.tensor([30.0, 4.0, 5.0])}
    expect_at_mul["b"][0, 1:], expect_at_mul["b"][1, 0] = torch.tensor([10.0, 20.0]), 30.0
    for n, want in expect_at_mul.items():
        assert value_at(tr, ids[n], None, mul.seq).value == want.tolist(), n
    assert value_at(tr, ids["c"], None, mul.seq).value == expect_at_mul["b"].t().tolist()
    for n in "x a b c d p q".split():                  # all zero after d.zero_()
        at = value_at(tr, ids[n], None, zero.seq)
        assert at.value == ns[n].tolist(), n
        assert at.stale is None and (at.changed_by is zero or n == "d"), n
    f = value_at(tr, ids["f"])
    assert f.value == ns["f"].tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    assert f.changed_by is None and f.stale is None   # a copy: untouched
    assert value_at(tr, ids["q"], None, mul.seq).through == ids["a"]


def test_shared_memory_changes_reported_from_reviews():
    """A view of a view, a detached copy, a big base changed through a small view."""
    from graphscope.capture.recorder import AFTER_NUMEL
    tr = capture(f"""
        import torch
        x = torch.arange(6.).reshape(2, 3).clone()    # its own memory: the root
        r = x[0]
        z = r[0:2]
        z.mul_(2)
        d = x.detach()
        x.add_(10)
        big = torch.zeros({AFTER_NUMEL + 10})
        v = big[0:4]
        big[0:2].add_(5)
        big[10:20].add_(1)
        """)
    ids = {n: tr.tensor_by_name(n).id for n in ("x", "r", "z", "d", "big", "v")}
    mul = next(o for o in tr.ops if o.name == "mul_")
    add = next(o for o in tr.ops if o.name == "add_" and str(ids["x"]) in o.versions)
    assert value_at(tr, ids["x"], None, mul.seq).value == [[0.0, 2.0, 2.0], [3.0, 4.0, 5.0]]
    r = value_at(tr, ids["r"], None, mul.seq)                      # x[0] through z
    assert r.value == [0.0, 2.0, 2.0] and r.changed_by is mul and r.through == ids["z"]
    d = value_at(tr, ids["d"])                                     # a detach shares memory
    assert d.value == [[10.0, 12.0, 12.0], [13.0, 14.0, 15.0]] and d.changed_by is add
    big_at = value_at(tr, ids["big"])                              # too big to keep
    assert big_at.stale is not None and big_at.stale.name == "add_"
    v = value_at(tr, ids["v"])   # big[0:2] changed it, big[10:20] did not
    assert v.value == [5.0, 5.0, 0.0, 0.0] and v.stale is None


def test_a_change_too_big_to_keep_marks_the_views_it_touches():
    from graphscope.capture.recorder import AFTER_NUMEL
    tr = capture(f"""
        import torch
        big = torch.zeros({AFTER_NUMEL + 10})
        v = big[0:4]
        w = big[-4:]
        big.add_(1)
        """)
    add = next(o for o in tr.ops if o.name == "add_")
    for n in ("v", "w"):
        at = value_at(tr, tr.tensor_by_name(n).id)
        assert at.value == [0.0] * 4 and at.stale is add and at.shared, n


def test_a_trace_from_before_aliases_were_recorded_still_marks_views():
    """Op.alias is new: an older trace file has null there, so where a view lies
    is unknown and a change through its base only marks it."""
    import dataclasses
    from graphscope.model.trace import Trace
    tr = capture("""
        import torch
        x = torch.arange(4.0)
        y = x.view(2, 2)
        x.add_(1)
        """)
    old = Trace(source=tr.source)
    old.extend([dataclasses.replace(m, alias=None) if m.T == "op" else m for m in tr.messages])
    at = value_at(old, old.tensor_by_name("y").id)
    assert at.value == [[0.0, 1.0], [2.0, 3.0]] and at.stale.name == "add_" and at.shared


def test_a_multi_output_op_keeps_its_nodes_from_a_later_composite():
    tr = capture("""
        import torch
        torch.manual_seed(0)
        x = torch.randn(1, 4, requires_grad=True)
        y = torch.randn(3, 1, requires_grad=True)
        a, b = torch.broadcast_tensors(x, y)
        lin = torch.nn.Linear(4, 2)
        z = lin(b)
        z.sum().backward()
        """)
    lin = next(o for o in tr.ops if o.name == "linear")
    assert [row[0] for row in lin.subgraph] == ["AddmmBackward0", "TBackward0"]
    expand = [s for s in tr.backward if s.grad_fn == "ExpandBackward0"]
    assert expand and all(s.within is None and s.op is not None for s in expand)


def test_a_big_gradient_changed_in_place_is_shown_as_changed_not_stale():
    from graphscope.capture.recorder import AFTER_NUMEL
    from graphscope.model.summary import format_summary
    from graphscope.model.timeline import Timeline
    tr = capture(f"""
        import torch
        w = torch.ones({AFTER_NUMEL + 10}, requires_grad=True)
        (w * 2).sum().backward()
        w.grad.mul_(3)
        """)
    tl = Timeline(tr)
    w = tr.tensor_by_name("w").id
    before, after = tl.state(len(tl.steps) - 1).leaf_grads[w]
    assert before["stats"]["mean"] == 2.0
    assert after["stats"] is None and "changed by mul_" in format_summary(after, 200)


def test_assigning_data_is_a_change_in_place():
    """w.data = w.data - lr * w.grad: the classic hand-written SGD step."""
    from graphscope.model.timeline import Timeline
    tr = capture("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward()
        w.data = w.data - 0.25 * w.grad
        w.grad.data = torch.zeros(2)
        print(w, w.grad)
        """)
    w = tr.tensor_by_name("w").id
    at = value_at(tr, w)
    assert at.value == [0.5, 1.0] and at.changed_by.name == "data"
    tl = Timeline(tr)
    assert tl.state(len(tl.steps) - 1).leaf_grads[w][1]["value"] == [0.0, 0.0]
    assert tr.stdout == "tensor([0.5000, 1.0000], requires_grad=True) tensor([0., 0.])\n"


def test_memory_read_another_way_or_moved_is_marked_not_guessed():
    """From a review: views that read the memory as another dtype, and tensors
    whose memory moved (x.data = t, t_()), must never
    be given elements worked out from another tensor's (NOTE [aliases])."""
    cases = {
        # name: (snippet, what PyTorch holds at the end, whether a mark is expected)
        "zv": ("z = torch.zeros(4, dtype=torch.complex64); zv = z[1:3]; re = z.real; "
               "re.add_(5)", None, True),
        # (a conjugated view is worked out: its elements are the memory's conjugated)
        "h": ("z = torch.tensor([[1+1j, 2j], [0j, 3j]]); h = z.H; z.add_(1)",
              [["(2-1j)", "(1-0j)"], ["(1-2j)", "(1-3j)"]], False),
        "i": ("x = torch.zeros(4); i = x.view(torch.int32); x.add_(1)", None, True),
        "v": ("x = torch.zeros(4); v = x[0:2]; x.data = torch.ones(4); x.add_(5)",
              [0.0, 0.0], False),
        "e": ("b = torch.zeros(2, 3); e = b.detach(); e.t_(); b[0, 1] = 7", None, True),
        # x.data = y: x now is y's memory, placed as y is (known once a view of y said it)
        "w": ("x = torch.zeros(4); y = torch.ones(4); w = y[0:2]; x.data = y; x.add_(2)",
              [3.0, 3.0], False),
        "u": ("x = torch.zeros(4); y = torch.ones(4); x.data = y; u = y[0:2]; x.add_(2)",
              None, True),
    }
    for name, (code, want, marked) in cases.items():
        tr = capture("import torch\n" + code + "\n")
        at = value_at(tr, tr.tensor_by_name(name).id)
        if marked:
            assert at.stale is not None, name
        else:
            assert at.stale is None and at.value == want, (name, at)


def test_a_write_that_did_not_touch_a_view_is_not_named_on_it():
    """From a review: c = y.view(4) covers a's memory too, but c[0] = 5 changed
    none of a's elements; a still shows (and names) its own add_."""
    tr = capture("""
        import torch
        y = torch.zeros(4)
        a = y[2:]
        a.add_(1)
        c = y.view(4)
        c[0] = 5
        """)
    a = tr.tensor_by_name("a").id
    add = next(o for o in tr.ops if o.name == "add_")
    at = value_at(tr, a)
    assert at.value == [1.0, 1.0] and at.changed_by is add and at.own is False
    assert at.through is None and at.stale is None


def test_lazily_conjugated_and_negated_views_follow_their_memory():
    """``c = r.conj()`` shares r's memory and reads it conjugated; it was recorded
    as a plain call with no alias, and after ``r.mul_(10)`` it still showed 1-2j
    where the snippet printed 10-20j (docs review). A view of another dtype
    (``view_as_complex``) cannot be worked out element by element: marked stale."""
    tr = capture("""
        import torch
        r = torch.tensor([1+2j, 3-1j])
        c = r.conj()
        n = torch._neg_view(r)
        f = torch.tensor([[1.0, 2.0]])
        v = torch.view_as_complex(f)
        r.mul_(10)
        c[0] = 5j
        f.add_(1)
        """)
    kinds = {o.name: o.kind for o in tr.ops}
    assert kinds["conj"] == kinds["_neg_view"] == kinds["view_as_complex"] == "view"
    ids = {k: tr.tensor_by_name(k).id for k in "rcnfv"}
    mul = next(o for o in tr.ops if o.name == "mul_")
    c = value_at(tr, ids["c"], None, mul.seq)
    assert c.value == ["(10-20j)", "(30+10j)"] and c.changed_by is mul
    assert value_at(tr, ids["n"], None, mul.seq).value == ["(-10-20j)", "(-30+10j)"]
    # written through the conjugated view: r and the negated view read it back
    assert value_at(tr, ids["r"]).value == ["-5j", "(30-10j)"]
    assert value_at(tr, ids["n"]).value == ["(-0+5j)", "(-30+10j)"]
    v = value_at(tr, ids["v"])
    assert v.value == ["(1+2j)"] and v.stale is not None and v.stale.name == "add_"
