"""The drawn graph against autograd's own: for every named tensor that has a
``grad_fn``, the leaves a learner reaches walking the picture back along tracked
edges are the leaves autograd's ``next_functions`` reach (where ``backward``
would put gradients). A picture that leaves out a path (a view hanging off the
tensor as it was before an in-place change) or adds one (an op that handed back
its input drawn as a new tensor) fails here."""
import textwrap

import pytest
import torch

from graphscope.model.graph import build_graph
from test_model_traces import trace_of

SNIPPETS = {
    "chain": """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.tensor(3.0, requires_grad=True)
        y = x * w
        z = (y + x).sum()
    """,
    "no_grad_cut": """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        b = torch.tensor([1.0, 1.0], requires_grad=True)
        with torch.no_grad():
            h = x * 2
        out = (h * b).sum()
    """,
    "detach": """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x ** 2
        c = y.detach()
        z = y + c * 10
    """,
    "view_then_base_in_place": """
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        k = torch.tensor(3.0, requires_grad=True)
        y = x * 2
        v = y[:2]
        y.mul_(k)
        z = v * 5
    """,
    "view_in_place_then_base": """
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        k = torch.tensor(2.0, requires_grad=True)
        y = x * 2
        v = y[:2]
        v.mul_(k)
        s = y.sum()
    """,
    "setitem": """
        x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a = torch.tensor(5.0, requires_grad=True)
        y = x * 1
        v = y.view(2, 2)
        v[0, 0] = a
        s = y.sum()
    """,
    "relu_inplace": """
        lin = torch.nn.Linear(3, 3)
        act = torch.nn.ReLU(inplace=True)
        x = torch.randn(2, 3)
        h = act(lin(x))
        out = h.sum()
    """,
    "dropout_eval": """
        m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
        m.eval()
        y = m(torch.ones(1, 2))
        s = y.sum()
    """,
    "chunk": """
        x = torch.arange(4.0, requires_grad=True)
        a, b = x.chunk(2)
        w = torch.tensor(2.0, requires_grad=True)
        out = (b * w).sum()
    """,
    "shared_weight_loop": """
        w = torch.tensor(0.5, requires_grad=True)
        h = torch.tensor(1.0)
        for _ in range(3):
            h = torch.tanh(h * w)
        loss = h
    """,
    "custom_function": """
        class Sq(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return 2 * x * g
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = Sq.apply(x)
        s = y.sum()
    """,
    "nested_view_in_place": """
        x = torch.arange(6.0, requires_grad=True)
        k = torch.tensor(2.0, requires_grad=True)
        y = x * 1
        v = y.view(2, 3)[0]
        v.mul_(k)
        s = y.sum()
        t = y.view(3, 2)
    """,
    "index_add_and_iadd": """
        x = torch.zeros(4, requires_grad=True)
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        y[1:3] += w
        z = y.index_add(0, torch.tensor([0, 3]), w * 2)
    """,
    "optimizer_then_forward": """
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            loss = (w ** 2).sum()
            loss.backward()
            opt.step()
        last = (w * 3).sum()
    """,
    "cat_stack_max": """
        a = torch.tensor([1.0, 5.0], requires_grad=True)
        b = torch.tensor([3.0, 2.0], requires_grad=True)
        c = torch.cat([a, b])
        m, i = torch.stack([a, b]).max(dim=0)
        s = c.sum() + m.sum()
    """,
    "requires_grad_later": """
        x = torch.tensor([1.0, 2.0])
        y = x * 2
        x.requires_grad_()
        z = x * y
    """,
    "clone_in_place": """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        k = torch.tensor(4.0, requires_grad=True)
        c = x.clone()
        c.add_(k)
        e = c.exp()
    """,
    "create_graph": """
        x = torch.tensor(2.0, requires_grad=True)
        y = x ** 3
        (dy,) = torch.autograd.grad(y, x, create_graph=True)
    """,
}


def _truth(source: str) -> dict:
    """name -> names of the leaves autograd reaches from that tensor's grad_fn."""
    ns = {"torch": torch}
    torch.manual_seed(0)
    exec(compile(source, "<truth>", "exec"), ns)
    by_id = {id(v): k for k, v in ns.items() if isinstance(v, torch.Tensor)}
    params = {}
    for k, v in ns.items():
        if isinstance(v, torch.nn.Module):
            for pn, p in v.named_parameters():
                params[id(p)] = f"{k}.{pn}"
    out = {}
    for name, t in ns.items():
        if not isinstance(t, torch.Tensor) or t.grad_fn is None:
            continue
        leaves, stack, seen = set(), [t.grad_fn], set()
        while stack:
            n = stack.pop()
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            if hasattr(n, "variable"):
                v = n.variable
                leaves.add(by_id.get(id(v)) or params.get(id(v)) or "?")
            stack.extend(f for f, _ in n.next_functions)
        out[name] = leaves
    return out


def _drawn(tr) -> dict:
    g = build_graph(tr)
    G = g.nx
    out = {}
    for tid, info in tr.tensors.items():
        if not info.name or tid not in g.tensor_node:
            continue
        node = g.tensor_node[tid]
        if not g.nodes[node].flags & {"grad_fn"} and "~" not in node:
            continue
        leaves, stack, seen = set(), [node], set()
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            nd = g.nodes[n]
            if nd.kind == "tensor" and "leaf" in nd.flags and "requires_grad" in nd.flags:
                t = tr.tensors.get(nd.tensor)
                leaves.add(t.name if t is not None and t.name else "?")
                continue
            for p in G.predecessors(n):
                if g.edge_kind(p, n) == "data":
                    stack.append(p)
        out[info.name] = leaves
    return out


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_the_picture_reaches_the_leaves_autograd_reaches(name):
    source = "import torch\n" + textwrap.dedent(SNIPPETS[name]).lstrip("\n")
    truth = _truth(source)
    drawn = _drawn(trace_of(source))
    for var, leaves in truth.items():
        if var in drawn:
            assert drawn[var] == leaves, (var, drawn[var], leaves)
    assert set(truth) & set(drawn), "nothing compared"
