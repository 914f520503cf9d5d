"""Backward steps against torch's own view of the graph and of the gradients."""
import textwrap

import pytest
import torch

from capture_helpers import capture, plain_stdout, worker_trace


def steps_of(tr, call):
    return [s for s in tr.backward if s.call == call]


def test_steps_match_torch_graph_and_grads():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor([3.0, 4.0], requires_grad=True)
        y = x * w + x
        z = y.sum()
        z.backward()
        """)
    # torch's own view of the same graph, walked here
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    z = (x * w + x).sum()
    names, stack, seen = set(), [z.grad_fn], set()
    while stack:
        n = stack.pop()
        names.add(n.name().removeprefix("torch::autograd::"))
        stack += [f for f, _ in n.next_functions if f is not None and f not in seen]
        seen.update(f for f, _ in n.next_functions if f is not None)
    z.backward()
    steps = tr.backward
    assert {s.grad_fn for s in steps} == names
    assert steps[0].grad_fn == "SumBackward0" and steps[0].op == tr.ops[-1].id
    acc = {s.tensor: s for s in steps if s.grad_fn == "AccumulateGrad"}
    xi, wi = tr.tensor_by_name("x").id, tr.tensor_by_name("w").id
    assert acc[xi].grad_after["value"] == x.grad.tolist()
    assert acc[wi].grad_after["value"] == w.grad.tolist()
    assert acc[xi].grad_before is None
    assert tr.tensor_by_name("x").grad == x.grad.tolist()
    mul = next(s for s in steps if s.grad_fn == "MulBackward0")
    assert mul.grad_inputs[0]["value"] == w.tolist()
    assert set(mul.next) == {acc[xi].node, acc[wi].node}
    assert tr.ops[mul.op].name == "mul"
    seqs = [s.seq for s in steps]
    assert seqs == sorted(seqs) and tr.backward_calls[0].seq < seqs[0]


def test_accumulation_retain_graph_and_backward_twice_error():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        z = (x * x).sum()
        z.backward(retain_graph=True)
        z.backward()
        print(x.grad)
        z.backward()
        """)
    assert tr.stdout == "tensor([4., 8.])\n"
    assert tr.error.type == "RuntimeError"
    assert "Trying to backward through the graph a second time" in tr.error.message
    assert tr.error.line == 8
    c0, c1 = [[s for s in steps_of(tr, c) if s.grad_fn == "AccumulateGrad"][0] for c in (0, 1)]
    assert c0.node == c1.node
    assert c1.grad_before["value"] == [2.0, 4.0] and c1.grad_after["value"] == [4.0, 8.0]
    assert [c.retain_graph for c in tr.backward_calls] == [True, False, False]


def test_shared_weights_two_paths_into_one_accumulate():
    tr = capture("""
        import torch
        w = torch.tensor([2.0], requires_grad=True)
        a = w * 3
        b = w * 5
        (a + b).backward()
        """)
    acc = [s for s in tr.backward if s.grad_fn == "AccumulateGrad"]
    assert len(acc) == 1 and acc[0].grad_after["value"] == [8.0]
    senders = [s for s in tr.backward if acc[0].node in s.next]
    assert len(senders) == 2


