"""The snippet's own text of an expression, from an instruction's source positions.

``source_span`` reads what ``co_positions`` points at as one line (a call written
over several lines, a method chain split over lines), for the labels of the
tensors a call made (``Op.expr``, ``ModuleCall.expr``).
"""
from __future__ import annotations

import ast
import io
import linecache
import tokenize

from graphscope.snippet_source import source_lines


def source_span(filename: str, l0: int, l1: int, c0: int, c1: int, starts=None):
    """The source text from line ``l0`` column ``c0`` to line ``l1`` column
    ``c1`` (an instruction's ``co_positions``; columns count UTF-8 bytes) as one
    line with its runs of spaces made one: a call written over several lines
    (``F.cross_entropy(`` then ``logits, target)``) reads
    ``F.cross_entropy(logits, target)``, without its comments.

    A method call written on a line of its own (``.add(1)`` of a chain split
    over lines) has positions without its receiver: ``starts()`` (a
    ``method_call_starts`` map) gives the call's own start then. None when the text
    cannot be read as one expression."""
    if linecache.getline(filename, l0).encode("utf-8")[:c0].rstrip().endswith(b"."):
        start = starts().get((l1, c1)) if starts is not None else None
        if start is None:
            return None
        l0, c0 = start
    if l1 < l0 or l1 - l0 >= _MAX_SPAN_LINES:
        return None
    lines = [linecache.getline(filename, n).encode("utf-8") for n in range(l0, l1 + 1)]
    if not lines[0]:
        return None
    if l0 == l1:
        return " ".join(lines[0][c0:c1].decode("utf-8", "replace").split()) or None
    lines[0], lines[-1] = lines[0][c0:], lines[-1][:c1]
    rows = source_lines(b"".join(lines).decode("utf-8", "replace"))
    # Python's own reading of the text tells a comment from a '#' in a string;
    # read inside brackets, as the expression stands in its statement (alone, a
    # continuation line that dedents unevenly reads as an indentation error)
    try:
        toks = list(tokenize.generate_tokens(io.StringIO("(" + "\n".join(rows) + ")\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    cut = {}
    for t in toks:
        if t.type == tokenize.COMMENT:
            cut[t.start[0]] = t.start[1] - (1 if t.start[0] == 1 else 0)
        elif t.type == tokenize.STRING and t.start[0] != t.end[0]:
            return None   # a string over several lines: no one-line form
    pieces = []
    for i, row in enumerate(rows, 1):
        row = row[:cut.get(i, len(row))].strip()
        if row.endswith("\\"):
            row = row[:-1].rstrip()
        if row:
            pieces.append(" ".join(row.split()))
    if not pieces:
        return None
    out = pieces[0]
    for p in pieces[1:]:
        # a line break after an opening bracket, or before a closing one or a
        # method's dot, was layout; elsewhere it stood for a space
        if p[0] in ")]}" and out[-1] == "," and _not_a_one_tuple(out):
            out = out[:-1]   # the comma a call over lines ends its last argument with
        out += p if out[-1] in "([{" or p[0] in ")]}." else " " + p
    return out


def _not_a_one_tuple(text: str) -> bool:
    """Whether the trailing comma of ``text`` can go: it is in a call's brackets
    (``f(x,)``), a list's or a dict's, or another comma stands beside it; only a
    one-element tuple, ``(a,)``, keeps it."""
    depth = 0
    for i in range(len(text) - 2, -1, -1):
        ch = text[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                before = text[:i].rstrip()[-1:]
                return ch != "(" or before.isalnum() or before in ("_", ")", "]")
            depth -= 1
        elif ch == "," and depth == 0:
            return True
    return False


_MAX_SPAN_LINES = 12   # a call written over more lines is not a label anyone reads


def method_call_starts(filename: str) -> dict:
    """(end line, end column) -> (line, column) where it starts, of every call
    of an attribute (``x.mul(2)``) in ``filename`` whose text spans lines, for
    ``source_span``; from the snippet's syntax tree (columns in UTF-8 bytes, as
    ``co_positions``). Empty if the text does not parse."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    return {(n.end_lineno, n.end_col_offset): (n.lineno, n.col_offset)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.end_lineno != n.lineno}
