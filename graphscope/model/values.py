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
    through: Optional[int] = None  # changed_by changed this through tensor ``through``,
                                   # which shares its memory (NOTE [aliases])


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
    until = seq
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
            until = op.seq - 1   # a newer node of the tensor shows this change and what follows
            break
        if op.after and key in op.after:
            shown, own, stale = op, False, None
        else:
            stale = op          # changed, but too big for its value to be kept
    if shown is None:
        if info is None:
            return None
        value, stats = info.value, info.stats
    else:
        value, stats = shown.after[key]
    through = None
    shared = False
    if stale is None and info is not None:
        by, through, value2, alias_stale = _through_aliases(
            trace, info, value, shown.seq if shown is not None else since, until)
        if by is not None:
            shown, own, value, stats = by, False, value2, None
        if alias_stale is not None:
            stale, shared = alias_stale, True
    return ValueAt(value, stats, shown, own, stale, shared, through)


# NOTE [aliases]: tensors that share memory (``v = y.view(2, 2)``, ``x[1:3]``,
# ``c = y.detach()``, ``p, q = x.split(3)``) change together, but an in-place op
# records the value after only of the tensor it was called on and of that
# tensor's base (NOTE [values after in-place]). So each view or detach records
# ``Op.alias``: where the input and each output that really shares its memory
# lie in it (storage offset and strides; a ``reshape`` that had to copy is not
# there). The Trace groups tensors that share memory (``aliases_of``). A value
# at a step then takes, in order, every later change made through another
# tensor of the group whose value after was kept, and moves the elements that
# sit at the same places in memory, conjugated or negated where one of the two
# reads the memory so (``c = r.conj()``: ``_reading``). What cannot be worked out
# so (a change too big to keep that touches this tensor's memory, a view of
# another dtype, or a trace from before ``Op.alias``) leaves the value as it
# was, marked stale.

def _through_aliases(trace, info, value, since: int, until: Optional[int]):
    """(op, tensor id it went through, new value, stale op) for the changes made
    after ``since`` and by ``until`` to memory tensor ``info`` shares with others
    (NOTE [aliases]); (None, None, value, None) when there are none."""
    tid = info.id
    group = trace.aliases_of(tid)
    if len(group) < 2:
        return None, None, value, None
    key = str(tid)
    ops, seen = [], set()
    for k in group:
        if k == tid:
            continue
        for op in trace.changes_of(k):
            if op.seq <= since:
                continue
            if until is not None and op.seq > until:
                break
            if id(op) in seen or key in (op.versions or ()) or key in (op.after or ()):
                continue
            seen.add(id(op))
            ops.append(op)
    if not ops:
        return None, None, value, None
    ops.sort(key=lambda o: o.seq)
    geometry = trace.geometry_of(tid)
    mine = flat = None
    if value is not None and geometry is not None:
        mine, flat = _elements(value, geometry)
    by = through = stale = None
    for op in ops:
        for k in _changed_members(op, group, tid):
            sk = str(k)
            k_geometry = trace.geometry_of(k)
            read = _reading(k_geometry, geometry) if geometry is not None and \
                k_geometry is not None else None
            if read is None:
                # shares memory, but where, or as what (another dtype), is not known
                stale = op
                continue
            got = op.after.get(sk) if op.after else None
            k_value = got[0] if got else None
            k_pos = k_flat = None
            if mine is not None and k_value is not None:
                k_pos, k_flat = _elements(k_value, k_geometry)
            if k_pos is None:
                # its elements (or ours) were too many to keep: did it touch ours?
                if _overlap(geometry, k_geometry):
                    stale = op
                continue
            try:
                new = dict(zip(k_pos, k_flat if read is _same else list(map(read, k_flat))))
            except (ValueError, TypeError):   # not a number (a hand-edited trace file)
                stale = op
                continue
            covered = changed = 0
            for i, p in enumerate(mine):
                if p in new:
                    covered += 1
                    if new[p] != flat[i]:
                        flat[i] = new[p]
                        changed += 1
            if changed:
                # (the value kept is the whole of k: only a change of ours names the op)
                by, through = op, k
            if covered == len(mine):
                stale = None     # every element of ours is known again
    if by is not None:
        value = _unflatten(flat, geometry[2])
    return by, through, value, stale


