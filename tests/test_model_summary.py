"""Value and gradient text, PyTorch-style."""
import math

import pytest

from graphscope.model.summary import format_summary


def S(value=None, shape=None, dtype="float32", stats=None):
    return {"value": value, "stats": stats, "shape": shape, "dtype": dtype}


@pytest.mark.parametrize("summary, text", [
    (S([2.0, 4.0, 6.0], [3]), "[2., 4., 6.]"),
    (S(6.0, []), "6.0"),
    (S(0.333333, []), "0.3333"),
    (S([0.1, 0.25], [2]), "[0.1000, 0.2500]"),
    (S([[1.0, 2.0], [3.0, 4.0]], [2, 2]), "[[1., 2.], [3., 4.]]"),
    (S([1e-6, 3.0], [2]), "[1.0000e-06, 3.0000e+00]"),
    (S([[1, 2], [3, 4]], [2, 2], "int64"), "[[1, 2], [3, 4]]"),
    (S([True, False], [2], "bool"), "[True, False]"),
    (S([float("nan"), 1.5], [2]), "[nan, 1.5000]"),
    (S(None, [5, 5], stats={"numel": 25, "min": -1, "max": 1, "mean": 0.1234, "std": 0.3}),
     "mean 0.12 ± 0.3 (5x5)"),
    (None, "None"),
    (7, "7"),
])
def test_format(summary, text):
    assert format_summary(summary) == text


def test_long_values_become_statistics():
    vals = [float(i) for i in range(40)]
    text = format_summary(S(vals, [40]), max_chars=40)
    mean = sum(vals) / 40
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / 39)
    assert text == f"mean {mean:.2g} ± {std:.2g} (40)"
    assert format_summary(S(vals, [40]), max_chars=1000).startswith("[0., 1., 2.")
