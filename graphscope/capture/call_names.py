"""What a torch callable is called in the trace, and what kind of call it is.

``torch.Tensor.__iadd__`` is the op ``add_``, in place; ``__rtruediv__`` is
``div``; ``view``, ``split`` and ``T`` are views; ``torch.ones`` and the
other factories make tensors from nothing; ``detach``, ``requires_grad_``,
``retain_grad`` and the tensor hooks are facts about a tensor. The recorder
asks once per callable (``Recorder._names_cache``): this is a table, not the
hot path.
"""
from __future__ import annotations

_VIEW_NAMES = frozenset("""view view_as t transpose permute expand expand_as squeeze unsqueeze
narrow select getitem split chunk unbind as_strided diagonal unfold movedim moveaxis
swapaxes swapdims unflatten flatten reshape real imag T mT H mH split_with_sizes
tensor_split hsplit vsplit dsplit alias conj adjoint view_as_real view_as_complex
_neg_view""".split())
_FACTORY_NAMES = frozenset("""tensor as_tensor from_numpy zeros ones empty full rand randn randint
randperm arange linspace logspace eye zeros_like ones_like empty_like full_like rand_like
randn_like randint_like scalar_tensor normal""".split())

def short_name(func) -> tuple[str, str, str]:
    """(short name, qualified name, kind guess) of a torch callable."""
    name = getattr(func, "__name__", None) or type(func).__name__
    owner = getattr(func, "__self__", None)
    qual = getattr(func, "__qualname__", None) or name
    mod = getattr(func, "__module__", None)
    if qual.startswith(("TensorBase.", "Tensor.")):
        qualname = "torch.Tensor." + qual.split(".", 1)[1]
    elif qual.startswith("_VariableFunctionsClass."):
        qualname = "torch." + name
    elif mod:
        qualname = f"{mod}.{qual}"
    else:
        qualname = f"torch.{qual}"
    kind = "call"
    short = name
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in ("setitem",):
            short, kind = "setitem", "inplace"
        elif core.startswith("i") and core[1:] in _INPLACE_DUNDERS:
            short, kind = core[1:] + "_", "inplace"
        elif core.startswith("r") and core[1:] in _R_DUNDERS:
            short = _R_DUNDERS[core[1:]]
        else:
            short = _DUNDER_ALIASES.get(core, core)
    elif name.endswith("_") and (not name.startswith("_") or name.startswith("_foreach_")):
        kind = "inplace"   # torch._foreach_add_(params, grads): each of params changes
    if short in _VIEW_NAMES:
        kind = "view"
    elif short in _FACTORY_NAMES:
        kind = "factory"
    if short in ("detach", "detach_"):
        kind = "detach"
    elif short == "requires_grad_":
        kind = "requires_grad"
    elif short == "retain_grad":
        kind = "retain_grad"
    elif short in ("register_hook", "register_post_accumulate_grad_hook"):
        kind = "hook"      # the snippet's own tensor hook: a fact about the tensor
    del owner
    return short, qualname, kind


_INPLACE_DUNDERS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul",
                    "and", "or", "xor", "lshift", "rshift"}
_DUNDER_ALIASES = {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
                   "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                   "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
                   "invert": "bitwise_not", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
                   "eq": "eq", "ne": "ne", "neg": "neg", "abs": "abs", "pos": "positive"}
_R_DUNDERS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv":
              "floor_divide", "mod": "remainder", "pow": "pow", "matmul": "matmul",
              "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
