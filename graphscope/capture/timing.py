"""What rebuilding the graph costs: one model timed per iteration, eager and traced.

Eager PyTorch rebuilds the autograd graph on every forward call; a
``torch.jit.trace``d module replays a recorded graph. The only honest answer to
"is training slower with a dynamic graph?" is a measurement on the user's
machine, so this times the same training iteration (forward, ``sum()``,
backward) both ways in one run: one thread (``torch.set_num_threads(1)``, as
the benchmarks do), a warm-up, then per-iteration times and their medians. The
two loops are interleaved in rounds so a machine that gets busier half-way
slows both alike.

Runs in the worker after the recorder is off (NOTE [static after the recorder]
in static.py).
"""
from __future__ import annotations

import statistics
import time
import warnings

import torch

from graphscope import protocol as P

CAVEAT = (
    "Measured on this machine, one thread, {iterations} iterations after {warmup} warm-up "
    "iterations, medians. Rebuilding the graph costs Python and dispatcher time per op, which "
    "matters most for small ops; for a tiny model the difference can vanish or even reverse "
    "(the traced module has its own call overhead), and for large ops the arithmetic dominates "
    "both. torch.jit.trace is deprecated in favour of torch.compile, whose compiled code can be "
    "faster still but takes seconds to compile first.")


def default_model():
    """A small MLP, for when the snippet names nothing to time."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 10))
    return model, (torch.randn(16, 32),)


def time_eager_vs_traced(model, inputs, iterations: int = 60, warmup: int = 10,
                         backward: bool = True, rounds: int = 3) -> dict:
    """Per-iteration times in milliseconds of ``model(*inputs)`` (plus ``.sum().backward()``
    when ``backward``), eager and ``torch.jit.trace``d. Returns a JSON-ready dict."""
    inputs = tuple(inputs)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the deprecation / TracerWarnings are static.py's to show
            traced = torch.jit.trace(model, inputs, check_trace=False)
        params = [p for p in (model.parameters() if isinstance(model, torch.nn.Module) else [])]
        can_backward = backward and _needs_grad(model, inputs, params)
        grads_to_clear = params + [x for x in inputs
                                   if isinstance(x, torch.Tensor) and x.requires_grad]

        def step(fn):
            out = fn(*inputs)
            if can_backward:
                _first_tensor(out).sum().backward()
                for p in grads_to_clear:
                    p.grad = None
            return out

        for _ in range(warmup):
            step(model)
            step(traced)
        eager, frozen = [], []
        per_round = max(1, iterations // rounds)
        for _ in range(rounds):
            for fn, sink in ((model, eager), (traced, frozen)):
                for _ in range(per_round):
                    t0 = time.perf_counter()
                    step(fn)
                    sink.append((time.perf_counter() - t0) * 1000.0)
    finally:
        torch.set_num_threads(threads)
    me, mt = statistics.median(eager), statistics.median(frozen)
    n = len(eager)
    return {
        "eager_ms": eager, "traced_ms": frozen,
        "eager_median_ms": me, "traced_median_ms": mt,
        "ratio": me / mt if mt > 0 else None,
        "iterations": n, "warmup": warmup, "threads": 1, "backward": can_backward,
        "caveat": CAVEAT.format(iterations=n, warmup=warmup),
        "verdict": _verdict(me, mt),
    }


def timing_result(target, inputs, target_name: str = "", **opts) -> P.StaticResult:
    """The timing as a StaticResult (kind ``timing``); a default MLP when there is no target."""
    t0 = time.perf_counter()
    allowed = {k: opts[k] for k in ("iterations", "warmup", "backward", "rounds") if k in opts}
    try:
        if target is None or not inputs:
            target, inputs = default_model()
            target_name = target_name or "a small MLP (32-64-64-10)"
        d = time_eager_vs_traced(target, inputs, **allowed)
        return P.StaticResult(kind="timing", target=target_name, ok=True, summary=d["verdict"],
                              details=d, duration=time.perf_counter() - t0)
    except Exception as e:
        return P.StaticResult(kind="timing", target=target_name, ok=False,
                              summary=f"Could not time {target_name}: {type(e).__name__}: {e}",
                              error={"type": type(e).__name__, "message": str(e),
                                     "explanation": "The model could not be traced or run repeatedly, so there is nothing to compare.",
                                     "line": None},
                              duration=time.perf_counter() - t0)


def _verdict(eager_ms: float, traced_ms: float) -> str:
    if traced_ms <= 0 or eager_ms <= 0:
        return "No usable measurement."
    r = eager_ms / traced_ms
    if 0.9 <= r <= 1.1:
        return (f"Eager {eager_ms:.3f} ms vs traced {traced_ms:.3f} ms per iteration: "
                "no real difference here, rebuilding the graph costs little for this model.")
    if r > 1:
        return (f"Eager {eager_ms:.3f} ms vs traced {traced_ms:.3f} ms per iteration: "
                f"eager is {r:.2f}x slower here, the cost of rebuilding the graph every time.")
    return (f"Eager {eager_ms:.3f} ms vs traced {traced_ms:.3f} ms per iteration: "
            f"eager is faster here ({1 / r:.2f}x); the traced module's overhead outweighs the rebuild.")


def _needs_grad(model, inputs, params) -> bool:
    return any(p.requires_grad for p in params) or any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in inputs)


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        for o in out:
            t = _first_tensor(o)
            if t is not None:
                return t
    if isinstance(out, dict):
        for o in out.values():
            t = _first_tensor(o)
            if t is not None:
                return t
    raise TypeError("the model returned no tensor")
