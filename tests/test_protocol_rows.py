"""The event pipe's wire format (NOTE [rows], NOTE [frames] in protocol.py): what
the worker's encoder writes and the runner's frame decoder reads back, and the
JSON rows protocol.decode reads."""
from __future__ import annotations

import marshal
import math

import pytest

from graphscope import protocol as P
from graphscope.capture.worker import _dumps, _marshallable, _row_maker


def _fast_encoder():
    """One message as a frame of its own (the worker writes batch frames,
    ``encode_rows``; the reader takes both)."""
    row = _row_maker()

    def encode(msg) -> bytes:
        b = _dumps(_marshallable(row(msg)), P.MARSHAL_VERSION)
        return P.FRAME_HEAD.pack(P.FRAME_MAGIC, len(b)) + b

    return encode

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
    frames = [enc(m) for m in MESSAGES]
    assert frames[2][0] == P.FRAME_MAGIC
    assert type(marshal.loads(frames[2][5:])) is tuple                      # a row
    assert type(marshal.loads(frames[-2][5:])) is dict                      # End nests a record
    buf = bytearray(b"".join(frames))
    back = P.decode_frames(buf)
    assert buf == b"" and len(back) == len(MESSAGES)
    for m, b in zip(MESSAGES, back):
        assert type(b) is type(m) and _equal(m, b), m
        assert b == m or m is MESSAGES[0] or m is MESSAGES[5]     # (NaN != NaN)
        assert type(getattr(b, "inputs", [])) is list              # lists stay lists
    assert math.isnan(back[5].grad_outputs[0]["stats"]["mean"])


def test_frames_arrive_in_pieces():
    """A read may end anywhere: inside the length, inside the message."""
    enc = _fast_encoder()
    data = b"".join(enc(m) for m in MESSAGES)
    for step in (1, 3, 7, 64):
        buf, got = bytearray(), []
        for i in range(0, len(data), step):
            buf += data[i:i + step]
            got += P.decode_frames(buf)
        assert [type(m) for m in got] == [type(m) for m in MESSAGES] and buf == b""


def test_values_marshal_does_not_take_go_as_json_would():
    import numpy as np
    import torch
    enc = _fast_encoder()
    stats = {"numel": 4, "min": np.float32(1.5), "max": torch.Size([2, 2]), "mean": 0.0, "std": 0.0}
    msg = P.TensorInfo(1, [4], "float32", "cpu", False, True, None, "x", None, stats,
                       None, None, None, False, False, 0, 1)
    (back,) = P.decode_frames(bytearray(enc(msg)))
    assert back.stats == {"numel": 4, "min": 1.5, "max": [2, 2], "mean": 0.0, "std": 0.0}


def test_frames_that_are_not_messages_and_a_garbled_stream():
    enc = _fast_encoder()
    newer = ("op", 1, 1, "add", "torch.add", 2, True, [0], [1], None, None, False, "call",
             None, None, None, None, "a field from a newer worker")
    junk = [("nosuch", 1), (), (1, 2), {"t": "op"}, "text", [1, 2]]
    data = bytearray()
    for obj in [newer] + junk:
        b = marshal.dumps(obj)
        data += P.FRAME_HEAD.pack(P.FRAME_MAGIC, len(b)) + b
    data += P.FRAME_HEAD.pack(P.FRAME_MAGIC, 3) + b"\xff\xff\xff"    # not marshal at all
    data += enc(MESSAGES[-1])
    got = P.decode_frames(data)
    assert [m.T for m in got] == ["op", "ready"] and got[0].name == "add"
    # a stray write (no magic byte), even a short one, ends the stream; what came
    # before it is kept
    for stray in (b"hi 1\n", b"\xa7\xff\xff\xff\x7f" + b"x" * 10):
        with pytest.raises(P.ProtocolError) as info:
            P.decode_frames(bytearray(enc(MESSAGES[2]) + stray + enc(MESSAGES[3])))
        assert [m.T for m in info.value.messages] == ["op"]


