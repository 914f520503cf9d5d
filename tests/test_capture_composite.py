"""Composite calls: the autograd nodes one recorded call made (NOTE [composite
ops] in capture/recorder.py), against torch's own graph."""
from __future__ import annotations

import textwrap

import pytest

from graphscope.model.graph import build_graph
from graphscope.model.timeline import Timeline, node_of_backward
from capture_helpers import capture

SNIPPET = """
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(2, 4)
    y = torch.tensor([0, 2])
    z = lin(x)
    loss = F.cross_entropy(z, y)
    a = x * 2
    loss.backward()
    """


def _op(tr, name):
    return next(o for o in tr.ops if o.name == name)


def test_sub_graphs_of_cross_entropy_and_linear_match_torch():
    tr = capture(SNIPPET)
    ce, lin, mul = _op(tr, "cross_entropy"), _op(tr, "linear"), _op(tr, "mul")
    # F.cross_entropy = nll_loss(log_softmax(z)): two nodes, the second fed by z's
    assert ce.subgraph == [["NllLossBackward0", [1]], ["LogSoftmaxBackward0", [-1]]]
    # addmm(bias, x, weight.t()): the bias's AccumulateGrad (outside), then TBackward0
    assert lin.subgraph == [["AddmmBackward0", [-1, 1]], ["TBackward0", [-1]]]
    assert mul.subgraph is None                       # one node, or none: nothing to expand
    inside = {s.grad_fn: s.within for s in tr.backward if s.within is not None}
    assert inside == {"LogSoftmaxBackward0": ce.id, "TBackward0": lin.id}
    # every Node the engine ran belongs to an op, is inside one, or is a leaf's
    assert all(s.op is not None or s.within is not None or s.grad_fn == "AccumulateGrad"
               for s in tr.backward)


def test_every_node_of_multi_head_attention_is_attributed():
    tr = capture("""
        import torch
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        q = torch.randn(1, 3, 8)
        out, w = mha(q, q, q)
        out.sum().backward()
        """)
    attn = _op(tr, "multi_head_attention_forward")
    assert attn.subgraph and len(attn.subgraph) > 5
    names = {row[0] for row in attn.subgraph}
    assert any("Softmax" in n for n in names) and any("Bmm" in n or "Baddbmm" in n for n in names)
    for row in attn.subgraph:                          # links stay inside the list
        assert all(-1 <= i < len(attn.subgraph) for i in row[1])
    assert all(s.op is not None or s.within is not None or s.grad_fn == "AccumulateGrad"
               for s in tr.backward)


def test_a_step_inside_a_composite_op_is_shown_on_that_op():
    tr = capture(SNIPPET)
    g = build_graph(tr)
    tl = Timeline(tr, g)
    ce = _op(tr, "cross_entropy")
    step = next(s for s in tl.steps if s.kind == "backward"
                and tr.backward[s.backward].grad_fn == "LogSoftmaxBackward0")
    assert step.line == ce.line
    assert node_of_backward(g, tr.backward[step.backward]) == f"o{ce.id}"
    assert tl.state(step.index).highlight == {f"o{ce.id}"}


def test_an_assignment_into_a_tracked_tensor_owns_its_new_node():
    """x[0] = 5 returns nothing; autograd gives x a CopySlices node, which is the
    setitem's: named on the op, and its backward step belongs to it."""
    tr = capture("""
        import torch
        w = torch.ones(3, requires_grad=True)
        h = w * 2
        h[0] = 5.0
        h.sum().backward()
        with torch.no_grad():
            h[1] = 7.0
        """)
    first, second = [o for o in tr.ops if o.name == "setitem"]
    assert first.grad_fn == "CopySlices" and second.grad_fn is None   # no_grad: no node
    step = next(s for s in tr.backward if s.grad_fn == "CopySlices")
    assert step.op == first.id


def test_an_assignment_through_a_view_names_the_base_s_node():
    tr = capture("""
        import torch
        x = torch.ones(2, 3, requires_grad=True)
        h = x * 2
        h[0][1] = 0.0
        h.sum().backward()
        """)
    op = next(o for o in tr.ops if o.name == "setitem")
    assert op.grad_fn == "CopySlices"
    assert next(s for s in tr.backward if s.grad_fn == "CopySlices").op == op.id


