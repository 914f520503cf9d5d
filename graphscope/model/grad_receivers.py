"""Which tensor each gradient a backward Node sends on is for (Qt-free).

A step records the gradients its Node sent (``grad_inputs``, one slot per
edge, None where nothing went) and the ids of the Nodes they went to
(``next``, without the empty edges). The canvas labels the edge from an input
to the op with its gradient, and the inspector writes "gradient sent to x", so
each gradient needs its tensor.

Mostly the Node's slots are the op's inputs, in order. Not always: after an
in-place op on a view (``v = y[:2]; v.mul_(10)``) the view's node is an
``AsStridedBackward0`` that sends a gradient of the *base's* shape to the
base's ``CopySlices``; pairing by inputs called that 3-element gradient "sent
to v", a 2-element tensor. Autograd always hands an input a gradient of the
input's own shape, so a pairing whose sizes disagree is wrong, and then the
gradients are named by the Nodes they went to (``next``): the tensor that
Node belongs to where a step says so (a ``CopySlices`` stands for the base
the in-place op changed through its view), else the Node itself. ``next`` comes last, not first: a multi-output op's Node (one
``SplitBackward0`` for every chunk) belongs to its first output only, so
``(b * 5)`` after ``a, b = x.chunk(2)`` would send its gradient to ``a``.
"""
from __future__ import annotations

from typing import Optional

from graphscope.model.node_text import tensor_label


def node_tensors(trace) -> dict:
    """Autograd Node id -> the tensor its first step belongs to."""
    out: dict = {}
    for b in trace.backward:
        if b.tensor is not None and b.node not in out:
            out[b.node] = b.tensor
    return out


def arriving_tensors(op, ev) -> list:
    """The tensors the gradients arriving at step ``ev`` (``grad_outputs``) are for:
    the op's outputs, or, for the step of a base an in-place op changed through a
    view (its CopySlices, NOTE [writes through a view] in graph.py), that base."""
    if ev.tensor is not None and op.kind == "inplace" and ev.tensor not in op.outputs:
        return [ev.tensor]
    return op.outputs


def receivers(trace, ev, op, node_tensor: Optional[dict] = None) -> list:
    """``(tensor id or None, label or None, gradient summary)`` for each
    gradient step ``ev`` (of ``op``'s Node) sent on; a label names the
    receiving Node when no tensor can be given. ``node_tensor``: ``node_tensors``
    of the trace, when the caller keeps one; else made when it is needed (the
    inputs settle most steps without it)."""
    grads = list(ev.grad_inputs or [])
    real = [g for g in grads if g is not None]
    if op.qualname in _MADE_BY_BACKWARD:
        # the graph a create_graph backward made (NOTE [graphs made by backward]):
        # its nodes take the op's roots and leaves as data, not as their own
        # slots, so only the Nodes the gradients went to can say where they went
        return _by_next(trace, ev, real, node_tensor) or [
            (None, f"input {i}", g) for i, g in enumerate(grads) if g is not None]
    if ev.grad_fn == "CopySlices":
        # an in-place write through a view: its first slot is the base's history
        # (NOTE [writes through a view] in graph.py), whatever the view's size
        got = _by_next(trace, ev, real, node_tensor)
        if got:
            return got
    if len(grads) == len(op.inputs):
        pairs = [(t, g) for t, g in zip(op.inputs, grads) if g is not None]
        if _fits(trace, pairs):
            return [(t, None, g) for t, g in pairs]
    req = [t for t in op.inputs
           if (info := trace.tensors.get(t)) is not None and info.requires_grad]
    if len(req) == len(real):
        # a slot for each argument, Python numbers too: the gradients go to the
        # inputs that require grad, in order
        pairs = list(zip(req, real))
        if _fits(trace, pairs):
            return [(t, None, g) for t, g in pairs]
    return _by_next(trace, ev, real, node_tensor) or [
        (None, f"input {i}", g) for i, g in enumerate(grads) if g is not None]


_MADE_BY_BACKWARD = frozenset({"torch.autograd.grad", "torch.Tensor.backward"})


