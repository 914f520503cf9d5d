"""What the recorder records for forward work: ops, tensors, names, branches, regions, modules."""
import torch

from capture_helpers import capture


def ops_named(tr, name):
    return [o for o in tr.ops if o.name == name]


def test_operators_methods_factories_and_lines():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        w = torch.ones(2, 2)
        y = x * 2
        z = 3 * y ** 2
        m = x @ w
        s = torch.randn(2).sum()
        """)
    names = [(o.name, o.line, o.kind) for o in tr.ops]
    assert names == [("tensor", 3, "factory"), ("ones", 4, "factory"), ("mul", 5, "call"),
                     ("pow", 6, "call"), ("mul", 6, "call"), ("matmul", 7, "call"),
                     ("randn", 8, "factory"), ("sum", 8, "call")]
    y = tr.tensor_by_name("y")
    assert y.grad_fn == "MulBackward0" and not y.is_leaf and y.value == [2.0, 4.0]
    x = tr.tensor_by_name("x")
    assert x.is_leaf and x.requires_grad and x.shape == [2] and x.dtype == "float32"
    mul = tr.ops[2]
    assert mul.inputs == [x.id] and mul.outputs == [y.id] and mul.grad_fn == "MulBackward0"
    assert y.created_by == mul.id
    assert [o.seq for o in tr.ops] == sorted(o.seq for o in tr.ops)
    assert tr.tensor_by_name("w").requires_grad is False


def test_inplace_views_multi_output_detach_requires_grad():
    tr = capture("""
        import torch
        a = torch.zeros(4)
        a.mul_(2)
        a[0] = 5.0
        v = a.view(2, 2)
        t = v.t()
        sl = a[1:3]
        vals, idx = v.max(dim=1)
        parts = a.split(2)
        c = torch.ones(3, requires_grad=True)
        d = c.detach()
        e = torch.ones(3).requires_grad_()
        """)
    mul_ = ops_named(tr, "mul_")[0]
    a = tr.tensor_by_name("a").id
    assert mul_.kind == "inplace" and mul_.versions == {str(a): [0, 1]}
    setitem = ops_named(tr, "setitem")[0]
    assert setitem.kind == "inplace" and setitem.versions == {str(a): [1, 2]}
    assert ops_named(tr, "view")[0].kind == "view" and ops_named(tr, "t")[0].kind == "view"
    assert ops_named(tr, "getitem")[-1].kind == "view"
    mx = ops_named(tr, "max")[0]
    assert len(mx.outputs) == 2
    assert mx.outputs == [tr.tensor_by_name("vals").id, tr.tensor_by_name("idx").id]
    assert len(ops_named(tr, "split")[0].outputs) == 2
    det = ops_named(tr, "detach")[0]
    assert det.kind == "detach" and tr.tensor_by_name("d").requires_grad is False
    rg = ops_named(tr, "requires_grad_")[0]
    assert rg.kind == "requires_grad"
    assert tr.tensor_by_name("e").requires_grad is True


def test_grad_reads_writes_retain_grad_and_noise_filtered():
    tr = capture("""
        import torch
        x = torch.ones(2, requires_grad=True)
        y = x * 3
        y.retain_grad()
        shape, dt, rg, gf, leaf = y.shape, y.dtype, y.requires_grad, y.grad_fn, y.is_leaf
        y.sum().backward()
        g = x.grad
        x.grad = None
        """)
    kinds = [o.kind for o in tr.ops]
    assert "retain_grad" in kinds and "grad_read" in kinds and "grad_write" in kinds
    assert not any(o.name in ("shape", "dtype", "requires_grad", "grad_fn", "is_leaf")
                   for o in tr.ops)
    y = tr.tensor_by_name("y")
    assert y.retains_grad and y.grad == [1.0, 1.0]
    x = tr.tensor_by_name("x")
    assert x.grad is None      # written to None at the end
    assert tr.tensor_by_name("g").value == [3.0, 3.0]


def test_branches():
    tr = capture("""
        import torch
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2 if x.sum() > 5 else x + 2
        n = 0
        while y.sum().item() < 40:
            y = y * 2
            n += 1
        lst = x.tolist()
        k = int(torch.tensor(3))
        """)
    kinds = [(b.kind, b.line, b.value) for b in tr.branches]
    assert kinds[0] == ("bool", 4, True)
    assert ("item", 6, 12.0) in kinds and ("item", 6, 48.0) in kinds
    assert ("tolist", 9, [1.0, 2.0, 3.0]) in kinds and ("int", 10, 3) in kinds
    assert all(tr.ops[b.op].kind in ("bool", "item") for b in tr.branches)


def test_regions_all_forms():
    tr = capture("""
        import torch
        from torch import no_grad as ng
        x = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            a = x * 2
        @torch.no_grad()
        def f(t):
            return t + 1
        b = f(x)
        with ng():
            c = x * 3
        with torch.inference_mode():
            d = x * 4
        torch.set_grad_enabled(False)
        e = x * 5
        torch.set_grad_enabled(True)
        with torch.enable_grad():
            h = x * 6
        """)
    got = [(r.kind, r.form, r.start_line, r.end_line, r.grad_enabled) for r in tr.regions]
    assert got == [("no_grad", "with", 5, 6, False), ("no_grad", "decorator", 7, 9, False),
                   ("no_grad", "with", 11, 12, False), ("inference_mode", "with", 13, 14, False),
                   ("set_grad_enabled", "call", 15, 16, False),
                   ("enable_grad", "with", 18, 19, True)]
    assert tr.regions[0].label == "torch.no_grad(), lines 5-6"
    by_line = {o.line: o for o in tr.ops if o.name in ("mul", "add")}
    assert not by_line[6].grad_enabled and not by_line[9].grad_enabled
    assert by_line[14].inference and not by_line[16].grad_enabled and by_line[19].grad_enabled
    for name in "abcde":
        assert tr.tensor_by_name(name).requires_grad is False
    assert tr.tensor_by_name("h").requires_grad


def test_module_calls_and_paths():
    tr = capture("""
        import torch
        from torch import nn
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = nn.Linear(4, 4)
            def forward(self, x):
                return torch.relu(self.linear1(x))
        model = nn.Sequential(Block(), nn.Sequential(Block(), nn.Linear(4, 1)))
        out = model(torch.ones(2, 4))
        """)
    paths = [(m.path, m.type) for m in sorted(tr.modules, key=lambda m: m.seq)]
    assert paths == [("", "Sequential"), ("0", "Block"), ("0.linear1", "Linear"),
                     ("1", "Sequential"), ("1.0", "Block"), ("1.0.linear1", "Linear"),
                     ("1.1", "Linear")]
    relus = ops_named(tr, "relu")
    assert [o.module for o in relus] == ["0", "1.0"] and relus[0].line == 9
    lin = [o for o in tr.ops if o.name == "linear"]
    assert [o.module for o in lin] == ["0.linear1", "1.0.linear1", "1.1"]
    w = tr.tensors[lin[0].inputs[1]]
    assert w.is_param and w.requires_grad and w.shape == [4, 4]
    top = next(m for m in tr.modules if m.path == "")
    assert top.first_op == lin[0].id and top.last_op == lin[-1].id
    assert top.outputs == [tr.tensor_by_name("out").id]


def test_names_inside_functions_and_values_summaries():
    tr = capture("""
        import torch
        def f(inp):
            hidden = inp * 2
            return hidden.sum()
        big = torch.arange(100.0)
        loss = f(big)
        θ = torch.tensor([True, False])
        """, value_limit=8)
    assert tr.tensor_by_name("hidden").stats["numel"] == 100
    big = dict(tr.tensor_by_name("big").stats)
    hist = big.pop("hist")      # the first big tensor of a run always gets one
    assert big == {"numel": 100, "min": 0.0, "max": 99.0,
                   "mean": 49.5, "std": torch.arange(100.0).std().item()}
    assert hist["counts"] == [5] * 20 and hist["edges"][::10] == [0.0, 49.5, 99.0]
    assert tr.tensor_by_name("loss").value == 9900.0
    assert tr.tensor_by_name("θ").value == [True, False]
    assert tr.ops[1].line == 4   # inside the snippet's own function


def test_optimizer_step_ops_are_recorded_and_values_match():
    src = """
        import torch
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            m(torch.ones(2, 3)).pow(2).mean().backward()
            opt.step()
        print(m.weight.detach().tolist())
        """
    tr = capture(src)
    import textwrap
    g = {}
    exec(textwrap.dedent(src).replace("print(", "res = ("), g)
    assert tr.stdout == repr(g["res"]) + "\n"
    step_ops = [o for o in tr.ops if not o.grad_enabled]
    assert step_ops, "optimizer ops under no_grad must be recorded"


def test_complex_values_read_by_tolist_are_recorded_as_a_trace_file_has_them():
    tr = capture("""
        import torch
        z = torch.tensor([1 + 2j, 3j])
        v = z.tolist()
        """)
    (b,) = tr.branches
    assert b.value == ["(1+2j)", "3j"]


def test_a_view_torch_refuses_to_describe_runs_as_under_python():
    """NOTE [refused facts]: after v.mul_ on a no_grad view of a leaf, reading
    v.grad_fn raises in plain PyTorch; the recorder's own reads must not make
    the snippet fail where plain Python does not."""
    from capture_helpers import plain_stdout
    src = """
        import torch
        w = torch.ones(100, requires_grad=True)
        with torch.no_grad():
            v = w[0:80]
            v.mul_(5)
            u = v[0:3]
            v.add_(1)
            print(u, v.sum())
        (w * 2).sum().backward()
        print(w.grad[:3], w[:2])
        """
    tr = capture(src)
    assert tr.status == "ok", tr.error
    assert tr.stdout == plain_stdout(src)
    assert [o.name for o in tr.ops if o.name.endswith("_")] == ["mul_", "add_"]


def test_an_op_the_snippet_made_carries_its_source_text():
    tr = capture("""
        import torch
        import torch.nn.functional as F
        x = torch.tensor([1.0, -2.0], requires_grad=True)
        lin = torch.nn.Linear(2, 2)
        loss = (F.relu(x) ** 2).sum() + lin(x).sum()
        θ = x * 3
        s = (θ + 1).sum()   # columns count bytes: θ is two
    """)
    by = {o.expr for o in tr.ops if o.expr}
    assert {"F.relu(x)", "F.relu(x) ** 2", "(F.relu(x) ** 2).sum()", "lin(x).sum()",
            "θ + 1", "(θ + 1).sum()",
            "torch.tensor([1.0, -2.0], requires_grad=True)"} <= by
    # the linear inside the module: the snippet did not write that call
    linear = next(o for o in tr.ops if o.name == "linear")
    assert linear.expr is None


def test_unnamed_tensors_are_labelled_by_the_text_that_made_them():
    from graphscope.model.graph import build_graph
    tr = capture("""
        import torch
        y = torch.tensor([1.0, 2.0], requires_grad=True)
        (y ** 2).sum().backward()
    """)
    labels = {n.label for n in build_graph(tr).nodes.values() if n.kind == "tensor"}
    assert {"y", "y ** 2", "(y ** 2).sum()"} <= labels


def test_a_module_output_is_labelled_by_the_call_the_snippet_wrote():
    """A module's output has no op text of the snippet's (its linear ran in
    torch's code): it is labelled by the module call, the innermost one the
    snippet wrote; a module a library ran (nn.Sequential's loop, checkpoint)
    gets no text."""
    from graphscope.model.graph import build_graph, tensor_label
    from graphscope.model.trace import Trace
    source = """
        import torch
        import torch.nn as nn
        from torch.utils.checkpoint import checkpoint
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(1, 2, 3)
                self.fc = nn.Linear(4, 2)
                self.seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
                self.rnn = nn.GRU(4, 2, batch_first=True)
            def forward(self, x):
                h = torch.relu(self.conv(x))
                self.rnn(x.flatten(1)[None])
                return self.seq(self.fc(h.flatten(1)))
        net = Net()
        net(torch.randn(1, 1, 4)).sum().backward()
        block = nn.Linear(2, 2)
        checkpoint(block, torch.randn(3, 2, requires_grad=True), use_reentrant=False).sum()
    """
    tr = capture(source)
    texts = {m.path: m.expr for m in tr.modules if m.type != "Linear" or m.path != "0"}
    assert texts["conv"] == "self.conv(x)" and texts["fc"] == "self.fc(h.flatten(1))"
    assert texts["seq"] == "self.seq(self.fc(h.flatten(1)))"
    assert texts["seq.0"] is None and texts["seq.1"] is None     # run by Sequential
    assert texts["rnn"] == "self.rnn(x.flatten(1)[None])[0]"     # a tuple: its first tensor
    assert [m.expr for m in tr.modules if m.path == ""] == [
        "net(torch.randn(1, 1, 4))", None]                    # Net; the checkpointed block
    labels = {n.label for n in build_graph(tr).nodes.values() if n.kind == "tensor"}
    assert {"self.conv(x)", "self.fc(h.flatten(1))"} <= labels
    # the Sequential's (and the Net's) output is its Tanh's: the innermost text wins
    seq_out = next(m for m in tr.modules if m.path == "seq").outputs[0]
    assert tensor_label(tr, tr.tensors[seq_out]) == tensor_label(
        Trace.from_json(tr.to_json()), tr.tensors[seq_out])
    assert "self.seq(" in tensor_label(tr, tr.tensors[seq_out])


def test_source_text_is_only_given_to_the_op_that_text_calls():
    tr = capture("""
        import torch
        from torch.distributions import Normal
        import torch.nn.functional as F
        mu = torch.zeros(3, requires_grad=True)
        loss = -Normal(mu, 1.0).log_prob(torch.ones(3)).sum()
        s = sum([mu * 1, mu * 2])
        n = F.normalize(mu + 1, dim=0)
        c = (torch.zeros(2)
             .add(1))
    """)
    by_line = {}
    for o in tr.ops:
        by_line.setdefault(o.line, []).append((o.name, o.expr))
    # inside log_prob: its pow, log, sub are not the snippet's text
    assert [e for n, e in by_line[6] if e] == [
        "torch.ones(3)", "Normal(mu, 1.0).log_prob(torch.ones(3)).sum()",
        "-Normal(mu, 1.0).log_prob(torch.ones(3)).sum()"]
    # builtin sum adds in C: its partial sums are not "sum(...)"
    adds = [e for n, e in by_line[7] if n == "add"]
    assert adds and all(e is None for e in adds)
    assert ("normalize", "F.normalize(mu + 1, dim=0)") in by_line[8]
    # a chain split over lines: ".add(1)" is shown with its receiver
    assert [e for n, e in by_line[10] if n == "add"] == ["torch.zeros(2).add(1)"]


def test_a_call_written_over_several_lines_reads_as_one_line():
    """Positions span lines: the text is joined the way Python reads it, without
    comments (a '#' in a string stays), line breaks inside brackets dropped, the
    last argument's trailing comma gone, but not a one-element tuple's."""
    tr = capture("""
        import torch
        import torch.nn.functional as F
        logits = torch.randn(4, 3, requires_grad=True)
        target = torch.tensor([0, 1, 2, 1])
        loss = F.cross_entropy(
            logits,   # the scores
            target,
        )
        z = (logits
             .mul(2)   # twice
             .add(1))
        w = torch.where(logits > 0,
                        logits * 2, logits - 1).sum()
        s = torch.stack((
            w,
        ))
        u = torch.full((1,), float(len("#a,"
                                       "b"))) * \
            2
        r = torch.relu(
            u,
        )
        q = (u *
           u
         + u)
    """)
    got = {(o.name, o.expr) for o in tr.ops}
    assert {("cross_entropy", "F.cross_entropy(logits, target)"),
            ("mul", "logits.mul(2)"), ("add", "logits.mul(2).add(1)"),
            ("where", "torch.where(logits > 0, logits * 2, logits - 1)"),
            ("sum", "torch.where(logits > 0, logits * 2, logits - 1).sum()"),
            ("stack", "torch.stack((w,))"),
            ("full", 'torch.full((1,), float(len("#a," "b")))'),
            ("mul", 'torch.full((1,), float(len("#a," "b"))) * 2'),
            ("relu", "torch.relu(u)"),                   # a call's trailing comma goes
            ("add", "u * u + u")} <= got                 # lines that dedent unevenly


def test_a_module_returning_a_tuple_keeps_its_first_op_and_the_trace_reads_back():
    """Fuzz review: the index of the tuple's first tensor (for the label
    ``self.lstm(h)[0]``) overwrote the call's first op id: an LSTM's first_op was
    0 or 1, and None for a packed sequence, which Trace.from_json refused."""
    from graphscope.model.trace import Trace
    tr = capture("""
        import torch
        from torch.nn.utils.rnn import pack_sequence
        torch.manual_seed(0)
        x = torch.ones(3)
        lstm = torch.nn.LSTM(2, 3)
        out, (h, c) = lstm(torch.randn(4, 1, 2))
        packed, _ = lstm(pack_sequence([torch.randn(3, 2), torch.randn(2, 2)]))
        """)
    calls = [m for m in tr.modules if m.type == "LSTM"]
    assert len(calls) == 2
    for m in calls:
        ops = [o for o in tr.ops if m.first_op <= o.id <= m.last_op]
        assert ops and all(o.module == "" for o in ops) and m.first_op > 1
    assert len(Trace.from_json(tr.to_json()).modules) == 2


def test_a_long_expression_label_keeps_both_ends():
    from graphscope.model.graph import EXPR_CHARS, expr_label
    a = expr_label("F.normalize(x, dim=0, eps=1e-6)")
    b = expr_label("F.normalize(x, dim=0, eps=1e-6).sum()")
    assert a != b and len(a) <= EXPR_CHARS and len(b) <= EXPR_CHARS
    assert a.startswith("F.norma") and b.endswith("sum()") and "\u2026" in a + b
    assert expr_label("F.relu(self.conv(x))") == "F.relu(self.conv(x))"   # fits whole
    # NOTE [labels cut whole]: what is inside brackets goes first, keeping what
    # fits of the first arguments, never a cut inside a name ("(predictio…rgets)
    # ** 2", "model(…max(dim=-1)", "torch…@ w2 + b2)" before: visual review)
    assert expr_label("((predictions - targets) ** 2).mean()") == "((\u2026) ** 2).mean()"
    assert expr_label("(predictions - targets) ** 2") == "(predictions - \u2026) ** 2"
    assert expr_label("torch.sigmoid(hidden @ w2 + b2)") == "torch.sigmoid(hidden\u2026)"
    assert expr_label("model(inputs).softmax(dim=-1)") == "model(\u2026).softmax(\u2026)"
    assert expr_label("loss_function(output, target_values)") == "loss_function(output\u2026)"
    assert expr_label("torch.cat([h_forward, h_backward], dim=1)") == "torch.cat([\u2026], dim=1)"
    assert expr_label("weights[selected_indices] * 2") == "weights[\u2026] * 2"
    # (an argument ends before a comma or space: not "self.cell(x\u2026)" for x.unsqueeze)
    assert expr_label("self.cell(x[t].unsqueeze(0), h)") == "self.cell(\u2026)"
    assert expr_label("F.normalize(x, dim=0, eps=1e-6).sum()") == "F.normalize(x\u2026).sum()"
    # still too long: both ends around one cut between tokens, the cut holding
    # whole bracket pairs, and no end that starts by calling what was cut out
    assert expr_label("torch.stack([a, b, c]).sum(dim=0).mean()") == "torch.stack(\u2026)\u2026mean()"
    assert expr_label("model.encoder.layers[0].self_attn(x, x, x)") == "model\u2026self_attn(\u2026)"
    # a short name is an end (code review: "x.float()…res_grad_()"), and failing
    # both ends the last call alone
    assert expr_label("x.float().requires_grad_()") == "x\u2026requires_grad_()"
    assert expr_label("ya.grad_fn.next_functions") == "ya\u2026next_functions"
    assert expr_label("torch.set_grad_enabled(True)") == "\u2026set_grad_enabled(\u2026)"
    assert expr_label("x[:, None, :] * w[None, :, :]") == "x[:\u2026] * w[None, :, :]"
    # NOTE [a cut that reads true]: a cut never makes another formula of it
    # ("left_part…* 3.0 - 1.0", "inputs…weight_hidden", "probs…- probs" before:
    # visual review); it leaves out whole operands with tighter operators, or
    # keeps the start alone
    assert expr_label("left_part + right_part * 3.0 - 1.0") == "left_part +\u2026- 1.0"
    assert expr_label("a * b - c * d + e * f", 18) == "a * b -\u2026+ e * f"
    assert expr_label("a * b - c * d + e * f", 14) == "a * b - c * d\u2026"
    assert expr_label("hidden_layer.detach() - hidden_layer") == "hidden_layer.detach()\u2026"
    assert expr_label("probs.detach() - probs", 14) == "probs.detach(\u2026"
    assert expr_label("inputs @ weight_hidden", 14) == "inputs @ weig\u2026"
    assert expr_label("predictions - targets", 19) == "predictions - targ\u2026"
    assert expr_label("hidden_layer_output * dropout_mask") == "hidden_layer_output\u2026"
    # names too long for any of it, and no operator between: cut inside, both ends kept
    assert expr_label("torch.nn.functional.scaled_dot_product_attention(q, k, v)") \
        == "torch.nn\u2026ttention(\u2026)"


def test_expression_labels_always_fit():
    """Whatever the snippet wrote (unbalanced brackets, strings holding
    brackets, operators only), a label fits its box and never raises."""
    import random
    from graphscope.model.graph import EXPR_CHARS, expr_label
    rnd = random.Random(7)
    pieces = ["x", "weights", "predictions", "torch.randn(3, 4)", "F.relu(h)", "a.b.c",
              "1e-6", '"s(t)r"', "'['", "model(x)", " + ", " * ", " @ ", " ** ", "-",
              ".sum()", "[0]", "(", ")", "[", "]", ", "]
    for _ in range(3000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 12)))
        label = expr_label(text)
        assert label and len(label) <= EXPR_CHARS, (text, label)
        assert label == text or "\u2026" in label


def test_a_grad_the_snippet_reads_is_labelled_by_its_text():
    """``w.grad`` was drawn as t3 (a review): the snippet's own read names it; an
    optimizer's reads inside torch have no text of the snippet's."""
    from graphscope.model.graph import build_graph
    tr = capture("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w ** 2).sum().backward()
        with torch.no_grad():
            w -= 0.1 * w.grad
        lin = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        lin(w).sum().backward()
        opt.step()
        print(lin.weight.grad.shape)
    """)
    reads = [(o.line, o.expr) for o in tr.ops if o.kind == "grad_read"]
    assert (6, "w.grad") in reads and (11, "lin.weight.grad") in reads
    assert all(e is None for line, e in reads if line == 10)     # inside opt.step()
    labels = {n.label for n in build_graph(tr).nodes.values() if n.kind == "tensor"}
    assert "w.grad" in labels and "0.1 * w.grad" in labels
