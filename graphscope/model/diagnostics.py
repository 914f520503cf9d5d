"""Plain-language explanations of what went wrong, and the problems list.

``explain(error, trace)`` turns PyTorch's message for the common autograd
errors into a Diagnosis a student can act on: what happened in terms of the
graph on screen, what to change, the line to change and the nodes involved.
PyTorch's own message is always shown beside it (the window does that); an
error we do not know gets an honest generic text, never a guess.

``problems(trace)`` lists what the window's problems list shows: the error,
warnings printed on stderr, leaves missing ``requires_grad``, ``detach()`` cuts,
grad-disabled regions, and each data-dependent branch with the way it went.
"""
from __future__ import annotations

import ast
import builtins
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

from graphscope import protocol as P
from graphscope.model.graph import Graph, build_graph
from graphscope.snippet_source import source_lines


@dataclass
class Diagnosis:
    title: str
    text: str
    fix: str
    line: Optional[int] = None
    node_ids: list = field(default_factory=list)
    kind: str = "generic"          # which known error this is (for tests and styling)


@dataclass
class Problem:
    severity: str                  # "error" | "warning" | "info"
    message: str
    line: Optional[int] = None
    node_ids: list = field(default_factory=list)
    kind: str = ""                 # error | warning | missing_requires_grad | detach | region | branch


# -- explain --------------------------------------------------------------------------
def explain(error, trace, graph: Optional[Graph] = None) -> Diagnosis:
    """A Diagnosis for ``error`` (a protocol.ErrorInfo) raised by the run in ``trace``."""
    if error is None:
        return Diagnosis("No error", "The snippet ran to the end.", "", None, [], "none")
    g = graph if graph is not None else build_graph(trace)
    ctx = _Context(error, trace, g)
    msg = error.message or ""
    for pattern, handler in _HANDLERS:
        if pattern(error.type, msg):
            return handler(ctx)
    return _generic(ctx)


class _Context:
    def __init__(self, error, trace, graph):
        self.error, self.trace, self.graph = error, trace, graph

    def name(self, tid) -> str:
        info = self.trace.tensors.get(tid)
        return info.name if info is not None and info.name else f"t{tid}"

    def node(self, tid) -> Optional[str]:
        return self.graph.tensor_node.get(tid) if tid is not None else None

    def line_text(self, line) -> str:
        """The code on snippet line ``line``, without its comment (quoted in an
        explanation: ``b.mul_(2)``, not ``b.mul_(2)      # changes b ...``)."""
        lines = source_lines(self.trace.source)
        if not (line and 0 < line <= len(lines)):
            return ""
        text = lines[line - 1]
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    text = text[:tok.start[1]]
                    break
        except (tokenize.TokenError, SyntaxError):
            pass   # a line of a statement over several lines: as written
        return text.strip()

    def failing_call(self):
        """The backward call that raised: the last one (the error ends the run)."""
        calls = self.trace.backward_calls
        if not calls:
            return None
        for c in reversed(calls):
            if c.line == self.error.line:
                return c
        return calls[-1]

    def root(self) -> Optional[int]:
        if self.error.tensor is not None:
            return self.error.tensor
        call = self.failing_call()
        return call.roots[0] if call and call.roots else None

    def op(self, op_id):
        return self.trace.op_by_id(op_id) if op_id is not None else None

    def ids(self, *nids) -> list:
        out = []
        for n in nids:
            if n and n not in out:
                out.append(n)
        return out


def python_says(err, trace=None) -> bool:
    """Whether an error's message is Python's rather than PyTorch's (the banner says
    whose it is). PyTorch's when a torch call raised it (the error names its op)
    or a backward call on its line did (backward() raises with no op of its own);
    Python's when the snippet's own ``raise`` did ("PyTorch says: my own check":
    code review); else by its type, Python's own exceptions but RuntimeError,
    which torch raises from its own Python code too (``y.requires_grad = False``,
    ``load_state_dict``). "PyTorch says: invalid literal for int()" credited
    PyTorch with int('abc') (student review)."""
    if getattr(err, "op", None) is not None:
        return False
    line = getattr(err, "line", None)
    if line is not None:
        if any(c.line == line for c in (getattr(trace, "backward_calls", None) or [])):
            return False
        lines = source_lines(getattr(trace, "source", "") or "")
        if 0 < line <= len(lines) and lines[line - 1].lstrip().startswith("raise"):
            return True
    t = getattr(builtins, err.type, None)
    return isinstance(t, type) and issubclass(t, BaseException) and err.type != "RuntimeError"


