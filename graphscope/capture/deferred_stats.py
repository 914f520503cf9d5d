"""Statistics of mid-sized tensors, computed in batches, and the emit that waits for them.

NOTE [deferred stats]: a tensor above the value limit is recorded with
statistics (``{numel, min, max, mean, std}`` and, for some, a histogram).
Computed one tensor at a time that is five or six torch calls of 2-3 us of
dispatch each, whatever the size: about 15 us for a 100-element activation,
three times the op that made it, and a run makes one per new tensor and per
gradient a backward step hands on. So, for tensors up to ``BATCH_NUMEL``
elements, ``StatsBatch.add`` takes a copy (one call, about 1.5 us: the snippet
may change the tensor in place later, and the copy is ours, so its lifetime
and version counter are untouched) and returns the stats dict still empty
but for ``numel``; ``compute`` fills every pending dict at once, stacking the
copies of equal size and dtype and reducing along one dimension (under 1 us a
tensor for a batch of a few hundred). The numbers are those of
``summaries.stats_of``: min and max of the converted values, mean and std
accumulated in double and rounded to the tensor's own precision.

A dict that is not filled yet must not leave the worker, so ``HeldEmit``
holds every message back while anything is pending, in order, and lets them
go after ``compute``: when the batch is full, when a message comes and the
oldest held one is ``HOLD_MAX`` (20 ms) old (the clock is read at every 16th
message), when a line of output is written
(it flushes the stream as a terminal would), when the run ends, and from the
worker's flusher thread when no message came for one of its periods (20 ms;
so a ``time.sleep`` does not freeze the live view) or when messages have
waited ``MAX_WAIT`` periods. Once nothing is pending, what is held goes at
once. A crash therefore loses at most about 20 ms of events (the worker's own
write batching already could lose a millisecond), and an interrupt landing
inside a flush may lose one message, never send one twice.
"""
from __future__ import annotations

import threading
import time
from collections import deque

import torch

from graphscope import protocol as P
from graphscope.capture import summaries

BATCH_NUMEL = 4096           # above this one stats_of call is as cheap (measured:
                             # batched 5.8 us a tensor against 11.4 at 1,000 elements,
                             # even at 4,096-8,192, 4x slower at 16,384: cache misses)
_CHUNK = 1 << 18             # elements stacked at once (the double copy stays in cache)
BATCH_COUNT = 512            # pending tensors before a compute ...
BATCH_ELEMENTS = 1 << 22     # ... or pending elements (32 MB of double copies at most)

HOLD_MAX = 0.02              # seconds a message is held at most while messages come
MAX_WAIT = 3                 # flusher periods a held message may wait, however busy
_STACK_FROM = 3              # a group this big is stacked; smaller: stats_of each


def _hist_estimate(n: int) -> float:
    """Seconds a batched histogram of ``n`` elements takes here (measured: about
    3 us plus 2 ns an element), charged to the budget until it is made."""
    return 3e-6 + 2e-9 * n


_monotonic = time.monotonic
_strided = torch.strided
_contiguous = torch.contiguous_format
_f32 = torch.float32
_f64 = torch.float64


