"""Stable small integer ids for tensors, without keeping any tensor alive.

A tensor is keyed by ``id(t)`` and holds a weak reference whose callback drops
the entry when the tensor dies, so a later tensor that reuses the address gets
a fresh id. (PyTorch keeps one Python object per live TensorImpl, resurrecting
it when C++ still holds the tensor, so ``id(t)`` is stable while it lives.)
"""
from __future__ import annotations

from weakref import KeyedRef


class TensorIds:
    __slots__ = ("_by_addr", "_next", "_gone", "__weakref__")

    def __init__(self) -> None:
        self._by_addr: dict[int, tuple] = {}
        self._next = 0
        by_addr = self._by_addr

        def _gone(r, by_addr=by_addr):
            # only drop the entry if it still belongs to the dead tensor
            cur = by_addr.get(r.key)
            if cur is not None and cur[0] is r:
                del by_addr[r.key]

        self._gone = _gone

    def get(self, t):
        """The id of ``t`` if it has been seen, else None."""
        e = self._by_addr.get(id(t))
        return e[1] if e is not None else None

    def lookup(self, t):
        """(id, new) -- assigns a fresh id the first time ``t`` is seen."""
        addr = id(t)
        e = self._by_addr.get(addr)
        if e is not None:
            return e[1], False
        tid = self._next
        self._next = tid + 1
        self._by_addr[addr] = (KeyedRef(t, self._gone, addr), tid)
        return tid, True

    def live(self):
        """Pairs (tensor, id) for the tensors still alive."""
        for r, tid in list(self._by_addr.values()):
            t = r()
            if t is not None:
                yield t, tid

    def __len__(self) -> int:
        return len(self._by_addr)