def _no_grad_fn(ctx: _Context) -> Diagnosis:
    root = ctx.root()
    rname = ctx.name(root) if root is not None else "the tensor"
    culprits = [n for n in ctx.graph.nodes.values()
                if "missing_requires_grad" in n.flags and n.ghost_of is None]
    title = f"backward() on {rname}, which is not part of any graph"
    if not culprits:
        text = (f"{rname} has no grad_fn: nothing that produced it was recorded by autograd, "
                "so backward() has no graph to walk back through.")
        fix = ("Make sure some input it is computed from was created with requires_grad=True, "
               "and that it was not computed inside torch.no_grad() or after .detach().")
        return Diagnosis(title, text, fix, ctx.error.line, ctx.ids(ctx.node(root)), "no_grad_fn")
    c = culprits[0]
    cname = c.label
    op = ctx.op(c.op)
    region = ctx.graph.regions[c.region] if c.region is not None else None
    if op is not None and ("no_grad" in c.flags or "inference" in c.flags or not op.grad_enabled):
        where = region.label if region else f"a block with gradients disabled (line {op.line})"
        text = (f"{cname} was computed inside {where}, so autograd recorded nothing for it: "
                f"{cname} has no grad_fn, and {rname}, computed from it, has none either. "
                "backward() has no graph to walk back through.")
        fix = (f"Compute {cname} outside the grad-disabled block (move `{ctx.line_text(op.line)}` "
               "out of it); keep torch.no_grad() for work that needs no gradients, such as "
               "evaluation or a parameter update.")
        kind = "no_grad_region"
    elif "detached" in c.flags:
        text = (f"{cname} comes from .detach(), which cuts it out of the graph: {rname}, computed "
                "from it, has no grad_fn.")
        fix = "Use the tensor itself instead of its .detach() where you need gradients."
        kind = "detached"
    else:
        text = (f"{cname} was created without requires_grad=True, so PyTorch did not record the "
                f"operations on it: {rname} has no grad_fn and there is no graph for backward() "
                f"to walk back through. (Had it run, {cname}.grad would be None.)")
        fix = (f"Create {cname} with requires_grad=True, e.g. "
               f"`{_with_requires_grad(ctx.line_text(c.line)) or 'torch.tensor(2.0, requires_grad=True)'}`, "
               f"or call {cname}.requires_grad_() before using it.")
        kind = "missing_requires_grad"
    return Diagnosis(title, text, fix, c.line or ctx.error.line,
                     ctx.ids(c.id, ctx.node(root), *[x.id for x in culprits[1:]]), kind)


def _with_requires_grad(src: str) -> str:
    """``x = torch.tensor(2.0)`` -> ``x = torch.tensor(2.0, requires_grad=True)`` (best effort)."""
    m = re.match(r"^(.*\btorch\.\w+\()(.*)\)\s*$", src)
    if not m or "requires_grad" in src:
        return ""
    inner = m.group(2).strip()
    return f"{m.group(1)}{inner}{', ' if inner else ''}requires_grad=True)"


def _non_scalar(ctx: _Context) -> Diagnosis:
    root = ctx.root()
    info = ctx.trace.tensors.get(root) if root is not None else None
    name = ctx.name(root) if root is not None else "the tensor"
    # "has shape (3,)", a shape as Python writes the tuple: "has shape 3" read as
    # a number
    shape = (f" has shape {tuple(info.shape)}" if info is not None and info.shape is not None
             and None not in info.shape else " is not a single number")
    text = (f"backward() with no argument starts from d{name}/d{name} = 1, which only makes sense "
            f"for a single number, but {name}{shape}. PyTorch cannot guess how to weigh its elements.")
    fix = (f"Reduce it to one number first ({name}.sum().backward() or {name}.mean().backward()), or "
           f"say which gradient to start from: {name}.backward(torch.ones_like({name})).")
    return Diagnosis(f"backward() on {name}, which is not a scalar", text, fix, ctx.error.line,
                     ctx.ids(ctx.node(root)), "non_scalar")


