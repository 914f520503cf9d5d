"""Grad-mode regions read from the snippet's source (standard library only).

Found forms, for ``torch.no_grad``, ``torch.enable_grad``,
``torch.inference_mode`` and ``torch.set_grad_enabled`` (also via
``torch.autograd.*``, ``import torch as T`` and ``from torch import no_grad
as ng``):

- ``with torch.no_grad():`` -- the ``with`` statement's lines;
- ``@torch.no_grad()`` / ``@torch.no_grad`` on a ``def`` -- the function's lines;
- ``torch.set_grad_enabled(False)`` as a statement -- from that line to the
  next ``set_grad_enabled`` call in the same block, or the block's end;
- ``with torch.set_grad_enabled(phase == "train"):`` -- an argument decided at
  run time: a region whose ``grad_enabled`` is None (the graph boxes only the
  ops that ran with grad off in it; the tutorial's train/val loop had no box).

Kept free of torch so the model side can reuse it on a source text.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

KINDS = {"no_grad": False, "enable_grad": True, "inference_mode": False,
         "set_grad_enabled": None}


@dataclass(frozen=True)
class FoundRegion:
    kind: str
    grad_enabled: bool | None      # None: decided at run time
    start_line: int
    end_line: int
    form: str
    label: str


def find_regions(source: str) -> list[FoundRegion]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    aliases = _aliases(tree)
    found: list[FoundRegion] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                r = _mode_of(item.context_expr, aliases, source=source)
                if r:
                    found.append(_make(r, node.lineno, node.end_lineno, "with"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for dec in node.decorator_list:
                r = _mode_of(dec, aliases, bare_ok=True)
                if r:
                    found.append(_make(r, dec.lineno, node.end_lineno, "decorator"))
        body_lists = [getattr(node, f, None) for f in ("body", "orelse", "finalbody")]
        for body in body_lists:
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                found.extend(_call_regions(body, aliases, source))
    found.sort(key=lambda r: (r.start_line, r.end_line))
    return found


def _make(r, start, end, form) -> FoundRegion:
    kind, enabled, text = r
    lines = f"line {start}" if start == end else f"lines {start}-{end}"
    return FoundRegion(kind, enabled, start, end, form, f"{text}, {lines}")


def _call_regions(body, aliases, source: str = "") -> list[FoundRegion]:
    out = []
    open_at = None
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            r = _mode_of(stmt.value, aliases, source=source)
            if r and r[0] == "set_grad_enabled":
                if open_at is not None:
                    out.append(_make(open_at[1], open_at[0], stmt.lineno - 1 if
                                     stmt.lineno > open_at[0] else open_at[0], "call"))
                    open_at = None
                if r[1] is False:
                    open_at = (stmt.lineno, r)
    if open_at is not None:
        out.append(_make(open_at[1], open_at[0], body[-1].end_lineno, "call"))
    return out


def _dotted(expr) -> str | None:
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return ".".join(reversed(parts))
    return None


def _aliases(tree) -> dict[str, str]:
    """Local name -> full dotted torch path, from the snippet's imports."""
    names = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    if a.asname:
                        names[a.asname] = a.name
                    else:
                        names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "torch" or node.module.startswith("torch.")):
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _mode_of(expr, aliases, bare_ok=False, source: str = ""):
    """(kind, grad_enabled, label text) if expr is a grad-mode call, else None."""
    call = expr if isinstance(expr, ast.Call) else None
    target = call.func if call is not None else expr
    if call is None and not bare_ok:
        return None
    dotted = _dotted(target)
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    full = aliases.get(head)
    if full is None:
        return None
    full = f"{full}.{rest}" if rest else full
    if not full.startswith("torch"):
        return None
    kind = full.rsplit(".", 1)[-1]
    if kind not in KINDS:
        return None
    enabled = KINDS[kind]
    args = ""
    if call is not None:
        arg = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        if kind == "set_grad_enabled":
            if isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
                enabled = arg.value
                args = repr(arg.value)
            elif arg is not None and not bare_ok:   # (a decorator's is left out)
                enabled = None             # decided at run time
                args = (ast.get_source_segment(source, arg) if source else None) or \
                    ast.unparse(arg)
                args = " ".join(args.split())   # (one line, as written)
                if len(args) > 40:
                    args = args[:39] + "\u2026"
            else:
                return None
        elif kind == "inference_mode" and isinstance(arg, ast.Constant):
            if arg.value is False:
                return None     # inference_mode(False) changes nothing about grad
    text = f"{dotted}({args})" if call is not None else f"@{dotted}"
    if call is not None and bare_ok:
        text = "@" + text
    return kind, enabled, text
