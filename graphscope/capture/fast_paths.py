"""The fused inference paths of the transformer modules, taken as plain Python takes them.

NOTE [fast paths]: ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``
and ``nn.TransformerEncoder`` choose in their ``forward`` between the
layer-by-layer computation and one fused kernel (``_native_multi_head_attention``,
``_transformer_encoder_layer_fwd``, with padded sequences packed into a nested
tensor). One of the conditions is ``torch.overrides.has_torch_function(args)``,
which is true whenever a TorchFunctionMode is active, so under the recorder
the fused path was never taken: in eval mode without grad the snippet got
different numbers (the last bits, and for a ``src_key_padding_mask`` a padded
position that is zeros under python and not zeros here) and lost a warning.

So while such a module's ``forward`` runs on the recording thread (the
innermost module being called, as ``modules.ModuleHooks`` tracks it; or any
time after the op limit stopped the recording), the check answers as if the
recorder's mode were not on the stack: a tensor
subclass or another mode still makes it true. The fused kernels are torch
calls the mode sees, so they are recorded as ops like any other. The check
is replaced on ``torch.overrides`` (the only name these modules call it by;
``torch.nn.functional`` imported its own) from the first such call until the
recorder exits, and put back then unless the snippet replaced it meanwhile.
"""
from __future__ import annotations

import functools
import threading

import torch
import torch.overrides as _overrides

_FAST_PATH_MODULES = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer,
                      torch.nn.TransformerEncoder)


def has_fast_path(module) -> bool:
    return isinstance(module, _FAST_PATH_MODULES)


class FastPaths:
    def __init__(self, recorder, stack: list) -> None:
        self.r = recorder
        self.stack = stack          # ModuleHooks.stack: [module, ...] innermost last
        self._original = None
        self._wrapper = None

    def install(self) -> None:
        """Replace the check (once per run: the first fast-path module call)."""
        if self._wrapper is not None:
            return
        original = _overrides.has_torch_function
        r, stack = self.r, self.stack

        @functools.wraps(original)
        def has_torch_function(*args, **kwargs):
            # inside such a module's forward; or anywhere once recording stopped
            # (the op limit): the mode is then only in the way, and the module
            # stack is no longer kept
            if ((not r.recording or (stack and has_fast_path(stack[-1][0])))
                    and r._thread == threading.get_ident()
                    and _overrides._get_current_function_mode() is r):
                with _overrides._pop_mode_temporarily():
                    return original(*args, **kwargs)
            return original(*args, **kwargs)

        self._original, self._wrapper = original, has_torch_function
        _overrides.has_torch_function = has_torch_function

    def uninstall(self) -> None:
        if self._wrapper is not None and _overrides.has_torch_function is self._wrapper:
            _overrides.has_torch_function = self._original
        self._wrapper = self._original = None
