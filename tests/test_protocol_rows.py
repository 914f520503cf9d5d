"""The event pipe's wire format (NOTE [rows] in protocol.py): what the worker's
encoder writes, the runner's batch decoder and protocol.decode read back."""
from __future__ import annotations

import math

from graphscope import protocol as P
from graphscope.capture.worker import _fast_encoder
from graphscope.runner import _decode_lines

SUMMARY = {"value": None, "stats": {"numel": 100, "min": -1.5, "max": float("inf"),
                                    "mean": float("nan"), "std": 0.25},
           "shape": [10, 10], "dtype": "float32"}

MESSAGES = [
    P.TensorInfo(3, [10, 10], "float32", "cpu", True, False, "MulBackward0", "y", None,
                 SUMMARY["stats"], None, None, 2, False, True, 1, 7),
    P.TensorUpdate(3, {"name": "h", "grad": [[1.0, 2.0]]}),
    P.Op(2, 7, "mul", "torch.Tensor.mul", 4, True, [1, 0], [3], "MulBackward0", "0.lin",
         False, "inplace", {"1": [0, 1]}, ["2.0"]),
    P.ModuleCall(5, "encoder.layers.1", "Linear", 3, 2, 4, [1], [3]),
    P.BackwardCall(0, 9, "backward", 6, [3], [], True, False),
    P.BackwardStep(0, 10, 0, "MulBackward0", 4, 2, 3, [5, 6], [SUMMARY], [SUMMARY, None],
                   None, None),
    P.Region("no_grad", False, 3, 4, "with", "torch.no_grad(), lines 3-4"),
    P.Branch(0, 11, 5, "bool", 3, True, 8),
    P.Output(12, "stdout", "héllo ✓\n"),
    P.Truncated("ops", 10, "Recording stopped"),
    P.End("error", P.ErrorInfo("RuntimeError", "boom", 5, None, "Traceback", 2, 3), None, 0.5),
    P.Ready(123, "2.13.0", "3.11.7"),
]


def _equal(a, b) -> bool:
    # NaN != NaN: compare the JSON texts of both
    return P.encode(a) == P.encode(b)


def test_every_message_round_trips_through_the_pipe_format():
    enc = _fast_encoder()
    lines = [enc(m) for m in MESSAGES]
    assert lines[2].startswith(b'["op",2,7,"mul"')          # a row, not an object
    assert lines[-2].startswith(b'{"t":"end"')               # End nests a record
    back = _decode_lines(b"".join(lines).rstrip(b"\n"))
    assert len(back) == len(MESSAGES)
    for m, b in zip(MESSAGES, back):
        assert type(b) is type(m) and _equal(m, b), m
        assert _equal(P.decode(enc(m)), m)
    assert math.isnan(back[5].grad_outputs[0]["stats"]["mean"])


def test_rows_from_a_newer_worker_and_lines_that_are_not_messages():
    row = b'["op",1,1,"add","torch.add",2,true,[0],[1],null,null,false,"call",null,null,"new"]'
    junk = b'["nosuch",1]\n[]\n[1,2]\n{"t":"op"}\nnot json\n"text"'
    got = _decode_lines(row + b"\n" + junk)
    assert len(got) == 1 and got[0].name == "add" and got[0].scalars is None
    for bad in (b"[]", b'["nosuch", 1]', b'["op", 1]'):
        try:
            P.decode(bad)
        except P.ProtocolError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