def test_retain_grad_non_leaf_and_create_graph_second_derivative():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x ** 3
        y.retain_grad()
        g, = torch.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        print(x.grad, y.grad)
        """)
    # retain_grad's hook fires during autograd.grad too (as in plain PyTorch)
    assert tr.stdout == "tensor([ 6., 12.]) tensor([1., 1.])\n"
    calls = tr.backward_calls
    assert [c.kind for c in calls] == ["grad", "backward"] and calls[0].create_graph
    assert calls[0].inputs == [tr.tensor_by_name("x").id]
    first = steps_of(tr, 0)
    assert [s.grad_fn for s in first] == ["SumBackward0", "PowBackward0"]  # no AccumulateGrad
    second = steps_of(tr, 1)
    assert second[-1].grad_fn == "AccumulateGrad"
    assert second[-1].grad_after["value"] == [6.0, 12.0]
    # NOTE [graphs made by backward]: the graph of g (3x^2) is the autograd.grad
    # op's, and the second pass steps through it inside that op
    op = next(o for o in tr.ops if o.name == "autograd.grad")
    g = tr.tensor_by_name("g")
    assert op.outputs == [g.id] and op.line == 6 and g.created_by == op.id
    assert op.inputs == [calls[0].roots[0], tr.tensor_by_name("x").id]
    assert op.grad_fn == g.grad_fn and op.subgraph and len(op.subgraph) >= 2
    inside = [s for s in second if s.grad_fn != "AccumulateGrad" and s.op != op.id
              and not (s.op is not None and tr.op_by_id(s.op).name == "sum")]
    assert inside and all(s.within == op.id for s in inside)


def test_user_hooks_and_custom_function_keep_working():
    tr = capture("""
        import torch
        class Double(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2
            @staticmethod
            def backward(ctx, g):
                print("custom backward", g)
                return g * 2
        x = torch.tensor([1.0, 3.0], requires_grad=True)
        y = Double.apply(x)
        y.register_hook(lambda g: g * 10)
        y.sum().backward()
        print(x.grad)
        """)
    assert tr.stdout == "custom backward tensor([10., 10.])\ntensor([20., 20.])\n"
    assert "DoubleBackward" in [s.grad_fn for s in tr.backward]
    assert tr.tensor_by_name("x").grad == [20.0, 20.0]


def test_inplace_on_saved_tensor_error():
    tr = capture("""
        import torch
        x = torch.ones(2, requires_grad=True)
        y = x.exp()
        y.add_(1)
        y.sum().backward()
        """)
    assert tr.error.type == "RuntimeError" and "modified by an inplace operation" in tr.error.message
    assert tr.error.line == 6
    add_ = next(o for o in tr.ops if o.name == "add_")
    y = tr.tensor_by_name("y").id
    assert add_.versions == {str(y): [0, 1]}


def test_long_chain_is_walked_iteratively():
    tr = capture("""
        import torch
        x = torch.ones(3, requires_grad=True)
        y = x
        for i in range(3000):
            y = y * 1.0
        y.sum().backward()
        print(x.grad)
        """)
    assert tr.status == "ok" and tr.stdout == "tensor([1., 1., 1.])\n"
    assert len(tr.backward) == 3002


def test_a_grad_zeroed_through_data_is_seen_zeroed():
    # ``.data`` shares the memory of .grad but not its version counter: the
    # summaries remembered by version must not outlive the change
    tr = capture("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        for i in range(2):
            (w * 3).sum().backward()
            w.grad.data.zero_()
    """)
    acc = [s for s in tr.backward if s.grad_fn == "AccumulateGrad"]
    assert [s.grad_before and s.grad_before["value"] for s in acc] == [None, [0.0, 0.0]]
    assert [s.grad_after["value"] for s in acc] == [[3.0, 3.0], [3.0, 3.0]]
    assert tr.tensor_by_name("w").grad == [0.0, 0.0]


def test_torch_autograd_backward_is_a_backward_call():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x ** 2
        torch.autograd.backward(y, grad_tensors=torch.ones(2))
        z = (x * 3).sum()
        torch.autograd.backward([z], inputs=[x], retain_graph=True)
    """)
    assert tr.status == "ok"
    calls = tr.backward_calls
    assert [(c.kind, c.line, c.retain_graph) for c in calls] == [
        ("backward", 5, False), ("backward", 7, True)]
    assert calls[1].inputs == [tr.tensor_by_name("x").id]
    acc = [s for s in tr.backward if s.grad_fn == "AccumulateGrad"]
    assert [s.grad_after["value"] for s in acc] == [[2.0, 4.0], [5.0, 7.0]]
    assert [s.grad_fn for s in tr.backward if s.call == 0] == [
        "PowBackward0", "AccumulateGrad"]


def test_tensor_hooks_are_recorded_as_facts_about_their_tensor():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, -1.0], requires_grad=True)
        h = x.register_hook(lambda g: g * 10)
        (x * x).sum().backward()
        h.remove()
    """)
    hook = next(o for o in tr.ops if o.kind == "hook")
    assert hook.name == "register_hook" and hook.inputs == [tr.tensor_by_name("x").id]
    assert hook.line == 4 and hook.outputs == []
    # the values are torch's: the hook's x10 is in what AccumulateGrad received
    acc = next(s for s in tr.backward if s.grad_fn == "AccumulateGrad")
    assert acc.grad_outputs[0]["value"] == [20.0, -20.0]