def _twice(ctx: _Context) -> Diagnosis:
    root = ctx.root()
    name = ctx.name(root) if root is not None else "the output"
    calls = ctx.trace.backward_calls
    # the pass that freed the graph: the last one before the failing call that
    # released a node this root's graph goes through (BackwardStep.released), else
    # one from the same root that did not keep it (retain_graph=True keeps it:
    # backward-twice's first pass did), else the last that did not
    earlier = calls[:-1]
    freeing = [c for c in earlier if not c.retain_graph]
    ops = _ops_behind(ctx.trace, root)
    ids = {c.id for c in earlier}
    by_release = {s.call for s in ctx.trace.backward if s.released and s.call in ids
                  and (s.op in ops or s.within in ops)}
    hit = [c for c in earlier if c.id in by_release]
    same = [c for c in freeing if root is not None and root in c.roots]
    freed_by = (hit or same or freeing or earlier or [None])[-1]
    where = f" (line {freed_by.line})" if freed_by is not None and freed_by.line else ""
    first = freed_by is earlier[0] if earlier and freed_by is not None else True
    which = "The first backward()" if first else "The backward()"
    text = (f"{which}{where} walked the graph and then freed the intermediate values "
            "it had saved, to save memory. Another backward() through the same graph finds "
            "them gone.")
    fix = (f"Pass retain_graph=True to that backward(){where} if you really need another pass "
           "through the same graph, or recompute the forward pass before each backward() (as a "
           "training loop does every iteration).")
    return Diagnosis(f"backward() through {name}'s graph a second time", text, fix, ctx.error.line,
                     ctx.ids(ctx.node(root)), "backward_twice")


def _ops_behind(trace, root) -> set:
    """Ids of the ops whose outputs lead to tensor ``root`` (its forward graph)."""
    out: set = set()
    stack = [root] if root is not None else []
    seen: set = set()
    while stack:
        tid = stack.pop()
        if tid in seen:
            continue
        seen.add(tid)
        info = trace.tensors.get(tid)
        op = trace.op_by_id(info.created_by) if info is not None and info.created_by is not None else None
        if op is not None and op.id not in out:
            out.add(op.id)
            stack.extend(op.inputs)
    return out


def _out_of_place(written: str, name: str):
    """The out-of-place form of an in-place change as the snippet wrote it:
    ``b.mul_(2)`` -> ``b = b.mul(2)``, ``b *= 2`` -> ``b = b * 2``; None for
    anything else (``b[0] = 1``)."""
    m = re.fullmatch(r"([\w.]+)\.(\w+)_\((.*)\)", written)
    if m and m.group(1) == name:
        return f"{name} = {name}.{m.group(2)}({m.group(3)})"
    m = re.fullmatch(r"([\w.]+)\s*(\*\*|//|[-+*/@%])=\s*(.+)", written)
    if m and m.group(1) == name:
        return f"{name} = {name} {m.group(2)} {m.group(3)}"
    return None


