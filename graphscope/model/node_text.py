"""What a node says: a tensor's label (its name, else the snippet's text that
made it, cut for a box) and its detail line (shape and dtype). The canvas,
the inspector and the DOT export agree because they all ask here."""
from __future__ import annotations

from typing import Optional

from graphscope import protocol as P
from graphscope.model.summary import shape_text


def dtype_text(dtype) -> str:
    return str(dtype or "").removeprefix("torch.")


_DETAIL_CACHE: dict = {}


EXPR_CHARS = 22   # an expression label longer than this is cut: boxes grow with labels


def expr_label(expr: Optional[str]) -> Optional[str]:
    """The text of an expression as a node label: short enough for a box."""
    if not expr:
        return None
    if len(expr) <= EXPR_CHARS:
        return expr
    # both ends: a chain and its link differ at the end (``….sum()``), calls of
    # one function at the start
    n = (EXPR_CHARS - 1) // 2
    head, tail = expr[:n], expr[-(EXPR_CHARS - 1 - n):]
    # cut between tokens, not inside a name ("torch.stac…"), and no dot or space
    # or comma beside the ellipsis ("F.relu(s….conv(x))" reads as a typo)
    if _word(expr[n]) and _word(head[-1]):
        cut = max(head.rfind(c) for c in " .([")
        if cut >= len(head) // 2:     # (not at the cost of most of it)
            head = head[:cut + 1]
    if _word(tail[0]) and _word(expr[-len(tail) - 1]):
        cut = min((i for i in (tail.find(c) for c in " .") if i >= 0), default=-1)
        if 0 <= cut <= len(tail) // 2:
            tail = tail[cut:]
    if _word(expr[len(head)]) and _word(head[-1]) or _word(tail[0]) and _word(expr[-len(tail) - 1]):
        # still inside a name ("self.cell(…eeze(0), h)" read as a typo: a review):
        # a call whose arguments are what does not fit is said as a module call
        # is, ``self.cell(…)``
        short = _call_without_arguments(expr)
        if short is not None:
            return short
    return head.rstrip(". ") + "\u2026" + tail.lstrip(". ,")


def _call_without_arguments(expr: str) -> Optional[str]:
    """``f(…)`` (and what a chain adds after it: ``f(…).sum()``) for an expression
    that is one call of a plain name or path, with its arguments left out; None when
    it is not one or that is still too long."""
    i = 0
    while i < len(expr) and (_word(expr[i]) or expr[i] == "."):
        i += 1
    if i == 0 or i >= len(expr) or expr[i] != "(":
        return None
    depth = 0
    for j in range(i, len(expr)):
        c = expr[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                break
    else:
        return None
    rest = expr[j + 1:]
    if any(c in rest for c in "([{") and rest.count("(") != rest.count("()"):
        return None       # a chain with arguments of its own: not only this call's
    text = expr[:i] + "(\u2026)" + rest
    return text if len(text) <= EXPR_CHARS else None


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def made_by_text(op, tid: int, name_of=None) -> Optional[str]:
    """The label of tensor ``tid`` from ``op``, when ``op`` made it: the snippet's
    text of the call, cut for a box (None when there is none); for a ``.grad`` read
    where the snippet wrote none (an optimizer's step reads each parameter's),
    ``<owner>.grad`` with the owner's name from ``name_of(tensor id)`` ("t10" and
    "t11" stood beside model.weight and model.bias in every training loop)."""
    if op is None or op.outputs[:1] != [tid]:
        return None
    text = expr_label(getattr(op, "expr", None))
    if text is None and op.kind == "grad_read" and op.inputs and name_of is not None:
        owner = name_of(op.inputs[0])
        if owner:
            text = f"{owner}.grad"     # a path, as a name: the canvas shrinks or cuts it
    return text


def tensor_label(trace, info) -> str:
    """How a tensor of ``trace`` is called on screen: its name, else the text that
    made it (the op's, else the module call's), else ``t<id>`` (the canvas, the
    inspector and the DOT export agree)."""
    if info.name:
        return info.name
    op = trace.op_by_id(info.created_by) if info.created_by is not None else None
    return (made_by_text(op, info.id, lambda t: getattr(trace.tensors.get(t), "name", None))
            or expr_label(trace._module_texts.get(info.id)) or f"t{info.id}")


def tensor_detail(info: Optional[P.TensorInfo]) -> str:
    if info is None:
        return ""
    key = (tuple(info.shape) if info.shape is not None else None, info.dtype)
    text = _DETAIL_CACHE.get(key)
    if text is None:
        text = f"{shape_text(info.shape)} {dtype_text(info.dtype)}".strip()
        if len(_DETAIL_CACHE) < 4096:
            _DETAIL_CACHE[key] = text
    return text
