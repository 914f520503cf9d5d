"""Plain-language explanations for the common autograd errors, and the problems list."""
import textwrap

import pytest

from graphscope import protocol as P
from graphscope.model.diagnostics import explain, flags, problems
from graphscope.model.trace import Trace
from test_model_traces import MISSING_RG, NO_GRAD, PRACTICE_3, trace_of


def _diag(src):
    tr = trace_of(src)
    assert tr.error is not None, tr.stdout
    return tr, explain(tr.error, tr)


def test_no_grad_region_is_named_with_its_lines():
    tr, d = _diag(NO_GRAD)
    assert d.kind == "no_grad_region"
    assert "torch.no_grad(), lines 3-4" in d.text and "y" in d.text
    assert "y = x * 2" in d.fix
    assert d.line == 4
    y, z = tr.tensor_by_name("y").id, tr.tensor_by_name("z").id
    assert d.node_ids[:2] == [f"t{y}", f"t{z}"]


def test_missing_requires_grad_points_at_the_leaf():
    tr, d = _diag(MISSING_RG)
    assert d.kind == "missing_requires_grad"
    assert d.line == 2 and d.node_ids[0] == f"t{tr.tensor_by_name('x').id}"
    assert "x = torch.tensor(2.0, requires_grad=True)" in d.fix
    assert "grad_fn" in d.text


def test_non_scalar_backward():
    tr, d = _diag("""
        import torch
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2
        y.backward()
    """)
    assert d.kind == "non_scalar" and "has shape (3,)" in d.text   # as PyTorch writes it
    assert "y.sum().backward()" in d.fix and "ones_like(y)" in d.fix
    assert d.line == 4 and d.node_ids == [f"t{tr.tensor_by_name('y').id}"]


def test_backward_twice():
    _, d = _diag("""
        import torch
        x = torch.tensor(2.0, requires_grad=True)
        y = x.exp() * 3
        y.backward()
        y.backward()
    """)
    assert d.kind == "backward_twice"
    assert "retain_graph=True" in d.fix and "(line 4)" in d.text and d.line == 5
    assert d.text.startswith("The first backward() (line 4)")


def test_backward_twice_names_the_pass_that_freed_the_graph():
    # the backward-twice lesson: the first pass kept the graph, the second freed it
    _, d = _diag("""
        import torch
        x = torch.tensor(3.0, requires_grad=True)
        y = x * x
        y.backward(retain_graph=True)
        y.backward()
        y.backward()
    """)
    assert d.kind == "backward_twice" and d.line == 6
    assert d.text.startswith("The backward() (line 5) walked the graph and then freed")
    assert "(line 5)" in d.fix


def test_inplace_modification_of_a_saved_tensor_names_the_line():
    tr, d = _diag("""
        import torch
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        b = a.exp()
        b.mul_(2)       # changes b in place
        b.sum().backward()
    """)
    assert d.kind == "inplace_saved"
    assert "`b.mul_(2)` (line 4)" in d.text and d.line == 4      # the code, not its comment
    # the fix names the snippet's own tensor and call, not a generic y
    assert d.fix.startswith("Use the out-of-place form (b = b.mul(2) instead of b.mul_(2))")
    assert "b = b.clone() before b.mul_(2)" in d.fix
    assert "exp (line 3) saved b" in d.text
    exp = next(o for o in tr.ops if o.name == "exp")
    mul = next(o for o in tr.ops if o.name == "mul_")
    assert d.node_ids == [f"o{exp.id}", f"o{mul.id}"]


def test_the_out_of_place_form_of_what_the_snippet_wrote():
    from graphscope.model.diagnostics import _out_of_place
    assert _out_of_place("b *= 2", "b") == "b = b * 2"
    assert _out_of_place("h.relu_()", "h") == "h = h.relu()"
    assert _out_of_place("b[0] = 1", "b") is None and _out_of_place("c.mul_(2)", "b") is None


def test_integer_tensor_requiring_grad():
    _, d = _diag("""
        import torch
        x = torch.tensor(2, requires_grad=True)
    """)
    assert d.kind == "integer_grad" and "torch.tensor(2.0, requires_grad=True)" in d.fix
    assert "int64" in d.text and d.line == 2


def test_inference_tensor_saved_for_backward():
    # hand-built: under the recorder this snippet currently fails earlier (reported to capture)
    tr = Trace(source="import torch\nwith torch.inference_mode():\n    x = torch.ones(2)\ny = x * w\n")
    tr.apply(P.Region(kind="inference_mode", grad_enabled=False, start_line=2, end_line=3,
                      form="with", label="torch.inference_mode(), lines 2-3"))
    tr.apply(P.TensorInfo(id=0, shape=[2], dtype="float32", created_by=0, name="x"))
    tr.apply(P.Op(id=0, seq=0, name="ones", qualname="torch.ones", line=3, grad_enabled=False,
                  inference=True, inputs=[], outputs=[0], kind="factory"))
    err = P.ErrorInfo("RuntimeError", "Inference tensors cannot be saved for backward. To work "
                      "around you can make a clone to get a normal tensor and use it in autograd.",
                      line=4)
    tr.apply(P.End("error", err))
    d = explain(err, tr)
    assert d.kind == "inference_saved"
    assert "torch.inference_mode(), lines 2-3" in d.text and "no_grad" in d.fix
    assert d.node_ids == ["t0"] and d.line == 4