def _inplace_saved(ctx: _Context) -> Diagnosis:
    msg = ctx.error.message
    m = re.search(r"output (\d+) of (\w+), is at version (\d+); expected version (\d+)", msg)
    nodes, line, what = [], ctx.error.line, ""
    if m:
        fn, now, expected = m.group(2), int(m.group(3)), int(m.group(4))
        # the op whose output was saved, then the in-place op that changed it
        # torch names the Node without its "Backward0" suffix in this message ("of Exp")
        maker = next((o for o in reversed(ctx.trace.ops) if o.kind != "inplace" and o.grad_fn
                      and (o.grad_fn == fn or o.grad_fn.startswith(fn + "Backward"))), None)
        changer = None
        if maker is not None:
            out = maker.outputs[int(m.group(1))] if int(m.group(1)) < len(maker.outputs) else None
            nodes.append(f"o{maker.id}")
            for o in ctx.trace.ops:
                if o.seq > maker.seq and o.kind == "inplace" and out in (o.inputs + o.outputs):
                    changer = o
            if out is not None:
                what = ctx.name(out)
        if changer is not None:
            nodes.append(f"o{changer.id}")
            line = changer.line or line
            text = (f"{maker.name} (line {maker.line}) saved {what or 'its output'} to compute gradients, but "
                    f"`{ctx.line_text(changer.line)}` (line {changer.line}) changed it in place "
                    f"afterwards (version {expected} -> {now}). The value backward() needs is gone.")
        else:
            text = (f"{fn} saved a tensor to compute gradients, but an in-place operation changed it "
                    f"afterwards (version {expected} -> {now}). The value backward() needs is gone.")
    else:
        text = ("A tensor that the graph saved for backward() was changed in place afterwards, so "
                "the value backward() needs is gone.")
    fix = ("Use the out-of-place form (y = y * 2 instead of y *= 2 or y.mul_(2)), or work on a copy "
           "(y = y.clone()) before changing it.")
    if m and changer is not None and what:
        written = changer.expr or ctx.line_text(changer.line)
        instead = _out_of_place(written, what)
        if instead:
            fix = (f"Use the out-of-place form ({instead} instead of {written}), or change a "
                   f"copy: {what} = {what}.clone() before {written}.")
    return Diagnosis("A saved tensor was modified in place", text, fix, line,
                     [n for n in nodes if n in ctx.graph.nodes], "inplace_saved")


def _integer_grad(ctx: _Context) -> Diagnosis:
    src = ctx.line_text(ctx.error.line)
    text = ("Only floating point (and complex) tensors can require gradients: a gradient is a "
            "small change, and integers cannot change by a small amount. "
            + ("torch.tensor(2) makes an int64 tensor." if "tensor(" in src else
               "This tensor has an integer dtype."))
    fix = ("Use a float: torch.tensor(2.0, requires_grad=True), or pass dtype=torch.float32.")
    return Diagnosis("Integer tensors cannot require gradients", text, fix, ctx.error.line,
                     ctx.ids(ctx.node(ctx.error.tensor)), "integer_grad")


def _inference_saved(ctx: _Context) -> Diagnosis:
    inf = [n.id for n in ctx.graph.nodes.values() if "inference" in n.flags and n.kind == "tensor"]
    region = next((r for r in ctx.graph.regions if r.kind == "inference_mode"), None)
    where = region.label if region else "torch.inference_mode()"
    text = (f"A tensor made inside {where} was used in an operation that needs to save it for "
            "backward(). Inference tensors are marked so they can never join an autograd graph, "
            "even after the block ends.")
    fix = ("Use torch.no_grad() instead of inference_mode() for tensors you use later with "
           "gradients, or make a normal copy with .clone() outside the inference block.")
    return Diagnosis("Inference tensor used in a graph", text, fix, ctx.error.line,
                     inf[:3], "inference_saved")


def _numpy_grad(ctx: _Context) -> Diagnosis:
    t = ctx.error.tensor
    name = ctx.name(t) if t is not None else "the tensor"
    text = (f"{name} requires grad, so it is part of a graph; NumPy knows nothing about graphs, and "
            "PyTorch refuses to hand the data over silently.")
    fix = f"Call {name}.detach().numpy() (or {name}.detach().cpu().numpy()) to get the values."
    return Diagnosis(".numpy() on a tensor that requires grad", text, fix, ctx.error.line,
                     ctx.ids(ctx.node(t)), "numpy_grad")


def _leaf_inplace(ctx: _Context) -> Diagnosis:
    t = ctx.error.tensor
    name = ctx.name(t) if t is not None else "a leaf"
    text = (f"{name} is a leaf that requires grad: autograd needs its value as it is to compute "
            "gradients, so changing it in place is not allowed while gradients are recorded.")
    fix = (f"Do the update under torch.no_grad() (as an optimizer step does: "
           f"with torch.no_grad(): {name} -= lr * {name}.grad), or use an out-of-place form.")
    return Diagnosis("In-place change of a leaf that requires grad", text, fix, ctx.error.line,
                     ctx.ids(ctx.node(t)), "leaf_inplace")


