"""Parameters and buffers are named as a learner writes them (NOTE [parameter names])."""
from __future__ import annotations

from capture_helpers import capture


def names_of_params(tr):
    return {t.name: t for t in tr.tensors.values() if t.is_param}


def test_parameters_and_buffers_get_variable_plus_qualified_name():
    tr = capture("""
        import torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                                    torch.nn.Linear(4, 1))
        first = model[0]                       # a submodule's own variable does not win
        torch.nn.init.zeros_(model[2].bias)    # seen before the model is ever called
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.randn(5, 3)).sum()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():       # an alias bound later does not rename
                p -= 0.1 * p.grad
        """)
    assert tr.status == "ok", tr.error
    params = names_of_params(tr)
    assert set(params) == {"model.0.weight", "model.0.bias", "model.1.weight", "model.1.bias",
                           "model.2.weight", "model.2.bias"}
    assert params["model.0.weight"].shape == [4, 3] and params["model.2.bias"].shape == [1]
    buffers = {t.name for t in tr.tensors.values() if t.name and ".running_" in t.name}
    assert buffers == {"model.1.running_mean", "model.1.running_var"}
    # the linear ops read the named tensors
    lin = [o for o in tr.ops if o.name == "linear"][0]
    assert [tr.tensors[i].name for i in lin.inputs[1:]] == ["model.0.weight", "model.0.bias"]
    assert tr.tensor_by_name("p") is None and tr.tensor_by_name("loss") is not None


def test_nested_paths_lists_unbound_modules_and_free_parameters():
    tr = capture("""
        import torch
        enc = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
            num_layers=2, enable_nested_tensor=False)
        out = enc(torch.randn(1, 3, 8))
        heads = [torch.nn.Linear(8, 2)]
        y = heads[0](out)
        w = torch.nn.Parameter(torch.ones(8))      # in no module: its variable names it
        z = torch.nn.Linear(8, 1)(out * w)         # bound to no variable: the path alone
        """)
    assert tr.status == "ok", tr.error
    params = names_of_params(tr)
    assert {"enc.layers.1.linear1.bias", "enc.layers.0.self_attn.in_proj_weight",
            "heads[0].weight", "w", "weight", "bias"} <= set(params)
    assert params["enc.layers.1.linear1.bias"].shape == [16]
    assert not any(n and n.startswith("layer.") for n in params)


def test_module_called_in_a_function_is_named_by_the_callers_variable():
    tr = capture("""
        import torch
        def run(net, x):
            return net(x).sum()
        model = torch.nn.Linear(2, 1)
        run(model, torch.ones(1, 2)).backward()
        """)
    assert tr.status == "ok", tr.error
    assert set(names_of_params(tr)) == {"model.weight", "model.bias"}


def test_snippet_module_class_and_submodule_added_later():
    tr = capture("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(2, 3)
                self.fc1(torch.zeros(1, 2))        # called while Net is being built
                self.fc2 = torch.nn.Linear(3, 1)
            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))
        net = Net()
        net(torch.ones(1, 2))
        net.head = torch.nn.Linear(1, 1)           # a submodule added after the first call
        net.head(net(torch.ones(1, 2))).sum().backward()
        """)
    assert tr.status == "ok", tr.error
    assert {"net.fc1.weight", "net.fc2.bias", "net.head.weight"} <= set(names_of_params(tr))


def test_a_loop_variable_before_the_first_call_does_not_name_the_parameters():
    """``for p in model[0].parameters(): p.requires_grad_(False)`` before the model
    is called named both parameters ``p`` for good, and a loop over
    named_parameters() named the last bias ``p`` (capture review)."""
    tr = capture("""
        import torch
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1))
        for p in model[0].parameters():
            p.requires_grad_(False)
        for name, q in model.named_parameters():
            print(name, q.requires_grad)
        y = model(torch.ones(1, 2)).sum()
        y.backward()
        """)
    lin = [o for o in tr.ops if o.name == "linear"]
    assert [tr.tensors[i].name for i in lin[0].inputs[1:]] == ["model.0.weight", "model.0.bias"]
    assert [tr.tensors[i].name for i in lin[1].inputs[1:]] == ["model.1.weight", "model.1.bias"]
    assert tr.stdout.splitlines()[0] == "0.weight False"


def test_a_free_parameter_keeps_its_variable_s_name_in_a_module_later():
    """The fix above first renamed every parameter a variable had named, a free
    one too: ``w.sum()`` on line 3 became ``lin.weight.sum()`` (code review)."""
    tr = capture("""
        import torch
        w = torch.nn.Parameter(torch.ones(2, 2))
        print(w.sum())
        lin = torch.nn.Linear(2, 2)
        lin.weight = w
        y = lin(torch.ones(1, 2))
        """)
    s = next(o for o in tr.ops if o.name == "sum")
    assert tr.tensors[s.inputs[0]].name == "w"
    lin = next(o for o in tr.ops if o.name == "linear")
    assert [tr.tensors[i].name for i in lin.inputs[1:]] == ["w", "lin.bias"]