def inner_receivers(trace, ev, node_tensor: Optional[dict] = None) -> list:
    """``receivers`` of a step whose Node is inside a composite op (``ev.within``,
    NOTE [composite ops]): its slots are not the op's inputs, so the gradients are
    named by the Nodes they went to; [] when they cannot be paired. The second
    pass of ``second-derivative`` sent 12.0 from inside ``autograd.grad`` to x,
    and the graph showed no gradient at all (visual review)."""
    return _by_next(trace, ev, [g for g in ev.grad_inputs or [] if g is not None],
                    node_tensor)


def _by_next(trace, ev, real, node_tensor) -> list:
    """The gradients named by the Nodes they went to, or [] when the counts
    do not pair them."""
    nxt = list(ev.next or [])
    if not nxt or len(real) != len(nxt):
        return []
    if node_tensor is None:
        node_tensor = node_tensors(trace)
    steps = _first_steps(trace, nxt)
    out = []
    for n, g in zip(nxt, real):
        to = steps.get(n)
        if to is not None and ev.op is not None and to.op == ev.op:
            # a hop between two nodes of one op (``v.mul_(x)``: the view's new
            # node hands the base's gradient to the base's CopySlices): no input
            # of the op receives it, so no edge carries it; the words name the
            # tensor that node stands for
            info = trace.tensors.get(to.tensor) if to.tensor is not None else None
            who = f"{tensor_label(trace, info)}, through {to.grad_fn}" if info else None
            out.append((None, who or _node_label(trace, to), g))
            continue
        tid = node_tensor.get(n)
        if tid is None:
            tid = _base_of_copyslices(trace, to) if to is not None else \
                _never_ran(trace, n)
        if tid is not None and _fits(trace, [(tid, g)]):
            out.append((tid, None, g))
        else:
            out.append((None, _node_label(trace, steps.get(n)), g))
    return out


def _never_ran(trace, node):
    """The tensor of a Node no step ran: the leaf ``autograd.grad`` differentiates
    by (the engine takes its gradient without running its AccumulateGrad), named by
    a step that sent it a gradient while pairing its slots with its op's inputs
    (every slot that sent one has a Node in ``next``, in order)."""
    for b in trace.backward:
        if b.op is None or node not in (b.next or ()):
            continue
        op = trace.op_by_id(b.op)
        grads = list(b.grad_inputs or [])
        if op is None or op.qualname in _MADE_BY_BACKWARD or len(grads) != len(op.inputs):
            continue
        pairs = [(t, g) for t, g in zip(op.inputs, grads) if g is not None]
        if len(pairs) == len(b.next) and _fits(trace, pairs):
            return pairs[b.next.index(node)][0]
    return None


def _first_steps(trace, nodes) -> dict:
    """Node id -> its first step, for ``nodes`` (one pass, ends when all are found)."""
    want, out = set(nodes), {}
    for b in trace.backward:
        if b.node in want and b.node not in out:
            out[b.node] = b
            if len(out) == len(want):
                break
    return out


def _fits(trace, pairs) -> bool:
    """Whether every gradient has as many elements as its tensor (where both are
    known). Elements, not shape: the trace keeps a tensor's shape as created, and
    ``y.unsqueeze_(0)`` or ``t_()`` changes it in place."""
    for tid, g in pairs:
        info = trace.tensors.get(tid)
        shape = g.get("shape") if isinstance(g, dict) else None
        if info is not None and shape is not None and _numel(info.shape) != _numel(shape):
            return False
    return True


def _numel(shape) -> int:
    n = 1
    for d in shape:
        if d is None:
            return -1   # a nested tensor's ragged dimension: matches no count
        n *= int(d)
    return n


def _base_of_copyslices(trace, step):
    """The tensor a ``CopySlices`` Node (its first ``step``) stands for: the base
    that an in-place op on its view changed too (the one tensor the op changed
    that is neither its input nor its output), else None."""
    if step is None or step.grad_fn != "CopySlices" or step.within is None:
        return None
    host = trace.op_by_id(step.within)
    if host is None:
        return None
    others = [int(k) for k in (host.versions or {})
              if int(k) not in host.inputs and int(k) not in host.outputs]
    return others[0] if len(others) == 1 else None


def _node_label(trace, step) -> str:
    if step is None:
        return "the next node"
    if step.within is not None:
        host = trace.op_by_id(step.within)
        if host is not None:
            return f"{step.grad_fn}, inside {host.name}"
    return step.grad_fn or "the next node"

