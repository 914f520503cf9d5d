"""What value a tensor node shows at a moment of the run (Qt-free, torch-free).

NOTE [values after in-place]: a TensorInfo carries a tensor's value when it was
created; an in-place op carries in ``Op.after`` the value just after it changed
a tensor (``x.add_(1)``, ``x[0] = 5``, ``w -= lr * w.grad`` under no_grad,
``out=``). The graph draws a change autograd recorded as a new node for the
tensor (``t<id>~<k>``, made by that op) and one it did not record (an update
under no_grad) on the tensor's existing node. So a node shows: the value after
the op that made it if that op changed the tensor in place, else the value when
created; then the value after each later unrecorded change, up to the moment
asked for, until a recorded change hands the tensor on to a newer node.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from graphscope.model.graph import changed_tensors, inplace_tracked


@dataclass(frozen=True)
class ValueAt:
    value: Any                  # nested list / number when small, else None
    stats: Optional[dict]       # statistics when not small
    changed_by: Any = None      # the in-place P.Op whose result this is, None: as created
    own: bool = False           # changed_by is the op that made the node itself
    stale: Any = None           # a later in-place P.Op whose result this does not show:
    shared: bool = False        # made on memory this shares (a view), else too big to keep


def value_at(trace, tid: int, made_by: Optional[int] = None,
             seq: Optional[int] = None, graph=None) -> Optional[ValueAt]:
    """The value the node of tensor ``tid`` made by op ``made_by`` shows at
    ``seq`` (None: at the end of the run); None for an unknown tensor.

    ``graph``: the graph the view draws (a change it drew as a new node is in
    ``graph.out_node``); without it, the graph's rule is applied to the trace's
    final tensor facts, which can differ from what a live graph knew then."""
    info = trace.tensors.get(tid)
    key = str(tid)
    shown, own, since, stale = None, False, (info.seq if info is not None else -1), None
    if made_by is not None:
        op = trace.op_by_id(made_by)
        if op is not None and (key in (op.versions or ()) or key in (op.after or ())):
            own, since = True, op.seq
            if op.after and key in op.after:
                shown = op
            else:
                stale = op      # the change that made this node, too big to keep
    for op in trace.changes_of(tid):
        if op.seq <= since:
            continue
        if seq is not None and op.seq > seq:
            break
        if graph is not None:
            new_node = (op.id, tid) in graph.out_node
        else:
            new_node = op.kind != "inplace" or inplace_tracked(op, changed_tensors(op),
                                                               trace.tensors)
        if new_node:
            break   # a newer node of the tensor shows this change
        if op.after and key in op.after:
            shown, own, stale = op, False, None
        else:
            stale = op          # changed, but too big for its value to be kept
    shared = False
    if stale is None and info is not None:
        stale = _base_changed(trace, info, shown.seq if shown is not None else since, seq)
        shared = stale is not None
    if shown is None:
        if info is None:
            return None
        return ValueAt(info.value, info.stats, None, False, stale, shared)
    value, stats = shown.after[key]
    return ValueAt(value, stats, shown, own, stale, shared)


_SHARING = frozenset({"view", "detach"})   # op kinds whose output shares its input's memory


def _base_changed(trace, info, since: int, seq: Optional[int]):
    """The latest in-place change, after ``since`` and by ``seq``, of a tensor
    ``info`` shares memory with as a view (``y = x.view(2, 2)``, ``x[0][0:2]``,
    ``x.detach()``, up the chain): its elements changed with it, but only the
    changed tensor's value (and its base's) was kept. None if there is none.
    (An op of kind ``view`` that had to copy, a ``reshape`` of a non-contiguous
    tensor, is taken for a view too: the trace does not say which.)"""
    key = str(info.id)
    found = None
    seen = 0
    while info is not None and info.created_by is not None and seen < 64:
        made = trace.op_by_id(info.created_by)
        if made is None or made.kind not in _SHARING or not made.inputs:
            break
        src = made.inputs[0]
        for op in trace.changes_of(src):
            if op.seq <= since:
                continue
            if seq is not None and op.seq > seq:
                break
            if key not in (op.versions or ()) and key not in (op.after or ()):
                if found is None or op.seq > found.seq:
                    found = op
        info = trace.tensors.get(src)
        seen += 1
    return found
