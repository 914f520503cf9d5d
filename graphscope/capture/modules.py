"""nn.Module calls: ModuleCall messages and ``Op.module`` paths.

Global forward hooks (``register_module_forward_pre_hook`` /
``register_module_forward_hook``) with handles removed in the session's
``finally`` -- the approach of PyTorch's own ``torch/utils/module_tracker.py``.
Paths are qualified names relative to the outermost module being called
(``0``, ``encoder.layers.1.linear1``); the outermost module itself has the
path ``""`` (its class is in ``ModuleCall.type``). A module that is called
inside another but is not registered as its submodule gets
``<parent path>.<ClassName>``.

The post hook is registered with ``always_call=True`` so a forward that raises
still closes its call (its ModuleCall is emitted with the ops made so far).
"""
from __future__ import annotations

import functools
import re
import sys

import torch
from torch.nn.modules import module as _module

from graphscope import protocol as P
from graphscope.capture.call_sites import compiling as _compiling
from graphscope.capture.fast_paths import FastPaths, has_fast_path

Tensor = torch.Tensor
_MODULE_FILE = _module.Module._call_impl.__code__.co_filename


class ModuleHooks:
    def __init__(self, recorder) -> None:
        self.r = recorder
        self.handles = []
        self.stack: list = []         # [module, path, first_op, seq, line, input ids]
        self.paths: dict[int, str] = {}
        self.fast_paths = FastPaths(recorder, self.stack)   # NOTE [fast paths]

    def install(self) -> None:
        self.handles.append(_module.register_module_forward_pre_hook(self._on_pre))
        self.handles.append(_module.register_module_forward_hook(self._on_post,
                                                                 always_call=True))

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()
        self.fast_paths.uninstall()
        self.stack.clear()
        self.paths.clear()
        self.r.module = None

    def _on_pre(self, module, args):
        if _compiling():
            # Dynamo traces the hooks too: reading frames there made it warn
            # "does not know how to trace the builtin sys._getframe" on stderr
            # (fidelity review). So a module called inside a compiled function
            # is not recorded as a module call (its ops are, without a module
            # path): compiled code never calls the hooks again. Keeping Dynamo
            # out with torch.compiler.disable would import torch._dynamo (1.1 s)
            # in every worker, and output that differs from python's is worse.
            return None
        r = self.r
        if has_fast_path(module):
            self.fast_paths.install()   # (also once the op limit stopped the recording)
        if not r.recording:
            return None
        frame, opaque = r.where(2)
        if opaque:
            return None     # a tracer runs it (NOTE [static tracers] in recorder.py)
        stack = self.stack
        if not stack:
            self.paths = {id(m): name for name, m in module.named_modules()}
            path = ""
            if r.names is not None:   # NOTE [parameter names] in names.py
                r.names.root_called(module, frame, len(self.paths))
        else:
            path = self.paths.get(id(module))
            if path is None:
                parent = stack[-1][1]
                path = f"{parent}.{type(module).__name__}" if parent else type(module).__name__
        r.recording = False
        seq = next(r.seq)
        try:
            ins = [r.tensor_id(a, seq) for a in args if isinstance(a, Tensor)]
        except Exception as bad:
            ins = []
            r.could_not_record(bad)   # NOTE [the snippet's call comes first] in recorder.py
        finally:
            r.recording = True
        stack.append([module, path, r.n_ops, seq, frame.f_lineno if frame else None, ins,
                      _call_text(r, frame, module)])
        r.module = path
        return None

    def _on_post(self, module, args, output):
        if _compiling():
            return None   # (as in _on_pre)
        stack = self.stack
        if not stack or stack[-1][0] is not module:
            return None
        _, path, first, seq, line, ins, expr = stack.pop()
        r = self.r
        r.module = stack[-1][1] if stack else None
        if not r.recording:
            return None
        outs = []
        if isinstance(output, Tensor):
            outs = [output]
        elif isinstance(output, (tuple, list)):
            outs = [o for o in output if isinstance(o, Tensor)]
            if expr is not None:
                # the label goes on the first tensor: say which element it is
                # (``self.lstm(h)[0]``, not the whole tuple)
                # (its own name: ``first`` is the call's first op id, which this
                # index overwrote: LSTM's first_op was 0, a fuzz review)
                at = next((i for i, o in enumerate(output) if isinstance(o, Tensor)), None)
                expr = f"{expr}[{at}]" if at is not None else None
        r.recording = False
        try:
            out_ids = [r.tensor_id(t, seq) for t in outs]
            r.emit(P.ModuleCall(seq, path, type(module).__name__, line, first, r.n_ops - 1,
                                ins, out_ids, expr))
        except Exception as bad:
            r.could_not_record(bad)   # NOTE [the snippet's call comes first] in recorder.py
        finally:
            r.recording = True
        return None


def _call_text(r, frame, module):
    """The snippet's text of this module call (``self.conv(x)``, ``net(images)``),
    when the snippet's ``frame`` called the module itself: only torch's
    ``Module.__call__`` between them, and the text's callee is this module
    (``list(map(m, xs))`` calls ``m`` from C, but is not ``m``'s call). A module
    run by a library (``checkpoint(self.block, x)``, ``nn.Sequential``'s own
    loop) has none; nor has one whose forward hooks may replace what it
    returns (ours run first: the output seen here may not be the call's)."""
    if frame is None or module._forward_hooks or len(_module._global_forward_hooks) > 1:
        return None
    f = sys._getframe(2)          # _on_pre <- the hook caller in _call_impl
    while f is not None and f is not frame and f.f_code.co_filename == _MODULE_FILE:
        f = f.f_back
    if f is not frame:
        return None
    text = r._expr_at(frame, None)
    if not text:
        return None
    callee = _resolve(frame, text.split("(", 1)[0])
    if callee is module or (isinstance(callee, functools.partial) and callee.func is module):
        return text
    return None


def _resolve(frame, chain: str):
    """The object a plain name or attribute chain (``self.conv``) names in
    ``frame``, read without running any of the snippet's code (no properties,
    no ``__getattr__`` but a module's own submodules); None if it cannot be."""
    # (an index into a ModuleList or Sequential, ``layers[0](h)``, ``self.blocks[i]``,
    # is read from its submodules: such calls had no label, "t11" beside "lin(h)":
    # visual review)
    m = _CHAIN.fullmatch(chain.replace(" ", ""))
    if m is None:
        return None
    missing = object()

    def value(name):
        v = frame.f_locals.get(name, missing)
        return frame.f_globals.get(name, missing) if v is missing else v

    obj = value(m.group(1))
    if obj is missing:
        return None
    for attr, index in _LINK.findall(m.group(2)):
        d = getattr(obj, "__dict__", None)
        if not isinstance(d, dict):
            return None
        if attr:
            if attr in d:
                obj = d[attr]
            elif isinstance(obj, torch.nn.Module) and attr in d.get("_modules", {}):
                obj = d["_modules"][attr]
            else:
                return None
            continue
        subs = d.get("_modules")
        if not isinstance(obj, (torch.nn.ModuleList, torch.nn.Sequential)) or subs is None:
            return None
        i = int(index) if index.lstrip("-").isdigit() else value(index)
        if type(i) is not int or not -len(subs) <= i < len(subs):
            return None
        obj = list(subs.values())[i]
    return obj


_CHAIN = re.compile(r"([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*|\[(?:-?\d+|[A-Za-z_]\w*)\])*)")
_LINK = re.compile(r"\.([A-Za-z_]\w*)|\[(-?\d+|[A-Za-z_]\w*)\]")