def test_a_cpp_composite_called_straight_from_the_snippet_is_walked_too():
    """F.linear and a batched @ are C++ functions the mode sees as one call, yet
    each makes two or more nodes: the inner ones are the op's, not nobody's."""
    tr = capture("""
        import torch
        import torch.nn.functional as F
        torch.manual_seed(0)
        x = torch.randn(3, 4, requires_grad=True)
        w = torch.randn(5, 4, requires_grad=True)
        b = torch.randn(5, requires_grad=True)
        y = F.linear(x, w, b)
        m = y.unsqueeze(0) @ torch.randn(5, 2)
        z = y * 2
        (m.sum() + z.sum()).backward()
        """)
    lin, mm, mul = _op(tr, "linear"), _op(tr, "matmul"), _op(tr, "mul")
    # torch's own graph: addmm(b, x, w.t()), and a 3-D @ as view -> mm -> view
    assert lin.grad_fn == "AddmmBackward0"
    assert lin.subgraph == [["AddmmBackward0", [-1, -1, 1]], ["TBackward0", [-1]]]
    assert mm.grad_fn == "UnsafeViewBackward0"
    assert [row[0] for row in mm.subgraph] == ["UnsafeViewBackward0", "MmBackward0",
                                               "ViewBackward0"]
    assert mul.subgraph is None          # its next node is y's own: nothing inside
    inside = sorted((s.grad_fn, s.within) for s in tr.backward if s.within is not None)
    assert inside == [("MmBackward0", mm.id), ("TBackward0", lin.id),
                      ("ViewBackward0", mm.id)]
    assert all(s.op is not None or s.within is not None or s.grad_fn == "AccumulateGrad"
               for s in tr.backward)


def test_an_input_made_where_the_recorder_cannot_see_stays_outside():
    """A tensor made by an op on another thread has an untagged node; an op the
    snippet then calls on it must not claim that node as its own."""
    tr = capture("""
        import threading
        import torch
        import torch.nn.functional as F
        x = torch.randn(3, 4, requires_grad=True)
        w = torch.randn(5, 4, requires_grad=True)
        box = {}
        t = threading.Thread(target=lambda: box.update(h=x.exp()))
        t.start(); t.join()
        y = F.linear(box["h"], w)
        y.sum().backward()
        """)
    lin = _op(tr, "linear")
    assert lin.grad_fn == "MmBackward0"
    assert lin.subgraph == [["MmBackward0", [-1, 1]], ["TBackward0", [-1]]]
    exp = next(s for s in tr.backward if s.grad_fn == "ExpBackward0")
    assert exp.op is None and exp.within is None    # the thread's op: nobody's here


def test_an_in_place_op_never_claims_the_node_its_input_had():
    """From a review: after h.mul_(2), h.grad_fn is the op's new node; the node h
    had before (made on another thread, by a custom Function) is not the op's."""
    tr = capture("""
        import threading
        import torch
        class Sq(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        x = torch.randn(3, requires_grad=True)
        box = {}
        t = threading.Thread(target=lambda: box.update(h=x.exp().sin()))
        t.start(); t.join()
        h = box["h"]
        h.mul_(2)
        y = Sq.apply(x)
        y.add_(1)
        (h.sum() + y.sum()).backward()
        """)
    assert _op(tr, "mul_").subgraph is None and _op(tr, "add_").subgraph is None
    assert all(s.within is None for s in tr.backward)


def test_a_stack_of_many_tensors_is_checked_once_per_input():
    """torch.stack over thousands of tensors: their nodes are the inputs' own."""
    tr = capture("""
        import torch
        x = torch.randn(3000, requires_grad=True)
        parts = [p * 2 for p in x.unbind()]
        s = torch.stack(parts)
        """)
    assert _op(tr, "stack").subgraph is None


CUSTOM = """
    import sys
    import torch
    class RoundST(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()
        @staticmethod
        def backward(ctx, grad_out):
            return grad_out
    class Twice(torch.autograd.Function):      # a Function that uses another
        @staticmethod
        def forward(ctx, x):
            return RoundST.apply(x) * 2
        @staticmethod
        def backward(ctx, g):
            return g * 2
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.exp()
            raise ValueError("no")
    x = torch.tensor([0.4, 1.6], requires_grad=True)
    y = RoundST.apply(x)
    w = Twice.apply(x)
    try:
        Boom.apply(x)
    except ValueError:
        pass
    (y * 3 + w).sum().backward()
    print(x.grad, sys.getprofile())
    """


