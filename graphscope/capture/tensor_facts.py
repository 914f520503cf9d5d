"""Facts of a tensor the recorder reads everywhere, read so that reading them
never changes what the snippet sees (NOTE [refused facts]), and the tensors
inside a call's arguments."""
from __future__ import annotations

import torch

Tensor = torch.Tensor


def flatten_tensors(obj, out: list) -> None:
    """Append the tensors in obj (tensor, or list/tuple/dict of them, nested) to out."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            if isinstance(x, Tensor):
                out.append(x)
            elif isinstance(x, (list, tuple, dict)):
                flatten_tensors(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            flatten_tensors(x, out)


def shape_of(t) -> list:
    """``list(t.shape)``; for a nested tensor, whose ragged dimensions have no
    size (reading ``shape`` raises), None in their place."""
    try:
        return list(t.shape)
    except RuntimeError:
        out = []
        for i in range(t.dim()):
            try:
                out.append(t.size(i))
            except RuntimeError:
                out.append(None)
        return out


def version_of(t) -> int:
    try:
        return t._version
    except RuntimeError:  # inference tensors have no version counter
        return 0


# NOTE [refused facts]: a view made under no_grad whose base (or another view of
# it) was then changed in place is one torch refuses to describe: reading its
# ``grad_fn``, ``requires_grad`` or ``is_leaf`` raises "A view was created in
# no_grad mode and its base ... has been modified inplace", in plain PyTorch too.
# The snippet sees that error only if it reads them itself, so every read the
# recorder makes is guarded; the tensor keeps the facts last recorded (or none).
def grad_fn_of(t):
    """``t.grad_fn``, or None where torch refuses to say (NOTE [refused facts])."""
    try:
        return t.grad_fn
    except RuntimeError:
        return None


def flags_of(t, known):
    """(requires_grad, is_leaf), or ``known`` (the last recorded, else no
    requires_grad and a leaf) where torch refuses to say (NOTE [refused facts])."""
    try:
        return t.requires_grad, t.is_leaf
    except RuntimeError:
        return known[:2] if known else (False, True)


def retains_grad(t) -> bool:
    try:
        return bool(t.retains_grad)
    except RuntimeError:   # NOTE [refused facts]
        return False


# NOTE [subclass reads] in recorder.py: GraphScope's reads of a tensor subclass's
# facts go without its own __torch_function__
no_subclass_dispatch = torch._C.DisableTorchFunctionSubclass


def read_plainly(read, t, *args):
    """``read(t, *args)``, for a tensor subclass without its __torch_function__
    (NOTE [subclass reads] in recorder.py); a plain tensor or Parameter needs no
    guard."""
    if type(t) is torch.Tensor or type(t) is torch.nn.Parameter:
        return read(t, *args)
    with no_subclass_dispatch():
        return read(t, *args)