HOOK_REMOVAL = """
import torch
x = torch.tensor([1.0, -1.0], requires_grad=True)
h = x.register_hook(lambda g: g * 10)
(x * x).sum().backward()
h.remove()
h.remove()                      # a second remove does nothing, in torch and here
x.grad = None
(x * x).sum().backward()
with x.register_hook(lambda g: g * 2) as h2:
    pass
print(x.grad, type(h).__name__, type(h2).__name__, sorted(x._backward_hooks or {}))
import inspect, weakref
print(sorted(vars(h)), h.remove.__qualname__, inspect.ismethod(h.remove))
r = weakref.ref(h)
del h
print(r() is None)
"""


def test_removing_a_hook_is_recorded_and_still_removes_it():
    """NOTE [hook removal]: handle.remove() and ``with handle:`` are recorded as
    unhook ops (line, the hook op they end); the snippet sees torch's own
    handle and the hook is gone as under plain Python."""
    tr = capture(HOOK_REMOVAL)
    x = tr.tensor_by_name("x").id
    hooks = [o for o in tr.ops if o.kind == "hook"]
    unhooks = [o for o in tr.ops if o.kind == "unhook"]
    assert [(o.line, o.inputs) for o in hooks] == [(4, [x]), (10, [x])]
    assert [(o.line, o.inputs, o.undoes) for o in unhooks] == [
        (6, [x], hooks[0].id), (10, [x], hooks[1].id)]
    assert all(o.outputs == [] and o.name == "remove" for o in unhooks)
    # the second pass ran without the hook: AccumulateGrad got 2x, not 20x
    acc = [s for s in tr.backward if s.grad_fn == "AccumulateGrad"]
    assert [s.grad_outputs[0]["value"] for s in acc] == [[20.0, -20.0], [2.0, -2.0]]
    assert tr.stdout == plain_stdout(HOOK_REMOVAL)
    assert "RemovableHandle RemovableHandle []" in tr.stdout
    assert "['extra_dict_ref', 'hooks_dict_ref', 'id'] RemovableHandle.remove True" in tr.stdout
    assert tr.stdout.endswith("True\n")     # nothing of ours keeps the handle alive


def test_hook_removals_the_recorder_does_not_follow_leave_the_snippet_alone():
    """A removal inside a hook while backward runs (not recorded: the calls
    there are not), from another thread (not recorded), and torch's remove is
    its own again after the run."""
    from torch.utils.hooks import RemovableHandle
    before = RemovableHandle.__dict__["remove"]
    source = """
import threading
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
hx = x.register_hook(lambda g: g * 10)
def drop(g):
    hx.remove()
    return g
y.register_hook(drop)
y.sum().backward()
print(x.grad)
hy = y.register_hook(lambda g: g)
t = threading.Thread(target=hy.remove)
t.start(); t.join()
print(len(y._backward_hooks))
"""
    tr = capture(source)
    assert tr.stdout == plain_stdout(source) == "tensor([2., 2.])\n1\n"
    assert [o.kind for o in tr.ops if o.kind in ("hook", "unhook")] == ["hook", "hook", "hook"]
    assert RemovableHandle.__dict__["remove"] is before


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")   # torch's own advice
def test_backward_with_create_graph_owns_the_graph_of_the_grad_it_made():
    tr = capture("""
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        y = x ** 3
        y.backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.backward()
    """)
    op = next(o for o in tr.ops if o.name == "backward")
    g = tr.tensor_by_name("g")
    x = tr.tensor_by_name("x")
    assert op.outputs == [g.id] and op.line == 5 and op.subgraph
    assert op.inputs == [tr.tensor_by_name("y").id, x.id]    # the root, and the leaf
    second = steps_of(tr, 1)
    # reading x.grad (line 6) made no node: the backward that made it owns it
    assert second[0].op == op.id
    assert all(s.within == op.id for s in second[1:] if s.grad_fn != "AccumulateGrad")
    assert second[-1].grad_after["value"] == 12.0