def _grad_input_unused(ctx: _Context) -> Diagnosis:
    text = ("torch.autograd.grad was asked for the gradient with respect to a tensor that does not "
            "require grad, or that the output does not depend on.")
    fix = ("Pass only tensors with requires_grad=True that the output is computed from, or "
           "allow_unused=True to get None for the others.")
    return Diagnosis("Gradient asked for a tensor outside the graph", text, fix, ctx.error.line,
                     [], "grad_input")


def _timeout(ctx: _Context) -> Diagnosis:
    if P.AFTER_LAST_LINE in (ctx.error.message or ""):
        text = ("The snippet's own code had finished, but what Python does after the last line "
                "(wait for the threads it started, run its atexit functions) was still going when "
                "the time limit stopped it. Everything recorded is kept.")
        fix = ("Look for a thread that never ends (make it a daemon thread, or tell it to stop "
               "before the last line) or an atexit function that waits: python itself would "
               "hang here.")
        return Diagnosis("The run did not end after its last line", text, fix, None, [], "timeout")
    at = (f" It was running line {ctx.error.line}" + (f" ({_line_text(ctx)})" if _line_text(ctx) else "")
          + "." if ctx.error.line else "")
    text = ("The snippet ran longer than the time limit and was stopped." + at + " Everything "
            "recorded up to that moment is kept and can be stepped through.")
    fix = ("Look for a loop that never ends (a while condition that stays true) or work that is "
           "much bigger than intended. If the run is really that long, raise the time limit "
           "(Run \u203a Time limit in the window, --timeout for export).")
    return Diagnosis("The run took too long", text, fix, ctx.error.line, [], "timeout")


def line_text(source: str, n) -> str:
    """Line ``n`` of ``source``, stripped, cut short and with no-break spaces, to
    quote it in a sentence ("" if there is none)."""
    lines = source_lines(source or "")
    if not n or not 0 < n <= len(lines):
        return ""
    text = lines[n - 1].strip()
    text = text if len(text) <= 40 else text[:39] + "\u2026"
    # one unit when a sentence around it wraps ("y = x / * 2" read as two lines of
    # code: visual review)
    return text.replace(" ", "\u00a0")


def _line_text(ctx: _Context) -> str:
    return line_text(getattr(ctx.trace, "source", ""), ctx.error.line)


def _crash(ctx: _Context) -> Diagnosis:
    end = ctx.trace.end
    code = end.exit_code if end is not None else None
    if code is not None and code >= 0:
        # an exit code, not a signal: the process left (os._exit(3) in the
        # snippet), it did not crash (the status line says the same)
        text = (f"The process running the snippet exited with code {code} before the run "
                f"could finish, without a Python exception ({ctx.error.message}). "
                "Everything recorded up to that moment is kept.")
        fix = ("os._exit() ends the process at once, as it does under python: nothing after "
               "it runs, not even the end of the run. A native extension can exit the same way.")
        return Diagnosis("The snippet's process ended early", text, fix, ctx.error.line, [],
                         "crash")
    text = ("The process running the snippet died without a Python exception "
            f"({ctx.error.message}). Everything recorded up to that moment is kept.")
    fix = ("Common causes: running out of memory (a tensor far larger than intended), os._exit(), "
           "or a crash inside a native extension. Try smaller sizes.")
    return Diagnosis("The run crashed", text, fix, ctx.error.line, [], "crash")


def _syntax(ctx: _Context) -> Diagnosis:
    e = ctx.error
    where = f"line {e.line}" + (f", column {e.column}" if e.column else "")
    text = (f"Python could not read the snippet ({where}: {e.message}), so nothing ran and there is "
            "no graph.")
    fix = "Check that line and the one before it: a missing colon, bracket, quote or indentation."
    return Diagnosis("The snippet is not valid Python", text, fix, e.line, [], "syntax")


def _stopped(ctx: _Context) -> Diagnosis:
    return Diagnosis("Stopped", "The run was stopped. Everything recorded until then is kept.", "",
                     ctx.error.line, [], "stopped")


