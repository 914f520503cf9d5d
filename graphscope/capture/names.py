"""Snippet variable names for tensors, found by looking at the snippet's frames.

No sys.settrace: the recorder calls ``scan(frame)`` when the snippet line that
makes an op changes (the previous line's assignments are done by then), and
the session scans the module namespace once more at the end. A tensor keeps
the first name it was bound to (``a = torch.ones(3); b = a`` names it ``a``);
a name later rebound to another tensor names that tensor too. Limitation: in a
loop whose body is a single line, only the tensors still bound when the line
changes get a name.
"""
from __future__ import annotations

import torch

from graphscope import protocol as P

Tensor = torch.Tensor


class NameTracker:
    def __init__(self, ids, emit) -> None:
        self.ids = ids
        self.emit = emit
        self.named: dict[int, str] = {}

    def scan(self, frame) -> None:
        # module-level names first: a tensor passed into a snippet function is
        # better known by its caller's name (``x``) than the parameter's (``a``)
        g = frame.f_globals
        loc = frame.f_locals
        if loc is not g:
            self.scan_mapping(g)
        self.scan_mapping(loc)

    def scan_mapping(self, mapping) -> None:
        get = self.ids.get
        named = self.named
        for k, v in list(mapping.items()):
            if isinstance(v, Tensor) and not k.startswith("__"):
                tid = get(v)
                if tid is not None and tid not in named:
                    named[tid] = k
                    self.emit(P.TensorUpdate(tid, {"name": k}))
