"""Value summaries of tensors: the whole value when small, statistics above.

A Summary (see protocol.Summary) is ``{"value", "stats", "shape", "dtype"}``:
``value`` is the nested list (or a number for 0-d) when ``numel <= limit``,
else None; ``stats`` is ``{numel, min, max, mean, std}`` otherwise, with
``hist`` (``{"edges", "counts"}``) for floating tensors as first seen and
final gradients, within a time budget (NOTE [histograms]). Complex
values are written as strings (``"(1+2j)"``) so a trace stays plain JSON;
NaN and inf stay floats (the protocol writes them with ``allow_nan``).
Everything here runs with grad disabled and never keeps the tensor.
"""
from __future__ import annotations

import math
import struct
from time import perf_counter as _clock
from weakref import ref as _ref

import torch

from graphscope.capture.tensor_facts import shape_of

_float_types = (torch.float16, torch.bfloat16)
_complex_types = frozenset({torch.complex32, torch.complex64, torch.complex128})
_dtype_names: dict = {}


def dtype_name(dtype) -> str:
    try:
        return _dtype_names[dtype]
    except KeyError:
        n = _dtype_names[dtype] = str(dtype).removeprefix("torch.")
        return n


def value_of(t, limit: int, hist: bool = False):
    """(value, stats) of ``t``: exactly one of them is not None (both None if unreadable).
    ``hist``: the stats of a floating tensor carry a histogram (NOTE [histograms]).

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
        return None, stats_of(t, hist)
    except Exception:  # meta / sparse / exotic tensors: no value, never an error
        return None, None


# Above this many elements the spread is computed in two vectorised passes
# (NOTE [stats]); below it torch.std_mean's one call is cheaper.
_TWO_PASS_FROM = 1024
_f32 = struct.Struct("f")


def stats_of(t, hist: bool = False) -> dict | None:
    """``{numel, min, max, mean, std}`` of a tensor (std with Bessel's correction),
    plus ``hist`` for a floating tensor when asked (NOTE [histograms]).

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
        u = _distinct(d)
        if u is not d:
            st = stats_of(u, hist)
            return None if st is None else _repeated(st, n, d.dtype == torch.float32)
        dt = d.dtype
        plan = _plans.get(dt)
        if plan is None:
            plan = _plans[dt] = _plan(d)
        if plan is _ABS:
            d = d.abs()
        elif plan is not None:
            d = d.to(plan)
        lo, hi = torch.aminmax(d)
        if n > _CHUNKED_FROM:
            mean, std = _chunked_mean_std(d, n)
            if d.dtype == torch.float32:
                mean, std = _as_f32(mean), _as_f32(std)
        elif n > _TWO_PASS_FROM:
            dd = d if d.dtype == torch.float64 else d.double()
            mean = dd.sum().item() / n
            # the double copy is ours: deviations in place (d itself is still needed)
            dev = dd - mean if dd is d else dd.sub_(mean)
            std = _vector_norm(dev).item() / math.sqrt(n - 1)
            if d.dtype == torch.float32:
                mean, std = _as_f32(mean), _as_f32(std)
        elif n > 1:
            std, mean = torch.std_mean(d)
            std, mean = std.item(), mean.item()
        else:
            mean, std = d.reshape(()).item(), 0.0
        lo, hi = lo.item(), hi.item()
        if mean != mean and lo == lo and hi == hi:
            # an inf and no NaN: std_mean's Welford update gives NaN (inf - inf)
            # where the mean is +-inf (or NaN for both): sum / n, as the batch does
            mean = d.double().sum().item() / n
        st = {"numel": n, "min": lo, "max": hi, "mean": mean, "std": std}
        if hist and (plan is None or dt in _float_types):   # floating dtypes only
            h = _hist(d, lo, hi)
            if h is not None:
                st["hist"] = h
        return st
    except Exception:
        return None


HIST_BINS = 20
HIST_TIME = (0.0002, 0.01)   # (grace s, share of run time) for histograms (NOTE [histograms])


def _hist(d, lo: float, hi: float) -> dict | None:
    """``{"edges": [21 floats], "counts": [20 ints]}`` of the finite values of floating ``d``.

    NOTE [histograms]: the inspector draws this for a tensor too big to keep
    whole. Bin index = trunc((x - lo) * bins / (hi - lo)), then one
    ``bincount`` (up to ``_HIST_ONE_CALL`` elements ``torch.histogram``'s single
    call): 2-4x cheaper than ``torch.histc`` here (20 us for 4k elements, 3 ms
    for a million), the same counts. It
    is still about as much as the statistics (30-40 us for a 8x16x64
    activation: the floor is the per-call cost of five torch calls), so it
    is made only for what the inspector shows as a tensor's own value:
    tensors as first seen and final ``.grad`` (SummaryMemo.value_of), never
    for the gradients of each backward step (SummaryMemo.summary). And
    within a time budget: histograms of tensors as first seen stop while
    their total time is above ``HIST_TIME`` (a grace of 0.2 ms plus 1% of the
    run so far), so they never cost more than that however many big tensors
    a run makes (a 200-step training loop makes thousands: histograms for
    all of them were a third of its capture time). Which tensors of a long
    run get one thus depends on timing; the first ones always do, and final
    ``.grad`` always does. NaN and inf are left out of the counts (they have no bin); a
    tensor with no finite value has no histogram.
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        d = d[torch.isfinite(d)]
        if d.numel() == 0:
            return None
        a, b = torch.aminmax(d)
        lo, hi = a.item(), b.item()
    bins = HIST_BINS
    if hi == lo:
        return {"edges": [lo - 0.5, lo + 0.5], "counts": [d.numel()]}
    width = (hi - lo) / bins
    if d.numel() <= _HIST_ONE_CALL:
        counts = [int(c) for c in torch.histogram(d, bins, range=(lo, hi))[0].tolist()]
    else:
        # trunc((x - lo) / width) is 0..bins; ``bins`` only for the maximum, folded
        # into the last bin as torch.histogram does (cheaper than a clamp pass)
        idx = (d - lo).mul_(1.0 / width).to(torch.int32)
        counts = torch.bincount(idx.reshape(-1), minlength=bins + 1).tolist()
        counts[bins - 1] += sum(counts[bins:])
        del counts[bins:]
    return {"edges": [lo + i * width for i in range(bins)] + [hi], "counts": counts}


_HIST_ONE_CALL = 1024   # up to here torch.histogram's single call is the cheaper


_ABS = ABS = "abs"
_plans: dict = {}   # dtype -> None (as is) | dtype to convert to | _ABS (complex)
_vector_norm = torch.linalg.vector_norm

# NOTE [stats of a big tensor]: the two passes of NOTE [stats] on a whole double
# copy (and a second one for the deviations) cost a big tensor's allocation and
# first touch: 25 ms of statistics for a 5,000,000-element op taking 2.3 ms, and
# a loop over 20 MB tensors ran 4x slower than under python (fidelity review).
# Above ``_CHUNKED_FROM`` elements the same two passes go through one reused
# double buffer of ``_CHUNK`` elements (it stays in the cache): 5 ms, the same
# double-precision arithmetic, summed per chunk (equal to about 1e-14 relative,
# the same float32 numbers after rounding).
_CHUNK = 1 << 16
_CHUNKED_FROM = 4 * _CHUNK


def _chunked_mean_std(d, n: int) -> tuple:
    """(mean, std with Bessel's correction) of floating ``d`` of ``n`` > 1 elements,
    in double, a chunk at a time (NOTE [stats of a big tensor])."""
    flat = d.reshape(-1)
    chunks = flat.split(_CHUNK)
    buf = torch.empty(_CHUNK, dtype=torch.float64)
    total = torch.zeros((), dtype=torch.float64)
    for c in chunks:
        b = buf[:c.numel()]
        b.copy_(c)
        total += b.sum()
    mean = total.item() / n
    sq = torch.zeros((), dtype=torch.float64)
    for c in chunks:
        b = buf[:c.numel()]
        b.copy_(c)
        b.sub_(mean)
        sq += torch.dot(b, b)
    return mean, math.sqrt(sq.item() / (n - 1))


HALF_TYPES = _float_types


def plan_of(dtype):
    """How stats read a dtype: None (as is), a dtype to convert to, or ``ABS``."""
    try:
        return _plans[dtype]
    except KeyError:
        p = _plans[dtype] = _plan(torch.empty(0, dtype=dtype))
        return p


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
    return {"value": value, "stats": stats, "shape": shape_of(t),
            "dtype": dtype_name(t.dtype)}


def _hist_of(t, st: dict) -> dict | None:
    """Histogram of ``t`` given its stats (min, max), or None when it has none."""
    try:
        d = t.detach()
        if not d.is_floating_point() or st.get("min") is None:
            return None
        u = _distinct(d)       # (before .float(): of a broadcast view, a full copy)
        if u.dtype in _float_types:
            u = u.float()
        h = _hist(u, st["min"], st["max"])
        if h is not None and u is not d:
            rep = d.numel() // u.numel()
            h["counts"] = [c * rep for c in h["counts"]]
        return h
    except Exception:
        return None


# NOTE [broadcast views]: ``x[:, None].expand(30000, 30000)`` is 9e8 elements
# in the memory of 30,000: a stride of 0 repeats each element along that
# dimension. Its statistics were computed over all 9e8 (``aminmax``, a double
# copy: 21 s and 7 GB where the snippet took 2.5 s and 230 MB; capture
# review). Along a stride-0 dimension every element is repeated alike, so
# min, max and mean are those of one slice, the sum of squared deviations is
# that slice's times the repeats, and histogram counts are the slice's times
# the repeats.
def _as_f32(x: float) -> float:
    """``x`` rounded to float32's precision."""
    return _f32.unpack(_f32.pack(x))[0]


def _distinct(d):
    """``d`` with each stride-0 dimension narrowed to one element, or ``d``."""
    if d.layout != torch.strided:
        return d
    strides = d.stride()
    if 0 not in strides:
        return d
    for dim, (size, stride) in enumerate(zip(d.shape, strides)):
        if stride == 0 and size > 1:
            d = d.narrow(dim, 0, 1)
    return d


def _repeated(st: dict, n: int, f32: bool = False) -> dict:
    """The statistics ``st`` of a tensor's distinct slice as those of all ``n``
    elements (NOTE [broadcast views])."""
    m = st["numel"]
    rep = n // m
    std = st["std"]
    if std is not None:
        ssd = std * std * (m - 1) if m > 1 else 0.0
        std = math.sqrt(rep * ssd / (n - 1)) if n > 1 else 0.0
        if f32:   # rounded to the tensor's precision, as stats_of rounds its own
            std = _as_f32(std)
    out = dict(st, numel=n, std=std)
    if "hist" in st:
        out["hist"] = dict(st["hist"], counts=[c * rep for c in st["hist"]["counts"]])
    return out


def _complex_to_text(v):
    if isinstance(v, list):
        return [_complex_to_text(x) for x in v]
    return str(v)


def finite(x) -> bool:
    return isinstance(x, float) and math.isfinite(x)


# NOTE [while the snippet profiles]: reading a tensor's values runs aten ops
# (tolist's resolve_conj, the statistics' clone and copy_), and inside the snippet's
# own ``torch.profiler.profile()`` block they showed in its table beside its ops.
# While torch's profiler is on, no values or statistics are read: the trace has
# the tensors' shapes and dtypes, and the profile has the snippet's ops only.
_profiling = torch._C._autograd._profiler_enabled


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

    __slots__ = ("limit", "_memo", "_blocks", "hist_time", "_hist_spent", "_t0", "batch")
    _MAX = 4096

    def __init__(self, limit: int, hist_time: tuple | None = None, batch=None) -> None:
        self.limit = limit
        # a deferred_stats.StatsBatch: stats of mid-sized tensors are filled later
        # (NOTE [deferred stats]); None: at once
        self.batch = batch
        self._memo: dict = {}   # id(t) -> (weakref, version, value, stats, summary or None)
        # NOTE [same elements]: (data_ptr, numel, dtype) -> (weakref, version, stats)
        self._blocks: dict = {}
        # NOTE [histograms]: (grace seconds, share of the run) histograms may take;
        # None: none except final gradients
        self.hist_time = hist_time
        self._hist_spent = 0.0
        self._t0 = _clock()

    def value_of(self, t, small_too: bool = True, final: bool = False, hist: bool = True):
        """``value_of(t, limit)``; remembered only for big tensors unless ``small_too``
        (for a small one ``tolist`` costs about what the memo does). Stats of a
        floating tensor carry a histogram while the run's time budget lasts, and
        always when ``final`` (NOTE [histograms]); never with ``hist`` False (a
        value after an in-place change: an optimizer's updates would spend the
        budget meant for tensors as first seen)."""
        if _profiling():
            return None, None   # NOTE [while the snippet profiles]
        if not small_too:
            try:
                if t.numel() <= self.limit:
                    return value_of(t, self.limit)
            except Exception:
                return None, None
        try:
            v = t._version
        except Exception:  # inference tensors have no version counter
            value, stats = value_of(t, self.limit)
            return value, (self._with_hist(t, stats, final) if hist else stats)
        memo = self._memo
        e = memo.get(id(t))
        if e is not None and e[1] == v and e[0]() is t:
            st = e[3]
            if hist and st is not None and "hist" not in st:
                # first summarised by a backward step, without histogram: add it now
                # (a new dict: the old one may be in a record already, NOTE [records])
                st2 = self._with_hist(t, st, final)
                if st2 is not st:
                    memo[id(t)] = (e[0], v, e[2], st2, e[4])
                    st = st2
            return e[2], st
        value, stats = self._value_of(t, final if hist else None)
        if hist and stats is not None:
            stats = self._with_hist(t, stats, final)
        if small_too or stats is not None:
            if len(memo) >= self._MAX:
                memo.clear()
            memo[id(t)] = (_ref(t), v, value, stats, None)
        return value, stats

    def forget_all(self) -> None:
        """Drop everything remembered: an in-place change went through a tensor
        that shares memory with others but not their version counter (``.data``
        of a ``.grad``, zeroed in place: ``w.grad.data.zero_()``), so no version
        check can tell which entries went stale. Cheap: in-place changes are
        rare within a backward pass, where the memo does its work."""
        self._memo.clear()
        self._blocks.clear()

    def forget(self, t) -> None:
        """Drop what is remembered of ``t``: its values changed without its version
        counter moving (``t.data = other``)."""
        self._memo.pop(id(t), None)

    def _hist_wanted(self, final: bool) -> bool:
        """Whether a histogram is wanted now (NOTE [histograms]: the time budget)."""
        if final:
            return True
        ht = self.hist_time
        if ht is None:
            return False
        spent = self._hist_spent
        if self.batch is not None:
            spent += self.batch.hist_seconds
        return spent <= ht[0] + ht[1] * (_clock() - self._t0)

    def _with_hist(self, t, stats, final: bool):
        """``stats`` with a histogram added (a new dict) if it is wanted and there is one."""
        if stats is None or "hist" in stats:
            return stats
        if "min" not in stats:   # still pending (NOTE [deferred stats])
            batch = self.batch
            if batch is None or batch.will_hist(stats) or not self._hist_wanted(final):
                return stats
            return batch.add_like(stats, stats["numel"], True) or stats
        if stats["min"] is None or not self._hist_wanted(final):
            return stats
        now = _clock()
        h = _hist_of(t, stats)
        self._hist_spent += _clock() - now
        return stats if h is None else dict(stats, hist=h)

    def summary(self, t) -> dict | None:
        """``summary(t, limit)`` (None for a non-tensor)."""
        if not isinstance(t, torch.Tensor):
            return None
        if _profiling():   # NOTE [while the snippet profiles]
            return {"value": None, "stats": None, "shape": shape_of(t),
                    "dtype": dtype_name(t.dtype)}
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
            value, stats = self._value_of(t)
        s = {"value": value, "stats": stats, "shape": shape_of(t),
             "dtype": dtype_name(t.dtype)}
        if len(memo) >= self._MAX:
            memo.clear()
        memo[id(t)] = (_ref(t), v, value, stats, s)
        return s

    def _value_of(self, t, hist=None):
        """``value_of(t, limit)``, the stats of a big tensor shared with any tensor
        over the same elements; pending stats from the batch when there is one
        (NOTE [deferred stats]), with a histogram if ``hist`` is not None and
        ``_hist_wanted(hist)``.

        NOTE [same elements]: a backward pass hands the same gradient on as
        views: the weight gradient of ``addmm`` comes out of ``TBackward`` as
        the transpose of the one ``AddmmBackward`` sent, a different Python
        object (so ``_memo`` misses) over the same memory. Min, max, mean and
        std do not depend on the order of the elements, and torch reduces a
        dense tensor in memory order whatever its strides, so the statistics
        are the same numbers. A tensor is dense (``_dense``) when its elements
        fill ``numel`` consecutive slots from ``data_ptr`` (strides are never
        negative, so ``data_ptr`` is the lowest); two dense tensors with the
        same ``data_ptr``, ``numel`` and dtype hold the same elements. The
        entry is trusted only while the tensor it was computed from lives
        (so the memory is not reused) and neither version changed (views
        share the version counter).
        """
        try:
            n = t.numel()
            if n <= self.limit:
                return value_of(t, self.limit)
            key = (t.data_ptr(), n, t.dtype)
            v = t._version
            dense = _dense(t)
        except Exception:
            return value_of(t, self.limit)
        if dense:
            e = self._blocks.get(key)
            if e is not None and e[1] == v:
                o = e[0]()
                if o is not None and o._version == v and o.data_ptr() == key[0]:
                    return None, e[2]
        stats = None
        if self.batch is not None:
            stats = self.batch.add(t, n, hist is not None and self._hist_wanted(hist))
        if stats is None:
            value, stats = value_of(t, self.limit)
        else:
            value = None
        if dense and stats is not None and not (self.batch is not None
                                                and self.batch.will_hist(stats)):
            # (a pending dict that will carry a histogram is not shared: NOTE
            # [histograms] keeps them off the gradients of backward steps)
            blocks = self._blocks
            if len(blocks) >= self._MAX:
                blocks.clear()
            blocks[key] = (_ref(t), v, stats)
        return value, stats

    def summary_as(self, t, src) -> dict | None:
        """``summary(t)`` where ``t`` is known to be likely equal to ``src``, whose
        summary is memoised: a leaf's new ``.grad`` after accumulating into
        None is the incoming gradient or a copy of it. Equality is checked
        (``torch.equal``, one pass, against five for statistics), never assumed."""
        if (isinstance(src, torch.Tensor) and isinstance(t, torch.Tensor) and t is not src
                and not _profiling()):
            try:
                if (t.dtype == src.dtype and t.shape == src.shape
                        and t.numel() > self.limit and t.device == src.device):
                    e = self._memo.get(id(src))
                    if (e is not None and e[0]() is src and e[1] == src._version
                            and e[3] is not None and torch.equal(t, src)):
                        s = {"value": None, "stats": e[3], "shape": shape_of(t),
                             "dtype": dtype_name(t.dtype)}
                        memo = self._memo
                        if len(memo) >= self._MAX:
                            memo.clear()
                        memo[id(t)] = (_ref(t), t._version, None, e[3], s)
                        return s
            except Exception:
                pass
        return self.summary(t)


def _dense(t) -> bool:
    """Whether ``t``'s elements fill ``numel`` consecutive slots (NOTE [same elements])."""
    if t.is_contiguous():
        return True
    expect = 1
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size == 1:
            continue
        if stride != expect:
            return False
        expect *= size
    return True
