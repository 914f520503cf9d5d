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
  ``.real``/``.imag`` make tensors and are recorded (``.data`` as a detach);
- a custom ``torch.autograd.Function``'s ``apply`` is one op, not the calls its
  ``forward`` makes (NOTE [custom Functions] in custom_functions.py); the
  autograd nodes one call made are found from its output's node (NOTE
  [composite ops] in node_owners.py); facts torch refuses to give are not
  asked twice (NOTE [refused facts] in tensor_facts.py).

NOTE [static tracers]: ``torch.jit.trace`` (with its trace check) and
``torch.fx`` symbolic tracing run the snippet's code on tracer tensors or
Proxy objects, and the trace check re-runs it eagerly and compares results
(``isclose``, ``all``, ...). None of that is the snippet's own computation, and
reading a tracer tensor's value (a summary's ``tolist``) would itself raise a
TracerWarning. So every call made while one of those tools is on the stack is
passed through unrecorded, without touching any value: ``locate_call`` notices
their frames between the op and the snippet frame, ``Recorder._above_opaque``
(cached per snippet frame) those above it (a snippet function being traced).
Costs one set lookup per frame already walked, and one identity check per op.

NOTE [threads]: a TorchFunctionMode is thread-local, so ops another thread
runs are not recorded, and that thread runs exactly as under plain Python.