def test_a_custom_function_is_one_op_with_its_own_node():
    """NOTE [custom Functions]: RoundST.apply(x) is an op RoundST whose output's
    node is RoundSTBackward, tracked, not the round its forward ran with
    autograd off; its backward step is its own."""
    from capture_helpers import plain_stdout
    tr = capture(CUSTOM)
    assert tr.status == "ok", tr.error
    assert tr.stdout == plain_stdout(CUSTOM) == "tensor([5., 5.]) None\n"
    names = [o.name for o in tr.ops]
    assert "round" not in names and "exp" not in names       # inside forwards: not ops
    rs, tw = _op(tr, "RoundST"), _op(tr, "Twice")
    x = tr.tensor_by_name("x").id
    assert rs.inputs == [x] and rs.grad_fn == "RoundSTBackward" and rs.grad_enabled
    assert rs.line == 24 and tw.line == 25 and tw.grad_fn == "TwiceBackward"
    assert tr.tensors[rs.outputs[0]].name == "y" and tr.tensors[rs.outputs[0]].requires_grad
    steps = {s.grad_fn: s for s in tr.backward}
    assert steps["RoundSTBackward"].op == rs.id and steps["TwiceBackward"].op == tw.id
    assert "Boom" not in names                                 # it raised: no op


def test_a_snippet_that_profiles_itself_keeps_its_profiler():
    tr = capture("""
        import sys
        import torch
        calls = []
        def prof(frame, event, arg):
            if event == "call":
                calls.append(frame.f_code.co_name)
        class Id(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()
            @staticmethod
            def backward(ctx, g):
                return g
        sys.setprofile(prof)
        y = Id.apply(torch.ones(2, requires_grad=True))
        sys.setprofile(None)
        print("forward" in calls)
        """)
    assert tr.status == "ok" and tr.stdout == "True\n"
    assert "clone" in [o.name for o in tr.ops]      # recorded as before, not as Id