def test_a_pass_without_retain_graph_marks_the_nodes_whose_saved_values_it_freed():
    # NOTE [released]: MulBackward0 and a custom Function saved tensors; AddBackward0
    # and SumBackward0 did not, and could be run again
    tr = capture("""
        import torch
        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * 2
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = F.apply(x * x + 1)
        w.sum().backward(retain_graph=True)
        w.sum().backward()
    """)
    first, second = steps_of(tr, 0), steps_of(tr, 1)
    assert not any(s.released for s in first)                    # retain_graph=True
    assert {s.grad_fn for s in second if s.released} == {"FBackward", "MulBackward0"}


def test_the_timeline_knows_from_which_step_a_node_is_freed():
    from graphscope.model.timeline import Timeline
    tr = capture("""
        import torch
        x = torch.tensor(3.0, requires_grad=True)
        y = x * x
        y.backward(retain_graph=True)
        y.backward()
    """)
    tl = Timeline(tr)
    mul = next(o for o in tr.ops if o.name == "mul")
    freed_at = tl.state().freed_at
    assert list(freed_at) == [f"o{mul.id}"]
    step = freed_at[f"o{mul.id}"]
    run = tl.steps[step]
    assert run.kind == "backward" and tr.backward[run.backward].call == 1
    assert step > next(s.index for s in tl.steps if s.kind == "backward_call" and s.call == 1)


