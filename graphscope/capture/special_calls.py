"""The torch calls the recorder treats as more than an op: reads and writes of
``.grad``, ``requires_grad`` and ``.data``, the view getters (``.T``,
``.real``), the reads that hand a tensor's value to Python (``bool``,
``.item()``: Branch messages), the backward calls, and ``torch.empty`` where
the unpickler calls it. A mixin of
``Recorder`` (recorder.py), whose ``_build_special`` table sends those
callables here."""
from __future__ import annotations

import sys

import torch

from graphscope import protocol as P
from graphscope.capture.call_sites import call_as_caller, call_from, locate_call
from graphscope.capture.tensor_facts import (flags_of, no_subclass_dispatch, read_plainly,
                                             version_of)

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled

# the reads that hand a tensor's value to Python: each makes a Branch message
BRANCH_KINDS = {"__bool__": "bool", "item": "item", "tolist": "tolist", "__int__": "int",
                "__float__": "float", "__index__": "index", "__complex__": "complex"}


def _as_text(v):
    """Nested lists of complex numbers as their text, ``"(1+2j)"``."""
    return [_as_text(x) for x in v] if isinstance(v, list) else str(v)


# NOTE [unpickled tensors]: pickle.loads and torch.load rebuild a
# tensor as ``torch.empty((0,))`` and then ``set_`` onto the stored data, a
# call no TorchFunctionMode sees. Recorded, the empty tensor was the one the
# snippet got: sd["weight"] was an ``empty`` op of shape [0] with value []
# (capture review). The empty call made there is the unpickler's, not the
# snippet's: it is left out (and so is the ``requires_grad`` the rebuild then
# sets), and the tensor is first seen, with its shape and values, where the
# snippet uses it (as a tensor from numpy is).
# (_v3, for the dtypes added later, uint16 and float8 among them: its empty
# takes requires_grad itself: code review)
_REBUILDS = frozenset(f.__code__ for f in (
    getattr(torch._utils, n, None) for n in ("_rebuild_tensor", "_rebuild_tensor_v2",
                                             "_rebuild_tensor_v3")) if f is not None)