class StatsBatch:
    """Pending statistics: copies of tensors and the dicts their stats go into."""

    __slots__ = ("_entries", "_elements", "_lock", "computing", "_hist_seconds", "_hist_owed",
                 "_inflight", "_hist_ids")

    def __init__(self) -> None:
        # (copy, numel, stats dict, floating, round_to_f32, hist wanted, group key)
        self._entries: list = []
        self._elements = 0
        self._lock = threading.Lock()
        self.computing = False
        self._hist_seconds = 0.0     # time spent on histograms ...
        self._hist_owed = 0.0        # ... and the estimate for the pending ones
        self._inflight: list = []    # the entries a compute is working on
        self._hist_ids: set = set()  # id() of pending dicts that will get a histogram

    @property
    def hist_seconds(self) -> float:
        """Histogram time, spent and owed, for summaries' budget (NOTE [histograms]):
        a pending histogram is charged when asked for, not when made, or a run
        that computes once at its end would give every tensor one."""
        return self._hist_seconds + self._hist_owed

    @property
    def pending(self) -> bool:
        return bool(self._entries) or self.computing

    def full(self) -> bool:
        return len(self._entries) >= BATCH_COUNT or self._elements >= BATCH_ELEMENTS

    def add(self, t, n: int, hist: bool):
        """A stats dict for tensor ``t`` of ``n`` elements, filled by the next
        ``compute``; None if ``t`` is not a plain strided CPU tensor (the caller
        then computes its stats at once)."""
        if n < 2 or n > BATCH_NUMEL:
            return None
        try:
            if t.layout is not _strided or not t.is_cpu:
                return None
            d = t.detach() if t.requires_grad else t   # the copy records no autograd node
            dt = d.dtype
            if dt is _f32 or dt is _f64:                # the common case, first
                # contiguous (a channels_last copy would not stack into rows)
                c = d.clone() if d.is_contiguous() else d.clone(memory_format=_contiguous)
                floating = True
            else:
                plan = summaries.plan_of(dt)
                if plan is summaries.ABS:
                    c = d.abs()
                    floating = False
                elif plan is None:
                    c = d.clone(memory_format=_contiguous)
                    floating = True
                else:
                    c = d.to(plan, memory_format=_contiguous)
                    floating = dt in summaries.HALF_TYPES
            cdt = c.dtype
            key = (cdt, c.shape)   # stacked together: same dtype and shape
        except Exception:
            return None
        st = {"numel": n}
        hist = hist and floating
        entry = (c, n, st, floating, cdt is _f32, hist, key)
        owed = _hist_estimate(n) if hist else 0.0
        # NOTE [no allocation under the lock]: nothing made under ``_lock`` is a
        # container the cyclic GC counts, so no collection (and no user
        # ``__del__`` that prints or runs torch, re-entering here) can start
        # while it is held
        with self._lock:
            self._entries.append(entry)
            self._elements += n
            if hist:
                self._hist_owed += owed
                self._hist_ids.add(id(st))
        return st

    def will_hist(self, st: dict) -> bool:
        """Whether pending dict ``st`` is to get a histogram (so nobody orders
        a second one)."""
        return id(st) in self._hist_ids

    def add_like(self, st: dict, n: int, hist: bool):
        """A new pending dict for the same copy as pending ``st`` (with ``hist``
        wanted), or None if ``st`` is not pending (already computed). ``st`` may
        be in a compute running on another thread: its copy is still good."""
        found = None
        with self._lock:   # NOTE [no allocation under the lock]: range, no list iterator
            for es in (self._entries, self._inflight):
                for i in range(len(es) - 1, -1, -1):
                    if es[i][2] is st:
                        found = es[i]
                        break
                if found is not None:
                    break
        if found is None:
            return None
        if not (hist and found[3]):
            return st      # no histogram for it: the pending dict will do
        st2 = {"numel": n}
        entry = (found[0], n, st2, True, found[4], True, found[6])
        owed = _hist_estimate(n)
        with self._lock:
            self._entries.append(entry)
            self._elements += n
            self._hist_owed += owed
            self._hist_ids.add(id(st2))
        return st2

    def compute(self) -> None:
        """Fill every pending dict. Never raises for a bad tensor: its dict gets
        None for the numbers, as ``stats_of`` gives None for an unreadable one."""
        fresh: list = []
        with self._lock:   # NOTE [no allocation under the lock]
            entries = self._entries
            if not entries:
                return
            # computing first: HeldEmit reads _entries, then computing, and must
            # never see both empty while these are being filled
            self.computing = True
            self._entries = fresh
            self._elements = 0
            self._hist_owed = 0.0
            self._inflight = entries
        done = False
        try:
            # our own calls: not the snippet's ops, whichever thread this is
            with torch._C.DisableTorchFunction():
                groups: dict = {}
                for e in entries:
                    g = groups.get(e[6])
                    if g is None:
                        groups[e[6]] = [e]
                    else:
                        g.append(e)
                for group in groups.values():
                    if len(group) < _STACK_FROM:
                        for e in group:
                            self._fill_one(e)
                        continue
                    step = max(1, _CHUNK // group[0][1])
                    for i in range(0, len(group), step):
                        self._fill(group[i:i + step])
            done = True
        finally:
            if not done:   # interrupted (KeyboardInterrupt): no dict stays half empty
                for e in entries:
                    if "min" not in e[2]:
                        e[2].update(min=None, max=None, mean=None, std=None)
            done_ids = [id(e[2]) for e in entries if e[5]]
            empty: list = []
            with self._lock:   # NOTE [no allocation under the lock]
                self._inflight = empty
                for i in done_ids:
                    self._hist_ids.discard(i)
                self.computing = False

    def _fill_one(self, e) -> None:
        """A tensor without company: ``stats_of`` on its copy is cheaper than a stack."""
        t0 = time.perf_counter() if e[5] else 0.0
        st = summaries.stats_of(e[0], e[5])
        if st is None:
            st = {"min": None, "max": None, "mean": None, "std": None}
        e[2].update(st)
        if e[5]:
            self._hist_seconds += time.perf_counter() - t0

    def _fill(self, group: list) -> None:
        try:
            n = group[0][1]
            x = torch.stack([e[0] for e in group]).reshape(len(group), n)
            # two calls: aminmax along a dimension is not vectorised (20x slower here)
            lo, hi = x.amin(dim=1), x.amax(dim=1)
            # in a double copy (x itself is still needed for histograms), in place:
            # no temporaries the size of the batch (at 4,096 elements a tensor,
            # allocating them cost 10x the arithmetic)
            d = x.double() if x.dtype != _f64 else x.clone()
            mean = d.sum(dim=1).div_(n)
            d.sub_(mean[:, None])
            std = d.mul_(d).sum(dim=1).div_(n - 1).sqrt_()
            if group[0][4]:              # float32 values: torch's own rounding
                mean, std = mean.float(), std.float()
            rows = zip(lo.tolist(), hi.tolist(), mean.tolist(), std.tolist())
        except Exception:
            for e in group:
                e[2].update(min=None, max=None, mean=None, std=None)
            return
        want = []
        for i, (e, (a, b, m, s)) in enumerate(zip(group, rows)):
            e[2].update(min=a, max=b, mean=m, std=s)
            if e[5]:
                want.append(i)
        if want:
            t0 = time.perf_counter()
            try:
                self._hists(x, [group[i] for i in want], want, lo, hi)
            except Exception:
                pass
            self._hist_seconds += time.perf_counter() - t0

    @staticmethod
    def _hists(x, group, rows, lo, hi) -> None:
        """Histograms (NOTE [histograms] in summaries.py) of rows ``rows`` of ``x``,
        all in one ``bincount``; a row with NaN/inf bounds or one value goes
        through ``summaries._hist`` (rare)."""
        bins = summaries.HIST_BINS
        los, his = lo.tolist(), hi.tolist()
        fast = []
        for e, r in zip(group, rows):
            a, b = los[r], his[r]
            if a == a and b == b and a != b and abs(a) != float("inf") and abs(b) != float("inf"):
                fast.append((e, r, a, b))
            else:
                h = summaries._hist(x[r].float() if x.dtype != _f64 else x[r], a, b)
                if h is not None:
                    e[2]["hist"] = h
        if not fast:
            return
        idx = torch.tensor([r for _, r, _, _ in fast])
        sel = x.index_select(0, idx).double()
        lo_t = torch.tensor([a for _, _, a, _ in fast], dtype=_f64)[:, None]
        scale = torch.tensor([bins / (b - a) for _, _, a, b in fast], dtype=_f64)[:, None]
        # trunc((x - lo) * bins / (hi - lo)); the maximum lands in bin ``bins``
        # and is folded into the last, as torch.histogram does
        k = sel.sub_(lo_t).mul_(scale).to(torch.int64).clamp_(0, bins - 1)
        k += (torch.arange(len(fast)) * bins)[:, None]
        counts = torch.bincount(k.reshape(-1), minlength=len(fast) * bins).view(
            len(fast), bins).tolist()
        for (e, _, a, b), c in zip(fast, counts):
            width = (b - a) / bins
            e[2]["hist"] = {"edges": [a + i * width for i in range(bins)] + [b], "counts": c}


class HeldEmit:
    """``emit`` that holds messages back while a StatsBatch has pending dicts
    (NOTE [deferred stats]). Safe to ``flush`` from another thread: messages
    leave in the order they came, each after the stats it carries."""

    def __init__(self, emit, batch: StatsBatch) -> None:
        self._emit = emit
        # a writer that takes a list at once (the worker's EventWriter): one lock
        # and one look at the clock for a flushed batch, not one per message
        self._emit_many = getattr(emit, "emit_many", None)
        self.batch = batch
        self._held: deque = deque()
        self._flush_lock = threading.Lock()
        self._n = 0          # messages so far: the snippet is quiet while it stays put
        self._seen = -1      # ... as flush_if_idle last saw it
        self._flushes = 0    # flushes so far ...
        self._waited = 0     # ... and how many of the flusher's periods without one
        self._seen_flushes = 0
        self._flushing = False
        self._flush_owner = None   # the thread inside flush
        self._since = 0.0    # when the oldest held message came

    def __call__(self, msg) -> None:
        self._n += 1
        batch = self.batch
        # _entries before computing: StatsBatch.compute sets computing before it
        # empties _entries, so one of the two always shows a compute under way
        held = self._held
        if held or batch._entries or batch.computing or self._flushing:
            if not held:
                self._since = _monotonic()
            held.append(msg)
            if self._flushing or self._flush_lock.locked() or batch._lock.locked():
                # a flush is under way, maybe on this very thread (a __del__ that
                # prints, run by the GC inside it): it, or the next one, takes this
                return
            entries = batch._entries
            if (len(entries) >= BATCH_COUNT or batch._elements >= BATCH_ELEMENTS
                    or not (entries or batch.computing)
                    or (type(msg) is P.Output and msg.text.endswith("\n"))):
                # full; or nothing left to wait for (drain); a finished line of output
                self.flush()
            elif not self._n & 15 and _monotonic() - self._since >= HOLD_MAX:
                # held long enough: a crash would lose them (the clock is read every
                # 16th message, a few microseconds apart on this path; a slow
                # snippet's messages go with the flusher thread's next look)
                self.flush()
        else:
            self._emit(msg)

    def flush(self) -> None:
        with self._flush_lock:
            self._flushing = True   # while set, __call__ holds: nothing overtakes
            self._flush_owner = threading.get_ident()
            try:
                held = self._held
                n = len(held)          # these messages' stats were added before them ...
                self.batch.compute()   # ... so this fills all of them
                pop = held.popleft
                many = self._emit_many
                if many is not None and n > 1:
                    # popped first, as below: an interrupt loses these rather than
                    # sending them twice
                    many([pop() for _ in range(n)])
                else:
                    emit = self._emit
                    for _ in range(n):
                        # popped first: an interrupt in emit loses this one message
                        # rather than sending it twice (a duplicate Op draws a phantom node)
                        emit(pop())
                self._flushes += 1
            finally:
                self._flushing = False
                self._flush_owner = None

    def push(self) -> None:
        """What is held, and then the writer's batch, out now: the snippet flushed
        its stdout (``print(..., flush=True)``) before a child process or
        ``os.write`` writes to the same fd, so its text must be ahead of theirs
        (fidelity review: "step 0: " came after the child's line). A flush under
        way on another thread (the flusher's) is waited for, then what it left
        is sent (code review: skipped, the text stayed held); inside a flush on
        this thread (a ``__del__`` that prints and flushes) that flush sends it."""
        if self._flush_owner != threading.get_ident():
            if self._held:
                self.flush()
            out = getattr(self._emit, "flush", None)   # the worker's EventWriter
            if out is not None:
                out()

    def emit_now(self, msg) -> None:
        """``msg`` to the writer at once, past anything held (call ``flush`` first
        to keep the order)."""
        self._emit(msg)

    def flush_if_idle(self) -> None:
        """From the worker's flusher thread, every period (20 ms): flush if no
        message came since the last call (the snippet is quiet: sleeping, in a
        long C call, waiting), or if messages have been held for ``MAX_WAIT``
        periods (a snippet whose slow ops fill a batch only every few seconds).
        A busy snippet otherwise flushes its own full batches: computing them
        from this thread would only fight it for the GIL."""
        n = self._n
        held = bool(self._held or self.batch._entries)
        if not held or self._flushes != self._seen_flushes:
            self._waited = 0     # nothing held, or the snippet flushed since the last look
        if held:
            self._waited += 1
            if n == self._seen or self._waited >= MAX_WAIT:
                self.flush()
                self._waited = 0
        self._seen, self._seen_flushes = n, self._flushes
