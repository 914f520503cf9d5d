"""Static captures of a snippet's function or module, beside the eager run (issue 5).

PyTorch's eager mode builds a new graph on every call, so the graph can follow
the data. A static capture records the code once and reuses the record. This
module shows a learner what each static tool makes of the *same* code:

- ``torch.fx.symbolic_trace``: runs the code with Proxy objects and records the
  calls; fails on data-dependent control flow (a Proxy has no value to branch on);
- ``torch.jit.trace``: runs the code once with real values and freezes the path
  taken; a second input that should take the other branch still takes the frozen
  one (the TracerWarning said so);
- ``torch.export.export``: captures the whole program or refuses with a reason;
- ``torch._dynamo.explain``: the graphs ``torch.compile`` would make, its graph
  breaks and guards.

NOTE [static after the recorder]: ``run_static`` is called by the session after
the snippet finished and the recorder's TorchFunctionMode and module hooks were
removed, so nothing done here is recorded as the snippet's ops. Output the
target prints while being captured is swallowed, so the snippet's stdout stays
byte-identical to plain ``python``.

Each capture is independent: one failing (or raising anything at all) never
stops the others, and each result is one ``protocol.StaticResult``.
"""
from __future__ import annotations

import contextlib
import io
import logging
import re
import time
import traceback
import warnings

import torch

from graphscope import protocol as P

PARTS = ("fx", "jit", "export", "explain")
VALUE_LIMIT = 64
# Seconds after which the remaining parts are skipped (each tool can take a second
# or more on first use; the worker's own timeout is the hard limit).
DEFAULT_BUDGET = 30.0


def run_static(namespace: dict, request: dict, emit) -> None:
    """Capture ``request["target"]`` from the snippet's ``namespace`` with each
    static tool and ``emit`` one StaticResult per tool.

    ``request``: ``{"target": name, "inputs": [expr, ...], "second_inputs": [expr, ...],
    "parts": ["fx", "jit", "export", "explain"], "timing": {...} | bool,
    "filename": "<snippet>", "budget": seconds}``. Input expressions are Python
    evaluated in the namespace, one per positional argument.
    """
    request = dict(request or {})
    target_name = str(request.get("target") or "")
    filename = request.get("filename") or namespace.get("__file__") or "<snippet>"
    wanted = request.get("parts")
    parts = [p for p in (PARTS if wanted is None else wanted) if p in PARTS]
    budget = float(request.get("budget") or DEFAULT_BUDGET)
    started = time.perf_counter()
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), _quiet_torch_logs():
        setup = _resolve(namespace, request, target_name)
        if isinstance(setup, P.StaticResult):
            for kind in parts:
                emit(_replace_kind(setup, kind))
            setup_ok = False
        else:
            setup_ok = True
            target, inputs, second = setup
            for kind in parts:
                if time.perf_counter() - started > budget:
                    emit(P.StaticResult(kind=kind, target=target_name, ok=False,
                                        summary=f"skipped: the {budget:.0f} s budget for static captures was used up",
                                        error={"type": "Skipped", "message": "time budget used up",
                                               "explanation": "Earlier captures took too long; this one was not tried.",
                                               "line": None}))
                    continue
                emit(_run_part(kind, target, target_name, inputs, second, filename))
        timing = request.get("timing")
        if timing and setup_ok:
            from graphscope.capture import timing as timing_mod
            opts = timing if isinstance(timing, dict) else {}
            emit(timing_mod.timing_result(target, inputs, target_name, **opts))


# -- setup ---------------------------------------------------------------------

def _resolve(namespace, request, target_name):
    """(target, inputs, second_inputs) or a failed StaticResult explaining why."""
    def fail(typ, msg, expl):
        return P.StaticResult(kind="setup", target=target_name, ok=False, summary=expl,
                              error={"type": typ, "message": msg, "explanation": expl, "line": None})
    if _function_mode_active():
        return fail("RecorderActive", "a TorchFunctionMode is still active",
                    "Static capture must run after the recorder is switched off; nothing was captured.")
    if not target_name:
        return fail("NoTarget", "no target named", "Name a function or nn.Module defined in the snippet.")
    try:
        target = eval(target_name, namespace)  # an attribute path such as model.encoder is fine
    except Exception as e:
        return fail(type(e).__name__, str(e),
                    f"The snippet defines nothing called {target_name!r} (did it run to the end?).")
    if not callable(target):
        return fail("NotCallable", f"{target_name} is a {type(target).__name__}",
                    f"{target_name!r} is not a function or nn.Module, so there is nothing to capture.")
    try:
        inputs = tuple(eval(e, namespace) for e in request.get("inputs") or [])
        second = tuple(eval(e, namespace) for e in request.get("second_inputs") or []) or None
    except Exception as e:
        return fail(type(e).__name__, str(e), f"An input expression could not be evaluated: {e}")
    return target, inputs, second


