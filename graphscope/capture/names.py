"""Snippet variable names for tensors, found by looking at the snippet's frames.

No sys.settrace: the recorder calls ``scan(frame)`` when the snippet line that
makes an op changes (the previous line's assignments are done by then), and
the session scans the module namespace once more at the end. A tensor keeps
the first name it was bound to (``a = torch.ones(3); b = a`` names it ``a``);
a name later rebound to another tensor names that tensor too. Limitation: in a
loop whose body is a single line, only the tensors still bound when the line
changes get a name.

NOTE [parameter names]: a module's parameters and buffers are named the way a
learner writes them: the snippet variable holding the outermost module, then
the qualified name (``model.0.weight``, ``enc.layers.1.linear1.bias``; a list
of modules gives ``layers[0].weight``); a module no variable holds gets its
path alone (``0.weight``). ``map_modules`` works this out once per module,
when a root module is first called (modules.py) or a parameter is first seen
before that (recorder.py), never per op. The same first-name-wins rule holds:
since a parameter is named when it is first seen, an alias bound later
(``w = model.weight``, ``for p in model.parameters()``) does not rename it,
which keeps an optimizer loop over ``p`` from calling every weight ``p``. A
parameter a variable holds before its module was first called (``for p in
model[0].parameters(): p.requires_grad_(False)``) has the modules that
module-level variables hold mapped first, so it gets its path too: that loop
named both weights ``p`` for good (capture review). A free ``nn.Parameter``
(in no module when first seen, ``w = nn.Parameter(...)``) is named by its
variable, and keeps that name in a module later (``lin.weight = w``). A bare
path (``weight`` of a module called while its owner is being built) is
provisional: the owner's variable renames it once it is called.
"""
from __future__ import annotations

from weakref import ref

import torch

from graphscope import protocol as P

Tensor = torch.Tensor
_Module = torch.nn.Module
_Parameter = torch.nn.Parameter


class NameTracker:
    def __init__(self, ids, emit) -> None:
        self.ids = ids
        self.emit = emit
        self.named: dict[int, str] = {}
        # NOTE [parameter names]: id(tensor) -> (weakref, name) for parameters and
        # buffers not seen yet; id(module) -> weakref for modules already mapped
        self.params: dict[int, tuple] = {}
        self._mapped: dict[int, ref] = {}
        self._weak: set = set()    # tensor ids named by a bare module path, renamed when
                                   # a variable holding the module turns up
        self._roots: dict[int, tuple] = {}   # id(root module) -> (weakref, submodule count)

    def param_name(self, t, tid):
        """The qualified name of parameter/buffer ``t`` (now getting id ``tid``), or None."""
        e = self.params.get(id(t))
        if e is None or e[0]() is not t:
            return None
        self.named[tid] = e[1]
        if e[2]:
            self._weak.add(tid)
        return e[1]

    def map_modules(self, frame, root=None, size=None) -> None:
        """Name the parameters and buffers of the modules the snippet's variables
        in ``frame`` hold, and of ``root`` (a module being called, with ``size``
        submodules) if none holds it. Without a root only module-level variables
        are looked at: a module under construction (``self`` in an ``__init__``)
        is not complete yet and must not be marked as mapped."""
        mapped = self._mapped
        cands = []            # (variable, module), module-level variables first
        g = frame.f_globals if frame is not None else {}
        mappings = [g]
        if root is not None and frame is not None and frame.f_locals is not g:
            mappings.append(frame.f_locals)
        for mapping in mappings:
            for k, v in list(mapping.items()):
                if k == "self":
                    continue
                if isinstance(v, _Module):
                    cands.append((k, v))
                elif (isinstance(v, (list, tuple)) and 0 < len(v) <= 256
                      and isinstance(v[0], _Module)):
                    cands.extend((f"{k}[{i}]", m) for i, m in enumerate(v)
                                 if isinstance(m, _Module))
        if root is not None:
            cands.append(("", root))
        todo = []
        for var, m in cands:
            e = mapped.get(id(m))
            if e is not None and e() is m:
                continue
            try:
                named = list(m.named_parameters()) + list(m.named_buffers())
            except Exception:
                continue
            todo.append((var, m, named))
        # the outermost module first: its names win over a submodule's own variable
        todo.sort(key=lambda c: -len(c[2]))
        get = self.ids.get
        for var, m, named in todo:
            if id(m) in mapped and mapped[id(m)]() is m:
                continue      # bound to two variables: the first one names it
            mapped[id(m)] = ref(m)
            weak = not var
            for qual, t in named:
                if t is None:
                    continue
                e = self.params.get(id(t))
                if e is not None and e[0]() is t and (weak or not e[2]):
                    continue
                name = f"{var}.{qual}" if var else qual
                self.params[id(t)] = (ref(t), name, weak)
                tid = get(t)
                if tid is not None and (tid not in self.named or tid in self._weak):
                    self.named[tid] = name
                    if weak:
                        self._weak.add(tid)
                    else:
                        self._weak.discard(tid)
                    self.emit(P.TensorUpdate(tid, {"name": name}))

    def root_called(self, module, frame, size: int) -> None:
        """modules.py: a root module with ``size`` submodules is being called; map
        it the first time, and again if submodules were added since."""
        e = self._roots.get(id(module))
        if e is None or e[0]() is not module or e[1] != size:
            self._roots[id(module)] = (ref(module), size)
            if e is not None:
                self._mapped.pop(id(module), None)
            self.map_modules(frame, module)

    def scan(self, frame) -> None:
        # module-level names first: a tensor passed into a snippet function is
        # better known by its caller's name (``x``) than the parameter's (``a``)
        g = frame.f_globals
        loc = frame.f_locals
        if loc is not g:
            self.scan_mapping(g, frame)
        self.scan_mapping(loc, frame)

    def scan_mapping(self, mapping, frame=None) -> None:
        get = self.ids.get
        named = self.named
        for k, v in list(mapping.items()):
            if isinstance(v, Tensor) and not k.startswith("__"):
                tid = get(v)
                if tid is not None and tid not in named:
                    if frame is not None and isinstance(v, _Parameter):
                        # a module's parameter is named by its path, not by the
                        # first variable to hold it (NOTE [parameter names]);
                        # the modules are mapped once a scan
                        self.map_modules(frame)
                        frame = None
                        if tid in named:
                            continue
                    named[tid] = k
                    self.emit(P.TensorUpdate(tid, {"name": k}))
