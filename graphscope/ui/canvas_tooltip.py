"""What a node says when hovered: the tensor's facts, and for flagged nodes a plain-language
explanation with the fix (the missing requires_grad lesson, detach cuts, no_grad)."""
from __future__ import annotations

import html

from graphscope.model.summary import shape_text


def _tensor_info(node, trace):
    if trace is None or node.tensor is None:
        return None
    return getattr(trace, "tensors", {}).get(node.tensor)


def _op_info(node, trace):
    if trace is None or node.op is None:
        return None
    finder = getattr(trace, "op_by_id", None)
    return finder(node.op) if finder else None


def explanation(node, trace=None, flags=None) -> str | None:
    """The plain-language note for a flagged node, or None. ``flags``: the ones
    shown at the cursor (``ScenePainter.shown_flags``), by default all."""
    flags = (node.flags if flags is None else flags) or ()
    name = node.label or node.id
    if "missing_requires_grad" in flags:
        op = None
        info = _tensor_info(node, trace)
        if info is not None and info.created_by is not None and trace is not None:
            op = trace.op_by_id(info.created_by)
        if op is not None and op.kind == "factory":
            if "no_grad" in flags or not op.grad_enabled:
                return (f"{name} was made while gradient tracking was off, so backward cannot "
                        f"reach it: create it outside the no_grad block")
            fix = f"torch.{op.name}(..., requires_grad=True)"
            if op.name == "tensor" and info is not None and info.value is not None:
                fix = f"torch.tensor({_literal(info.value)}, requires_grad=True)"
            return (f"{name} was created without requires_grad=True, so backward cannot reach "
                    f"it: write {fix}")
        if "no_grad" in flags or "inference" in flags:
            return (f"{name} was computed with gradient tracking off (no_grad / inference_mode), "
                    f"so it has no grad_fn and backward cannot pass through it: compute it "
                    f"outside the block")
        if "detached" in flags:
            return (f"{name} comes from detach(), which cuts the graph: backward stops here. "
                    f"Use the tensor itself if gradients should flow")
        return (f"{name} was created without requires_grad=True, so backward cannot reach it: "
                f"write torch.tensor(2.0, requires_grad=True)")
    if "detached" in flags:
        return f"detach() cuts the graph here: gradients do not flow back past {name}"
    if "no_grad" in flags and node.kind == "tensor":
        return f"{name} was made inside a grad-disabled block: it has no grad_fn and is outside the graph"
    if "inference" in flags and node.kind == "tensor":
        return (f"{name} is an inference tensor (made under torch.inference_mode()): it can never "
                f"be saved for backward")
    if "branch" in flags and node.kind == "op":
        return ("A tensor's value decided Python control flow here: another value would "
                "run other code and build a different graph. Autograd does not see this "
                "decision (the dashed edge)")
    if "error" in flags:
        return "The error was raised here"
    return None


def tooltip_text(node, trace=None, grad_summary: str | None = None,
                 hidden: bool = False, flags=None, went: str | None = None,
                 cursor_pass: int | None = None) -> str:
    """Rich text for QToolTip. ``hidden``: a quiz before Reveal (no values read);
    ``flags``: the node's marks shown at the cursor (an error's note is not
    explained before the step that raised it, nor before Reveal); ``cursor_pass``:
    the pass the cursor is in (counted from 1), given when the node is drawn
    faded, as a pass before it that it does not use (NOTE [pass focus] in
    model/timeline.py)."""
    rows = []
    if node.kind == "op" and "branch" in (node.flags or ()):
        # a decision node (graph.py NOTE [branch nodes]): Python control flow
        rows.append(("condition", node.label or node.id))
        # ``went``: its text at the cursor (FrameState.detail_at), not its last
        rows.append(("went", "hidden until Reveal" if hidden
                     else ((node.detail if went is None else went) or "not yet")))
    elif node.kind == "tensor":
        info = _tensor_info(node, trace)
        rows.append(("tensor", node.label or node.id))
        if info is not None:
            # (the flags shown: requires_grad_() may come later, NOTE [late flags])
            rg = bool(info.requires_grad) and (flags is None or "requires_grad" in flags)
            rows += [("shape", shape_text(info.shape)),
                     ("dtype", str(info.dtype).removeprefix("torch.")),
                     ("requires_grad", str(rg)),
                     ("is_leaf", str(bool(info.is_leaf))),
                     ("grad_fn", info.grad_fn or "None")]
            if info.is_param:
                rows.append(("parameter", "yes"))
        else:
            facts = node.flags or ()     # (not ``flags``: those say which notes to give)
            rows += [("shape / dtype", node.detail or "?"),
                     ("requires_grad", str("requires_grad" in facts)),
                     ("is_leaf", str("leaf" in facts)),
                     ("grad_fn", "yes" if "grad_fn" in facts else "None")]
        if grad_summary:
            rows.append((".grad", grad_summary))
    else:
        op = _op_info(node, trace)
        rows.append(("op", node.label or node.id))
        rows.append(("autograd node", node.detail or "None"))
        if op is not None and op.module:
            rows.append(("module", op.module))
    if node.line is not None:
        rows.append(("line", str(node.line)))
    body = "".join(f"<tr><td><b>{html.escape(k)}</b>&nbsp;</td><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)
    text = f"<table>{body}</table>"
    note = explanation(node, trace, flags)
    if note:
        text += f"<p>{html.escape(note)}</p>"
    if cursor_pass is not None:
        text += (f"<p>Faded: from an earlier pass. The cursor is in pass {cursor_pass}, "
                 f"whose graph does not use it (each forward pass builds a new graph).</p>")
    return text


def _literal(value) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return str(value)