def _no_keyboard(ctx: _Context) -> Diagnosis:
    """input() in the worker: GraphScope's own EOFError (capture/output.py). The
    generic words said "GraphScope has no explanation of its own for this one"
    beside GraphScope's own explanation (UX review)."""
    e = ctx.error
    where = f" at line {e.line}" if e.line else ""
    asked = ctx.line_text(e.line)
    text = ("GraphScope runs the snippet in a process of its own, with no keyboard: "
            f"input(){where} found the end of its input at once and raised EOFError, as "
            "python does when nothing is typed or piped in"
            + (f" ({asked})." if asked else "."))
    fix = ("Write the value into the code instead of asking for it: name = \"Ada\" "
           "for name = input(), n = 3 for n = int(input()).")
    return Diagnosis(f"input(){where} has no keyboard here", text, fix, e.line, [], "input")


def _symbolic_branch(ctx: _Context) -> Diagnosis:
    """torch.fx's TraceError: the generic words ("the graph shows everything the run
    did") stood over an empty graph, since fx's tracing makes no tensors (visual
    review)."""
    e = ctx.error
    where = f" at line {e.line}" if e.line else ""
    text = ("torch.fx.symbolic_trace runs the function with stand-ins (Proxy objects) "
            "that record each operation but hold no values. Python's if, while, bool() "
            "and .item() need a real value, which a stand-in cannot give, so fx stops "
            f"there{where}. Eager PyTorch has no such limit: it builds its graph while the "
            "values are known. The graph here is empty because fx's stand-ins are not "
            "tensors (View › Static capture shows what fx does capture).")
    fix = ("Keep data-dependent branches out of the traced function, pass the branch's "
           "input as a constant (concrete_args), or use eager mode or torch.compile, "
           "which handle data-dependent branches.")
    return Diagnosis(f"fx cannot trace a branch on a value{where}", text, fix, e.line, [],
                     "symbolic_branch")


def _generic(ctx: _Context) -> Diagnosis:
    e = ctx.error
    where = f" at line {e.line}" if e.line else ""
    # (whose message it is, Python's or PyTorch's, the banner's caption says)
    text = (f"The snippet raised {e.type}{where}. GraphScope has no explanation of its own "
            "for this one: read the message itself; the graph shows everything the run did "
            "up to that point.")
    nodes = []
    if e.op is not None:
        nodes += ctx.graph.op_nodes.get(e.op, [])[:1]
    n = ctx.node(e.tensor)
    if n:
        nodes.append(n)
    return Diagnosis(f"{e.type}{where}", text, "", e.line, nodes, "generic")


def _has(*needles):
    return lambda typ, msg: any(n in msg for n in needles)


_HANDLERS = [
    (lambda t, m: t == "SyntaxError" or t in ("IndentationError", "TabError"), _syntax),
    (lambda t, m: t == "Timeout", _timeout),
    (lambda t, m: t == "Crash", _crash),
    (lambda t, m: t == "Stopped", _stopped),
    (lambda t, m: t == "EOFError" and m == P.INPUT_EOF, _no_keyboard),
    (lambda t, m: t == "TraceError" and "used as inputs to control flow" in m,
     _symbolic_branch),
    (_has("does not require grad and does not have a grad_fn"), _no_grad_fn),
    (_has("grad can be implicitly created only for scalar outputs"), _non_scalar),
    (_has("backward through the graph a second time",
          "Trying to backward through the graph a second time"), _twice),
    (_has("modified by an inplace operation"), _inplace_saved),
    (_has("Only Tensors of floating point and complex dtype can require gradients"), _integer_grad),
    (_has("Inference tensors cannot be saved for backward"), _inference_saved),
    (_has("Can't call numpy() on Tensor that requires grad"), _numpy_grad),
    (_has("a leaf Variable that requires grad is being used in an in-place operation"), _leaf_inplace),
    (_has("One of the differentiated Tensors"), _grad_input_unused),
]


# -- problems ------------------------------------------------------------------------------
_WARNING_RE = re.compile(r"^(?P<file>[^\n:]*):(?P<line>\d+): (?P<cat>\w*Warning): (?P<msg>.*)$", re.M)