def test_backward_on_a_leaf_itself_is_one_accumulate_grad_step():
    """x.backward(v) on a leaf runs its AccumulateGrad: the node read for the hooks
    was let go before the call and the engine ran a new one, unhooked, so the call
    had no step and the next call's .grad before came from nowhere (capture review;
    seen in the worker, where nothing else held the node)."""
    tr = worker_trace("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        x.backward(torch.tensor([3.0, 4.0]))
        (x * 2).sum().backward()
        print(x.grad)
        """)
    assert tr.stdout == "tensor([5., 6.])\n"
    first = steps_of(tr, 0)
    assert [s.grad_fn for s in first] == ["AccumulateGrad"]
    assert first[0].tensor == tr.tensor_by_name("x").id
    assert first[0].grad_before is None and first[0].grad_after["value"] == [3.0, 4.0]
    acc = [s for s in steps_of(tr, 1) if s.grad_fn == "AccumulateGrad"]
    assert acc[0].grad_before["value"] == [3.0, 4.0]
    assert acc[0].grad_after["value"] == [5.0, 6.0]


FUSED_OPTIMIZER = """
    import torch
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    opts = {p: torch.optim.SGD([p], lr=0.5) for p in lin.parameters()}
    def step(p):
        opts[p].step()
        opts[p].zero_grad()
    for p in lin.parameters():
        p.register_post_accumulate_grad_hook(step)
    x = torch.tensor([[1.0, -2.0, 0.5]])
    lin(x).sum().backward()
    out = lin(x)
    print(lin.weight.tolist(), lin.bias.tolist(), lin.weight.grad)
    """


def test_a_leaf_changed_by_its_hook_during_backward_shows_its_new_value():
    # NOTE [changed in hooks]: an optimizer fused into backward (PyTorch's
    # "optimizer step in backward" recipe) steps each parameter in place from the
    # parameter's own hook, inside the engine, where the mode records nothing:
    # the weight was drawn with its old value feeding the next call
    from graphscope.model.timeline import Timeline
    from graphscope.model.values import value_at
    tr = capture(FUSED_OPTIMIZER)
    assert tr.status == "ok", tr.error
    assert tr.stdout == plain_stdout(FUSED_OPTIMIZER)
    ns = {}
    exec(compile(textwrap.dedent(FUSED_OPTIMIZER).replace("print(", "_ = ("), "<plain>", "exec"),
         ns)
    w, b = ns["lin"].weight, ns["lin"].bias
    (changed,) = [o for o in tr.ops if o.name == "changed in a hook"]
    call = tr.backward_calls[0]
    assert changed.line == call.line == 12 and not changed.grad_enabled
    assert changed.seq > max(s.seq for s in tr.backward)
    wi = next(t.id for t in tr.tensors.values() if t.name == "lin.weight")
    bi = next(t.id for t in tr.tensors.values() if t.name == "lin.bias")
    assert sorted(changed.inputs) == sorted([wi, bi])
    # the value the second call reads is the stepped one, as torch has it
    second = tr.ops[-1]
    assert wi in second.inputs
    assert value_at(tr, wi, None, second.seq).value == w.tolist()
    assert value_at(tr, bi, None, second.seq).value == b.tolist()
    assert value_at(tr, wi, None, changed.seq - 1).value != w.tolist()
    # zero_grad() set each .grad to None in the hook: from then on .grad is None
    writes = [o for o in tr.ops if o.kind == "grad_write"]
    assert sorted(o.inputs[0] for o in writes) == sorted([wi, bi])
    assert all(o.seq > changed.seq for o in writes)
    tl = Timeline(tr)
    last = tl.state(tl.len() - 1)
    assert last.leaf_grads[wi][1] is None and last.leaf_grads[bi][1] is None
    assert tr.tensors[wi].grad is None and w.grad is None


def test_a_hook_that_changes_nothing_adds_no_op():
    tr = capture("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.sum().item()))
        (w * w).sum().backward()
        (w * 3).sum().backward()
        print(seen, w.grad)
        """)
    assert tr.status == "ok"
    assert tr.stdout == "[6.0, 12.0] tensor([5., 7.])\n"
    assert not [o for o in tr.ops if o.name == "changed in a hook" or o.kind == "grad_write"]


SEEDS = """
        import torch
        x = torch.ones(2, requires_grad=True)
        y = x ** 2
        v = torch.tensor([1.0, 0.5])
        y.backward(gradient=v)
        a, b = x * 2, (x * 3).sum()
        torch.autograd.backward([a, b], [torch.ones(2), None])
        g, = torch.autograd.grad(x * x, x, grad_outputs=torch.full((2,), 0.5))
        (x * 4).sum().backward()
        print(x.grad, g)
        """


def test_the_gradient_each_pass_starts_from_is_recorded_per_root():
    """NOTE [seed gradients] in model/graph.py: ``backward(gradient=v)``,
    ``autograd.backward``'s ``grad_tensors`` and ``autograd.grad``'s
    ``grad_outputs``, one entry per root, None where none was given."""
    tr = capture(SEEDS)
    t = {n: tr.tensor_by_name(n).id for n in ("y", "v", "a", "b")}
    calls = tr.backward_calls
    assert [c.roots for c in calls[:2]] == [[t["y"]], [t["a"], t["b"]]]
    assert calls[0].seeds == [t["v"]]
    seed = tr.tensors[calls[1].seeds[0]]
    assert calls[1].seeds[1] is None and seed.shape == [2] and seed.value == [1.0, 1.0]
    assert tr.tensors[calls[2].seeds[0]].value == [0.5, 0.5]
    assert calls[3].seeds == []          # a scalar's pass starts from 1: nothing given
    assert tr.stdout == plain_stdout(SEEDS)
