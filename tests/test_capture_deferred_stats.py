"""Statistics computed in batches and the emit that holds messages for them
(NOTE [deferred stats] in capture/deferred_stats.py), against real torch and a
real worker."""
from __future__ import annotations

import math
import threading

import torch

from graphscope import protocol as P
from graphscope.capture.deferred_stats import HeldEmit, StatsBatch
from graphscope.capture.summaries import SummaryMemo, stats_of
from graphscope.runner import shared_runner
from test_runner import Collector


def _same(a, b, rel):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b or math.isclose(a, b, rel_tol=rel)


def _tensors():
    torch.manual_seed(0)
    out = []
    for shape in ((100,), (30, 40), (2000,)):
        x = torch.randn(shape) * 5 + 1
        out += [x, x.double(), x.to(torch.int64), x > 1, x.half(), x.bfloat16(),
                torch.complex(x, 2 * x)]
    out.append(torch.randn(50, 40).t())            # not contiguous
    # channels_last copies keep their strides unless asked: they must still stack
    out += [torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last) for _ in range(3)]
    out.append(torch.full((100,), 2.0))             # one value
    nan = torch.randn(100)
    nan[3] = float("nan")
    out.append(nan)
    return out


def _held_with_pending(n=300, emit=None):
    """(out, batch, held): a HeldEmit holding one TensorInfo whose stats are pending."""
    out = []
    batch = StatsBatch()
    held = HeldEmit(emit or out.append, batch)
    st = batch.add(torch.randn(n), n, False)
    held(P.TensorInfo(0, [n], "float32", stats=st, seq=0))
    return out, batch, held


def _flusher_tick(held):
    """One period of the worker's flusher thread."""
    t = threading.Thread(target=held.flush_if_idle)
    t.start()
    t.join()



def test_batched_statistics_are_those_of_stats_of():
    batch = StatsBatch()
    xs = _tensors()
    pending = [batch.add(x, x.numel(), True) for x in xs]
    assert all(p == {"numel": x.numel()} for p, x in zip(pending, xs))   # nothing yet
    batch.compute()
    for x, st in zip(xs, pending):
        want = stats_of(x, hist=True)
        # float32 values: exactly torch's numbers; double sums: the last digits
        rel = 0.0 if x.dtype in (torch.float32, torch.float16, torch.bfloat16) else 1e-14
        for k in ("numel", "min", "max", "mean", "std"):
            assert _same(st[k], want[k], rel), (x.dtype, tuple(x.shape), k, st[k], want[k])
        assert ("hist" in st) == ("hist" in want)
        if "hist" in st:
            assert st["hist"]["edges"] == want["hist"]["edges"]
            if x.dtype in (torch.float32, torch.float64):
                assert st["hist"]["counts"] == want["hist"]["counts"]
            # NOTE [histograms]'s bin, trunc((x - lo) * bins / (hi - lo)), in double
            # (a half value on a bin edge may land one bin lower in float32)
            lo, hi = st["min"], st["max"]
            if lo == hi or not math.isfinite(hi - lo):
                continue                            # one value / NaN: stats_of's own path
            k = ((x.double().reshape(-1) - lo) * (20 / (hi - lo))).long().clamp(0, 19)
            assert st["hist"]["counts"] == torch.bincount(k, minlength=20).tolist()
    assert not batch.pending


def test_inf_gives_the_true_mean_and_nan_spread():
    batch = StatsBatch()
    x = torch.randn(100)
    x[3] = float("inf")
    st = batch.add(x, 100, True)
    batch.compute()
    assert st["max"] == math.inf and st["mean"] == x.mean().item() == math.inf
    assert math.isnan(st["std"]) and "hist" in st and sum(st["hist"]["counts"]) == 99


def test_the_copy_is_taken_when_added_not_when_computed():
    batch = StatsBatch()
    x = torch.arange(100.0)
    st = batch.add(x, 100, False)
    x.mul_(-1)                                      # the snippet changes it later
    del x
    batch.compute()
    assert (st["min"], st["max"], st["mean"]) == (0.0, 99.0, 49.5)


def test_memo_shares_a_pending_dict_and_a_final_grad_gets_its_own_histogram():
    batch = StatsBatch()
    memo = SummaryMemo(4, (0.0, 0.0), batch)        # no time for histograms
    g = torch.randn(30, 20)
    s = memo.summary(g)                             # as a backward step sees it
    assert memo.summary(g) is s and memo.summary(g.t())["stats"] is s["stats"]
    value, final = memo.value_of(g, final=True)     # as the final .grad
    assert value is None and final is not s["stats"]
    batch.compute()
    assert "hist" not in s["stats"] and sum(final["hist"]["counts"]) == 600
    assert final["mean"] == s["stats"]["mean"] == stats_of(g)["mean"]


