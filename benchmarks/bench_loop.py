"""Stepping through a training loop on the canvas (offscreen): a many-pass run.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_loop.py [--iterations 1000] [--steps 120]

A real snippet (a hand-written SGD loop: forward, backward, an update and
``w.grad.zero_()`` under no_grad) is captured in-process and shown as the window
shows a finished run (LiveRun, its passes set for NOTE [pass focus]); then the
cursor steps through the middle of the run on a 1600x900 GraphCanvas, following
the current node (the window's auto view) and fitted, each step
Timeline.state + set_frame + a paint. Target: a step under 16 ms (a frame).

What it caught (2026-11-30): a step in follow mode took a median 310 ms and up
to 15 s at 1,000 iterations; the overlay placed its pills and chips against
every one of the loop's thousand no_grad boxes each frame, and the in-place
update drew an edge from the first w to every iteration's update, 170,000
units long, which Qt dashed in full at every cache rebuild.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

SNIPPET = """\
import torch
torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
for i in range({n}):
    x = torch.randn(4)
    loss = ((w * x).sum() - 1) ** 2
    loss.backward()
    with torch.no_grad():
        w -= 0.01 * w.grad
        w.grad.zero_()
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=120)
    a = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from PySide6.QtWidgets import QApplication
    app = QApplication.instance() or QApplication([])
    from PySide6.QtTest import QTest
    from graphscope import protocol as P
    from graphscope.capture.session import run_snippet
    from graphscope.ui.graph_canvas import GraphCanvas
    from graphscope.ui.live_run import LiveRun
    src = SNIPPET.format(n=a.iterations)
    msgs = []
    end = run_snippet(P.Run(source=src, max_ops=10 ** 7), msgs.append)
    t = time.perf_counter()
    live = LiveRun(src)
    live.apply(msgs)
    live.finish(end)
    bands = live.pass_bands()
    live.timeline.set_passes(bands)
    built = time.perf_counter() - t
    tl = live.timeline
    canvas = GraphCanvas()
    canvas.resize(1600, 900)
    canvas.set_animated(False)
    canvas.show()
    QTest.qWaitForWindowExposed(canvas)
    canvas.set_graph(live.graph, live.layout, live.trace)
    print(f"{a.iterations} iterations: {len(live.trace.ops):,} ops, {len(live.graph.nodes):,} nodes, "
          f"{len(tl):,} steps, {len(bands)} passes; built and laid out in {built:.2f} s")
    print(f"{'view':<10}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}{'/ 16 ms':>9}{'rebuilds':>10}")
    for label, follow in (("follow", True), ("fitted", False)):
        canvas.set_follow(follow)
        if not follow:
            canvas.fit()
        start = len(tl) // 2
        r0 = canvas.cache_rebuilds
        times = _timed(range(start, start + a.steps),
                       lambda c: (canvas.set_frame(tl.state(c)), canvas.repaint()))
        _row(label, times, canvas.cache_rebuilds - r0)
    # the timeline bar's strip, as the window paints it under the canvas at each
    # step (NOTE [a strip per pixel] in ui/timeline_bar.py): 0.3-0.6 s a paint
    # for a stopped loop of 50,000 steps before it drew per pixel
    from graphscope.ui.timeline_bar import TimelineBar
    bar = TimelineBar()
    bar.resize(1100, 90)
    bar.set_steps(live.step_kinds())
    bar.set_passes(bands)
    bar.show()
    QTest.qWaitForWindowExposed(bar)
    times = _timed(range(start, start + a.steps),
                   lambda c: (bar.set_cursor(c + 1, len(tl)), bar.repaint()))
    _row("bar", times, "")
    # the same strip while the run streams in, a batch of steps at a time: each
    # batch changes the scale, so every column is made again (26 ms a batch at
    # 210,000 steps when each column walked the segments)
    kinds = live.step_kinds()
    strip = bar.strip
    strip.set_kinds(kinds[:1])
    batch = max(1, len(kinds) // a.steps)
    r = strip._track_rect()
    times = _timed(range(1, len(kinds), batch),
                   lambda i: (strip.add_kinds(kinds[i:i + batch]), strip._strip(r)))
    _row("streamed", times, "")
    app.processEvents()
    return 0


def _timed(cursors, step) -> list:
    """Seconds ``step(c)`` took for each cursor ``c``, sorted."""
    times = []
    for c in cursors:
        t = time.perf_counter()
        step(c)
        times.append(time.perf_counter() - t)
    return sorted(times)


def _row(label: str, times: list, rebuilds) -> None:
    med = statistics.median(times) * 1e3
    print(f"{label:<10}{med:>11.1f}{times[int(0.95 * len(times))] * 1e3:>9.1f}"
          f"{times[-1] * 1e3:>9.1f}{med / 16:>8.2f}x{rebuilds:>10}")


if __name__ == "__main__":
    sys.exit(main())
