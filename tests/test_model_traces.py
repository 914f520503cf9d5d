"""Traces from real runs for the model tests (tests/test_model_*.py), plus checks
that the capture gives the model what it relies on.

The snippets run in this process through ``capture.session.run_snippet`` (the
same code the worker runs), which is fast once torch is imported; the model
under test never imports torch itself.
"""
import textwrap

from graphscope import protocol as P
from graphscope.model.trace import Trace


def run_messages(source: str):
    """(messages in emitted order, End) of one real run of ``source``."""
    from graphscope.capture.session import run_snippet
    source = textwrap.dedent(source).lstrip("\n")
    msgs = []
    end = run_snippet(P.Run(source=source), msgs.append)
    return source, msgs, end


def trace_of(source: str) -> Trace:
    source, msgs, end = run_messages(source)
    tr = Trace(source=source)
    tr.extend(msgs)
    tr.apply(end)
    return tr


NO_GRAD = """
import torch
x = torch.tensor([1.0, 2.0], requires_grad=True)
with torch.no_grad():
    y = x * 2
z = y.sum()
z.backward()
"""

# problem-set practice 3: y = x * 2 is 2.0 > 1.5, so z = y * 3 and x.grad is 6.0
PRACTICE_3 = """
import torch
x = torch.tensor(1.0, requires_grad=True)
y = x * 2
if y.item() > 1.5:
    z = y * 3
else:
    z = y * 4
z.backward()
print(x.grad.item())
"""

MISSING_RG = """
import torch
x = torch.tensor(2.0)
y = x * 3
z = y ** 2
z.backward()
print(x.grad)
"""


def test_messages_arrive_in_seq_order_with_tensor_info_before_its_op():
    # graph.py NOTE [step numbering] relies on this order
    _, msgs, end = run_messages(NO_GRAD)
    seqs = [m.seq for m in msgs if m.T in ("op", "backward_call", "backward")]
    assert seqs == sorted(seqs)
    seen = set()
    for m in msgs:
        if m.T == "tensor":
            seen.add(m.id)
        if m.T == "op":
            assert set(m.outputs) <= seen
    assert end.status == "error"


def test_missing_requires_grad_run_raises_before_print():
    tr = trace_of(MISSING_RG)
    assert tr.error.type == "RuntimeError"
    assert "does not require grad" in tr.error.message
    assert tr.stdout == ""