@contextlib.contextmanager
def _quiet_torch_logs():
    """torch's own loggers write to the worker's real stderr (their handlers hold it),
    e.g. symbolic_shapes' "Unable to find user code"; the results say it better."""
    logger = logging.getLogger("torch")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def _function_mode_active() -> bool:
    try:
        return bool(torch.overrides._get_current_function_mode_stack())
    except Exception:
        return False


def _replace_kind(res: P.StaticResult, kind: str) -> P.StaticResult:
    import dataclasses
    return dataclasses.replace(res, kind=kind)


def _run_part(kind, target, target_name, inputs, second, filename) -> P.StaticResult:
    fn = {"fx": _fx, "jit": _jit, "export": _export, "explain": _explain}[kind]
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fn(target, target_name, inputs, second, filename)
        except BaseException as e:  # noqa: BLE001 - a capture must never end the worker
            if isinstance(e, (KeyboardInterrupt, SystemExit)) and not _from_snippet(e, filename):
                raise
            res = _failure(kind, target_name, e, filename)
    ws = [_warning_row(w, filename) for w in caught
          if not issubclass(w.category, DeprecationWarning) or "jit" not in str(w.message)]
    ws = _dedupe(ws)
    import dataclasses
    return dataclasses.replace(res, warnings=ws + list(res.warnings),
                               duration=time.perf_counter() - t0)


# -- torch.fx ------------------------------------------------------------------

def _fx(target, target_name, inputs, second, filename):
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(target)
    root = tracer.root if isinstance(target, torch.nn.Module) else torch.nn.Module()
    gm = torch.fx.GraphModule(root, graph)
    nodes = [{"name": n.name, "op": n.op, "target": _target_text(n.target),
              "args": _args_text(n.args, n.kwargs), "line": _line_in(n.stack_trace, filename)}
             for n in graph.nodes]
    calls = sum(1 for n in nodes if n["op"] not in ("placeholder", "output", "get_attr"))
    return P.StaticResult(
        kind="fx", target=target_name, ok=True, text=gm.code.strip(), graph=nodes,
        summary=f"torch.fx captured {target_name} as one graph of {calls} calls, "
                "the same graph for every input.")


# -- torch.jit.trace -------------------------------------------------------------

def _jit(target, target_name, inputs, second, filename):
    if not inputs:
        raise _NeedsInputs("torch.jit.trace runs the code once with a real input; none was given.")
    with torch.jit.optimized_execution(False):
        traced = torch.jit.trace(target, inputs, check_trace=False)
    graph = traced.inlined_graph if isinstance(traced, torch.jit.ScriptModule) else traced.graph
    nodes = _jit_nodes(graph, filename)
    details = {"first_input": _values(inputs)}
    summary = (f"torch.jit.trace ran {target_name} once and froze the {len(nodes)} operations "
               "it saw; every later call replays them, whatever the input.")
    if second is not None:
        with torch.no_grad():
            eager = _try_call(target, second)
            frozen = _try_call(traced, second)
        same = _same(eager.get("raw"), frozen.get("raw"))
        details.update(second_input=_values(second), eager=_strip(eager),
                       traced=_strip(frozen), same=same)
        if same is False:
            summary += (" On the second input it returns a different answer than eager PyTorch: "
                        "the branch was frozen at trace time.")
        elif same:
            summary += " On the second input it agrees with eager PyTorch."
    return P.StaticResult(kind="jit", target=target_name, ok=True, text=str(graph).strip(),
                          graph=nodes, summary=summary, details=details)


def _jit_nodes(graph, filename):
    rows = []
    for n in graph.nodes():
        kind = n.kind()
        if kind in ("prim::Constant", "prim::GetAttr", "prim::ListConstruct",
                    "prim::TupleConstruct", "prim::NumToTensor"):
            continue  # plumbing, not computation: kept in ``text``
        outs = [o.debugName() for o in n.outputs()]
        text = str(n)
        m = re.search(r"#\s*(.+?):(\d+):\d+\s*$", text.strip())
        line = int(m.group(2)) if m and m.group(1) == filename else None
        rows.append({"name": ",".join("%" + o for o in outs), "op": "call_function",
                     "target": kind.removeprefix("aten::"),
                     "args": ", ".join("%" + i.debugName() for i in n.inputs()), "line": line})
    return rows


class _NeedsInputs(Exception):
    pass


# -- torch.export ----------------------------------------------------------------