def test_the_run_message_is_a_json_line():
    run = P.Run(source="x = 1\n", filename="a.py")
    assert P.decode(P.encode(run)) == run
    for bad in (b"[]", b'["op", 1]', b"not json", b'{"t": "nosuch"}'):
        with pytest.raises(P.ProtocolError):
            P.decode(bad)


def test_batch_frames_carry_many_messages_and_mix_with_single_ones():
    """NOTE [event batching]: the worker writes one frame per batch of rows."""
    import torch
    from graphscope.capture.worker import _row_maker, encode_rows
    row = _row_maker()
    odd = P.TensorInfo(1, [4], "float32", "cpu", False, True, None, "x", None,
                       {"numel": 4, "min": 1.5, "max": torch.Size([2, 2]), "mean": 0.0, "std": 0.0},
                       None, None, None, False, False, 0, 1)
    batch = encode_rows([row(m) for m in MESSAGES[:6]] + [row(odd)])   # one not marshallable
    assert batch[0] == P.FRAME_BATCH and type(marshal.loads(batch[5:])) is list
    data = batch + _fast_encoder()(MESSAGES[6]) + encode_rows([row(m) for m in MESSAGES[7:]])
    for step in (1, 5, 64, len(data)):
        buf, got = bytearray(), []
        for i in range(0, len(data), step):
            buf += data[i:i + step]
            got += P.decode_frames(buf)
        assert buf == b""
        assert [type(m) for m in got] == [type(m) for m in MESSAGES[:6]] + [P.TensorInfo] + [
            type(m) for m in MESSAGES[6:]]
        assert got[6].stats["max"] == [2, 2]
        for m, b in zip(MESSAGES[:6] + MESSAGES[6:], got[:6] + got[7:]):
            assert _equal(m, b), m


def test_a_batch_given_at_once_is_written_as_the_messages_one_by_one():
    """EventWriter.emit_many (HeldEmit's flushed batches) writes what emit of each
    would: the same messages in the same order, a finished line of output and the
    Outcome sent at once."""
    import os
    from graphscope.capture.worker import EventWriter
    msgs = [m for m in MESSAGES if type(m) not in (P.End, P.Ready)]
    outcome = P.Outcome("ok", None, None, 0.1)

    written = _written

    def one(wr):
        for m in msgs + [outcome]:
            wr(m)

    def many(wr):
        wr.emit_many(msgs[:3])
        wr.emit_many(msgs[3:] + [outcome])
    a, b = written(one), written(many)
    assert len(a) == len(b) == len(msgs) + 1
    assert all(type(x) is type(y) and _equal(x, y) for x, y in zip(a, b))
    # a finished line makes the batch go out at once, as emit does
    r, w = os.pipe()
    try:
        wr = EventWriter(w)
        wr._last_flush = float("inf")          # (the clock never says "due")
        wr.emit_many([P.Output(1, "stdout", "no end")])
        assert wr._rows
        wr.emit_many([P.Output(2, "stdout", "line\n")])
        assert not wr._rows
    finally:
        os.close(r)
        os.close(w)


def test_a_batch_interrupted_while_its_rows_are_made_keeps_the_rows_made():
    """Code review: a stop's KeyboardInterrupt while emit_many made the rows of a
    flushed batch lost the whole batch (HeldEmit had popped it); emit loses one."""
    msgs = [P.Output(i, "stdout", f"{i}") for i in range(20)]

    def feed(wr):
        made, count = wr._row, [0]

        def row(m):
            count[0] += 1
            if count[0] == 5:
                raise KeyboardInterrupt
            return made(m)
        wr._row = row
        with pytest.raises(KeyboardInterrupt):
            wr.emit_many(msgs)
    assert [m.text for m in _written(feed)] == ["0", "1", "2", "3"]


def _written(feed) -> list:
    """The messages an EventWriter on a pipe wrote, ``feed(writer)`` then closed."""
    import os
    from graphscope.capture.worker import EventWriter
    r, w = os.pipe()
    try:
        wr = EventWriter(w)
        feed(wr)
        wr.close()
        os.close(w)
        data = bytearray()
        while chunk := os.read(r, 1 << 16):
            data += chunk
    finally:
        os.close(r)
    return P.decode_frames(data)