class SpecialCalls:
    def _empty(self, func, args, kwargs):
        if sys._getframe(2).f_code in _REBUILDS:   # (2: this, __torch_function__)
            return call_as_caller(func, args, kwargs)
        return self._call(func, args, kwargs)

    def _grad_read(self, func, args, kwargs):
        """An optimizer reads each ``.grad`` two or three times a step, so this is
        a hot path: one frame walk finds both the caller and the snippet frame
        (as ``_call`` does), and a leaf's ``.grad`` is read directly: only a
        non-leaf's warns (NOTE [warning attribution] in call_sites.py)."""
        t = args[0]
        caller, frame, opaque = locate_call(sys._getframe(1), self.filename)
        if not opaque and frame is not None:
            opaque = self._above_opaque(frame)
        if caller is None or (isinstance(t, Tensor) and read_plainly(flags_of, t, None)[1]):
            result = func(*args, **kwargs)
        else:
            result = call_from(caller, func, args, kwargs)
        if opaque:   # NOTE [static tracers]
            return result
        outs = [result] if isinstance(result, Tensor) else []
        # the snippet's own ``w.grad`` names what it hands out (not an optimizer's read)
        expr = self._expr_at(frame, "grad") if frame is not None and caller is frame else None
        try:
            self._record("grad", "torch.Tensor.grad", "grad_read", _is_grad_enabled(), [t],
                         outs, None, None, frame, expr=expr)
        except Exception as bad:
            self.could_not_record(bad)
        return result

    def _grad_write(self, func, args, kwargs):
        grad_enabled = _is_grad_enabled()
        result = func(*args, **kwargs)
        t = args[0]
        ins = [t]
        if len(args) > 1 and isinstance(args[1], Tensor):
            ins.append(args[1])
        op = self._record("grad", "torch.Tensor.grad", "grad_write", grad_enabled, ins, [],
                          None, None if len(ins) > 1 else ["None"])
        if op is not None:
            tid = self.ids.get(t)
            g = args[1] if len(args) > 1 else None
            fields = {"grad": None, "grad_stats": None}
            if isinstance(g, Tensor):
                with no_subclass_dispatch():   # NOTE [subclass reads]
                    fields["grad"], fields["grad_stats"] = self.memo.value_of(g)
            self.emit(P.TensorUpdate(tid, fields))
        return result

    def _requires_grad_set(self, func, args, kwargs):
        if sys._getframe(2).f_code in _REBUILDS:   # NOTE [unpickled tensors]
            return call_as_caller(func, args, kwargs)
        grad_enabled = _is_grad_enabled()
        result = func(*args, **kwargs)
        t = args[0]
        self._record("requires_grad", "torch.Tensor.requires_grad", "requires_grad",
                     grad_enabled, [t], [t], None, [repr(args[1]) if len(args) > 1 else ""])
        return result

    def _data_get(self, func, args, kwargs):
        return self._named_get(func, args, kwargs, "data", "detach")

    def _data_set(self, func, args, kwargs):
        """``w.data = t`` (a hand-written SGD step of older tutorials): w now holds
        t's values without its version counter moving, so it is recorded as an
        in-place ``data`` op with w's value after (NOTE [values after in-place])."""
        grad_enabled = _is_grad_enabled()
        t = args[0]
        before = version_of(t) if isinstance(t, Tensor) else None
        result = call_as_caller(func, args, kwargs)
        if before is not None:
            self.memo.forget(t)   # same version, new values
            ins = [t] + [a for a in args[1:2] if isinstance(a, Tensor)]
            self._record("data", "torch.Tensor.data", "inplace", grad_enabled, ins, [],
                         before, None)
        return result

    def _view_get(self, func, args, kwargs):
        return self._named_get(func, args, kwargs, func.__self__.__name__, "view")

    def _named_get(self, func, args, kwargs, name, kind):
        grad_enabled = _is_grad_enabled()
        result = call_as_caller(func, args, kwargs)
        if isinstance(result, Tensor):
            self._record(name, "torch.Tensor." + name, kind, grad_enabled, [args[0]],
                         [result], None, None)
        return result

    def _branch(self, func, args, kwargs):
        kind = BRANCH_KINDS.get(func.__name__, "item")
        grad_enabled = _is_grad_enabled()
        t = args[0] if args and isinstance(args[0], Tensor) else None
        try:
            value = call_as_caller(func, args, kwargs)
        except BaseException as e:
            self._failed_call(e, func.__name__.strip("_"), "torch.Tensor." + func.__name__,
                              "item", grad_enabled, [t] if t is not None else [])
            raise
        op_id = self._record(kind, "torch.Tensor." + func.__name__,
                             "bool" if kind == "bool" else "item", grad_enabled,
                             [t] if t is not None else [], [], None, None)
        if op_id is not None:
            shown = value
            with no_subclass_dispatch():   # NOTE [subclass reads]
                big = kind == "tolist" and t is not None and t.numel() > self.value_limit
                cplx = kind == "tolist" and t is not None and t.is_complex()
            if big:
                shown = None
            elif isinstance(shown, complex):
                shown = str(shown)
            elif cplx:
                shown = _as_text(shown)   # as a trace file has them (JSON has no complex)
            frame = self.snippet_frame()
            bid = self.n_branches
            self.n_branches = bid + 1
            self.emit(P.Branch(bid, next(self.seq), frame.f_lineno if frame else None, kind,
                               self.ids.get(t) if t is not None else None, shown, op_id))
        return value

    def _backward(self, func, args, kwargs):
        if self.backward is None:
            return func(*args, **kwargs)
        return self.backward.run(func, args, kwargs)