def _export(target, target_name, inputs, second, filename):
    if not inputs:
        raise _NeedsInputs("torch.export traces with example inputs; none were given.")
    module = target if isinstance(target, torch.nn.Module) else _Wrap(target)
    ep = torch.export.export(module, inputs)
    nodes = [{"name": n.name, "op": n.op, "target": _target_text(n.target),
              "args": _args_text(n.args, n.kwargs),
              "line": _line_in(n.meta.get("stack_trace"), filename)}
             for n in ep.graph.nodes]
    constraints = {str(k): str(v) for k, v in (ep.range_constraints or {}).items()}
    calls = sum(1 for n in nodes if n["op"] == "call_function")
    return P.StaticResult(
        kind="export", target=target_name, ok=True, text=str(ep.graph_module.code).strip(),
        graph=nodes, details={"signature": str(ep.graph_signature).strip(),
                              "range_constraints": constraints},
        summary=f"torch.export captured the whole of {target_name} as one graph of {calls} "
                "ATen operations; it holds for any input of the same shapes.")


class _Wrap(torch.nn.Module):
    """torch.export takes modules; a plain function is wrapped in one."""
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


# -- torch._dynamo.explain --------------------------------------------------------

def _explain(target, target_name, inputs, second, filename):
    if not inputs:
        raise _NeedsInputs("torch._dynamo.explain runs the code with example inputs; none were given.")
    import torch._dynamo as dynamo
    dynamo.reset()
    try:
        ex = dynamo.explain(target)(*inputs)
    finally:
        dynamo.reset()
    breaks = []
    for b in ex.break_reasons or []:
        stack = getattr(b, "user_stack", None) or []
        line = next((fr.lineno for fr in reversed(stack) if fr.filename == filename), None)
        breaks.append({"reason": str(getattr(b, "reason", b)), "line": line})
    guards = []
    for g in ex.out_guards or []:
        code = getattr(g, "code_list", None)
        if code:  # guards with code are the ones a learner can read
            guards.extend(str(c) for c in code)
    graphs = [str(g.code).strip() for g in ex.graphs or []]
    nodes = []
    for i, g in enumerate(ex.graphs or []):
        for n in g.graph.nodes:
            nodes.append({"name": n.name, "op": n.op, "target": _target_text(n.target),
                          "args": _args_text(n.args, n.kwargs), "graph": i,
                          "line": _line_in(n.meta.get("stack_trace"), filename)})
    if ex.graph_break_count:
        where = ", ".join(f"line {b['line']}" for b in breaks if b["line"]) or "inside torch"
        summary = (f"torch.compile would split {target_name} into {ex.graph_count} graphs with "
                   f"{ex.graph_break_count} graph break(s) ({where}): at a break it falls back "
                   "to eager Python, which decides the branch with the real value.")
    else:
        summary = (f"torch.compile would capture {target_name} as {ex.graph_count} graph(s) with no "
                   "graph break, valid while its guards hold.")
    return P.StaticResult(
        kind="explain", target=target_name, ok=True, text="\n\n".join(graphs), graph=nodes,
        summary=summary,
        details={"graph_count": ex.graph_count, "graph_break_count": ex.graph_break_count,
                 "op_count": ex.op_count, "breaks": breaks, "guards": guards[:40]})


# -- errors, in plain language -------------------------------------------------------

def _failure(kind, target_name, e, filename) -> P.StaticResult:
    typ = type(e).__name__
    msg = str(e).strip()
    line = _error_line(e, filename)
    expl = explain_error(kind, typ, msg)
    where = f" (line {line})" if line else ""
    tool = {"fx": "torch.fx.symbolic_trace", "jit": "torch.jit.trace",
            "export": "torch.export.export", "explain": "torch._dynamo.explain"}[kind]
    error = {"type": typ, "message": msg[:4000], "explanation": expl, "line": line}
    if isinstance(e, _NeedsInputs):
        # GraphScope's own word, not PyTorch's ("PyTorch says: _NeedsInputs: ...":
        # UX review), and what to do about it
        error = {"type": "", "message": "", "explanation": expl, "line": None, "ours": True}
        expl += " Type one in Example input above, as Python (torch.randn(3, 4)), and capture again."
        where = ""
    return P.StaticResult(kind=kind, target=target_name, ok=False,
                          summary=f"{tool} could not capture {target_name}{where}: {expl}",
                          error=error)


