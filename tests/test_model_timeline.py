"""Timeline and cursor: steps in order, state at a cursor forward and back,
gradients on edges, leaf .grad before/after, accumulation, retain_grad, output."""
from graphscope.model.graph import GraphBuilder, build_graph
from graphscope.model.timeline import Timeline
from graphscope.model.trace import Trace
from test_model_traces import PRACTICE_3, run_messages, trace_of

SIMPLE = """
import torch
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor(2.0, requires_grad=True)
y = x * w
print("forward done")
loss = (y * w).sum()
loss.backward()
print(x.grad, w.grad)
"""


def _val(s):
    return None if s is None else s["value"]


def test_steps_are_ops_then_a_backward_call_then_backward_nodes():
    tr = trace_of(SIMPLE)
    tl = Timeline(tr)
    kinds = [s.kind for s in tl.steps]
    first_bw = kinds.index("backward_call")
    assert set(kinds[:first_bw]) == {"op"}
    assert kinds[first_bw + 1] == "backward"
    assert [s.index for s in tl.steps] == list(range(len(tl)))
    seqs = [s.seq for s in tl.steps]
    assert seqs == sorted(seqs)
    assert tl.cursor == len(tl) - 1                  # opens at the end of the run
    bw = [s for s in tl.steps if s.kind == "backward"]
    names = [tr.backward[i].grad_fn for i in range(len(bw))]
    assert names[0] == "SumBackward0" and names.count("AccumulateGrad") == 2


def test_state_at_a_backward_step_shows_gradients_on_edges():
    tr = trace_of(SIMPLE)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    x, w, y = (tr.tensor_by_name(n).id for n in ("x", "w", "y"))
    # the MulBackward0 of y = x * w
    mul_op = next(o for o in tr.ops if o.name == "mul" and o.outputs == [y])
    i = next(s.index for s in tl.steps if s.kind == "backward" and s.op == mul_op.id)
    st = tl.state(i)
    assert st.current.kind == "backward" and st.line == 4
    assert st.highlight == {f"o{mul_op.id}"}
    # arriving: d loss / d y = w = 2 ; sent on: to x (w * 2 = 4) and to w (sum(x * 2) = 12)
    assert st.edge_grads[(f"o{mul_op.id}", f"t{y}")] == "[2., 2., 2.]"
    assert st.edge_grads[(f"t{x}", f"o{mul_op.id}")] == "[4., 4., 4.]"
    assert st.edge_grads[(f"t{w}", f"o{mul_op.id}")] == "12.0"
    assert _val(st.grad_of[y]) == [2.0, 2.0, 2.0]
    assert x not in st.leaf_grads                   # not accumulated yet


def test_leaf_grad_before_after_and_stepping_back_really_goes_back():
    tr = trace_of(SIMPLE)
    tl = Timeline(tr)
    x = tr.tensor_by_name("x").id
    acc = next(s.index for s in tl.steps if s.kind == "backward"
               and tr.backward[[b.id for b in tr.backward].index(s.backward)].tensor == x
               and tr.backward[[b.id for b in tr.backward].index(s.backward)].grad_fn.endswith("AccumulateGrad"))
    st = tl.state(acc)
    before, after = st.leaf_grads[x]
    assert before is None and _val(after) == [4.0, 4.0, 4.0]
    assert st.accumulated == x and st.highlight == {f"t{x}"}
    assert _val(st.grad_of[x]) == [4.0, 4.0, 4.0]
    # step back: the accumulation is undone
    tl.set_cursor(acc)
    tl.step_back()
    back = tl.state()
    assert x not in back.leaf_grads and x not in back.grad_of
    tl.first()
    assert tl.state().grad_of == {} and tl.state().edge_grads == {}