def test_custom_functions_found_through_helpers_and_modules(tmp_path):
    """From a review: the forward calls a helper, runs a list comprehension,
    lives in an imported module, or returns its input untouched; a forward
    changes a counter of the snippet's in place; a mark_dirty Function."""
    (tmp_path / "fnlib.py").write_text(textwrap.dedent("""
        import torch
        class RoundST(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.round()
            @staticmethod
            def backward(ctx, g):
                return g
        """))
    src = f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import torch
        from fnlib import RoundST
        calls = torch.zeros(1)
        def helper(x):
            return torch.stack([(x[i] > 0).float() for i in range(len(x))])
        class Gate(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                calls.add_(1)
                return helper(x)
            @staticmethod
            def backward(ctx, g):
                return g
        class Ident(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x
            @staticmethod
            def backward(ctx, g):
                return g * 10
        class AddOne(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x
            @staticmethod
            def backward(ctx, g):
                return g
        x = torch.tensor([-0.4, 1.6], requires_grad=True)
        a = Gate.apply(x)
        b = RoundST.apply(x)
        c = Ident.apply(x)
        h = x * 1
        AddOne.apply(h)
        (a + b + c + h).sum().backward()
        print(calls, x.grad)
        """
    tr = capture(src)
    assert tr.status == "ok", tr.error
    assert tr.stdout == "tensor([1.]) tensor([13., 13.])\n"
    names = [o.name for o in tr.ops]
    for inside in ("stack", "gt", "float", "getitem", "round", "view_as"):
        assert inside not in names, inside
    for fn in ("Gate", "RoundST", "Ident", "AddOne"):
        op = _op(tr, fn)
        assert op.grad_fn == f"{fn}Backward" and op.grad_enabled, fn
        assert next(s for s in tr.backward if s.grad_fn == f"{fn}Backward").op == op.id
    counter = next(o for o in tr.ops if o.name == "add_")     # the snippet's counter
    assert counter.inputs == [tr.tensor_by_name("calls").id] and not counter.grad_enabled
    dirty = _op(tr, "AddOne")
    h = tr.tensor_by_name("h").id
    assert dirty.kind == "inplace" and dirty.inputs == dirty.outputs == [h]
    assert dirty.versions[str(h)][1] > dirty.versions[str(h)][0]
    assert dirty.after[str(h)][0] == [pytest.approx(0.6), pytest.approx(2.6)]


def test_a_profiler_set_inside_a_forward_does_not_stop_the_recording():
    tr = capture("""
        import cProfile
        import torch
        class Sq(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                pr = cProfile.Profile()
                pr.enable()
                y = x * x
                pr.disable()
                return y
            @staticmethod
            def backward(ctx, g):
                return g
        x = torch.ones(2, requires_grad=True)
        y = Sq.apply(x)
        (y * 3).sum().backward()
        print(x.grad)
        """)
    assert tr.status == "ok" and tr.stdout == "tensor([3., 3.])\n"
    assert {"mul", "sum"} <= {o.name for o in tr.ops}      # recorded after the forward


def test_a_custom_function_that_returns_its_input_shares_its_memory():
    """From a review: Ident.apply(y) returns a view of y; y.add_(100) changes
    it, as print shows (and torch's error at backward says)."""
    from graphscope.model.values import value_at
    tr = capture("""
        import torch
        class Ident(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x
            @staticmethod
            def backward(ctx, g):
                return g
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        d = Ident.apply(y)
        y.add_(100)
        print(d._base is y)
        """)
    assert tr.stdout == "True\n"
    d, y = tr.tensor_by_name("d").id, tr.tensor_by_name("y").id
    assert set(tr.aliases_of(d)) == {d, y}
    at = value_at(tr, d)
    assert at.value == [101.0, 102.0, 103.0] and at.through == y and at.stale is None


def test_a_view_s_regenerated_node_belongs_to_the_view():
    """From a review: after y.mul_(3), the views v and a get new nodes
    (AsStridedBackward0) when next used; their backward steps belonged to no op."""
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 2
        v = y.view(2, 2)
        a = y[1:3]
        c = y.detach()
        y.mul_(3)
        a.add_(10)
        c[0] = -1.0
        z = (v * 1).sum() + a.sum()
        z.backward()
        print(x.grad)
        """)
    assert tr.stdout == "tensor([ 6., 12., 12.,  6.])\n"
    steps = [s for s in tr.backward if s.grad_fn == "AsStridedBackward0"]
    assert len(steps) == 2
    assert {(s.op, s.tensor) for s in steps} == {
        (_op(tr, "view").id, tr.tensor_by_name("v").id),
        (_op(tr, "add_").id, tr.tensor_by_name("a").id)}
    assert all(s.op is not None or s.within is not None or s.grad_fn == "AccumulateGrad"
               for s in tr.backward)


def test_an_op_that_made_no_node_never_owns_one():
    """From a review: v.float() on a float view hands v back, and an in-place op
    under no_grad builds no node; neither may take over the node's steps."""
    src = """
        import torch
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 2
        v = y[1:3]
        k = v.float()
        with torch.no_grad():
            v.mul_(2)
            y.mul_(3)
        y.add_(1)
        (v * 1).sum().backward()
        y2 = x * 3
        w = y2[0:1]
        y2.mul_(2)
        w.backward(torch.ones(1))
        """
    tr = capture(src)
    assert tr.status == "ok", tr.error
    names = {o.id: o.name for o in tr.ops}
    owners = [(s.grad_fn, names.get(s.op)) for s in tr.backward]
    assert ("MulBackward0", "mul") in owners                 # y = x * 2 keeps its node
    strided = [n for g, n in owners if g == "AsStridedBackward0"]
    assert strided == ["getitem", "getitem"]                  # v's, then w's (a root)
    assert "float" not in {n for _, n in owners}
    assert all(s.op is not None or s.within is not None or s.grad_fn == "AccumulateGrad"
               for s in tr.backward)


def test_a_custom_forward_that_raises_marks_its_apply_as_the_failed_op():
    # the calls inside a forward are not recorded (NOTE [custom Functions]), so the
    # apply that raised is: the error has an op and a tensor to mark
    tr = capture("""
        import torch
        class Bad(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view(5)
            @staticmethod
            def backward(ctx, g):
                return g
        class Fine(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                raise ValueError("caught")
            @staticmethod
            def backward(ctx, g):
                return g
        x = torch.ones(4, requires_grad=True)
        y = x * 2
        try:
            Fine.apply(y)
        except ValueError:
            pass
        z = Bad.apply(y)
    """)
    assert tr.error.type == "RuntimeError" and tr.error.line == 6
    failed = [o for o in tr.ops if o.failed]
    assert [(o.name, o.failed, o.line) for o in failed] == [("Bad", "RuntimeError", 23)]
    assert tr.error.op == failed[0].id and tr.error.tensor == tr.tensor_by_name("y").id
    assert failed[0].inputs == [tr.tensor_by_name("y").id]


def test_a_custom_forward_that_raises_before_any_torch_call_is_the_failed_op():
    tr = capture("""
        import torch
        class Checked(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                if x.dim() != 2:
                    raise ValueError("expected a matrix")
                return x * 2
            @staticmethod
            def backward(ctx, g):
                return g * 2
        x = torch.ones(3, requires_grad=True)
        Checked.apply(x)
    """)
    assert tr.error.type == "ValueError"
    (failed,) = [o for o in tr.ops if o.failed]
    assert (failed.name, failed.failed) == ("Checked", "ValueError")
    assert tr.error.op == failed.id and failed.inputs == [tr.tensor_by_name("x").id]
