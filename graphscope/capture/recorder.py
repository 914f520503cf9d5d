"""The recorder: a TorchFunctionMode that turns every torch call into protocol messages.

Entered around the snippet by ``session.run_snippet`` (never a global patch),
so it sees only calls made on the snippet's thread (NOTE [threads]). While the
mode handles a call, PyTorch disables it, so a composite such as
``F.multi_head_attention_forward`` is one op: the torch calls it makes
internally are not seen; the autograd nodes it made are found from its
output's node when it returns (NOTE [composite ops]).

What is recorded (docs/trace-format.md):
- every call whose result holds a tensor, plus in-place calls (with version
  counters before/after), ``.grad`` reads and writes, ``requires_grad``
  changes, ``retain_grad`` and the reads that hand a tensor's value to Python
  (``bool``, ``item``, ``tolist``, ``int``, ``float``), which also make a
  Branch message;
- calls that return no tensor (``x.size()``, ``x.dim()``, ``repr(x)``) and the
  other attribute getters (``.shape``, ``.dtype``, ``.requires_grad``,
  ``.grad_fn``, ``.is_leaf``...) are not recorded: they change nothing and
  would bury the graph in noise. ``.data``, ``.T``/``.mT``/``.H``/``.mH``,
  ``.real``/``.imag`` make tensors and are recorded (``.data`` as a detach).

NOTE [static tracers]: ``torch.jit.trace`` (with its trace check) and
``torch.fx`` symbolic tracing run the snippet's code on tracer tensors or
Proxy objects, and the trace check re-runs it eagerly and compares results
(``isclose``, ``all``, ...). None of that is the snippet's own computation, and
reading a tracer tensor's value (a summary's ``tolist``) would itself raise a
TracerWarning. So every call made while one of those tools is on the stack is
passed through unrecorded, without touching any value: ``_locate`` notices
their frames between the op and the snippet frame, ``Recorder._above_opaque``
(cached per snippet frame) those above it (a snippet function being traced).
Costs one set lookup per frame already walked, and one identity check per op.

NOTE [threads]: a TorchFunctionMode is thread-local, so ops another thread
runs are not recorded, and that thread runs exactly as under plain Python.

The per-op path (``_call``) is the hot loop of the whole capture: locals only,
no dataclass reprs, name facts cached per function.
"""
from __future__ import annotations

import itertools
import sys
import types

import torch
from torch.overrides import TorchFunctionMode

from graphscope import protocol as P
from graphscope.capture import summaries
from graphscope.capture.tensor_ids import TensorIds

Tensor = torch.Tensor
_TB = torch._C.TensorBase
_FunctionType = types.FunctionType
_is_grad_enabled = torch.is_grad_enabled
_is_inference_mode_enabled = torch.is_inference_mode_enabled
_Parameter = torch.nn.Parameter
_AccumulateGrad = torch._C._functions.AccumulateGrad
_APPLY_CODE = torch.autograd.function.Function.apply.__func__.__code__
_dtype_name = summaries.dtype_name

# getters that make a new tensor and are recorded; every other getset is passed through
_VIEW_GETTERS = {"T", "mT", "H", "mH", "real", "imag"}
_VIEW_NAMES = frozenset("""view view_as t transpose permute expand expand_as squeeze unsqueeze
narrow select getitem split chunk unbind as_strided diagonal unfold movedim moveaxis
swapaxes swapdims unflatten flatten reshape real imag T mT H mH split_with_sizes
tensor_split hsplit vsplit dsplit alias""".split())
_FACTORY_NAMES = frozenset("""tensor as_tensor from_numpy zeros ones empty full rand randn randint
randperm arange linspace logspace eye zeros_like ones_like empty_like full_like rand_like
randn_like randint_like scalar_tensor normal""".split())
_BRANCH_KINDS = {"__bool__": "bool", "item": "item", "tolist": "tolist", "__int__": "int",
                 "__float__": "float", "__index__": "index", "__complex__": "complex"}


AFTER_NUMEL = 1 << 16   # values after in-place changes kept up to this size (_record)
_RECORD_WITHOUT_OUTPUT = frozenset({"inplace", "retain_grad", "requires_grad", "detach"})
_SCAN_ALWAYS = 2000
_SCAN_EVERY = 64


def _short_name(func) -> tuple[str, str, str]:
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


