"""Where tensors that share memory lie in it: ``Op.alias`` of a view or a
detach (NOTE [aliases] in model/values.py)."""
from __future__ import annotations

from graphscope.capture.summaries import dtype_name


def alias_of(src, src_id, outs, out_ids):
    """``Op.alias`` of a view or detach (NOTE [aliases] in model/values.py): where
    in the shared storage the input and each output that shares its memory lie,
    so a reader can work out a view's elements after a change made through
    another tensor: ``[storage offset, strides, shape, dtype, how it reads the
    memory]`` (offset and strides count elements of that dtype; the last is
    "conj" or "neg" for a lazily conjugated or negated view, else ""). ``{}``
    when no output shares it (a ``reshape`` or an indexing with a tensor that
    had to copy); None when it cannot be told."""
    try:
        # (the storage itself, not its data pointer: a FakeTensor's data pointer
        # warns "deprecated" on the snippet's stderr, naming this file: fuzz review)
        ptr = src.untyped_storage()._cdata
        found = {}
        for t, tid in zip(outs, out_ids):
            if t.untyped_storage()._cdata == ptr:
                found[str(tid)] = placement(t)
        if found:
            found.setdefault(str(src_id), placement(src))
        return found
    except Exception:   # no storage (a sparse or nested tensor, a tracer's)
        return None


def placement(t) -> list:
    reads = "conj" if t.is_conj() else "neg" if t.is_neg() else ""
    return [t.storage_offset(), list(t.stride()), list(t.shape), dtype_name(t.dtype), reads]
