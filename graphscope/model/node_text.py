"""What a node says: a tensor's label (its name, else the snippet's text that
made it, cut for a box by model/label_cut.py) and its detail line (shape and dtype). The canvas,
the inspector and the DOT export agree because they all ask here."""
from __future__ import annotations

from typing import Optional

from graphscope import protocol as P
from graphscope.model.label_cut import expr_label
from graphscope.model.summary import shape_text


def dtype_text(dtype) -> str:
    return str(dtype or "").removeprefix("torch.")


_DETAIL_CACHE: dict = {}


def made_by_expr(op, tid: int) -> Optional[str]:
    """The snippet's whole text of the call by which ``op`` made tensor ``tid``
    (None when it did not, or there is none); ``made_by_text`` cuts it for a box,
    the canvas again for big text from the whole (ScenePainter.full_text)."""
    if op is None or op.outputs[:1] != [tid]:
        return None
    return getattr(op, "expr", None) or None


def made_by_text(op, tid: int, name_of=None) -> Optional[str]:
    """The label of tensor ``tid`` from ``op``, when ``op`` made it: the snippet's
    text of the call, cut for a box (None when there is none); for a ``.grad`` read
    where the snippet wrote none (an optimizer's step reads each parameter's),
    ``<owner>.grad`` with the owner's name from ``name_of(tensor id)`` ("t10" and
    "t11" stood beside model.weight and model.bias in every training loop)."""
    if op is None or op.outputs[:1] != [tid]:
        return None
    text = expr_label(made_by_expr(op, tid))
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