def _flatten(obj, out: list) -> None:
    """Append the tensors in obj (tensor, or list/tuple/dict of them, nested) to out."""
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            if isinstance(x, Tensor):
                out.append(x)
            elif isinstance(x, (list, tuple, dict)):
                _flatten(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _flatten(x, out)


_CAPTURE_DIR = __file__.rsplit("/", 1)[0] + "/"
_HANDLE_CODE = torch.overrides.handle_torch_function.__code__
# Both caches are keyed by id(code) and keep the code object in the value (so the
# id stays its own): hashing a code object hashes its bytecode and constants,
# about 0.5 us for a big function, and the hot path looks up three or four.
_trampolines: dict = {}     # (id(code), line) -> (code, trampoline)
_code_kinds: dict = {}      # id(code) -> (code, _CAPTURE | _DISPATCH | _OTHER), see _locate
_CAPTURE, _DISPATCH, _OTHER = 0, 1, 2


def _opaque_codes() -> dict:
    """id(code) -> code of the tracers' entry points (NOTE [static tracers])."""
    import inspect

    codes = {}
    fns = []
    try:
        import torch.jit._trace as jt
        fns += [jt.trace, jt.trace_module, jt._check_trace]
    except Exception:
        pass
    try:
        import torch.fx._symbolic_trace as fxt
        fns += [fxt.Tracer.trace]
    except Exception:
        pass
    for fn in fns:
        code = getattr(inspect.unwrap(fn), "__code__", None)
        if code is not None:
            codes[id(code)] = code
    return codes


_OPAQUE = _opaque_codes()


def _code_kind(code) -> int:
    if code is _HANDLE_CODE:
        k = _DISPATCH
    elif code.co_filename.startswith(_CAPTURE_DIR):
        k = _CAPTURE
    else:
        k = _OTHER
    if len(_code_kinds) > 10_000:
        _code_kinds.clear()
    _code_kinds[id(code)] = (code, k)
    return k


def _locate(f, filename):
    """(caller frame, innermost snippet frame, opaque) seen from frame ``f`` outwards.

    The caller is the first frame outside graphscope.capture (the torch
    Python function that dispatched to the mode when the call went through
    ``handle_torch_function``); the snippet frame the first whose file is the
    snippet's. One walk serves both (NOTE [warning attribution], line numbers).
    ``opaque``: a tracer's frame lies between the two (NOTE [static tracers]).
    """
    kinds = _code_kinds
    skipped_dispatch = False
    while f is not None:
        code = f.f_code
        e = kinds.get(id(code))
        k = e[1] if e is not None and e[0] is code else _code_kind(code)
        if k == _OTHER:
            break
        if k == _DISPATCH:
            skipped_dispatch = True
        f = f.f_back
    if f is None:
        return None, None, False
    s = f if filename is not None else None
    opaque = False
    while s is not None:
        code = s.f_code
        if code.co_filename == filename:
            break
        if id(code) in _OPAQUE:
            opaque = True
        s = s.f_back
    if skipped_dispatch and f.f_back is not None:
        f = f.f_back   # the torch Python function that dispatched to the mode
    return f, s, opaque


def call_as_caller(func, args, kwargs):
    """Call ``func`` from a frame that looks like the snippet's own call site.

    NOTE [warning attribution]: a warning raised by a C++ op (``TORCH_WARN``)
    or with ``stacklevel`` is attributed to the Python frame that called the
    op. Under the mode that frame would be the recorder's, so the console would
    say ``recorder.py:300: UserWarning`` and the warning filters would match
    ``graphscope.*`` instead of ``__main__``. So the real call is made from a
    tiny function compiled with the caller's file name and line and run with
    the caller's globals: location, module and once-per-location registry are
    those of plain Python.
    """
    f = _locate(sys._getframe(1), None)[0]
    if f is None:
        return func(*args, **kwargs)
    return _call_from(f, func, args, kwargs)


def _call_from(f, func, args, kwargs):
    """``func(*args, **kwargs)`` through the trampoline of caller frame ``f``."""
    code = f.f_code
    key = (id(code), f.f_lineno)
    e = _trampolines.get(key)
    if e is None or e[0] is not code or e[1].__globals__ is not f.f_globals:
        tramp = _trampoline(f, key)
    else:
        tramp = e[1]
    return tramp(func, args, kwargs)


def _trampoline(f, key):
    code = f.f_code
    line = f.f_lineno or 1
    src = "\n" * (line - 1) + ("def _graphscope_call(func, args, kwargs): "
                               "return func(*args, **kwargs)\n")
    ns: dict = {}
    exec(compile(src, code.co_filename, "exec"), ns)
    tramp = types.FunctionType(ns["_graphscope_call"].__code__, f.f_globals,
                               "_graphscope_call")
    if len(_trampolines) > 10_000:
        _trampolines.clear()
    _trampolines[key] = (code, tramp)
    return tramp


def _ver(t) -> int:
    try:
        return t._version
    except RuntimeError:  # inference tensors have no version counter
        return 0


_node_names: dict = {}     # autograd Node type -> its name()


def node_name(g) -> str:
    """``g.name()`` without ``torch::autograd::``, cached per Node type.

    Only types named like their nodes are cached (``MulBackward0``, a custom
    Function's ``MyFnBackward``): a Node class without its own Python type
    shares a generic one, whose nodes may have different names."""
    tp = type(g)
    try:
        return _node_names[tp]
    except KeyError:
        n = g.name().removeprefix("torch::autograd::")
        if n == tp.__name__ and len(_node_names) < 10_000:
            _node_names[tp] = n
        return n


def _is_param(t) -> bool:
    # Parameter's metaclass makes isinstance a Python call; plain tensors skip it
    return False if type(t) is Tensor else isinstance(t, _Parameter)


def _tag(node, op_id, tid, only_new: bool = False) -> None:
    """Tag autograd ``node`` as op ``op_id``'s, for tensor ``tid`` (NOTE [node ids]
    in backward.py); with ``only_new``, unless an earlier op tagged it."""
    try:
        meta = node.metadata
        if not (only_new and "graphscope" in meta):
            meta["graphscope"] = [op_id, tid, None, None]
    except Exception:
        pass


_SUBGRAPH_LIMIT = 256


def _inner_nodes(g, op_id, in_fns=()):
    """NOTE [composite ops]: the mode sees ``F.cross_entropy`` or
    ``F.multi_head_attention_forward`` as one call, but the call made several
    autograd nodes (``NllLossBackward0`` after ``LogSoftmaxBackward0``; an
    ``nn.Linear``'s ``TBackward0`` for its weight). So does a C++ composite
    called straight from the snippet (``F.linear``, a batched ``@``: its
    ``MmBackward0`` inside an ``UnsafeViewBackward0``), which
    ``_may_have_inner`` spots. Walking back from the output's node ``g`` to
    nodes that belong to earlier ops (tagged), to the inputs ``ins`` (their
    nodes ``in_fns``, even when no recorded op made them: another thread's) or to leaves
    (AccumulateGrad) finds them: each is tagged as inside op ``op_id`` (so its
    backward step says ``within``) and the list ``[[name, [next, ...]], ...]``
    (index 0 is ``g``; a next of -1 is a node outside, an input's) becomes
    ``Op.subgraph``, so a viewer can expand the op without a backward pass.
    None when ``g`` is the only node. At most ``_SUBGRAPH_LIMIT`` nodes."""
    index = {id(g): 0}
    rows = [[node_name(g), []]]
    keep = [g]          # wrappers alive during the walk: ids stay unique
    stack = [g]
    outside = {id(n) for n in in_fns if n is not None and n is not g}
    while stack:
        node = stack.pop()
        row = rows[index[id(node)]]
        for n, _ in node.next_functions:
            if n is None:
                continue
            i = index.get(id(n))
            if i is None:
                meta = n.metadata
                if "graphscope" in meta or type(n) is _AccumulateGrad or id(n) in outside \
                        or len(rows) >= _SUBGRAPH_LIMIT:
                    row[1].append(-1)
                    continue
                i = index[id(n)] = len(rows)
                meta["graphscope"] = [None, None, None, op_id]
                rows.append([node_name(n), []])
                keep.append(n)
                stack.append(n)
            row[1].append(i)
    return rows if len(rows) > 1 else None


def _may_have_inner(g, in_fns) -> bool:
    """Whether output node ``g`` of a call the mode saw as one leads to a node
    that is neither an input's (``in_fns``: the inputs' nodes) nor a leaf's, so
    the call made more than one node (NOTE [composite ops]). Under a
    microsecond: an elementwise op's next nodes are its inputs' own."""
    ids = None
    for n, _ in g.next_functions:
        if n is None or type(n) is _AccumulateGrad:
            continue
        if ids is None:
            if len(in_fns) < 8:
                for f in in_fns:
                    if f is n:
                        break
                else:
                    return True
                continue
            # torch.cat / torch.stack of a long list: a set, not a scan per input
            ids = {id(f) for f in in_fns if f is not None}
        if id(n) not in ids:
            return True
    return False


def _as_text(v):
    """Nested lists of complex numbers as their text, ``"(1+2j)"``."""
    return [_as_text(x) for x in v] if isinstance(v, list) else str(v)


def _alias_of(src, src_id, outs, out_ids):
    """``Op.alias`` of a view or detach (NOTE [aliases] in model/values.py): where
    in the shared storage the input and each output that shares its memory lie,
    so a reader can work out a view's elements after a change made through
    another tensor: ``[storage offset, strides, shape, dtype, how it reads the
    memory]`` (offset and strides count elements of that dtype; the last is
    "conj" or "neg" for a lazily conjugated or negated view, else ""). ``{}``
    when no output shares it (a ``reshape`` or an indexing with a tensor that
    had to copy); None when it cannot be told."""
    try:
        ptr = src.untyped_storage().data_ptr()
        found = {}
        for t, tid in zip(outs, out_ids):
            if t.untyped_storage().data_ptr() == ptr:
                found[str(tid)] = _placement(t)
        if found:
            found.setdefault(str(src_id), _placement(src))
        return found
    except Exception:   # no storage (a sparse or nested tensor, a tracer's)
        return None


def _retains(t) -> bool:
    try:
        return bool(t.retains_grad)
    except RuntimeError:   # NOTE [refused facts]
        return False


def _placement(t) -> list:
    reads = "conj" if t.is_conj() else "neg" if t.is_neg() else ""
    return [t.storage_offset(), list(t.stride()), list(t.shape), _dtype_name(t.dtype), reads]


def _grad_fn_name(t):
    g = grad_fn_of(t)
    return None if g is None else node_name(g)


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


def _flags_of(t, known):
    """(requires_grad, is_leaf), or ``known`` (the last recorded, else no
    requires_grad and a leaf) where torch refuses to say (NOTE [refused facts])."""
    try:
        return t.requires_grad, t.is_leaf
    except RuntimeError:
        return known[:2] if known else (False, True)


class Recorder(TorchFunctionMode):
    """Records the snippet's torch calls; see the module docstring."""

    def __init__(self, run: P.Run, emit, seq=None, stats_batch=None) -> None:
        super().__init__()
        self.emit = emit
        self.seq = seq if seq is not None else itertools.count()
        self.filename = run.filename
        self.value_limit = run.value_limit
        self.max_ops = run.max_ops
        self.ids = TensorIds()
        # value summaries, shared; stats deferred to the batch (NOTE [deferred stats])
        self.memo = summaries.SummaryMemo(run.value_limit, summaries.HIST_TIME, stats_batch)
        self.n_ops = 0
        self.recording = True
        self.module = None            # current module path, kept by modules.py
        self.names = None             # names.NameTracker, set by the session
        self.backward = None          # backward.BackwardTracer, set by the session
        self.failed = None            # (exception, op id, tensor id) of the last failing call
        self.state: dict[int, tuple] = {}   # tid -> (requires_grad, is_leaf, grad_fn) last sent
        self.grad_fn_ops: dict = {}   # reserved for backward.py
        self.n_branches = 0
        self._names_cache: dict = {}
        self._last_frame = None       # snippet frame and line of the last op (names.py scans)
        self._last_line = None
        self._scans = 0
        self._scanned_lines: set = set()
        self._vframe = None           # snippet frame last checked by _above_opaque ...
        self._vopaque = False         # ... and its verdict
        self._special = self._build_special()
        self._custom = None           # apply frame of the custom Function being run
        self._custom_profile = None   # (ours, the profile function it replaced)

    # -- dispatch ---------------------------------------------------------------
    def _build_special(self) -> dict:
        sp = {}
        for attr, v in vars(_TB).items():
            if type(v).__name__ == "getset_descriptor":
                sp[v.__get__] = None       # pass through (shape, dtype, grad_fn, ...)
                sp[v.__set__] = None
        sp[_TB.grad.__get__] = Recorder._grad_read
        sp[_TB.grad.__set__] = Recorder._grad_write
        sp[_TB.requires_grad.__set__] = Recorder._requires_grad_set
        sp[_TB.data.__get__] = Recorder._data_get
        sp[_TB.data.__set__] = Recorder._data_set
        for a in _VIEW_GETTERS:
            sp[getattr(_TB, a).__get__] = Recorder._view_get
        for name in _BRANCH_KINDS:
            f = getattr(_TB, name, None)
            if f is not None:
                sp[f] = Recorder._branch
        sp[torch.Tensor.backward] = Recorder._backward
        sp[torch.autograd.grad] = Recorder._backward
        for f in (torch.Tensor.__repr__, torch.Tensor.__format__, _TB.size, _TB.dim,
                  _TB.numel, torch.Tensor.__len__, _TB.is_floating_point,
                  _TB.is_complex, _TB.data_ptr, _TB.element_size, _TB.stride,
                  torch.Tensor.__hash__, _TB.is_contiguous, _TB.get_device,
                  torch.Tensor.__reduce_ex__, torch.Tensor.__deepcopy__):
            sp[f] = None
        return sp

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if not self.recording:
            return call_as_caller(func, args, kwargs)
        try:
            handler = self._special.get(func, self)
        except TypeError:  # unhashable callable
            handler = self
        if handler is self:
            return self._call(func, args, kwargs)
        if handler is None:
            return call_as_caller(func, args, kwargs)
        return handler(self, func, args, kwargs)

    # -- frames and lines ---------------------------------------------------------
    def snippet_frame(self):
        """Innermost frame running the snippet's own code (module, its functions, classes)."""
        f = sys._getframe(2)
        fn = self.filename
        while f is not None:
            if f.f_code.co_filename == fn:
                return f
            f = f.f_back
        return None

    def where(self, depth: int = 2):
        """(innermost snippet frame, opaque): the frame as ``snippet_frame`` finds it
        from ``depth`` frames up, and whether a tracer runs the call (NOTE [static tracers])."""
        f = sys._getframe(depth)
        fn = self.filename
        opaque = False
        while f is not None:
            code = f.f_code
            if code.co_filename == fn:
                break
            if id(code) in _OPAQUE:
                opaque = True
            f = f.f_back
        if f is not None and not opaque:
            opaque = self._vopaque if f is self._vframe else self._above_opaque(f)
        return f, opaque

    def _above_opaque(self, s) -> bool:
        """Whether a tracer's frame is above snippet frame ``s`` (a snippet function
        being traced); remembered for the last ``s`` (NOTE [static tracers])."""
        opaque = False
        f = s.f_back
        while f is not None:
            code = f.f_code
            if id(code) in _OPAQUE:
                opaque = True
                break
            if code.co_filename.startswith(_CAPTURE_DIR):
                break   # run_snippet: the snippet's module frame was the last
            f = f.f_back
        self._vframe = s
        self._vopaque = opaque
        return opaque

    # -- custom autograd Functions ---------------------------------------------------
    # NOTE [custom Functions]: ``MyFn.apply(x)`` is not a torch function the mode
    # sees; what it sees are the calls ``forward`` makes, run with autograd off,
    # and then the output comes back with ``MyFnBackward`` as its node. Recorded
    # as they are, those calls drew ``x -> round (no grad) -> y``: as if the
    # Function were outside the graph, the very thing the custom-function
    # scenario asks about. So a torch call made with grad mode off (as inside
    # every ``forward``) looks for ``Function.apply`` on the stack (the outermost
    # one: a Function whose forward uses another is one op); when it is there,
    # the calls inside are not recorded, and a profile function
    # (``sys.setprofile``, for as long as that apply runs: its ``return`` event
    # hands over the outputs) records the apply as one op, ``MyFn``, whose
    # output's node is ``MyFnBackward``. An output that is an input (``mark_dirty``)
    # makes it an in-place op, with versions and the value after. An in-place
    # change the forward makes to any other tensor (a counter the snippet keeps)
    # is still recorded: the snippet sees it. Not done when the snippet has a
    # profile function of its own; if it sets one inside the forward, the apply
    # is not recorded and the recording goes on after it. Left as before: a
    # forward run with grad mode on (``torch.enable_grad()`` inside it).
    def _enter_custom(self, f) -> bool:
        """Whether frame ``f`` (a torch call's) runs inside a custom Function's
        forward; if so, starts watching for the apply's return (NOTE [custom Functions])."""
        apply = None
        while f is not None:
            if f.f_code is _APPLY_CODE:
                apply = f
            f = f.f_back
        if apply is None or sys.getprofile() is not None:
            return False
        local = apply.f_locals
        ins: list = []
        _flatten(list(local.get("args") or ()), ins)
        _flatten(local.get("kwargs") or {}, ins)
        # the inputs as they were: versions (mark_dirty) and nodes (NOTE [composite ops])
        self._custom = (apply, local.get("cls"), ins, [(t, _ver(t)) for t in ins],
                        [grad_fn_of(t) for t in ins])
        recorder = self

        def watch(frame, event, arg):
            if event == "return" and frame is apply:
                state = recorder._custom
                recorder._end_custom()
                try:
                    with torch._C.DisableTorchFunction():
                        recorder._record_custom(state, arg)
                except Exception:
                    pass   # a fact lost, never the snippet's run

        sys.setprofile(watch)
        self._custom_profile = watch
        return True

    def _inside_custom(self, ins, kind) -> bool:
        """While a custom forward runs: whether this call is inside it and not
        recorded (an in-place change to a tensor it was not given is recorded)."""
        if sys.getprofile() is not self._custom_profile:
            self._end_custom()   # the snippet set a profiler inside the forward
            return False
        if kind == "inplace" and ins:
            target = ins[0]
            return any(t is target for t in self._custom[2])
        return True

    def _end_custom(self) -> None:
        if self._custom_profile is not None and sys.getprofile() is self._custom_profile:
            sys.setprofile(None)
        self._custom = self._custom_profile = None

    def _record_custom(self, state, result) -> None:
        if state is None or result is None or not self.recording:
            return   # the forward raised (the error is the snippet's), or recording ended
        apply, cls, ins, before, in_fns = state
        outs: list = []
        if isinstance(result, Tensor):
            outs.append(result)
        else:
            _flatten(result, outs)
        if not outs or cls is None:
            return
        frame = apply.f_back
        while frame is not None and frame.f_code.co_filename != self.filename:
            frame = frame.f_back
        name = getattr(cls, "__name__", "Function")
        qual = f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', name)}.apply"
        dirty = [(t, v) for t, v in before if any(t is o for o in outs)]
        self._record(name, qual, "inplace" if dirty else "call", _is_grad_enabled(), ins,
                     outs, dirty or None, None, frame, False, in_fns)

    def __exit__(self, *exc):
        self._end_custom()   # a run stopped inside a custom forward
        return super().__exit__(*exc)

    # -- tensors -----------------------------------------------------------------
    def tensor_id(self, t, seq, created_by=None) -> int:
        """Id of t, emitting its TensorInfo the first time it is seen."""
        tid, new = self.ids.lookup(t)
        if new:
            self._emit_info(t, tid, seq, created_by)
        return tid

    def _emit_info(self, t, tid, seq, created_by, g=False, gname=None) -> None:
        """TensorInfo of ``t``; ``g``/``gname``: its grad_fn and name if already read."""
        value, stats = self.memo.value_of(t, False)
        if g is False:
            g = grad_fn_of(t)
            gname = None if g is None else node_name(g)
        try:
            rg = t.requires_grad
            leaf = t.is_leaf
        except RuntimeError:   # NOTE [refused facts]
            rg, leaf = False, True
        self.state[tid] = (rg, leaf, gname)
        isp = _is_param(t)
        name = None
        names = self.names
        if leaf and names is not None and (isp or names.params):
            # NOTE [parameter names] in names.py: a dict lookup per new leaf
            name = names.param_name(t, tid)
            if name is None and isp:   # seen before its module was called
                names.map_modules(self.snippet_frame())
                name = names.param_name(t, tid)
        self.emit(P.TensorInfo(
            tid, list(t.shape), _dtype_name(t.dtype), "cpu" if t.is_cpu else str(t.device),
            rg, leaf, gname,
            name, value, stats, None, None, created_by, isp,
            _retains(t) if not leaf else False, _ver(t), seq))

    def update_state(self, t, tid, extra=None) -> None:
        """Emit a TensorUpdate if requires_grad / is_leaf / grad_fn changed since last sent."""
        g = grad_fn_of(t)
        gname = None if g is None else node_name(g)
        now = (*_flags_of(t, self.state.get(tid)), gname)
        fields = dict(extra) if extra else {}
        if self.state.get(tid) != now:
            self.state[tid] = now
            fields.update(requires_grad=now[0], is_leaf=now[1], grad_fn=now[2])
        if fields:
            self.emit(P.TensorUpdate(tid, fields))

    # -- the hot path ---------------------------------------------------------------
    def _call(self, func, args, kwargs, kind_override=None):
        try:
            facts = self._names_cache[func]
        except KeyError:
            facts = self._names_cache[func] = _short_name(func)
        except TypeError:
            facts = _short_name(func)
        name, qualname, kind = facts
        if kind_override:
            kind = kind_override
        grad_enabled = _is_grad_enabled()
        ins = []
        for a in args:
            if isinstance(a, Tensor):
                ins.append(a)
            elif isinstance(a, (list, tuple, dict)):
                _flatten(a, ins)
        if kwargs:
            for a in kwargs.values():
                _flatten(a, ins)
        before = None
        in_fns = None
        if kind == "inplace" and ins:
            # the nodes the inputs had: after the call the changed one has a new node
            # (NOTE [composite ops]: the walk must not take the old one for its own)
            in_fns = [grad_fn_of(t) for t in ins]
            a0 = args[0] if args else None
            if type(a0) is list or type(a0) is tuple:   # the _foreach_*_ ops
                before = [(t, _ver(t)) for t in a0 if isinstance(t, Tensor)]
            else:
                before = _ver(ins[0])
        elif "out" in kwargs:
            outs_kw = []
            _flatten(kwargs["out"], outs_kw)
            before = [(t, _ver(t)) for t in outs_kw]
        caller, frame, opaque = _locate(sys._getframe(1), self.filename)
        if opaque or (frame is not None and (
                self._vopaque if frame is self._vframe else self._above_opaque(frame))) or (
                (self._custom is not None or not grad_enabled and self._enter_custom(
                    caller or frame)) and self._inside_custom(ins, kind)):
            # a tracer runs this call: not the snippet's own op (NOTE [static tracers]);
            # or a custom Function's forward does: its apply is the op (NOTE [custom Functions])
            return func(*args, **kwargs) if caller is None else _call_from(caller, func,
                                                                          args, kwargs)
        try:
            if caller is None:
                result = func(*args, **kwargs)
            else:
                result = _call_from(caller, func, args, kwargs)
        except BaseException as e:
            self._failed_call(e, name, qualname, kind, grad_enabled, ins, frame)
            raise
        outs = []
        if isinstance(result, Tensor):
            outs.append(result)
        elif isinstance(result, (list, tuple, dict)):
            _flatten(result, outs)
        if not outs and before is None and kind not in _RECORD_WITHOUT_OUTPUT:
            return result
        # a Python function (F.cross_entropy) or a call from torch's own Python code
        # (nn.Linear.forward) may make autograd nodes of its own (NOTE [composite ops])
        op = self._record(name, qualname, kind, grad_enabled, ins, outs, before, None, frame,
                          caller is not frame or type(func) is _FunctionType, in_fns)
        if kind == "retain_grad" and op is not None and ins:
            self.emit(P.TensorUpdate(self.ids.get(ins[0]), {"retains_grad": True}))
        return result

    def _record(self, name, qualname, kind, grad_enabled, ins, outs, before, scalars,
                frame=False, composite=False, in_fns=None):
        """Emit TensorInfos for new tensors, then the Op. Returns the op id (or None).

        ``frame``: the snippet frame if the caller already found it (None: there
        is none), else it is looked up here. ``composite``: the call came through
        torch's Python code (a ``torch.nn.functional`` function, a module's
        ``forward``), so it may have made autograd nodes of its own (NOTE
        [composite ops]). ``in_fns``: the inputs' nodes before the call, when
        it may have changed them (in place); else they are read now."""
        if frame is False:
            frame, opaque = self.where(2)
            if opaque:
                return None     # NOTE [static tracers]
            if (self._custom is not None or not grad_enabled and self._enter_custom(
                    sys._getframe(1))) and self._inside_custom(ins, kind):
                return None     # NOTE [custom Functions]
        op_id = self.n_ops
        if op_id >= self.max_ops:
            self._truncate()
            return None
        self.n_ops = op_id + 1
        seq = next(self.seq)
        line = frame.f_lineno if frame is not None else None
        if frame is not None and (line != self._last_line or frame is not self._last_frame):
            self._last_frame = frame
            self._last_line = line
            self._maybe_scan(frame, line)
        lookup = self.ids.lookup
        in_ids = []
        for t in ins:
            tid, new = lookup(t)
            if new:
                self._emit_info(t, tid, seq, None)
            in_ids.append(tid)
        out_ids = []
        gname = None
        versions = None
        subgraph = None
        if outs:
            first = outs[0]
            try:
                g = first.grad_fn
            except RuntimeError:   # NOTE [refused facts]
                g = None
            if g is not None:
                gname = node_name(g)
            for t in outs:
                tid, new = lookup(t)
                if new:
                    self._emit_info(t, tid, seq, op_id, g if t is first else False, gname)
                elif kind == "inplace" or kind == "requires_grad" or kind == "detach":
                    self.update_state(t, tid)
                out_ids.append(tid)
            if len(outs) > 1 and self.backward is not None:
                self._tag_other_outputs(outs, out_ids, g, op_id)
            if g is not None and self.backward is not None:
                _tag(g, op_id, out_ids[0])   # NOTE [node ids] in backward.py
                try:
                    if in_fns is None:
                        in_fns = [grad_fn_of(t) for t in ins]
                    if composite or _may_have_inner(g, in_fns):
                        subgraph = _inner_nodes(g, op_id, in_fns)
                except Exception:
                    pass
        elif kind == "inplace" and ins and grad_enabled:
            # ``x[0] = 5`` returns nothing, but autograd gave x a new node
            # (CopySlices; on the base when x is a view): it is this op's, as an
            # output's node would be
            t0 = ins[0]
            base = t0._base
            owner = t0 if base is None else base
            g = grad_fn_of(owner)
            if g is not None:
                gname = node_name(g)
                tid = in_ids[0] if base is None else self.ids.get(base)
                if self.backward is not None and tid is not None:
                    _tag(g, op_id, tid, only_new=True)
        after = None
        if before is not None:
            # NOTE [values after in-place]: the value just after the change, so a
            # view can show the tensor as it is at a later step, not as created
            if isinstance(before, int):
                t0 = ins[0]
                v1 = _ver(t0)
                key = str(in_ids[0])
                versions = {key: [before, v1]}
                if v1 != before or name == "data":   # ``w.data = t`` moves no counter
                    after = self._values_after(((t0, key),), name, versions)
                if not outs:
                    self.update_state(t0, in_ids[0])
            else:
                versions = {}
                changed = []
                for t, v in before:
                    key = str(lookup(t)[0])
                    v1 = _ver(t)
                    versions[key] = [v, v1]
                    if v1 != v:
                        changed.append((t, key))
                if changed:
                    after = self._values_after(changed, name, versions)
        alias = None
        if (kind == "view" or kind == "detach") and outs and ins:
            alias = _alias_of(ins[0], in_ids[0], outs, out_ids)
        self.emit(P.Op(op_id, seq, name, qualname, line, grad_enabled, in_ids, out_ids,
                       gname, self.module, _is_inference_mode_enabled(), kind, versions,
                       scalars, after, subgraph, alias))
        return op_id

    @staticmethod
    def _tag_other_outputs(outs, out_ids, g, op_id) -> None:
        """Outputs with Nodes of their own (``broadcast_tensors``, ``meshgrid``):
        tagged too (NOTE [node ids]), or a later composite op's walk would take
        them for its own (NOTE [composite ops])."""
        for t, tid in zip(outs[1:], out_ids[1:]):
            n = grad_fn_of(t)
            if n is not None and n is not g:
                _tag(n, op_id, tid, only_new=True)

    def _values_after(self, changed, name, versions=None) -> dict | None:
        """``Op.after`` (NOTE [values after in-place] in model/values.py) for the
        (tensor, id key) pairs an in-place op changed, and for the base of each
        that is a view of a tensor already seen (``x[0:2].mul_(2)`` changes x).
        Up to AFTER_NUMEL elements: an optimizer changes every parameter in
        place each step, and the statistics of a million-element weight cost
        several times the update; a ``zero_`` of any size is known without
        reading it. The base's id also goes into ``versions`` (views share its
        counter), so a reader knows it changed even when its value is too big."""
        after = {}
        value_of = self.memo.value_of
        get = self.ids.get
        for t, key in changed:
            base = t._base
            pairs = [(t, key)]
            if base is not None:
                bid = get(base)
                if bid is not None and str(bid) not in after:
                    pairs.append((base, str(bid)))
            for x, k in pairs:
                if x is not t and versions is not None:
                    versions[k] = list(versions[key])   # the base: one version counter
                n = x.numel()
                if n <= AFTER_NUMEL:
                    after[k] = list(value_of(x, True, False, False))
                elif x is t and (name == "zero_" or name == "_foreach_zero_"):
                    zero = 0.0 if x.is_floating_point() else 0
                    after[k] = [None, {"numel": n, "min": zero, "max": zero,
                                       "mean": 0.0, "std": 0.0}]
        return after or None

    def _maybe_scan(self, frame, line) -> None:
        """Look for variable names (names.py) when the snippet line changed.

        In a long loop every op can be on a new line; after the first
        ``_SCAN_ALWAYS`` scans, a line seen before is scanned only every
        ``_SCAN_EVERY``-th time, so naming stays a small part of the cost.
        """
        n = self._scans
        self._scans = n + 1
        if n >= _SCAN_ALWAYS:
            key = (id(frame.f_code), line)   # id: hashing a code object is slow
            if key in self._scanned_lines and n % _SCAN_EVERY:
                return
            self._scanned_lines.add(key)
        if self.names is not None:
            self.names.scan(frame)

    def _failed_call(self, e, name, qualname, kind, grad_enabled, ins, frame=False):
        op_id = self._record(name, qualname, kind, grad_enabled, ins, [], None, None, frame)
        tid = self.ids.get(ins[0]) if ins else None
        self.failed = (e, op_id, tid)

    def _truncate(self) -> None:
        if self.recording:
            self.recording = False
            self.emit(P.Truncated("ops", self.max_ops,
                                  f"Recording stopped after {self.max_ops:,} ops (the limit); "
                                  "the snippet kept running, later ops are not shown."))

    # -- special calls -------------------------------------------------------------
    def _grad_read(self, func, args, kwargs):
        """An optimizer reads each ``.grad`` two or three times a step, so this is
        a hot path: one frame walk finds both the caller and the snippet frame
        (as ``_call`` does), and a leaf's ``.grad`` is read directly: only a
        non-leaf's warns (NOTE [warning attribution])."""
        t = args[0]
        caller, frame, opaque = _locate(sys._getframe(1), self.filename)
        if not opaque and frame is not None:
            opaque = self._vopaque if frame is self._vframe else self._above_opaque(frame)
        if caller is None or (isinstance(t, Tensor) and _flags_of(t, None)[1]):
            result = func(*args, **kwargs)
        else:
            result = _call_from(caller, func, args, kwargs)
        if opaque:   # NOTE [static tracers]
            return result
        outs = [result] if isinstance(result, Tensor) else []
        self._record("grad", "torch.Tensor.grad", "grad_read", _is_grad_enabled(), [t], outs,
                     None, None, frame)
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
                fields["grad"], fields["grad_stats"] = self.memo.value_of(g)
            self.emit(P.TensorUpdate(tid, fields))
        return result

    def _requires_grad_set(self, func, args, kwargs):
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
        before = _ver(t) if isinstance(t, Tensor) else None
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
        kind = _BRANCH_KINDS.get(func.__name__, "item")
        grad_enabled = _is_grad_enabled()
        t = args[0] if args and isinstance(args[0], Tensor) else None
        try:
            value = call_as_caller(func, args, kwargs)
        except BaseException as e:
            self._failed_call(e, func.__name__.strip("_"), "torch.Tensor." + func.__name__,
                              "item", grad_enabled, [t] if t is not None else [])
            raise
        op_id = self._record(kind if kind != "int" and kind != "float" else kind,
                             "torch.Tensor." + func.__name__,
                             "bool" if kind == "bool" else "item", grad_enabled,
                             [t] if t is not None else [], [], None, None)
        if op_id is not None:
            shown = value
            if kind == "tolist" and t is not None and t.numel() > self.value_limit:
                shown = None
            elif isinstance(shown, complex):
                shown = str(shown)
            elif kind == "tolist" and t is not None and t.is_complex():
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
