"""Stable small integer ids for tensors, without keeping any tensor alive.

A tensor is keyed by ``id(t)`` and holds a weak reference whose callback drops
the entry when the tensor dies, so a later tensor that reuses the address gets
a fresh id. (PyTorch keeps one Python object per live TensorImpl, resurrecting
it when C++ still holds the tensor, so ``id(t)`` is stable while it lives.)

The reference is a ``weakref.ref`` subclass with slots for the address and the
id, built by ``ref``'s own C constructor: ``weakref.KeyedRef`` does the same
job but runs a Python ``__new__`` and ``__init__`` per tensor, and this is on
the recorder's per-op path (one entry per new tensor).
"""
from __future__ import annotations

from weakref import ref


class _Entry(ref):
    __slots__ = ("key", "tid")


class TensorIds:
    __slots__ = ("_by_addr", "_next", "_gone", "__weakref__")

    def __init__(self) -> None:
        self._by_addr: dict[int, _Entry] = {}
        self._next = 0
        by_addr = self._by_addr

        def _gone(r, by_addr=by_addr):
            # only drop the entry if it still belongs to the dead tensor
            if by_addr.get(r.key) is r:
                del by_addr[r.key]

        self._gone = _gone

    def get(self, t):
        """The id of ``t`` if it has been seen, else None."""
        e = self._by_addr.get(id(t))
        return e.tid if e is not None else None

    def lookup(self, t):
        """(id, new) -- assigns a fresh id the first time ``t`` is seen."""
        addr = id(t)
        e = self._by_addr.get(addr)
        if e is not None:
            return e.tid, False
        tid = self._next
        self._next = tid + 1
        e = _Entry(t, self._gone)
        e.key = addr
        e.tid = tid
        self._by_addr[addr] = e
        return tid, True

    def live(self):
        """Pairs (tensor, id) for the tensors still alive."""
        for r in list(self._by_addr.values()):
            t = r()
            if t is not None:
                yield t, r.tid

    def __len__(self) -> int:
        return len(self._by_addr)
