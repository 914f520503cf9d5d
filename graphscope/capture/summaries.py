"""Value summaries of tensors: the whole value when small, statistics above.

A Summary (see protocol.Summary) is ``{"value", "stats", "shape", "dtype"}``:
``value`` is the nested list (or a number for 0-d) when ``numel <= limit``,
else None; ``stats`` is ``{numel, min, max, mean, std}`` otherwise. Complex
values are written as strings (``"(1+2j)"``) so a trace stays plain JSON;
NaN and inf stay floats (the protocol writes them with ``allow_nan``).
Everything here runs with grad disabled and never keeps the tensor.
"""
from __future__ import annotations

import math
import struct
from weakref import ref as _ref

import torch

_float_types = (torch.float16, torch.bfloat16)
_complex_types = frozenset({torch.complex32, torch.complex64, torch.complex128})
_dtype_names: dict = {}


def dtype_name(dtype) -> str:
    try:
        return _dtype_names[dtype]
    except KeyError:
        n = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
        return n


def value_of(t, limit: int):
    """(value, stats) of ``t``: exactly one of them is not None (both None if unreadable).

    ``tolist`` and the reductions below run on ``t.detach()`` (or read values
    only), so no autograd node is made and no no_grad context is needed: this
    is on the per-op path.
    """
    try:
        if t.numel() <= limit:
            v = t.tolist()
            if t.dtype in _complex_types:
                v = _complex_to_text(v)
            return v, None
        return None, stats_of(t)
    except Exception:  # meta / sparse / exotic tensors: no value, never an error
        return None, None


# Above this many elements the spread is computed in two vectorised passes
# (NOTE [stats]); below it torch.std_mean's one call is cheaper.
_TWO_PASS_FROM = 1024
_f32 = struct.Struct("f")


def stats_of(t) -> dict | None:
    """``{numel, min, max, mean, std}`` of a tensor (std with Bessel's correction).

    NOTE [stats]: ``torch.std_mean`` runs a scalar Welford loop in double,
    about 5 ns per element here: 0.1 ms for a 128x128 weight, more than the
    op that made it. Above ``_TWO_PASS_FROM`` elements the mean and the sum of
    squared deviations are computed in double with vectorised kernels (sum,
    subtract, norm: 8x faster on a million elements) and rounded to the
    tensor's own precision: for float32 the same numbers as ``std_mean``
    (torch also accumulates in double and rounds), for double ones equal
    to about 1e-15 relative (two passes against Welford).
    """
    try:
        d = t.detach()
        n = d.numel()
        if n == 0:
            return {"numel": 0, "min": None, "max": None, "mean": None, "std": None}
        dt = d.dtype
        plan = _plans.get(dt)
        if plan is None:
            plan = _plans[dt] = _plan(d)
        if plan is _ABS:
            d = d.abs()
        elif plan is not None:
            d = d.to(plan)
        lo, hi = torch.aminmax(d)
        if n > _TWO_PASS_FROM:
            dd = d if d.dtype == torch.float64 else d.double()
            mean = dd.sum().item() / n
            std = _vector_norm(dd - mean).item() / math.sqrt(n - 1)
            if d.dtype == torch.float32:
                mean, std = _f32.unpack(_f32.pack(mean))[0], _f32.unpack(_f32.pack(std))[0]
        elif n > 1:
            std, mean = torch.std_mean(d)
            std, mean = std.item(), mean.item()
        else:
            mean, std = d.reshape(()).item(), 0.0
        return {"numel": n, "min": lo.item(), "max": hi.item(), "mean": mean, "std": std}
    except Exception:
        return None


_ABS = "abs"
_plans: dict = {}   # dtype -> None (as is) | dtype to convert to | _ABS (complex)
_vector_norm = torch.linalg.vector_norm


def _plan(d):
    if d.dtype in _complex_types:
        return _ABS
    if d.dtype == torch.bool or not d.is_floating_point():
        return torch.float64
    if d.dtype in _float_types:
        return torch.float32
    return None


def summary(t, limit: int) -> dict | None:
    """Summary dict of a tensor (or None for a non-tensor)."""
    if not isinstance(t, torch.Tensor):
        return None
    value, stats = value_of(t, limit)
    return {"value": value, "stats": stats, "shape": list(t.shape),
            "dtype": dtype_name(t.dtype)}


def _complex_to_text(v):
    if isinstance(v, list):
        return [_complex_to_text(x) for x in v]
    return str(v)


def finite(x) -> bool:
    return isinstance(x, float) and math.isfinite(x)


class SummaryMemo:
    """Summaries computed once per tensor and version, shared by whoever asks.

    The same tensor is summarised from several places: a gradient a node sends
    on is, unchanged, the one the next node receives and often becomes the
    leaf's ``.grad``, which the optimizer then reads (a new TensorInfo) and
    the session reports at the end. PyTorch hands out the same Python object
    for a tensor while it lives, so the memo is keyed by ``id`` and checked
    with a weak reference (identity, never keeping the tensor alive) and the
    version counter (an in-place change makes a new summary). Records that
    share a summary share the dict: records are immutable (NOTE [records]).
    """

    __slots__ = ("limit", "_memo")
    _MAX = 4096

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._memo: dict = {}   # id(t) -> (weakref, version, value, stats, summary or None)

    def value_of(self, t, small_too: bool = True):
        """``value_of(t, limit)``; remembered only for big tensors unless ``small_too``
        (for a small one ``tolist`` costs about what the memo does)."""
        if not small_too:
            try:
                if t.numel() <= self.limit:
                    return value_of(t, self.limit)
            except Exception:
                return None, None
        try:
            v = t._version
        except Exception:  # inference tensors have no version counter
            return value_of(t, self.limit)
        memo = self._memo
        e = memo.get(id(t))
        if e is not None and e[1] == v and e[0]() is t:
            return e[2], e[3]
        value, stats = value_of(t, self.limit)
        if small_too or stats is not None:
            if len(memo) >= self._MAX:
                memo.clear()
            memo[id(t)] = (_ref(t), v, value, stats, None)
        return value, stats

    def summary(self, t) -> dict | None:
        """``summary(t, limit)`` (None for a non-tensor)."""
        if not isinstance(t, torch.Tensor):
            return None
        try:
            v = t._version
        except Exception:
            return summary(t, self.limit)
        memo = self._memo
        e = memo.get(id(t))
        if e is not None and e[1] == v and e[0]() is t:
            if e[4] is not None:
                return e[4]
            value, stats = e[2], e[3]
        else:
            value, stats = value_of(t, self.limit)
        s = {"value": value, "stats": stats, "shape": list(t.shape),
             "dtype": dtype_name(t.dtype)}
        if len(memo) >= self._MAX:
            memo.clear()
        memo[id(t)] = (_ref(t), v, value, stats, s)
        return s