def test_held_messages_leave_in_order_after_their_stats():
    out = []
    batch = StatsBatch()
    held = HeldEmit(out.append, batch)
    held(P.Output(0, "stdout", "first\n"))          # nothing pending: straight through
    assert len(out) == 1
    st = batch.add(torch.randn(100), 100, False)
    held(P.TensorInfo(0, [100], "float32", stats=st))
    held(P.Output(1, "stdout", "no newline "))
    assert len(out) == 1                            # both held back
    held(P.Output(2, "stdout", "end of line\n"))    # a finished line lets them go
    assert [type(m).__name__ for m in out] == ["Output", "TensorInfo", "Output", "Output"]
    assert out[1].stats["min"] is not None
    held(P.Output(3, "stdout", "again\n"))
    assert len(out) == 5


def test_flush_if_idle_waits_for_a_quiet_period_then_flushes_from_another_thread():
    out, batch, held = _held_with_pending(200)
    _flusher_tick(held)
    assert out == []                  # a message came since the last look: busy
    _flusher_tick(held)
    assert len(out) == 1 and "mean" in out[0].stats   # quiet for a period: flushed


def test_a_sleeping_snippet_still_streams_its_big_tensors():
    """The worker's flusher thread lets held messages go while the snippet is
    quiet, so the live view is not frozen by a time.sleep."""
    src = ("import torch, time\n"
           "w = torch.randn(300)\n"
           "time.sleep(60)\n")
    col = Collector()
    r = shared_runner()
    r.start(src, "<snippet>", col, timeout=90)
    try:
        col.wait_for(lambda ms: any(isinstance(m, P.TensorInfo) and m.shape == [300]
                                    for m in ms))
    finally:
        end = r.stop()
    info = next(m for m in col.messages if isinstance(m, P.TensorInfo) and m.shape == [300])
    assert end.status == "stopped"
    assert info.stats["numel"] == 300 and info.stats["min"] < info.stats["mean"] < info.stats["max"]


def test_messages_held_by_a_slow_busy_snippet_wait_at_most_a_few_periods():
    """Slow ops that keep emitting but fill a batch only slowly: the flusher
    lets the held messages go after MAX_WAIT periods even though it is never quiet."""
    from graphscope.capture.deferred_stats import MAX_WAIT
    out, batch, held = _held_with_pending()
    ticks = 0
    while not out:
        st = batch.add(torch.randn(100), 100, False)   # a message every period
        held(P.TensorInfo(ticks + 1, [100], "float32", stats=st))
        _flusher_tick(held)
        ticks += 1
        assert ticks <= MAX_WAIT + 1
    assert ticks >= 2 and all("mean" in m.stats for m in out)


def test_held_messages_go_at_once_when_nothing_is_left_pending():
    out, batch, held = _held_with_pending()
    batch.compute()                                 # as the flusher thread would
    held(P.Output(1, "stdout", "x"))                # nothing pending: all go now
    assert [m.T for m in out] == ["tensor", "output"] and out[0].stats["max"] is not None
    held(P.Output(2, "stdout", "y"))
    assert len(out) == 3                            # and later ones straight through


def test_a_busy_snippet_flushes_what_it_held_for_hold_max(monkeypatch):
    import graphscope.capture.deferred_stats as D
    now = [100.0]
    monkeypatch.setattr(D, "_monotonic", lambda: now[0])
    out, batch, held = _held_with_pending()
    now[0] += D.HOLD_MAX / 2
    held(P.Output(1, "stdout", "a"))
    assert out == []
    now[0] += D.HOLD_MAX
    # the clock is read every 16th message: within 16 more, what was held goes
    for i in range(2, 18):
        held(P.Output(i, "stdout", "b"))
        if out:
            break
    assert out and [m.T for m in out[:3]] == ["tensor", "output", "output"]
    assert len(out) == i + 1        # the tensor, then every output so far, in order


def test_an_interrupt_inside_a_flush_never_sends_a_message_twice():
    out = []
    fail = [True]

    def emit(m):
        out.append(m)                      # written to the pipe's buffer ...
        if m.seq == 1 and fail[0]:
            fail[0] = False
            raise KeyboardInterrupt        # ... then SIGINT from the runner lands

    _, batch, held = _held_with_pending(emit=emit)
    for i in (1, 2):
        held(P.Output(i, "stdout", "."))
    try:
        held.flush()
    except KeyboardInterrupt:
        pass
    held(P.Output(3, "stdout", "\n"))
    held.flush()
    assert [m.seq for m in out] == [0, 1, 2, 3]


def test_a_pending_tensor_asked_for_again_orders_one_histogram():
    batch = StatsBatch()
    memo = SummaryMemo(4, (1.0, 1.0), batch)        # plenty of time for histograms
    g = torch.randn(30, 20)
    first = memo.value_of(g, final=True)[1]
    again = [memo.value_of(g, final=True)[1] for _ in range(3)]
    assert all(a is first for a in again) and len(batch._entries) == 1
    # a final .grad over the same elements as a view seen before (NOTE [same
    # elements]) still gets its histogram
    memo2 = SummaryMemo(4, (0.0, 0.0), batch)
    w = torch.randn(30, 20)
    step = memo2.summary(w.t())["stats"]            # a backward step: no histogram
    final = memo2.value_of(w, final=True)[1]
    batch.compute()
    assert "hist" in first and "hist" in final and "hist" not in step