def test_state_is_a_pure_function_of_the_cursor():
    tr = trace_of(SIMPLE)
    tl = Timeline(tr)
    n = len(tl)

    def snap(st):
        return (st.cursor, st.line, sorted(st.highlight), sorted(st.edge_grads.items()),
                repr(sorted(st.leaf_grads.items())), repr(sorted(st.grad_of.items())),
                st.stdout_upto)

    fresh = [snap(Timeline(tr).state(i)) for i in range(n)]
    forward = []
    for i in range(n):
        tl.set_cursor(i)
        forward.append(snap(tl.state()))
    backward = []
    for i in reversed(range(n)):
        tl.set_cursor(i)
        backward.append(snap(tl.state()))
    jumps = [snap(tl.state(i)) for i in (n - 1, 0, n // 2, 3, n - 2)]
    assert forward == fresh
    assert backward[::-1] == fresh
    assert jumps == [fresh[i] for i in (n - 1, 0, n // 2, 3, n - 2)]


def test_stdout_printed_so_far():
    tr = trace_of(SIMPLE)
    tl = Timeline(tr)
    out = tr.stdout
    assert out.startswith("forward done\n")
    y_step = next(s.index for s in tl.steps if s.kind == "op" and s.line == 4)
    assert tl.state(0).stdout_upto == 0
    # the print on line 5 comes after y's step (line 4): it shows from the next one
    assert tl.state(y_step).stdout_upto == 0
    assert out[:tl.state(y_step + 1).stdout_upto] == "forward done\n"
    assert tl.state(len(tl) - 1).stdout_upto == len(out)


def test_two_backward_calls_accumulate():
    tr = trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        print(x.grad)
    """)
    tl = Timeline(tr)
    x = tr.tensor_by_name("x").id
    markers = [s.index for s in tl.steps if s.kind == "backward_call"]
    assert len(markers) == 2
    accs = [s.index for s in tl.steps if s.kind == "backward"
            and next(b for b in tr.backward if b.id == s.backward).grad_fn.endswith("AccumulateGrad")]
    assert len(accs) == 2
    first, second = tl.state(accs[0]), tl.state(accs[1])
    assert first.leaf_grads[x][0] is None and _val(first.leaf_grads[x][1]) == [2.0, 4.0]
    assert _val(second.leaf_grads[x][0]) == [2.0, 4.0] and _val(second.leaf_grads[x][1]) == [4.0, 8.0]
    assert second.backward_call == tl.steps[markers[1]].call != first.backward_call
    # between the calls the first accumulation is still there
    assert _val(tl.state(markers[1]).grad_of[x]) == [2.0, 4.0]


def test_shared_weight_receives_gradient_from_both_paths():
    tr = trace_of("""
        import torch
        w = torch.tensor(3.0, requires_grad=True)
        a = w * 2
        b = w * 5
        (a + b).backward()
    """)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    w = tr.tensor_by_name("w").id
    sent = {}
    for s in tl.steps:
        if s.kind == "backward":
            for (src, dst), text in tl.state(s.index).edge_grads.items():
                if src == f"t{w}":
                    sent[dst] = text
    assert sorted(sent.values()) == ["2.0", "5.0"]
    assert _val(tl.state(len(tl) - 1).leaf_grads[w][1]) == 7.0


def test_retain_grad_non_leaf():
    tr = trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.retain_grad()
        z = (y * y).sum()
        z.backward()
    """)
    tl = Timeline(tr)
    y = tr.tensor_by_name("y").id
    end = tl.state(len(tl) - 1)
    assert _val(end.retained_grads[y]) == [6.0, 12.0]
    assert y not in tl.state(0).retained_grads


def test_error_shows_at_the_last_step_only():
    tr = trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).backward()
    """)
    tl = Timeline(tr)
    assert tl.state().error is not None and "scalar" in tl.state().error.message
    assert tl.state(0).error is None


def test_cursor_moves_and_listeners():
    tl = Timeline(trace_of(SIMPLE))
    seen = []
    unsubscribe = tl.subscribe(seen.append)
    tl.first()
    tl.step_forward()
    tl.step_forward()
    tl.step_back()
    tl.set_cursor(10_000)
    tl.set_cursor(-5)
    tl.first()                      # no change: no call
    assert seen == [0, 1, 2, 1, len(tl) - 1, 0]
    unsubscribe()
    tl.last()
    assert len(seen) == 6 and tl.cursor == len(tl) - 1 == tl.len() - 1


def test_refresh_while_streaming_matches_the_finished_timeline():
    source, msgs, end = run_messages(SIMPLE)
    tr = Trace(source=source)
    builder = GraphBuilder()          # the window grows the graph beside the trace
    tl = Timeline(tr, builder.graph)
    assert len(tl) == 0 and tl.cursor == -1 and tl.state().current is None
    for k in range(0, len(msgs), 3):
        tr.extend(msgs[k:k + 3])
        builder.extend(msgs[k:k + 3])
        tl.refresh(follow=True)
        assert tl.cursor == len(tl) - 1
    tr.apply(end)
    tl.refresh()
    done = Timeline(tr)
    assert tl.steps == done.steps
    for i in range(len(tl)):
        a, b = tl.state(i), done.state(i)
        assert (a.edge_grads, a.leaf_grads, a.stdout_upto) == (b.edge_grads, b.leaf_grads, b.stdout_upto)


def test_problem_set_branch_question_steps_to_six():
    tr = trace_of(PRACTICE_3)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    assert tr.stdout == "6.0\n"
    x = tr.tensor_by_name("x").id
    lines = [s.line for s in tl.steps if s.kind == "op"]
    assert 5 in lines and 7 not in lines                 # the else line never ran
    end = tl.state(len(tl) - 1)
    assert _val(end.leaf_grads[x][1]) == 6.0
    assert tr.stdout[:end.stdout_upto] == "6.0\n"
    # every backward step maps to a node on the canvas
    for s in tl.steps:
        if s.kind == "backward":
            assert len(tl.state(s.index).highlight) == 1


def test_a_gradient_is_never_paired_with_an_input_of_another_shape():
    # after ``v.mul_(10)`` on a view, v's node is an AsStridedBackward0 that sends
    # a gradient of the base's shape (3) on to the base's CopySlices: it is not
    # v's (2 elements), so no edge into mul_ carries it (grad_receivers.py)
    from graphscope.model.grad_receivers import node_tensors, receivers
    tr = trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        v = y[:2]
        v.mul_(10)
        w = v * 3
        w.sum().backward()
    """)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    mul_ = next(o for o in tr.ops if o.name == "mul_")
    step = next(b for b in tr.backward if b.op == mul_.id)
    assert step.grad_fn == "AsStridedBackward0" and step.grad_inputs[0]["shape"] == [3]
    got = receivers(tr, step, mul_, node_tensors(tr))
    # to y: CopySlices is y's node since v.mul_ changed y through its view; a node
    # of mul_ itself, so no input's edge carries it (NOTE [writes through a view])
    assert [(t, label) for t, label, _ in got] == [(None, "y, through CopySlices")]
    i = next(s.index for s in tl.steps if s.kind == "backward" and s.backward == step.id)
    assert not any(dst == f"o{mul_.id}" for (_, dst) in tl.state(i).edge_grads)
    # the ordinary case is unchanged: w = v * 3 sends v a 2-element gradient
    mul = next(o for o in tr.ops if o.name == "mul" and o.inputs[0] == mul_.outputs[0])
    step = next(b for b in tr.backward if b.op == mul.id)
    got = receivers(tr, step, mul, node_tensors(tr))
    assert [(t, label, s["value"]) for t, label, s in got] == [(mul.inputs[0], None, [3.0, 3.0])]


def test_a_write_through_a_view_sends_the_base_its_gradient_on_the_base_s_edge():
    """NOTE [writes through a view]: ``v[0, 0] = 100`` with v a view of y of as
    many elements: CopySlices sends y's history the whole gradient, never through
    the view's node (a ViewBackward0 that does not run). The picture draws the y
    before the write going into the op, the gradient on that edge, "sent to y"."""
    from graphscope.model.grad_receivers import receivers
    tr = trace_of("""
        import torch
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        v = y.view(2, 2)
        v[0, 0] = 100.0
        y.sum().backward()
    """)
    assert [b.grad_fn for b in tr.backward] == [
        "SumBackward0", "CopySlices", "MulBackward0", "AccumulateGrad"]   # no ViewBackward0
    g = build_graph(tr)
    tl = Timeline(tr, g)
    setitem = next(o for o in tr.ops if o.kind == "inplace")
    y = tr.tensor_by_name("y").id
    step = next(b for b in tr.backward if b.grad_fn == "CopySlices")
    assert step.op == setitem.id
    assert [(t, label) for t, label, _ in receivers(tr, step, setitem)] == [(y, None)]
    y_before = g.in_src[(setitem.id, y)]
    assert g.nodes[y_before].tensor == y and (y_before, f"o{setitem.id}") in {
        (e.src, e.dst) for e in g.edges}
    i = next(s.index for s in tl.steps if s.kind == "backward" and s.backward == step.id)
    grads = tl.state(i).edge_grads
    assert (y_before, f"o{setitem.id}") in grads and "0., 1., 1., 1." in grads[
        (y_before, f"o{setitem.id}")]
    assert (g.in_src[(setitem.id, tr.tensor_by_name("v").id)], f"o{setitem.id}") not in grads


def test_an_in_place_op_on_a_view_draws_its_base_s_step_too():
    """``v.mul_(x)`` changes y through v: the base's CopySlices is mul_'s node
    for y, its step receives y's gradient on the y mul_ left and sends y's
    history and x theirs, on their edges (it had no op, and x's gradient was
    drawn nowhere: a review)."""
    tr = trace_of("""
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        b = torch.ones(4, requires_grad=True)
        y = b * 1
        v = y[:2]
        v.mul_(x)
        y.sum().backward()
    """)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    mul_ = next(o for o in tr.ops if o.name == "mul_")
    x, y = tr.tensor_by_name("x").id, tr.tensor_by_name("y").id
    step = next(b for b in tr.backward if b.grad_fn == "CopySlices")
    assert (step.op, step.tensor) == (mul_.id, y)
    i = next(s.index for s in tl.steps if s.kind == "backward" and s.backward == step.id)
    grads = tl.state(i).edge_grads
    o = f"o{mul_.id}"
    assert grads[(g.in_src[(mul_.id, y)], o)] == "[2., 2., 1., 1.]"     # y's history
    assert grads[(g.in_src[(mul_.id, x)], o)] == "2.0"                  # x
    assert grads[(o, g.out_node[(mul_.id, y)])] == "[1., 1., 1., 1.]"   # arriving


def test_gradients_of_a_multi_output_node_go_to_the_chunk_used():
    # one SplitBackward0 for every chunk: the Node's tensor is the first chunk,
    # so pairing must go by the op's inputs, not by the Node the gradient went to
    tr = trace_of("""
        import torch
        x = torch.arange(4.0, requires_grad=True)
        a, b = x.chunk(2)
        (b * 5).sum().backward()
    """)
    mul = next(o for o in tr.ops if o.name == "mul")
    step = next(s for s in tr.backward if s.op == mul.id)
    from graphscope.model.grad_receivers import node_tensors, receivers
    got = receivers(tr, step, mul, node_tensors(tr))
    assert [t for t, _, _ in got] == [tr.tensor_by_name("b").id]


def test_a_run_without_steps_shows_all_it_printed():
    # torch.fx raising before any recorded op: "Step 0 of 0", and the print
    # before the error must still be in the console
    tr = trace_of("""
        print("before")
        raise ValueError("boom")
    """)
    tl = Timeline(tr)
    assert len(tl) == 0
    st = tl.state()
    assert tr.stdout == "before\n" and st.stdout_upto == len(tr.stdout)


def test_gradients_pair_with_a_tensor_whose_shape_changed_in_place():
    from graphscope.model.grad_receivers import node_tensors, receivers
    tr = trace_of("""
        import torch
        x = torch.ones(4, requires_grad=True)
        y = x * 2
        w = y * 5
        y.unsqueeze_(0)
        z = y * 3
        (w.sum() + z.sum()).backward()
    """)
    mul3 = [o for o in tr.ops if o.name == "mul"][-1]
    step = next(b for b in tr.backward if b.op == mul3.id)
    got = receivers(tr, step, mul3, node_tensors(tr))
    assert [t for t, _, _ in got] == [tr.tensor_by_name("y").id]


def test_before_and_after_of_a_grad_are_told_only_at_the_step_that_changed_it():
    """A review saw ".grad: 4.0 -> 6.0" at the ``w.grad.zero_()`` line, a change
    made two steps before: a leaf's .grad counts as changed at an accumulation or
    a change by the program, and at no other step."""
    tr = trace_of("""
        import torch
        w = torch.tensor(1.0, requires_grad=True)
        (2 * w).backward()
        (2 * w).backward()
        w.grad.zero_()
    """)
    tl = Timeline(tr, build_graph(tr))
    w = tr.tensor_by_name("w").id
    changed = [(s.kind, (tr.op_by_id(s.op).name if s.kind == "op" else None))
               for s in tl.steps if w in tl.state(s.index).grad_changed]
    assert changed == [("backward", None), ("backward", None), ("op", "zero_")]
    read = next(s.index for s in tl.steps if s.kind == "op" and tr.op_by_id(s.op).kind == "grad_read")
    st = tl.state(read)
    assert w not in st.grad_changed and _val(st.leaf_grads[w][1]) == 4.0
    assert _val(tl.state(len(tl) - 1).leaf_grads[w][1]) == 0.0


def test_a_grad_put_back_is_not_a_change():
    """``w.grad += 1`` under no_grad: the add_ changes it, then Python stores the
    same tensor back into w.grad; that store showed "before [3, 5], after [3, 5]"."""
    tr = trace_of("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w ** 2).sum().backward()
        with torch.no_grad():
            w.grad += 1
    """)
    tl = Timeline(tr, build_graph(tr))
    w = tr.tensor_by_name("w").id
    changed = [tr.op_by_id(s.op).name if s.kind == "op" else s.kind
               for s in tl.steps if w in tl.state(s.index).grad_changed]
    assert changed == ["backward", "add_"]
    assert _val(tl.state(len(tl) - 1).leaf_grads[w][1]) == [3.0, 5.0]


RNN_THEN_RETAINED = """
    import torch
    w = torch.tensor(0.5, requires_grad=True)
    def run(seq):
        h = torch.tensor(0.0)
        for x in seq:
            h = w * h + x
        return h
    for seq in ([1.0, 1.0], [1.0, 1.0, 1.0]):
        run(seq).backward()
    y = w * 3
    y.backward(retain_graph=True)
    y.backward()
"""


def _pass_bands(tl):
    """(first step, last step) of each pass, as the window's timeline bar has them."""
    from graphscope.model.passes import passes_of
    return [span for span in tl.pass_steps(passes_of(tl.trace)) if span is not None]


def test_a_cursor_in_interleaved_passes_is_in_the_one_its_op_belongs_to():
    """Two computations written interleaved, without backward, are two passes whose
    steps overlap: at ``a2 * 5`` the cursor is in the first (code review: the one
    begun last was taken, and a2, the op's own input, was faded)."""
    from graphscope.model.timeline import Timeline
    tl = Timeline(trace_of("""
        import torch
        x1 = torch.ones(2, requires_grad=True)
        a = x1 * 2
        a2 = a + 1
        x2 = torch.ones(2, requires_grad=True)
        b = x2 * 3
        b2 = b + 1
        b3 = b2.sum()
        c = (a2 * 5).sum()
    """))
    bands = _pass_bands(tl)
    tl.set_passes(bands)
    (a0, a1), (b0, b1) = bands
    assert a0 < b0 <= b1 < a1
    at = next(s.index for s in tl.steps if s.kind == "op" and s.index > b1)
    f = tl.state(at).focus
    assert f.index == 0
    g = tl.graph
    a2 = next(n for n in g.nodes.values() if n.label == "a2")
    assert not f.faded(a2)
    assert tl.state(b0).focus.index == 1


def test_the_pass_the_cursor_is_in_keeps_its_graph_and_earlier_passes_fade():
    """NOTE [pass focus]: in the second sequence's pass the first one's nodes fade
    and w, made before both, stays; a second backward through a retained graph
    keeps that graph lit; a run of one pass has no focus."""
    from graphscope.model.timeline import Timeline
    tr = trace_of(RNN_THEN_RETAINED)
    tl = Timeline(tr)
    g = tl.graph
    bands = _pass_bands(tl)
    assert len(bands) == 4
    assert tl.state(bands[1][1]).focus is None      # no passes told: nothing fades
    tl.set_passes(bands)
    w = next(n for n in g.nodes.values() if n.label == "w" and n.ghost_of is None)
    first = [n for n in g.nodes.values() if bands[0][0] <= n.step <= bands[0][1] and n is not w]
    second = [n for n in g.nodes.values() if bands[1][0] <= n.step <= bands[1][1]]
    assert first and second
    f1 = tl.state(bands[0][1]).focus
    assert f1.index == 0 and not any(f1.faded(n) for n in g.nodes.values())
    f2 = tl.state(bands[1][0]).focus
    assert f2 is tl.state(bands[1][1]).focus          # one object per pass (views key on it)
    assert all(f2.faded(n) for n in first)
    assert not f2.faded(w) and not any(f2.faded(n) for n in second)
    # the last pass is a second backward through y's retained graph: no op of its
    # own, and the graph it walks (y, its mul, w) is not faded
    f4 = tl.state(bands[3][1]).focus
    y = next(n for n in g.nodes.values() if n.label == "y")
    mul = next(n for n in g.nodes.values() if n.kind == "op" and g.preds.get(y.id) == [n.id])
    assert f4.index == 3 and not f4.faded(y) and not f4.faded(mul) and not f4.faded(w)
    assert all(f4.faded(n) for n in first + second if n is not w)
    tl.set_passes(bands[:1])
    assert tl.state(bands[1][1]).focus is None


def test_a_read_after_the_update_does_not_keep_the_iteration_before_lit():
    """``print(it, loss.item())`` after the update falls in the next iteration's
    pass; its read of the old loss kept that whole iteration bright (visual
    review: in an ordinary training loop nothing faded)."""
    from graphscope.model.timeline import Timeline
    tl = Timeline(trace_of("""
        import torch
        w = torch.tensor([1.0, -1.0], requires_grad=True)
        for it in range(3):
            loss = (w * w).sum()
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
                w.grad.zero_()
            print(it, loss.item())
    """))
    bands = _pass_bands(tl)
    tl.set_passes(bands)
    g = tl.graph
    first_loss = next(n for n in g.nodes.values() if n.label == "loss")
    assert first_loss.step <= bands[0][1]
    focus = tl.state(bands[1][1]).focus          # the second iteration's backward
    assert focus.index == 1 and focus.faded(first_loss)
    w = next(n for n in g.nodes.values() if n.label == "w" and n.ghost_of is None)
    assert not focus.faded(w)


def _accumulate_state(tr):
    """The timeline's state at the first AccumulateGrad step of ``tr``."""
    tl = Timeline(tr, build_graph(tr))
    acc = next(s.index for s in tl.steps if s.kind == "backward"
               and tl._bw_by_id[s.backward].grad_fn.endswith("AccumulateGrad"))
    return tl.state(acc)


def test_a_leafs_accumulate_step_shows_what_arrives_on_each_of_its_edges():
    """A weight used twice showed ".grad: None -> 8.0" at its AccumulateGrad step and
    nothing of the 3.0 and 5.0 the engine summed into it (first-time user review)."""
    tr = trace_of("""
        import torch
        w = torch.tensor(2.0, requires_grad=True)
        y = w * 3.0 + w * 5.0
        y.backward()
    """)
    w = tr.tensor_by_name("w").id
    st = _accumulate_state(tr)
    arriving = sorted(text for (src, _dst), text in st.edge_grads.items() if src == f"t{w}")
    assert arriving == ["3.0", "5.0"]
    assert _val(st.leaf_grads[w][1]) == 8.0


def test_a_leaf_an_op_reads_twice_gets_each_gradient_once():
    """Visual review: at x's AccumulateGrad step of ``y = x * x`` the edge said
    "6.0 + 6.0 + 6.0 + 6.0" beside .grad 12.0: the Node lists x twice among its
    next Nodes, and each listing added both gradients again."""
    tr = trace_of("""
        import torch
        x = torch.tensor(3.0, requires_grad=True)
        y = x * x
        y.backward()
    """)
    x = tr.tensor_by_name("x").id
    st = _accumulate_state(tr)
    assert [t for (src, _), t in st.edge_grads.items() if src == f"t{x}"] == ["3.0 + 3.0"]
    assert _val(st.leaf_grads[x][1]) == 6.0


def test_each_step_s_phase_forward_backward_or_after_backward():
    """The phase is the model's (it was decided in the window): reading results or
    updating after a pass's backward is "after backward" (first-time user review);
    an op that raised before recording is the next forward's first (visual
    review), but a failed update is still the update (code review); in a loop
    the next iteration's input is forward."""
    def phases_by_line(source):
        tl = Timeline(trace_of(source))
        tl.set_passes(_pass_bands(tl))
        by_line = {}
        for i, s in enumerate(tl.steps):
            line = tl.trace.op_by_id(s.op).line if s.kind == "op" else s.kind
            by_line.setdefault(line, set()).add(tl.phase(i))
        assert tl.phase(-1) == tl.phase(len(tl)) == ""
        return by_line

    got = phases_by_line("""
        import torch
        x = torch.ones(2, requires_grad=True)
        loss = (x * 3).sum()
        loss.backward()
        print(loss.item(), x.grad)
        y = x * 2
    """)
    assert got[3] == {"forward"} and got["backward"] == {"backward"}
    assert got[5] == {"after backward"}
    assert got[6] == {"forward"}           # y = x * 2 records a graph: a new forward

    got = phases_by_line("""
        import torch
        x = torch.ones(2, requires_grad=True)
        with torch.inference_mode():
            b = x * 2
        (x * 3).sum().backward()
        print(x.grad)
        (b * x).sum()
    """)
    assert got[7] == {"forward"}           # b * x raised before it recorded

    got = phases_by_line("""
        import torch
        w = torch.ones(2, requires_grad=True)
        (w * 3).sum().backward()
        print(w.grad)
        w -= 0.1 * w.grad
    """)
    assert got[5] == {"after backward"}    # the update that raised

    got = phases_by_line("""
        import torch
        w = torch.ones(2, requires_grad=True)
        for i in range(2):
            x = torch.randn(2)
            loss = (w * x).sum()
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
    """)
    assert got[4] == {"forward"} and got[8] == {"after backward"}


def test_a_gradient_leaving_autograd_grad_s_recorded_graph_is_on_its_input_s_edge():
    """second-derivative's second pass runs Nodes inside the first autograd.grad's
    recorded graph; the last sends 12.0 to x, and the graph showed no gradient at
    all (visual review). It is on the edge x -> autograd.grad, and the inspector's
    words name x. x's AccumulateGrad never runs (autograd.grad takes the gradient
    before it): its Node is named by the pass-1 step that sent it x's gradient."""
    from graphscope.model.grad_receivers import inner_receivers
    tl = Timeline(trace_of("""
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        y = x ** 3
        (dy,) = torch.autograd.grad(y, x, create_graph=True)
        (d2y,) = torch.autograd.grad(dy, x)
    """))
    tr = tl.trace
    grad_op = next(o for o in tr.ops if o.name == "autograd.grad")
    inner = [i for i, s in enumerate(tl.steps) if s.kind == "backward"
             and tr.backward[s.backward].within == grad_op.id]
    assert [tr.backward[tl.steps[i].backward].grad_fn for i in inner] == \
        ["MulBackward1", "PowBackward0"]
    x = tr.ops[0].outputs[0]
    src = tl.graph.in_src[(grad_op.id, x)]
    assert tl.state(inner[0]).edge_grads == {}         # inside: no edge of the graph
    assert tl.state(inner[1]).edge_grads == {(src, f"o{grad_op.id}"): "12.0"}
    last = tr.backward[tl.steps[inner[1]].backward]
    assert [(t, g["value"]) for t, _, g in inner_receivers(tr, last)] == [(x, 12.0)]