def explain_error(kind: str, typ: str, msg: str) -> str:
    """One paragraph a learner can read, for the errors static capture commonly raises."""
    low = msg.lower()
    if isinstance(typ, str) and typ == "_NeedsInputs":
        return msg
    if kind == "fx" and ("control flow" in low or "cannot be iterated" in low
                         or "len(" in low or "__bool__" in low or "proxy" in low):
        if "iterated" in low:
            return ("torch.fx runs your code with Proxy objects in place of tensors. A Proxy records "
                    "the calls made on it but holds no values, so it cannot be iterated over: how many "
                    "items there are is only known when real data arrives.")
        return ("torch.fx runs your code once with Proxy objects in place of tensors. A Proxy records "
                "every call made on it but holds no values, so when the code turns a tensor into a "
                "Python bool (an if or while on a tensor's value) there is nothing to decide with. "
                "The branch depends on the data, so no single graph describes the code; eager PyTorch "
                "simply builds the graph the data asks for, anew on every call.")
    if kind == "export" and ("data-dependent" in low or "guardondatadependent" in typ.lower()
                             or "could not guard" in low):
        return ("torch.export must capture one graph valid for every input, but the code decides a "
                "branch (or a loop count) from a tensor's value, which is only known at run time. "
                "Export refuses rather than freeze one side; torch.cond would express the branch "
                "inside the graph.")
    if kind == "export" and "dynamic" in low:
        return ("torch.export found that a shape would have to change between inputs; it captures "
                "one graph with fixed (or declared dynamic) shapes.")
    if kind == "jit":
        return ("torch.jit.trace ran the code with the given input and failed while recording it: "
                "the code does something the tracer cannot record.")
    if "unsupported" in low or "graph break" in low:
        return "The compiler met Python it cannot capture."
    return "The tool raised an error while capturing the code (PyTorch's message is shown below)."


def _error_line(e, filename):
    line = None
    for fr in traceback.extract_tb(e.__traceback__):
        if fr.filename == filename:
            line = fr.lineno
    if line is None:  # fx / export report the user frame inside their messages
        m = re.findall(r'File "?%s"?, line (\d+)' % re.escape(filename), str(e))
        if m:
            line = int(m[-1])
    return line


def _from_snippet(e, filename) -> bool:
    return any(fr.filename == filename for fr in traceback.extract_tb(e.__traceback__))


# -- small helpers -------------------------------------------------------------------

def _warning_row(w, filename):
    line = w.lineno if w.filename == filename else None
    return {"category": w.category.__name__, "message": str(w.message).strip(), "line": line}


def _dedupe(rows):
    seen, out = set(), []
    for r in rows:
        key = (r["category"], r["message"], r["line"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _line_in(stack_trace, filename):
    if not stack_trace:
        return None
    m = re.findall(r'File "%s", line (\d+)' % re.escape(filename), stack_trace)
    return int(m[-1]) if m else None


def _target_text(t) -> str:
    if isinstance(t, str):
        return t
    if isinstance(t, torch._ops.OpOverload):
        return str(t)  # aten.linear.default
    name = getattr(t, "__name__", None)
    mod = getattr(t, "__module__", None)
    if name and mod and mod not in ("builtins", "_operator"):
        mod = mod.replace("torch._C._nn", "torch.nn.functional").replace("torch._C._VariableFunctions", "torch")
        return f"{mod}.{name}"
    if name:
        return name
    return str(t)


def _args_text(args, kwargs) -> str:
    parts = [_arg(a) for a in args] + [f"{k}={_arg(v)}" for k, v in (kwargs or {}).items()]
    return ", ".join(parts)


def _arg(a) -> str:
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_arg(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner})"
    text = repr(a)
    return text if len(text) <= 60 else text[:57] + "..."


def _values(xs):
    return [_value(x) for x in xs]


def _value(x):
    if isinstance(x, torch.Tensor):
        try:
            from graphscope.capture.summaries import summary
            return summary(x, VALUE_LIMIT)
        except ImportError:
            d = x.detach()
            return {"value": d.tolist() if d.numel() <= VALUE_LIMIT else None, "stats": None,
                    "shape": list(d.shape), "dtype": str(d.dtype).removeprefix("torch.")}
    if isinstance(x, (list, tuple)):
        return [_value(v) for v in x]
    if isinstance(x, (int, float, bool, str)) or x is None:
        return x
    return repr(x)


def _try_call(fn, args):
    try:
        out = fn(*args)
        return {"raw": out, "value": _value(out), "error": None}
    except Exception as e:
        return {"raw": None, "value": None, "error": f"{type(e).__name__}: {e}"}


def _strip(d):
    return {k: v for k, v in d.items() if k != "raw"}


def _same(a, b):
    """True / False when both are comparable, None otherwise."""
    if a is None or b is None:
        return None
    try:
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            return a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), equal_nan=True))
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            if len(a) != len(b):
                return False
            rs = [_same(x, y) for x, y in zip(a, b)]
            return None if None in rs else all(rs)
        return a == b
    except Exception:
        return None