def test_a_message_emitted_while_a_lock_is_held_is_held_not_flushed():
    """The cyclic GC may run a snippet's __del__ anywhere, also inside a flush or
    inside StatsBatch.add; a print there reaches HeldEmit on the same thread. It
    must be held, not flush (re-entering a lock held lower on the stack would
    hang the run). Called from a helper thread so a regression fails, not hangs."""
    out, batch, held = _held_with_pending()

    def emit_line(seq):
        t = threading.Thread(target=held, args=(P.Output(seq, "stdout", "bye\n"),),
                             daemon=True)
        t.start()
        t.join(5)
        return not t.is_alive()

    with batch._lock:                 # as inside StatsBatch.add
        assert emit_line(1)
    held._flushing = True             # as inside a flush
    with held._flush_lock:
        assert emit_line(2)
    held._flushing = False
    assert out == []                  # all held ...
    held.flush()
    assert [m.seq for m in out] == [0, 1, 2]   # ... and sent, in order, by the next flush


def test_the_outcome_goes_out_after_everything_held_and_is_never_held_itself():
    """NOTE [the end of a run]: the session flushes what is held, then sends the
    Outcome straight on: a message held back while another thread flushes
    would wait a flusher period, and the process may end before that."""
    out = []
    batch = StatsBatch()
    held = HeldEmit(out.append, batch)
    st = batch.add(torch.randn(100), 100, False)       # a pending statistic ...
    held(P.Output(1, "stdout", "x"))                    # ... holds what comes after it
    assert out == [] and st is not None
    held.flush()
    held.emit_now(P.Outcome("error", P.ErrorInfo("ValueError", "v"), None, 0.1))
    assert [type(m).__name__ for m in out] == ["Output", "Outcome"]
    assert "min" in st                                  # computed before they went


def test_the_snippet_s_flush_sends_what_it_printed_at_once():
    """``print("step 0: ", end="", flush=True)`` then a child process writing to the
    same fd: the text stayed held (no line end) and the writer's batch waited, so the
    child's line came first in about one run of four (fidelity review). A flush of
    the snippet's stdout now sends what is held, then the writer's batch."""
    import itertools
    from graphscope.capture.output import CapturedStream, OutputLimit

    class Writer:                               # the worker's EventWriter: batches rows
        def __init__(self):
            self.rows, self.sent = [], []

        def __call__(self, msg):
            self.rows.append(msg)

        def flush(self):
            self.sent += self.rows
            self.rows = []

    w = Writer()
    out, batch, held = _held_with_pending(emit=w)
    stream = CapturedStream("stdout", held, itertools.count(1), OutputLimit(1000, held))
    stream.write("step 0: ")
    assert not w.rows and not w.sent            # held behind the pending stats
    stream.flush()
    assert [type(m) for m in w.sent] == [P.TensorInfo, P.Output]
    assert w.sent[1].text == "step 0: " and w.sent[0].stats["min"] is not None
    stream.write("more")                        # nothing held: to the writer, then out
    stream.flush()
    assert w.sent[-1].text == "more" and not w.rows


def test_a_flush_waits_for_one_under_way_on_another_thread():
    """The worker's flusher thread was inside a flush when the snippet flushed its
    stdout: the snippet's flush skipped, and "step 0: " stayed held behind a child
    process's line (code review). It waits, then sends what that flush left."""
    import itertools
    from graphscope.capture.output import CapturedStream, OutputLimit

    class Writer:
        def __init__(self):
            self.rows, self.sent = [], []
            self.gate, self.inside = threading.Event(), threading.Event()

        def __call__(self, msg):
            self.rows.append(msg)

        def emit_many(self, msgs):           # the flusher's flush, slow here
            self.inside.set()
            self.gate.wait(10)
            self.rows += msgs

        def flush(self):
            self.sent += self.rows
            self.rows = []

    w = Writer()
    batch = StatsBatch()
    held = HeldEmit(w, batch)
    for i in range(3):
        held(P.TensorInfo(i, [300], "float32", stats=batch.add(torch.randn(300), 300, False),
                          seq=i))
    stream = CapturedStream("stdout", held, itertools.count(1), OutputLimit(1000, held))
    flusher = threading.Thread(target=held.flush)
    flusher.start()
    assert w.inside.wait(10)

    def snippet():
        stream.write("step 0: ")
        stream.flush()
    t = threading.Thread(target=snippet)
    t.start()
    t.join(0.2)
    assert t.is_alive()                          # waiting for the flush under way
    w.gate.set()
    t.join(10)
    flusher.join(10)
    assert [getattr(m, "text", None) for m in w.sent][-1] == "step 0: "
    assert not held._held
