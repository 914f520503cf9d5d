"""GraphScope: watch PyTorch build its autograd graph live, then step through backward.

The public in-process API is :func:`graphscope.trace`::

    import graphscope
    tr = graphscope.trace("import torch\\nx = torch.ones(2, requires_grad=True)\\n(x * 2).sum().backward()")
    tr.ops, tr.tensors, tr.backward, tr.stdout, tr.error

Importing graphscope imports neither torch nor Qt.
"""
__version__ = "0.1.0"


def trace(source: str, filename: str = "<snippet>", *, timeout: float = 30.0, **limits):
    """Run ``source`` in a fresh worker process and return its :class:`~graphscope.model.trace.Trace`.

    The snippet never runs in the calling process. ``limits`` are fields of
    :class:`graphscope.protocol.Run` (``max_ops``, ``max_output``, ...).
    """
    from graphscope.runner import run_to_trace
    return run_to_trace(source, filename, timeout=timeout, **limits)