def problems(trace, graph: Optional[Graph] = None, include_error: bool = True) -> list:
    """Everything the problems list shows, most important first."""
    g = graph if graph is not None else build_graph(trace)
    out: list[Problem] = []
    err = trace.error
    if include_error and err is not None and trace.status != "stopped":
        d = explain(err, trace, g)
        out.append(Problem("error", f"{d.title} ({err.type}: {err.message})", d.line or err.line,
                           d.node_ids, "error"))
    for m in _WARNING_RE.finditer(trace.stderr):
        line = int(m.group("line")) if m.group("file") in (trace.filename, "<snippet>") else None
        out.append(Problem("warning", f"{m.group('cat')}: {m.group('msg')}", line, [], "warning"))
    plain = []       # leaves made without requires_grad that a backward needed
    for n in g.nodes.values():
        if "missing_requires_grad" in n.flags and n.ghost_of is None:
            if "no_grad" in n.flags or "inference" in n.flags:
                text = (f"{n.label} was made with gradients disabled, but a backward() or .grad "
                        "read later depended on it")
                out.append(Problem("warning", text, n.line, [n.id], "missing_requires_grad"))
            else:
                plain.append(n)
    if len(plain) == 1:
        n = plain[0]
        out.append(Problem("warning", f"{n.label} was created without requires_grad=True, but a "
                           "backward() or .grad read later depended on it: add requires_grad=True "
                           "where it is made", n.line, [n.id], "missing_requires_grad"))
    elif plain:
        # one row: each on its own told the student to add requires_grad=True to the
        # data too (``w * x``, both plain: first-time user review); one is enough
        names = ", ".join(n.label for n in plain[:-1]) + f" and {plain[-1].label}"
        out.append(Problem("warning", f"{names} were created without requires_grad=True, and a "
                           "backward() or .grad read later depended on them: add "
                           "requires_grad=True to the ones you want gradients for (the weights, "
                           "usually not the data)", plain[0].line, [n.id for n in plain],
                           "missing_requires_grad"))
    for op in trace.ops:
        if op.kind == "detach" or op.name == "detach":
            src = op.inputs[0] if op.inputs else None
            name = _tname(trace, src)
            out.append(Problem("info", f"{name}.detach() (line {op.line}) cuts the graph: no gradient "
                               f"flows back to {name} through this path", op.line,
                               [f"o{op.id}"] if f"o{op.id}" in g.nodes else [], "detach"))
    for box in g.regions:
        if box.node_ids:
            out.append(Problem("info", f"{box.label}: tensors made here have no grad_fn",
                               box.lines[0], list(box.node_ids), "region"))
    out.extend(branch_problems(trace, g))
    return out


def flags(trace, graph: Optional[Graph] = None) -> list:
    """The problems list without the error itself (the window shows the error from explain())."""
    return problems(trace, graph, include_error=False)


def _tname(trace, tid) -> str:
    info = trace.tensors.get(tid) if tid is not None else None
    return info.name if info is not None and info.name else (f"t{tid}" if tid is not None else "a tensor")


# -- branches ----------------------------------------------------------------------------------
def branch_problems(trace, graph: Optional[Graph] = None) -> list:
    """One Problem per source line where a tensor's value steered the program."""
    if not trace.branches:
        return []
    try:
        tree = ast.parse(trace.source)
    except (SyntaxError, ValueError):
        tree = None
    by_line: dict = {}
    for b in sorted(trace.branches, key=lambda b: b.seq):
        by_line.setdefault(b.line, []).append(b)
    op_seqs = [o.seq for o in trace.ops]
    out = []
    for line, events in by_line.items():
        node = _control_at(tree, line) if tree is not None and line else None
        if node is None and all(b.kind == "item" for b in events):
            continue   # a value read for printing or arithmetic, not a decision
        nodes = []
        for b in events:
            nid = graph.tensor_node.get(b.tensor) if graph is not None and b.tensor is not None else None
            if nid and nid not in nodes:
                nodes.append(nid)
        out.append(Problem("info", _branch_text(trace, node, events, op_seqs, line), line,
                           nodes[:8], "branch"))
    return out


def _control_at(tree, line):
    """The innermost if / while / conditional expression / assert whose test is on ``line``."""
    best = None
    for n in ast.walk(tree):
        if isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension)):
            test = n.test if not isinstance(n, ast.comprehension) else (n.ifs[0] if n.ifs else None)
            if test is None:
                continue
            if test.lineno <= line <= (test.end_lineno or test.lineno):
                if best is None or n.lineno >= best.lineno:
                    best = n
    return best


