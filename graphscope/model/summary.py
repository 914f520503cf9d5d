"""Short text for a value or gradient Summary (``{"value", "stats", "shape", "dtype"}``).

Numbers read the way PyTorch prints them, so a learner recognises them from the
console: ``[2., 4., 6.]`` when every element is whole, ``[0.1000, 0.2500]``
with four decimals otherwise, scientific notation when the magnitudes call for
it; a scalar reads like ``.item()`` (``6.0``). Values too long for the space
(``max_chars``) become statistics: ``mean 0.12 ± 0.3 (5x5)``.
"""
from __future__ import annotations

import math


def format_summary(summary, max_chars: int = 40) -> str:
    """Text for a Summary dict (or a bare number / nested list); ``"None"`` for no value."""
    if summary is None:
        return "None"
    if isinstance(summary, dict):
        value, stats = summary.get("value"), summary.get("stats")
        shape, dtype = summary.get("shape"), summary.get("dtype") or ""
    else:
        value, stats, shape, dtype = summary, None, None, ""
    if value is not None:
        if not isinstance(value, list):
            return _scalar(value, dtype)
        text = format_values(value, dtype)
        if len(text) <= max_chars:
            return text
        if stats is None:
            stats = stats_of_values(value)
        if shape is None:
            shape = _shape_of(value)
    if stats:
        text = format_stats(stats, shape)
        return text if len(text) <= max_chars else text[: max(1, max_chars - 1)] + "…"
    note = summary.get("note") if isinstance(summary, dict) else None
    if shape is not None:
        text = f"({shape_text(shape)} {dtype})".replace(" )", ")")
        return f"{text} {note}" if note else text
    return note or "?"


def format_values(value, dtype: str = "") -> str:
    """``[[1., 2.], [3., 4.]]`` in PyTorch's style for one nested list."""
    flat = []
    _flatten(value, flat)
    fmt = _formatter(flat, dtype)
    return _nested(value, fmt)


def format_stats(stats: dict, shape=None) -> str:
    mean, std = stats.get("mean"), stats.get("std")
    where = f" ({shape_text(shape)})" if shape is not None and len(shape) else ""
    if mean is None:
        n = stats.get("numel")
        return f"empty{where}" if n == 0 else f"?{where}"
    return f"mean {_short(mean)} ± {_short(std or 0.0)}{where}"


def stats_of_values(value) -> dict:
    flat = []
    _flatten(value, flat)
    nums = [float(x) for x in flat if isinstance(x, (int, float)) and not isinstance(x, str)]
    n = len(nums)
    if not n:
        return {"numel": len(flat), "min": None, "max": None, "mean": None, "std": None}
    mean = sum(nums) / n
    var = sum((x - mean) ** 2 for x in nums) / (n - 1) if n > 1 else 0.0
    return {"numel": n, "min": min(nums), "max": max(nums), "mean": mean, "std": math.sqrt(var)}


# -- helpers -------------------------------------------------------------------------
def _flatten(v, out):
    if isinstance(v, list):
        for x in v:
            _flatten(x, out)
    else:
        out.append(v)


def _shape_of(v):
    shape = []
    while isinstance(v, list):
        shape.append(len(v))
        v = v[0] if v else None
    return shape


def shape_text(shape, sep: str = "x") -> str:
    """``3x4``; ``scalar``; ``?`` for a size not known (a nested tensor's ragged dim)."""
    if shape is None:
        return "?"
    if len(shape) == 0:
        return "scalar"
    return sep.join("?" if s is None else str(s) for s in shape)


def _is_float_dtype(dtype: str, sample) -> bool:
    if dtype:
        return dtype.startswith(("float", "bfloat", "half", "double"))
    return any(isinstance(x, float) for x in sample)


def _formatter(flat, dtype):
    if any(isinstance(x, str) for x in flat):          # complex values arrive as text
        return str
    if any(isinstance(x, bool) for x in flat) or dtype == "bool":
        return lambda x: "True" if x else "False"
    if not _is_float_dtype(dtype, flat):
        return lambda x: str(int(x)) if _finite(x) else _special(x)
    finite = [abs(float(x)) for x in flat if _finite(x)]
    if finite and all(float(x).is_integer() for x in flat if _finite(x)):
        if max(finite) < 1e8:
            return lambda x: f"{float(x):.0f}." if _finite(x) else _special(x)
        return lambda x: f"{float(x):.4e}" if _finite(x) else _special(x)
    nz = [a for a in finite if a > 0]
    if nz and (max(nz) / min(nz) > 1000 or max(nz) > 1e8 or min(nz) < 1e-4):
        return lambda x: f"{float(x):.4e}" if _finite(x) else _special(x)
    return lambda x: f"{float(x):.4f}" if _finite(x) else _special(x)


def _nested(v, fmt) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested(x, fmt) for x in v) + "]"
    return fmt(v)


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _special(x) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(f):
        return "nan"
    return "inf" if f > 0 else "-inf"


def _scalar(v, dtype: str = "") -> str:
    """A 0-d value the way ``.item()`` prints it, trimmed to four decimals."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) and not _is_float_dtype(dtype, [v]):
        return str(v)
    if isinstance(v, str):
        return v
    if not _finite(v):
        return _special(v)
    f = float(v)
    a = abs(f)
    if f.is_integer() and a < 1e16:
        return f"{f:.1f}"
    if a != 0 and (a < 1e-4 or a >= 1e8):
        return f"{f:.4e}"
    s = f"{f:.4f}".rstrip("0")
    return s + "0" if s.endswith(".") else s


def _short(x) -> str:
    """Two significant digits for statistics."""
    if x is None or not _finite(x):
        return _special(x) if x is not None else "?"
    a = abs(float(x))
    if a >= 100:
        return f"{float(x):.0f}"
    if a != 0 and a < 1e-3:
        return f"{float(x):.1e}"
    return f"{float(x):.2g}"


def counted(n: int, noun: str) -> str:
    """``counted(1, "op")`` is "1 op", ``counted(3, "op")`` "3 ops" (the status line
    said "after 1 ops": UX review)."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