def _changed_members(op, group, tid) -> list:
    """The tensors of ``group`` (other than ``tid``) whose elements ``op`` changed.
    An in-place op changes exactly the elements of the tensor it was called on;
    the base listed beside it (NOTE [values after in-place]) adds nothing when
    that tensor's value was kept, and is often too big to keep itself."""
    after = op.after or {}
    versions = op.versions or {}
    changed = [k for k in group if k != tid and (str(k) in versions or str(k) in after)]
    if op.kind == "inplace" and op.inputs and not op.name.startswith("_foreach"):
        target = op.inputs[0]
        kept = after.get(str(target))
        if target in changed and kept and kept[0] is not None:
            return [target]
    return changed


def _reading(a, b):
    """How an element of placement ``a`` reads as the element at the same place of
    ``b``: ``_same``, a function (one of them is a lazily conjugated or negated
    view, ``c = r.conj()``: its elements are the memory's conjugated), or None
    when it cannot be told (another dtype: ``torch.view_as_complex``)."""
    if len(a) < 5 or len(b) < 5 or a[3] != b[3]:
        return None
    if a[4] == b[4]:
        return _same
    undo, do = _READS.get(a[4]), _READS.get(b[4])
    if undo is None or do is None:
        return None
    return lambda x: do(undo(x))


def _same(x):
    return x


def _conj(x):
    # (complex elements are kept as their str(): NOTE in capture/summaries.py; a
    # real tensor's conj is itself)
    return str(complex(x).conjugate()) if isinstance(x, str) else x


def _neg(x):
    if isinstance(x, str):
        return str(-complex(x))
    return -x if isinstance(x, (int, float)) and not isinstance(x, bool) else x


_READS = {"": _same, "conj": _conj, "neg": _neg}


def _elements(value, geometry):
    """(places in memory, elements) of a value laid out as ``geometry`` says, in
    row-major order; (None, None) when the value does not have that shape."""
    offset, strides, shape = geometry[0], geometry[1], geometry[2]
    if _shape_of(value, len(shape)) != list(shape):
        return None, None
    pos = [offset]
    for size, stride in zip(shape, strides):
        pos = [p + i * stride for p in pos for i in range(size)]
    return pos, _flatten(value, len(shape))


def _shape_of(value, ndim: int) -> list:
    shape = []
    for _ in range(ndim):
        if not isinstance(value, list):
            return None
        shape.append(len(value))
        value = value[0] if value else None
    return shape


def _bounds(geometry):
    """(lowest, highest) place in memory a tensor's elements take; None if it has none."""
    offset, strides, shape = geometry[0], geometry[1], geometry[2]
    if any(s == 0 for s in shape):
        return None
    lo = hi = offset
    for size, stride in zip(shape, strides):
        if stride < 0:
            lo += (size - 1) * stride
        else:
            hi += (size - 1) * stride
    return lo, hi


def _overlap(geometry_a, geometry_b) -> bool:
    a, b = _bounds(geometry_a), _bounds(geometry_b)
    return a is not None and b is not None and a[0] <= b[1] and b[0] <= a[1]


def _flatten(value, ndim: int) -> list:
    out = [value]
    for _ in range(ndim):
        out = [x for row in out for x in (row if isinstance(row, list) else [row])]
    return out


def _unflatten(flat: list, shape) -> Any:
    if not shape:
        return flat[0]
    out = flat
    for size in reversed(shape[1:]):
        out = [out[i:i + size] for i in range(0, len(out), size)]
    return out