The per-op path (``_call``) is the hot loop of the whole capture: locals only,
no dataclass reprs, name facts cached per function.
"""
from __future__ import annotations

import dis
import itertools
import sys
import threading
import types

import torch
from torch.overrides import TorchFunctionMode

from graphscope import protocol as P
from graphscope.capture import summaries
from graphscope.capture.aliases import alias_of
from graphscope.capture.call_names import short_name
from graphscope.capture.call_sites import (CAPTURE_DIR, OPAQUE_CODES, call_as_caller, call_from,
                                           compiling as _compiling,
                                           dispatched_original, forget_call_sites, locate_call,
                                           patched_original, snippet_frame_of)
from graphscope.capture.custom_functions import CustomFunctions
from graphscope.capture.hook_removal import HookRemovals
from graphscope.capture.node_owners import inner_nodes, may_have_inner, node_name, tag
from graphscope.capture.source_text import method_call_starts, source_span
from graphscope.capture.tracebacks import exc_key, without_our_frames
from graphscope.capture.special_calls import BRANCH_KINDS, SpecialCalls
from graphscope.capture.tensor_facts import (flags_of, flatten_tensors, grad_fn_of,
                                             no_subclass_dispatch, read_plainly, retains_grad,
                                             shape_of, version_of)
from graphscope.capture.tensor_ids import TensorIds

Tensor = torch.Tensor
_TB = torch._C.TensorBase
_is_grad_enabled = torch.is_grad_enabled
_is_inference_mode_enabled = torch.is_inference_mode_enabled
_Parameter = torch.nn.Parameter
_FunctionType = types.FunctionType   # (``types`` is a parameter of __torch_function__)
_dtype_name = summaries.dtype_name

# getters that make a new tensor and are recorded; every other getset is passed through
_VIEW_GETTERS = {"T", "mT", "H", "mH", "real", "imag"}


AFTER_NUMEL = 1 << 16   # values after in-place changes kept up to this size (_record)
_POSITIONS: dict = {}   # code object -> its instructions' source positions (_expr_at)
_OPNAMES = dis.opname
_OPERATOR_OPS = frozenset({"BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "STORE_SUBSCR",
                           "UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT",
                           "CONTAINS_OP"})
_CALL_OPS = frozenset({"CALL", "CALL_FUNCTION_EX"})
_RECORD_WITHOUT_OUTPUT = frozenset({"inplace", "retain_grad", "requires_grad", "detach",
                                    "hook"})
DEEP_OPS = 5_000   # ops before a graph may be deep enough to need more C stack to free
_SCAN_ALWAYS = 2000
_SCAN_EVERY = 64


def _inplace_before(args, ins):
    """(the inputs' nodes, the version counter(s) to compare after) of an in-place call."""
    in_fns = _nodes_of(ins)
    a0 = args[0] if args else None
    if type(a0) is list or type(a0) is tuple:   # the _foreach_*_ ops
        return in_fns, [(t, version_of(t)) for t in a0 if isinstance(t, Tensor)]
    return in_fns, version_of(ins[0])


def _any_subclass(ts) -> bool:
    """Whether a tensor in ``ts`` is of a subclass that may define __torch_function__
    (NOTE [subclass reads]; Parameter's is torch's own, which reads nothing)."""
    for t in ts:
        tp = type(t)
        if tp is not Tensor and tp is not _Parameter:
            return True
    return False


def _hide_our_frames(e: BaseException) -> None:
    """NOTE [our frames in tracebacks] in tracebacks.py. Never raises: the error
    is the snippet's."""
    try:
        e.__traceback__ = without_our_frames(e.__traceback__)
    except Exception:
        pass


def _is_param(t) -> bool:
    # Parameter's metaclass makes isinstance a Python call; plain tensors skip it
    return False if type(t) is Tensor else isinstance(t, _Parameter)


def _nodes_of(ins) -> list:
    """The inputs' nodes: ``grad_fn_of`` each, one call for all on the per-op path."""
    try:
        return [t.grad_fn for t in ins]
    except RuntimeError:   # NOTE [refused facts]
        return [grad_fn_of(t) for t in ins]


class Recorder(SpecialCalls, TorchFunctionMode):
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
        self.n_unrecorded = 0          # NOTE [the snippet's call comes first]
        self.n_unrecorded_deep = 0     # ... of them, near the recursion limit
        self.unrecorded_why = None
        self.recording = True
        self._thread = None           # the thread the run is in, while it is
        self.unhooks = HookRemovals(self)   # NOTE [hook removal] in hook_removal.py
        self.module = None            # current module path, kept by modules.py
        self.names = None             # names.NameTracker, set by the session
        self.backward = None          # backward.BackwardTracer, set by the session
        # (exc_key, op id, tensor id, line) of the last failing call (NOTE [no frame kept])
        self.failed = None
        self.last_line = None         # the snippet line of the last op recorded
        self.state: dict[int, tuple] = {}   # tid -> (requires_grad, is_leaf, grad_fn) last sent
        self.grad_fn_ops: dict = {}   # reserved for backward.py
        self.n_branches = 0
        self._names_cache: dict = {}
        # the module-level line of the last op (names.py scans); not the frame, which
        # would keep a returned function's locals alive (NOTE [no frame kept])
        self._last_where = None
        self.module_code = None       # the snippet's compiled module (session sets it)
        self.on_deep = None           # called at the DEEP_OPS-th op (session sets it)
        self._scans = 0
        self._scanned_lines: set = set()
        self._special = self._build_special()
        self.custom = CustomFunctions(self)   # NOTE [custom Functions]
        self._node_owner: dict = {}   # view's tensor id -> op whose node it last got
        self._exprs: dict = {}        # (code, instruction) -> its source text (_expr_at)
        self._starts: dict | None = None  # method_call_starts of the snippet, when first needed

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
        for name in BRANCH_KINDS:
            f = getattr(_TB, name, None)
            if f is not None:
                sp[f] = Recorder._branch
        sp[torch.empty] = Recorder._empty            # NOTE [unpickled tensors]
        sp[torch.Tensor.backward] = Recorder._backward
        sp[torch.autograd.grad] = Recorder._backward
        sp[torch.autograd.backward] = Recorder._backward
        for f in (torch.Tensor.__repr__, torch.Tensor.__format__, _TB.size, _TB.dim,
                  _TB.numel, torch.Tensor.__len__, _TB.is_floating_point,
                  _TB.is_complex, _TB.data_ptr, _TB.element_size, _TB.stride,
                  torch.Tensor.__hash__, _TB.is_contiguous, _TB.get_device,
                  torch.Tensor.__reduce_ex__, torch.Tensor.__deepcopy__):
            sp[f] = None
        return sp

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if _compiling():
            # Dynamo traces this method of the mode on the stack: what it saw here
            # made torch.compile(fullgraph=True) fail ("does not know how to trace
            # method startswith of class str") and warn about sys._getframe (fuzz
            # review). Compiled code is not recorded, as module calls are not
            # (NOTE in modules.py); the ops of an eager backend are, when it runs.
            return func(*args, **(kwargs or {}))
        try:
            if kwargs is None:
                kwargs = {}
            if not self.recording:
                return call_as_caller(func, args, kwargs)
            try:
                handler = self._special.get(func, self)
            except TypeError:  # unhashable callable
                handler = self
            if handler is self and type(func) is _FunctionType:
                real = dispatched_original(func, sys._getframe(1))
                if real is not None:   # NOTE [patched methods] in call_sites.py
                    func = real
                    handler = self._special.get(func, self)
            if handler is self:
                return self._call(func, args, kwargs)
            if handler is None:
                return call_as_caller(func, args, kwargs)
            return handler(self, func, args, kwargs)
        except BaseException as e:
            _hide_our_frames(e)
            raise   # (a bare raise adds no entry for this frame)

    # -- frames and lines ---------------------------------------------------------
    def snippet_frame(self):
        """Innermost frame running the snippet's own code (module, its functions, classes)."""
        return self.snippet_frame_from(sys._getframe(2))

    def snippet_frame_from(self, f):
        """The first frame from ``f`` outwards that runs the snippet's own code."""
        fn = self.filename
        while f is not None:
            if f.f_code.co_filename == fn:
                return f
            f = f.f_back
        return None

    def __enter__(self):
        self._thread = threading.get_ident()
        return super().__enter__()

    def __exit__(self, *exc):
        self._thread = None
        self.unhooks.uninstall()
        self.custom.end()   # a run stopped inside a custom forward (NOTE [custom Functions])
        return super().__exit__(*exc)

    def let_go_of_frames(self) -> None:
        """Drop the snippet frames (and the error, with its traceback) kept from
        the run: they hold its namespace, which the end of the run frees
        (NOTE [the end of a run] in process_exit.py)."""
        self._last_where = None
        self.failed = None
        self.custom.state = None
        forget_call_sites()

    def where(self, depth: int = 2):
        """(innermost snippet frame, opaque): the frame as ``snippet_frame`` finds it
        from ``depth`` frames up, and whether a tracer runs the call (NOTE [static tracers])."""
        f, opaque = snippet_frame_of(sys._getframe(depth), self.filename)
        if f is not None and not opaque:
            opaque = self._above_opaque(f)
        return f, opaque

    def _above_opaque(self, s) -> bool:
        """Whether a tracer's frame is above snippet frame ``s`` (a snippet function
        being traced) (NOTE [static tracers]). Walked at each op, not remembered for
        the last ``s``: the walk ends at the snippet's module frame, a step or two, and
        remembering ``s`` kept its locals alive (NOTE [no frame kept])."""
        opaque = False
        f = s.f_back
        while f is not None:
            code = f.f_code
            if id(code) in OPAQUE_CODES:
                opaque = True
                break
            if code.co_filename.startswith(CAPTURE_DIR):
                break   # run_snippet: the snippet's module frame was the last
            f = f.f_back
        return opaque

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
        try:   # flags_of inline: once per new tensor, and a try costs nothing
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
            tid, shape_of(t), _dtype_name(t.dtype), "cpu" if t.is_cpu else str(t.device),
            rg, leaf, gname,
            name, value, stats, None, None, created_by, isp,
            retains_grad(t) if not leaf else False, version_of(t), seq))

    def update_state(self, t, tid, extra=None) -> None:
        """Emit a TensorUpdate if requires_grad / is_leaf / grad_fn changed since last sent."""
        g = grad_fn_of(t)
        gname = None if g is None else node_name(g)
        now = (*flags_of(t, self.state.get(tid)), gname)
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
            facts = self._names_cache[func] = short_name(func)
        except TypeError:
            facts = short_name(func)
        name, qualname, kind = facts
        if kind_override:
            kind = kind_override
        inplace_kw = False
        if kwargs and kind == "call" and kwargs.get("inplace") is True:
            # F.relu(h, inplace=True), nn.ReLU(inplace=True): changes h and hands it
            # back with a new node, as relu_ would
            kind = "inplace"
            inplace_kw = True
        grad_enabled = _is_grad_enabled()
        ins = []
        for a in args:
            if isinstance(a, Tensor):
                ins.append(a)
            elif isinstance(a, (list, tuple, dict)):
                flatten_tensors(a, ins)
        if kwargs:
            for a in kwargs.values():
                flatten_tensors(a, ins)
        before = None
        in_fns = None
        if kind == "inplace" and ins:
            # the nodes the inputs had: after the call the changed one has a new node
            # (NOTE [composite ops]: the walk must not take the old one for its own)
            if _any_subclass(ins):
                with no_subclass_dispatch():   # NOTE [subclass reads]
                    in_fns, before = _inplace_before(args, ins)
            else:
                in_fns, before = _inplace_before(args, ins)
        elif "out" in kwargs:
            outs_kw = []
            flatten_tensors(kwargs["out"], outs_kw)
            with no_subclass_dispatch():   # NOTE [subclass reads] (rare: no fast path)
                before = [(t, version_of(t)) for t in outs_kw]
        caller, frame, opaque = locate_call(sys._getframe(1), self.filename)
        if caller is not None and getattr(func, "__code__", None) is caller.f_code:
            real = patched_original(func, caller)
            if real is not None:   # NOTE [patched methods] in call_sites.py
                func = real
                name, qualname, kind = short_name(func)
        if opaque or (frame is not None and (
                self._above_opaque(frame))) or (
                (self.custom.state is not None or not grad_enabled) and self.custom.skips(
                    caller or frame, ins, kind)):
            # a tracer runs this call: not the snippet's own op (NOTE [static tracers]);
            # or a custom Function's forward does: its apply is the op (NOTE [custom Functions])
            return func(*args, **kwargs) if caller is None else call_from(caller, func,
                                                                          args, kwargs)
        try:
            if caller is None:
                result = func(*args, **kwargs)
            else:
                result = call_from(caller, func, args, kwargs)
        except BaseException as e:
            try:
                self._failed_call(e, name, qualname, kind, grad_enabled, ins, frame)
            except Exception as bad:
                self.could_not_record(bad)   # its own error goes on
            raise
        outs = []
        if isinstance(result, Tensor):
            outs.append(result)
        elif isinstance(result, (list, tuple, dict)):
            flatten_tensors(result, outs)
        if inplace_kw and isinstance(before, int) and read_plainly(version_of, ins[0]) == before:
            # inplace=True that changed nothing (dropout in eval mode): a plain call
            kind, before, in_fns = "call", None, None
        if not outs and before is None and kind not in _RECORD_WITHOUT_OUTPUT:
            return result
        # the snippet's own text of the call (``y ** 2``), when the snippet called
        # the op, or a torch Python function it called handed itself to the mode;
        # not for an op run inside a library function (Normal.log_prob's pow)
        expr = None
        if frame is not None and (caller is frame or (
                caller is not None and caller.f_back is frame
                and getattr(func, "__code__", None) is caller.f_code)):
            expr = self._expr_at(frame, name)
        try:
            op = self._record(name, qualname, kind, grad_enabled, ins, outs, before, None,
                              frame, in_fns, expr=expr)
        except Exception as bad:
            self.could_not_record(bad)
            return result
        if kind == "retain_grad" and op is not None and ins:
            self.emit(P.TensorUpdate(self.ids.get(ins[0]), {"retains_grad": True}))
        elif kind == "hook" and op is not None and ins:
            self.unhooks.watch(result, ins[0], op)   # NOTE [hook removal] in hook_removal.py
        return result

    def _record(self, name, qualname, kind, grad_enabled, ins, outs, before, scalars,
                frame=False, in_fns=None, may_share=False, failed=None, expr=None):
        """``_record_op``; for a tensor subclass, without its __torch_function__.

        NOTE [subclass reads]: reading a tensor subclass's facts (numel, tolist,
        requires_grad, grad_fn ...) called its own __torch_function__: the
        LoggingTensor of torch's docs logged 31 lines for ``t + 1``, a strict
        one refused and the op went unrecorded. The snippet's own call still
        reaches it, as under python; only GraphScope's reads do not."""
        if frame is False:
            frame, opaque = self.where(2)
            if opaque:
                return None     # NOTE [static tracers]
            if (self.custom.state is not None or not grad_enabled) and self.custom.skips(
                    sys._getframe(1), ins, kind):
                return None     # NOTE [custom Functions]
        if _any_subclass(ins) or _any_subclass(outs):
            with no_subclass_dispatch():
                return self._record_op(name, qualname, kind, grad_enabled, ins, outs, before,
                                       scalars, frame, in_fns, may_share, failed, expr)
        return self._record_op(name, qualname, kind, grad_enabled, ins, outs, before,
                               scalars, frame, in_fns, may_share, failed, expr)

    def _record_op(self, name, qualname, kind, grad_enabled, ins, outs, before, scalars,
                   frame, in_fns=None, may_share=False, failed=None, expr=None):
        """Emit TensorInfos for new tensors, then the Op. Returns the op id (or None).

        ``frame``: the snippet frame (None: there is none; ``_record`` looks it
        up when its caller did not). ``in_fns``: the inputs' nodes before
        the call, when it may have changed them (in place); else they are read
        now, to find the autograd nodes the call made (NOTE [composite ops]).
        ``may_share``: an output may share an input's memory though the call is
        not a view (a custom Function that returns its input or a view of it)."""
        op_id = self.claim_op_id()
        if op_id is None:
            return None
        seq = next(self.seq)
        line = frame.f_lineno if frame is not None else None
        self.last_line = line
        if frame is not None:
            if frame.f_code is not self.module_code:
                # a function's frame: a new call may sit at the address of the last
                # one (a loop calling f), and it cannot be told apart without holding
                # the frame (NOTE [no frame kept]): each op looks (code review: only
                # the last of four f(t) results was named); _maybe_scan thins it out
                self._last_where = None
                self._maybe_scan(frame, line)
            elif line != self._last_where:   # the snippet's one module frame
                self._last_where = line
                self._maybe_scan(frame, line)
        lookup = self.ids.lookup
        in_ids = []
        for t in ins:
            tid, new = lookup(t)
            if new:
                self._emit_info(t, tid, seq, None)
            elif t._base is not None and self.backward is not None:
                self._own_regenerated(t, tid)
            in_ids.append(tid)
        out_ids = []
        gname = None
        versions = None
        subgraph = None
        if outs:
            first = outs[0]
            try:       # grad_fn_of inline: once per op, and a try costs nothing
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
                if in_fns is None:
                    in_fns = _nodes_of(ins)
                # an op run under no_grad, or one that hands back an input's own node
                # (``v.float()`` on a float view) made none: the node stays its maker's
                # (reading ``x.grad`` hands out a node too when create_graph made
                # it, but the read made nothing: the backward that did owns it)
                if grad_enabled and kind != "grad_read" and not any(g is f for f in in_fns):
                    tag(g, op_id, out_ids[0])   # NOTE [node ids] in backward.py
                    if first._base is not None:   # a view: torch may remake its node
                        self._node_owner[out_ids[0]] = op_id
                    if kind == "inplace" and ins:
                        # ``v.mul_(x)`` on a view changes its base too: the base's new
                        # node (CopySlices) is this op's for the base, not a node
                        # inside it (its step sends the base's history and x their
                        # gradients: NOTE [writes through a view] in model/graph.py)
                        base = ins[0]._base
                        bg = grad_fn_of(base) if base is not None else None
                        btid = self.ids.get(base) if bg is not None else None
                        if btid is not None and bg is not g:
                            tag(bg, op_id, btid, only_new=True)
                    try:
                        if may_have_inner(g, in_fns):
                            subgraph = inner_nodes(g, op_id, in_fns)
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
                    tag(g, op_id, tid, only_new=True)
        after = None
        if before is not None:
            self.memo.forget_all()   # the version counters may not say what changed
            # NOTE [values after in-place]: the value just after the change, so a
            # view can show the tensor as it is at a later step, not as created
            if isinstance(before, int):
                t0 = ins[0]
                v1 = version_of(t0)
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
                    v1 = version_of(t)
                    versions[key] = [v, v1]
                    if v1 != v:
                        changed.append((t, key))
                if changed:
                    after = self._values_after(changed, name, versions)
        alias = None
        if (kind == "view" or kind == "detach") and outs and ins:
            alias = alias_of(ins[0], in_ids[0], outs, out_ids)
        elif may_share and outs:
            for t, tid in zip(ins, in_ids):
                found = alias_of(t, tid, outs, out_ids)
                if found:
                    alias = {**(alias or {}), **found}
        self.emit(P.Op(op_id, seq, name, qualname, line, grad_enabled, in_ids, out_ids,
                       gname, self.module, _is_inference_mode_enabled(), kind, versions,
                       scalars, after, subgraph, alias, failed, expr))
        return op_id

    def _expr_at(self, frame, name):
        """The source text of the expression snippet ``frame`` is evaluating now
        for the op called ``name``: the instruction's position (``co_positions``,
        Python 3.11) sliced out of its line. Only when the instruction is this
        op: an operator instruction (BINARY_OP, a subscript, a unary minus), or
        a call whose text calls ``name(`` (``sum(xs)`` adding tensors in C is a
        call of ``sum``, and its partial sums are not ``sum(xs)``); with ``name``
        None, only a call, whatever it calls (a module call: the caller checked
        that the module is what the call runs). Once per instruction and op name."""
        code = frame.f_code
        key = (code, frame.f_lasti, name)
        exprs = self._exprs
        try:
            return exprs[key]
        except KeyError:
            pass
        text = None
        try:
            raw = code.co_code
            i = frame.f_lasti
            op = _OPNAMES[raw[i]]
            while op == "CACHE" and i > 0:
                # a call into Python code leaves f_lasti in the CALL's inline cache
                i -= 2
                op = _OPNAMES[raw[i]]
            call = op in _CALL_OPS
            # ``w.grad``: a read of an attribute the mode sees (the tensor it hands
            # out would be t7 on the canvas, not w.grad)
            attr = op == "LOAD_ATTR" and name is not None
            if call or attr or op in _OPERATOR_OPS:
                pos = _POSITIONS.get(code)
                if pos is None:
                    if len(_POSITIONS) > 4096:
                        _POSITIONS.clear()
                    pos = _POSITIONS[code] = list(code.co_positions())
                l0, l1, c0, c1 = pos[frame.f_lasti // 2]
                if l0 is not None and l1 is not None and c0 is not None and c1 is not None:
                    text = source_span(self.filename, l0, l1, c0, c1, self._method_starts)
                    if text is not None and (
                            not text.endswith("." + name) if attr
                            else not call if name is None
                            else call and name + "(" not in text):
                        text = None
        except Exception:
            text = None
        if len(exprs) > 65536:
            exprs.clear()
        exprs[key] = text
        return text

    def _method_starts(self) -> dict:
        if self._starts is None:
            self._starts = method_call_starts(self.filename)
        return self._starts

    def _own_regenerated(self, t, tid) -> None:
        """A view whose base changed in place gets a new node when next used
        (``AsStridedBackward0``, made by torch on the spot, no op's): it stands for
        the same view, so it is the node's owner's, the op that made the view or
        last changed it (else its backward step would belong to no op)."""
        g = grad_fn_of(t)
        if g is not None and "graphscope" not in g.metadata:
            owner = self._node_owner.get(tid)
            if owner is not None:
                tag(g, owner, tid)

    @staticmethod
    def _tag_other_outputs(outs, out_ids, g, op_id) -> None:
        """Outputs with Nodes of their own (``broadcast_tensors``, ``meshgrid``):
        tagged too (NOTE [node ids]), or a later composite op's walk would take
        them for its own (NOTE [composite ops])."""
        for t, tid in zip(outs[1:], out_ids[1:]):
            n = grad_fn_of(t)
            if n is not None and n is not g:
                tag(n, op_id, tid, only_new=True)

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
        op_id = self._record(name, qualname, kind, grad_enabled, ins, [], None, None, frame,
                             failed=type(e).__name__)
        tid = self.ids.get(ins[0]) if ins else None
        self.failed = (exc_key(e), op_id, tid, self.last_line)

    # NOTE [the snippet's call comes first]: the call has run (or raised its own
    # error); a tensor the recorder cannot describe, or a failure of its own,
    # costs that op in the trace, never the snippet its result. The run ends with
    # a note of how many calls went unrecorded and why (``unrecorded_note``), so a
    # picture with holes says so, and a GraphScope bug is not taken for the
    # snippet's.
    def could_not_record(self, e: BaseException) -> None:
        self.n_unrecorded += 1
        if isinstance(e, RecursionError):
            # the snippet's own recursion, near Python's limit: recording a call
            # takes a few frames more than the call (the note said "GraphScope's
            # fault" beside the snippet's own RecursionError: capture review)
            self.n_unrecorded_deep += 1
        elif self.unrecorded_why is None:
            self.unrecorded_why = f"{type(e).__name__}: {e}"

    def unrecorded_note(self):
        """A Truncated("unrecorded") for the end of the run, or None."""
        if not self.n_unrecorded:
            return None
        n, deep = self.n_unrecorded, self.n_unrecorded_deep
        calls = lambda k: f"{k:,} call{'s' if k != 1 else ''}"
        parts = []
        if n > deep:
            parts.append(f"GraphScope could not record {calls(n - deep)} of the snippet "
                         f"(the first: {self.unrecorded_why}); the snippet ran as written, "
                         "the graph leaves them out. This is GraphScope's fault, not the "
                         "snippet's.")
        if deep:
            parts.append(f"{calls(deep)} made near Python's recursion limit "
                         f"({sys.getrecursionlimit():,} frames) {'were' if deep != 1 else 'was'}"
                         " not recorded: recording a call takes a few frames more than the "
                         "call itself. The snippet ran as written; the graph leaves them out.")
        return P.Truncated("unrecorded", n, " ".join(parts))

    def claim_op_id(self):
        """The next op's id, or None once ``max_ops`` ops are recorded (the
        trace is then marked truncated)."""
        op_id = self.n_ops
        if op_id >= self.max_ops:
            self._truncate()
            return None
        self.n_ops = op_id + 1
        if op_id == DEEP_OPS and self.on_deep is not None:
            self.on_deep()      # NOTE [a deep graph's C stack] in worker.py
        return op_id

    def _truncate(self) -> None:
        if self.recording:
            self.recording = False
            self.emit(P.Truncated("ops", self.max_ops,
                                  f"Recording stopped after {self.max_ops:,} ops (the limit); "
                                  "the snippet kept running, later ops are not shown."))