def test_numpy_on_a_tensor_requiring_grad():
    _, d = _diag("""
        import torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        a = x.numpy()
    """)
    assert d.kind == "numpy_grad" and ".detach().numpy()" in d.fix and d.line == 3


def test_leaf_modified_in_place():
    _, d = _diag("""
        import torch
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        w -= 0.1
    """)
    assert d.kind == "leaf_inplace" and "torch.no_grad()" in d.fix


@pytest.mark.parametrize("err, kind, needle", [
    (P.ErrorInfo("Timeout", "timed out after 5 s"), "timeout", "loop"),
    (P.ErrorInfo("Timeout", f"ran longer than 3 s ({P.AFTER_LAST_LINE}, in what python does "
                 "then)"), "timeout", "thread that never ends"),
    (P.ErrorInfo("Crash", "killed by signal 9 (SIGKILL)"), "crash", "signal 9"),
    (P.ErrorInfo("SyntaxError", "expected ':'", line=3, column=8), "syntax", "line 3, column 8"),
])
def test_run_level_errors(err, kind, needle):
    d = explain(err, Trace(source="x = 1\n"))
    assert d.kind == kind and needle in d.text + d.fix


def test_unknown_error_is_honest():
    tr, d = _diag("""
        import torch
        a = torch.ones(2, 3)
        b = a @ a
    """)
    assert d.kind == "generic" and "no explanation" in d.text and d.fix == ""
    assert d.line == 3


def test_problems_list():
    tr = trace_of(NO_GRAD)
    ps = problems(tr)
    assert ps[0].severity == "error" and ps[0].kind == "error" and ps[0].line == 4
    kinds = [p.kind for p in ps]
    assert "missing_requires_grad" in kinds and "region" in kinds
    region = next(p for p in ps if p.kind == "region")
    assert region.line == 3 and "torch.no_grad(), lines 3-4" in region.message
    assert [p.kind for p in flags(tr)] == kinds[1:]      # the window shows the error itself


def test_detach_and_warnings_in_problems():
    tr = trace_of("""
        import torch
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        c = a.detach() + 1
    """)
    # a worker prints warnings on the snippet's stderr (under pytest they are caught instead)
    tr.apply(P.Output(seq=99, stream="stderr",
                      text='<snippet>:4: UserWarning: careful here\n  warnings.warn("careful here")\n'))
    ps = flags(tr)
    det = next(p for p in ps if p.kind == "detach")
    assert det.line == 3 and "a.detach()" in det.message and det.node_ids
    warn = [p for p in ps if p.kind == "warning"]
    assert len(warn) == 1 and warn[0].message == "UserWarning: careful here" and warn[0].line == 4


def test_branch_directions():
    tr = trace_of(PRACTICE_3.lstrip("\n") + textwrap.dedent("""\
        v = torch.tensor([1.0, 2.0, 3.0])
        w = v * 2 if v.sum() > 5 else v + 2
        n = torch.tensor(1.0)
        while n < 4:
            n = n + 1
        if v.sum() < 0:
            w = -w
        else:
            w = w + 1
    """))
    br = {p.line: p.message for p in flags(tr) if p.kind == "branch"}
    assert set(br) == {4, 11, 13, 15}                    # the print's .item() is no decision
    assert "if y.item() > 1.5" in br[4] and "2.0" in br[4] and "if-branch ran (line 5)" in br[4]
    assert "v.sum() > 5 gave True" in br[11] and "first value" in br[11]
    assert "while n < 4" in br[13] and "ran 3 times" in br[13]
    assert "else-branch ran (line 18)" in br[15]


def test_backward_twice_names_the_pass_that_freed_this_graph_not_the_last():
    # line 7 went through another graph; line 5 freed the exp this root needs
    _, d = _diag("""
        import torch
        x = torch.randn(3, requires_grad=True)
        y = x.exp()
        a = y.sum()
        a.backward()
        b = (x * 3).sum()
        b.backward()
        c = (y * 2).sum()
        c.backward()
    """)
    assert d.kind == "backward_twice"
    assert "(line 5)" in d.text and "(line 5)" in d.fix


def test_two_plain_leaves_a_backward_needed_are_one_row_saying_one_is_enough():
    """``(w * x).sum().backward()`` with both plain: a row each told the student to
    add requires_grad=True to the data x as well (first-time user review)."""
    from graphscope.model.diagnostics import problems
    tr = trace_of("""
        import torch
        w = torch.tensor([1.0, 2.0])
        x = torch.tensor([3.0, 4.0])
        loss = (w * x).sum()
        loss.backward()
    """)
    rows = [p for p in problems(tr) if p.kind == "missing_requires_grad"]
    assert len(rows) == 1
    assert "w and x were created" in rows[0].message and "usually not the data" in rows[0].message
    assert len(rows[0].node_ids) == 2


def test_fx_refusing_a_branch_is_explained():
    """The generic words said "the graph shows everything the run did" over an
    empty graph (visual review of static-fx-branch)."""
    tr, d = _diag("""
        import torch
        import torch.fx

        def f(x):
            if x.sum() > 0:
                return x * 2
            return x - 10

        torch.fx.symbolic_trace(f)
    """)
    assert tr.error.type == "TraceError"
    assert d.kind == "symbolic_branch" and "stand-ins" in d.text and "concrete_args" in d.fix