def _branch_text(trace, node, events, op_seqs, line) -> str:
    vals = ", ".join(_value_text(b.value) for b in events[:6]) + (", ..." if len(events) > 6 else "")
    if node is None:
        return f"line {line}: a tensor's value decided the control flow ({vals})"
    test = ast.get_source_segment(trace.source, node.test if not isinstance(node, ast.comprehension)
                                  else node.ifs[0]) or "the condition"
    if isinstance(node, ast.While):
        n = len(events)
        went = _went(trace, node, events[-1], op_seqs)
        if went is False or (went is None and n > 1):
            return (f"while {test} (line {line}): the loop ran {n - 1} time{'s' if n - 1 != 1 else ''}, "
                    "then the condition was False; another input can loop a different number of "
                    "times and build a different graph")
        return f"while {test} (line {line}): checked {n} time{'s' if n != 1 else ''} ({vals})"
    kw = {ast.If: "if", ast.IfExp: "conditional expression", ast.Assert: "assert",
          ast.comprehension: "comprehension filter"}.get(type(node), "condition")
    parts = []
    for b in events[:3]:
        went = _went(trace, node, b, op_seqs)
        where = ""
        if went is True:
            where = "the if-branch ran" if isinstance(node, ast.If) else "the first value was used"
            if isinstance(node, ast.If) and node.body:
                where += f" (line {node.body[0].lineno})"
        elif went is False:
            if isinstance(node, ast.If):
                where = (f"the else-branch ran (line {node.orelse[0].lineno})" if node.orelse
                         else "the if-branch was skipped")
            else:
                where = "the else value was used"
        read = f"{test} gave {_value_text(b.value)}" if b.kind == "bool" else f"the value read was {_value_text(b.value)}"
        parts.append(f"{read}, so {where}" if where else read)
    more = f" (and {len(events) - 3} more times)" if len(events) > 3 else ""
    return f"{kw} {test} (line {line}): " + "; ".join(parts) + more + \
        ": a different value would build a different graph"


def _went(trace, node, b, op_seqs):
    """True / False for which way ``node`` went at branch event ``b``, None if unknown."""
    if b.kind == "bool" and isinstance(b.value, bool) and _test_is_whole(node, b):
        return b.value
    test = node.test if not isinstance(node, ast.comprehension) else None
    ev = _evaluate(test, b.value) if test is not None else None
    if ev is not None:
        return ev
    if isinstance(node, (ast.If, ast.While)):
        import bisect
        i = bisect.bisect_right(op_seqs, b.seq)
        for o in trace.ops[i:i + 50]:
            if o.line is None or o.line == b.line:
                continue
            if _in(node.body, o.line):
                return True
            if isinstance(node, ast.If) and _in(node.orelse, o.line):
                return False
            return False if isinstance(node, ast.While) or not node.orelse else None
    return None


def _test_is_whole(node, b) -> bool:
    # bool(t) on the whole test (``if t > 5``), not on one operand of ``a and b``
    test = getattr(node, "test", None)
    return not isinstance(test, ast.BoolOp)


def _evaluate(test, value):
    """``y.item() > 1.5`` with the value read: True/False, or None when not that simple."""
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or isinstance(value, (list, dict)):
        return None
    try:
        left_const = _const(test.left)
        right_const = _const(test.comparators[0])
    except ValueError:
        return None
    if left_const is None and right_const is not None:
        a, b = value, right_const
    elif right_const is None and left_const is not None:
        a, b = left_const, value
    else:
        return None
    op = test.ops[0]
    try:
        return {ast.Gt: a > b, ast.Lt: a < b, ast.GtE: a >= b, ast.LtE: a <= b,
                ast.Eq: a == b, ast.NotEq: a != b}.get(type(op))
    except TypeError:
        return None


def _const(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _in(stmts, line) -> bool:
    if not stmts:
        return False
    return stmts[0].lineno <= line <= (stmts[-1].end_lineno or stmts[-1].lineno)


def _value_text(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if not v.is_integer() else f"{v:.1f}"
    return repr(v) if isinstance(v, (bool, int)) else str(v)[:20]
