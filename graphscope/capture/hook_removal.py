"""Tensor hooks the snippet removes: ``h = x.register_hook(fn); ...; h.remove()``.

NOTE [hook removal]: ``remove`` is plain Python on torch's RemovableHandle, not
a torch call the mode sees; without it the picture would go on saying the hook
changes every gradient reaching ``x``. So once the snippet has registered a
tensor hook, ``RemovableHandle.remove`` is wrapped for the rest of the run (on
the class, ``functools.wraps``'d, put back when the recorder exits: the
handle the snippet holds stays torch's own, attributes and all, and ``with
h:`` goes through it too). A removal of a handle the recorder saw register a
hook, while that hook is still on, is recorded as an ``unhook`` op on the
tensor (``Op.undoes``: the hook op), then the hook is removed as usual. Every
other handle (module hooks, the recorder's own Node hooks) costs one dict
lookup. Not recorded, as other calls made there are not: a removal from
another thread, and one made inside a hook while backward runs.
"""
from __future__ import annotations

import functools
import threading
import weakref

import torch
from torch.utils.hooks import RemovableHandle

from graphscope import protocol as P


class HookRemovals:
    def __init__(self, recorder) -> None:
        self.r = recorder
        self._watched: dict = {}      # handle id -> (tensor weakref, hook op id)
        self._wrapper = None
        self._original = None

    def watch(self, handle, t, hook_op: int) -> None:
        """The snippet's ``register_hook`` returned ``handle`` (op ``hook_op``)."""
        hid = getattr(handle, "id", None)
        if not isinstance(handle, RemovableHandle) or hid is None:
            return
        self._watched[hid] = (weakref.ref(t), hook_op)
        if self._wrapper is None:
            self._install()

    def _install(self) -> None:
        original = RemovableHandle.__dict__.get("remove")
        if original is None:
            return
        watched = self._watched

        @functools.wraps(original)
        def remove(handle, *args, **kwargs):
            if watched:
                entry = watched.get(getattr(handle, "id", None))
                if entry is not None:
                    try:
                        self._removing(handle, entry)
                    except Exception:
                        pass   # never in the way of the snippet's own call
            return original(handle, *args, **kwargs)

        self._original, self._wrapper = original, remove
        RemovableHandle.remove = remove

    def uninstall(self) -> None:
        """Put torch's ``remove`` back (unless the snippet replaced it since)."""
        if self._wrapper is not None and RemovableHandle.__dict__.get("remove") is self._wrapper:
            RemovableHandle.remove = self._original
        self._wrapper = self._original = None
        self._watched.clear()

    def _removing(self, handle, entry) -> None:
        r = self.r
        t = entry[0]()
        hooks = handle.hooks_dict_ref()
        if (t is None or hooks is None or handle.id not in hooks     # gone, or removed before
                or r._thread != threading.get_ident()                 # another thread
                or (r.backward is not None and r.backward.running)):  # inside a hook
            return
        frame, opaque = r.where(3)
        tid = r.ids.get(t)
        if opaque or tid is None or not r.recording:
            return
        op_id = r.claim_op_id()
        if op_id is None:
            return
        r.emit(P.Op(op_id, next(r.seq), "remove", "torch.utils.hooks.RemovableHandle.remove",
                    frame.f_lineno if frame is not None else None, torch.is_grad_enabled(),
                    [tid], [], None, r.module, torch.is_inference_mode_enabled(), "unhook",
                    undoes=entry[1]))
